package flow

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestInterceptorsAndLocks: an interceptor chain on A and locks with the
// same key on two nodes.
//
// A (µs): FlowTag PUT at 0; INT Put@>@I1 at 10, INT Put@>@I2 at 20,
// INT Put@<@I2 at 40, INT Put@<@I1 at 45; LOCK k at 100, LOCK_OK at 110,
// sends A|B|1 at 120, UNLOCK [k] at 200.
// B (µs, same clocks): receives at 150, handles at 155, LOCK k at 160,
// LOCK_OK at 170, UNLOCK [k] at 200, LOCK k2 at 210, LOCK_OK at 215, never
// unlocked.
func TestInterceptorsAndLocks(t *testing.T) {
	a := logInput("A.txt",
		"0=1700000000000",
		"SPAN;null;A|B|1",
		"E;0;main;FlowTag;PUT",
		"E;10000;main;Checkpoint;INT Put@>@I1",
		"E;20000;main;Checkpoint;INT Put@>@I2",
		"E;40000;main;Checkpoint;INT Put@<@I2",
		"E;45000;main;Checkpoint;INT Put@<@I1",
		"E;100000;main;Checkpoint;LOCK k",
		"E;110000;main;Checkpoint;LOCK_OK",
		"E;120000;main;ODStarted;A|B|1",
		"E;200000;main;Checkpoint;UNLOCK [k]",
	)
	b := logInput("B.txt",
		"0=1700000000000",
		"SPAN;A|B|1",
		"E;150000;rx;Incoming",
		"E;155000;rx;Handling;A|B|1",
		"E;160000;rx;Checkpoint;LOCK k",
		"E;170000;rx;Checkpoint;LOCK_OK",
		"E;200000;rx;Checkpoint;UNLOCK [k]",
		"E;210000;rx;Checkpoint;LOCK k2",
		"E;215000;rx;Checkpoint;LOCK_OK",
	)
	r := mergeInputs(t, []Input{a, b})
	// Interceptors: I1 runs 10..20 before calling I2 and 40..45 after it
	// returns: 10 + 5 = 15 us; I2 runs 20..40 = 20 us. The reference
	// credited only the time before each return, 5 us to I1.
	wantLines(t, "interceptors report", r.stats,
		"* INTERCEPTORS *\n****************\nPUT\n"+
			"\tPut@I1:\tavg     15.00 us in         1 records (15.00 - 15.00)\n"+
			"\tPut@I2:\tavg     20.00 us in         1 records (20.00 - 20.00)\n")
	// Locks per node: A's k and B's k are different locks (the reference
	// keyed them by text, saw B lock an open key, threw and dropped the
	// trace). Acquire: A 10, B k 10, B k2 5: 8.33 us (5 - 10). Held: A
	// 110..200 = 90, B 170..200 = 30: 60 us (30 - 90); B's k2 is still
	// held when the trace ends, so it has no held time but its locking
	// counts.
	wantLines(t, "locks report", section(r.stats, "LOCKS"),
		"1 locking traces with 3.00 locks (3 - 3), 0 non-locking traces\n"+
			"3 successful locks (100.00%), 0 failed attempts (0.00%)\n"+
			"Acquiring lock takes 8.33 us (5.00 - 10.00)\n"+
			"Lock is held for 60.00 us (30.00 - 90.00)\n")
}

