package flow

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSpilledArray checks a spilled array against a slice under random
// access with a budget of less than a page: every access may evict.
func TestSpilledArray(t *testing.T) {
	pool := newSpillPool(1, t.TempDir())
	defer pool.close()
	a := newSpilled[int64](pool, "test a")
	b := newSpilled[uint16](pool, "test b")
	var wa []int64
	var wb []uint16
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3 << pageBits {
		a.Append(int64(i) * 3)
		wa = append(wa, int64(i)*3)
		b.Append(uint16(i))
		wb = append(wb, uint16(i))
		if i%1024 == 0 {
			j := r.IntN(len(wa))
			*a.at(j) += 5
			wa[j] += 5
			// Two arrays in one assignment, as the merge does: the
			// page of the first must stay until the second is set.
			k := r.IntN(len(wb))
			*a.at(k), *b.at(k) = -1, 7
			wa[k], wb[k] = -1, 7
		}
	}
	for range 2000 {
		j := r.IntN(len(wa))
		if got := a.Get(j); got != wa[j] {
			t.Fatalf("a[%d] = %d, want %d", j, got, wa[j])
		}
		if got := b.Get(j); got != wb[j] {
			t.Fatalf("b[%d] = %d, want %d", j, got, wb[j])
		}
	}
	if pool.err != nil {
		t.Fatal(pool.err)
	}
	if pool.written == 0 {
		t.Fatal("nothing spilled")
	}
}

// mergeText merges ins and returns every trace and the statistics as
// `flow traces` and `flow stats` print them.
func mergeText(t *testing.T, ins []Input, opts *Options) (string, *Merger) {
	t.Helper()
	var b bytes.Buffer
	st := NewStats()
	m, err := Merge(ins, opts, func(tr *Trace) error {
		st.Add(tr)
		return WriteTrace(&b, tr)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriteText(&b, Reports{Messages: true, Traces: true, Locks: true, Interceptors: true}); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteInputs(&b); err != nil {
		t.Fatal(err)
	}
	return b.String(), m
}

// spillRequests makes the generated cluster send more messages than a
// page of keys holds, and spillBudget holds fewer pages than the merge's
// arrays take in either pass (two pages of 4-byte elements: the merging
// pass's span references and open traces take four), so that pages
// spill and are read back in both; a budget of one byte would spill
// every page but the latest of each array, and costs minutes. The budget
// is under the window of pages the merge touches at once, so it thrashes:
// some 13,000 pages written and read back per merge (BenchmarkMergeSpill).
const (
	spillRequests = 40000
	spillBudget   = 512 << 10
)

// TestSpillSameResults merges once in memory and once with a budget
// that spills: the traces and statistics are the same, and the spill files are
// gone (unlinked at creation) during and after the merge.
func TestSpillSameResults(t *testing.T) {
	ins := genInputs(5, spillRequests)
	want, _ := mergeText(t, ins, nil)
	dir := t.TempDir()
	fds := openFiles(t)
	got, m := mergeText(t, ins, &Options{TempDir: dir, MemBudget: spillBudget})
	if m.spill.written == 0 || m.spill.read == 0 {
		t.Fatalf("%d pages spilled, %d read back; want some of each", m.spill.written, m.spill.read)
	}
	if got != want {
		t.Errorf("spilled merge differs:\n%s", firstDiff(got, want))
	}
	assertEmptyDir(t, dir)
	if n := openFiles(t); fds >= 0 && n > fds {
		t.Errorf("%d files open after the merge, %d before", n, fds)
	}
}

// TestSpillRemovedOnFailure stops a spilling merge halfway (fn fails):
// the files are closed and gone.
func TestSpillRemovedOnFailure(t *testing.T) {
	ins := genInputs(5, spillRequests)
	dir := t.TempDir()
	fds := openFiles(t)
	stop := errors.New("stop")
	n := 0
	m, err := Merge(ins, &Options{TempDir: dir, MemBudget: spillBudget}, func(tr *Trace) error {
		if n++; n == spillRequests/2 {
			assertEmptyDir(t, dir)
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("Merge: %v, want %v", err, stop)
	}
	if m.spill.written == 0 {
		t.Fatal("nothing spilled")
	}
	assertEmptyDir(t, dir)
	if n := openFiles(t); fds >= 0 && n > fds {
		t.Errorf("%d files open after the merge, %d before", n, fds)
	}
}

// TestSpillDamaged changes the spill files under a merge (overwritten,
// then truncated): the merge returns an error naming the spill file, the
// page and its offset, and does not panic.
func TestSpillDamaged(t *testing.T) {
	ins := genInputs(5, spillRequests)
	for _, tc := range []struct {
		name   string
		damage func(f *os.File) error
		want   string
	}{
		{"overwritten", func(f *os.File) error { _, err := f.WriteAt(make([]byte, 1<<20), 0); return err }, "checksum mismatch"},
		{"truncated", func(f *os.File) error { return f.Truncate(0) }, "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The files are damaged early in the merging pass, on its
			// goroutine (Progress), which alone touches the spill
			// files; fn, on a goroutine of its own, gives the Merger.
			var merger atomic.Pointer[Merger]
			damaged := false
			progress := func(pass int, done, total int64) {
				m := merger.Load()
				if pass != 2 || damaged || m == nil {
					return
				}
				for _, f := range m.spill.files {
					if err := tc.damage(f); err != nil {
						t.Error(err)
					}
				}
				damaged = true
			}
			_, err := Merge(ins, &Options{TempDir: t.TempDir(), MemBudget: spillBudget, Progress: progress}, func(tr *Trace) error {
				merger.CompareAndSwap(nil, tr.Merger())
				return nil
			})
			if !damaged {
				t.Fatal("the merging pass reported no progress after a trace")
			}
			if err == nil || !strings.Contains(err.Error(), "spill file of the") || !strings.Contains(err.Error(), "byte offset") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Merge: %v, want a spill file error with %q", err, tc.want)
			}
		})
	}
}

// BenchmarkMergeSpill merges the spill tests' cluster with their budget,
// smaller than the merge's window of pages: most of its time goes to
// writing pages out and reading them back.
func BenchmarkMergeSpill(b *testing.B) {
	ins := genInputs(5, spillRequests)
	dir := b.TempDir()
	for b.Loop() {
		m, err := Merge(ins, &Options{TempDir: dir, MemBudget: spillBudget}, func(*Trace) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(m.spill.written), "pages-written/op")
		b.ReportMetric(float64(m.spill.read), "pages-read/op")
	}
}

// assertEmptyDir fails unless dir has no files.
func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		t.Errorf("%s left in the temporary directory", e.Name())
	}
}

// openFiles counts the process's open files, -1 where /proc does not
// tell.
func openFiles(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(es)
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("lengths differ: %d and %d lines", len(g), len(w))
}
