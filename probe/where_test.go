//go:build linux

package probe

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func whereCall(n int64, s string, r0 int64, d time.Duration) *Call {
	pn := &Param{Name: "n", words: []word{{kind: wordInt, size: 8}}, str: -1}
	ps := &Param{Name: "s", isString: true, str: 0}
	pr := &Param{Name: "~r0", Result: true, words: []word{{kind: wordInt, size: 8}}, str: -1}
	start := time.Unix(100, 0)
	return &Call{Start: start, End: start.Add(d),
		Args:    []Value{{Param: pn, Int: n}, {Param: ps, Str: s}},
		Results: []Value{{Param: pr, Int: r0}}}
}

func TestWhereEval(t *testing.T) {
	names := map[string]bool{"n": true, "s": true, "~r0": true}
	for _, c := range []struct {
		expr string
		call *Call
		want bool
	}{
		{"duration > 2ms && n % 7 == 3", whereCall(10, "", 0, 3*time.Millisecond), true},
		{"duration > 2ms && n % 7 == 3", whereCall(10, "", 0, time.Millisecond), false},
		{"duration > 2ms && n % 7 == 3", whereCall(11, "", 0, 3*time.Millisecond), false},
		{`s == "abc" || !(n < 0)`, whereCall(-1, "abc", 0, 0), true},
		{`s == "abc" || !(n < 0)`, whereCall(-1, "ab", 0, 0), false},
		{"~r0 == n * 2 + 1", whereCall(4, "", 9, 0), true},
		{"-n > 3 - 10 / 2", whereCall(-3, "", 0, 0), true},
		{"duration >= 1.5us", whereCall(0, "", 0, 1500*time.Nanosecond), true},
		{"duration < 1µs", whereCall(0, "", 0, 999), true},
		{"n / 0 == 1", whereCall(1, "", 0, 0), false},   // an error does not match
		{`n == "x"`, whereCall(1, "", 0, 0), false},     // nor a type mismatch
		{"n * 1.5 > 4.4", whereCall(3, "", 0, 0), true}, // ints widen to floats
		{"true && n == 0x10", whereCall(16, "", 0, 0), true},
	} {
		w, err := ParseWhere(c.expr, names)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		if got := w.Match(c.call); got != c.want {
			t.Errorf("%s on n=%d: %v, want %v", c.expr, c.call.Args[0].Int, got, c.want)
		}
	}
}

func TestWhereErrors(t *testing.T) {
	names := map[string]bool{"n": true}
	for expr, pos := range map[string]int{
		"n % == 3":       4,
		"n > 3 &&":       8,
		"x > 3":          0,
		"(n > 3":         6,
		`n == "abc`:      5,
		"n > 3 $ 4":      6,
		"duration > 2xs": 11,
		"n > 3 4":        6,
	} {
		_, err := ParseWhere(expr, names)
		var we *WhereError
		if !errors.As(err, &we) || we.Pos != pos {
			t.Errorf("%q: %v, want an error at offset %d", expr, err, pos)
		}
	}
}

// TestWhereFilters keeps the calls of main.work(n, s) with n%3 == 0,
// judged on an argument and a result.
func TestWhereFilters(t *testing.T) {
	needProbes(t)
	tg := startTarget(t, buildTarget(t, ""), "work", "2", "3000")
	sums, calls, s := probeRun(t, tg, Options{Funcs: []string{"main.work"}, Where: `n % 3 == 0 && ~r1 == "abc!" && duration > 0`})
	if sums[0].Calls != 2000 || len(calls) != 2000 || sums[0].Durations.N != 2000 || len(sums[0].Goroutines) != 2 {
		t.Fatalf("%d calls, %d records, %d durations kept; want 2000", sums[0].Calls, len(calls), sums[0].Durations.N)
	}
	for _, c := range calls {
		if c.Args[0].Int%3 != 0 {
			t.Fatalf("kept work(%d)", c.Args[0].Int)
		}
	}
	// The integer conjuncts ran in the kernel: only matching records
	// crossed; the string comparison ran in user space.
	p := s.Probes[0]
	if p.KernelWhere != "((n % 3) == 0) && (duration > 0)" || p.Received() != 2000 {
		t.Errorf("kernel part %q, %d records received", p.KernelWhere, p.Received())
	}
}

// TestWhereKernelArithmetic checks signed arithmetic, division and modulo
// compiled for the kernel against Go's on the same values.
func TestWhereKernelArithmetic(t *testing.T) {
	needProbes(t)
	const n = 400
	expr := "(n * 7 - 1000) / 3 % 5 == -1 || -n > -3 || !(~r0 != 799)"
	tg := startTarget(t, buildTarget(t, ""), "work", "1", fmt.Sprint(n))
	sums, calls, s := probeRun(t, tg, Options{Funcs: []string{"main.work"}, Where: expr})
	want := map[int64]bool{}
	for i := int64(0); i < n; i++ {
		r0 := i + 3
		if i%3 == 0 {
			r0 = 2 * i
		}
		if (i*7-1000)/3%5 == -1 || -i > -3 || !(r0 != 799) {
			want[i] = true
		}
	}
	got := map[int64]bool{}
	for _, c := range calls {
		got[c.Args[0].Int] = true
	}
	if len(got) != len(want) || sums[0].Calls != uint64(len(want)) {
		t.Fatalf("%d calls kept, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i] {
			t.Errorf("work(%d) not kept", i)
		}
	}
	if p := s.Probes[0]; p.KernelWhere == "" || p.Received() != uint64(len(want)) {
		t.Errorf("kernel part %q, %d records received, want %d", p.KernelWhere, p.Received(), len(want))
	}
}