// failingReader fails after n bytes.
type failingReader struct {
	r io.Reader
	n int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk on fire")
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

// TestFailedInput: an input that cannot be opened counts as finished and
// its error is reported. Every input is opened and read once: an input
// whose second read would fail (a file removed or cut during the merge)
// changes nothing, since the merging pass replays the spans the first
// pass read.
func TestFailedInput(t *testing.T) {
	ins := exampleInputs(t, "ex5") // A, B, C
	missing := Input{Name: "D.txt", Open: func() (io.ReadCloser, error) { return nil, errors.New("no such file") }}
	data := readFile(t, "testdata/examples/ex5/C.txt")
	opens := 0
	flaky := Input{Name: "C.txt", Open: func() (io.ReadCloser, error) {
		opens++
		if opens == 1 {
			return io.NopCloser(strings.NewReader(data)), nil
		}
		return io.NopCloser(&failingReader{r: strings.NewReader(data), n: len("3000000000=1700000000000\nSPAN;B|C|U0:3\n")}), nil
	}}
	whole := mergeInputs(t, ins)
	r := mergeInputs(t, []Input{ins[0], ins[1], flaky, missing})
	if opens != 1 {
		t.Errorf("C opened %d times, want once", opens)
	}
	if len(r.m.Errors) != 1 || !strings.Contains(r.m.Errors[0].Error(), "no such file") {
		t.Errorf("errors %v, want the missing file", r.m.Errors)
	}
	if r.m.IncompleteTraces != 0 || r.traces != whole.traces {
		t.Errorf("%d incomplete traces; traces:\n%s\nwant:\n%s", r.m.IncompleteTraces, r.traces, whole.traces)
	}
}

// TestInputFailsBothPasses: C fails right after its first span (in its
// one read; the merging pass replays the same spans and the same end). The first span still counts and merges, so the PUT trace comes
// out whole, but marked incomplete: the failed read may have cut more
// events of that span. C's second span (the GET trace) is lost; the error
// is reported once.
func TestInputFailsBothPasses(t *testing.T) {
	ins := exampleInputs(t, "ex5")
	data := readFile(t, "testdata/examples/ex5/C.txt")
	cut := strings.Index(data, "SPAN;null")
	broken := Input{Name: "C.txt", Open: func() (io.ReadCloser, error) {
		return io.NopCloser(&failingReader{r: strings.NewReader(data), n: cut}), nil
	}}
	r := mergeInputs(t, []Input{ins[0], ins[1], broken})
	if len(r.m.Errors) != 1 || !strings.Contains(r.m.Errors[0].Error(), "disk on fire") {
		t.Errorf("errors %v", r.m.Errors)
	}
	if len(r.list) != 1 || r.m.IncompleteTraces != 1 || len(r.list[0].Messages) != 2 || len(r.list[0].Events) != 25 {
		t.Errorf("%d traces, %d incomplete:\n%s", len(r.list), r.m.IncompleteTraces, r.traces)
	}
}

// TestProgress: the first pass reports the share of the inputs' bytes
// read from its first span on, rising to their total size; the merging
// pass then counts events up to the total the first pass counted.
func TestProgress(t *testing.T) {
	var ins []Input
	total := int64(0)
	for _, in := range genInputs(5, 50_000) {
		rc, err := in.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, BytesInput(in.Name, data))
		total += int64(len(data))
	}
	type call struct {
		pass        int
		done, total int64
	}
	var calls []call
	m, err := Merge(ins, &Options{Progress: func(pass int, done, total int64) { calls = append(calls, call{pass, done, total}) }},
		func(*Trace) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	var pass1, pass2 []call
	for _, c := range calls {
		if c.pass == 1 {
			pass1 = append(pass1, c)
		} else {
			pass2 = append(pass2, c)
		}
	}
	if len(pass1) < 10 || len(pass2) < 10 {
		t.Fatalf("%d calls in pass 1, %d in pass 2", len(pass1), len(pass2))
	}
	if first := pass1[0]; first.total != total || first.done >= total/2 {
		t.Errorf("first pass-1 call %+v, want a total of %d bytes and less than half read", first, total)
	}
	for i, c := range pass1 {
		if c.total != total || c.done > total || (i > 0 && c.done < pass1[i-1].done) {
			t.Fatalf("pass-1 call %d: %+v after %+v, total %d", i, c, pass1[max(i-1, 0)], total)
		}
	}
	if last := pass1[len(pass1)-1]; last.done < total*3/4 {
		t.Errorf("last pass-1 call %+v: most of the %d bytes unread", last, total)
	}
	if last := pass2[len(pass2)-1]; last.done != m.Events || last.total != m.Events {
		t.Errorf("last pass-2 call %+v, want %d of %d events", last, m.Events, m.Events)
	}
}
