package flow

import (
	"slices"
	"testing"
)

// TestEstimateOffsets works the estimator by hand (µs).
//
// A <-> B: the fastest A->B copy took 300 and B->A 500, B's clock is 2000
// ahead: d(A,B) = 300 + 2000 = 2300, d(B,A) = 500 - 2000 = -1500;
// offset(B) = (2300 + 1500) / 2 = 1900 (100 short of the true 2000: half
// the asymmetry, invisible to one-way times).
//
// B -> C only, and C's receipts read 4000 before B's sends: d(B,C) =
// -4000. C keeps its clock unless a constraint is violated: offset(C) -
// offset(B) <= -4000, so offset(C) = 1900 - 4000 = -2100; the fastest B->C
// copy then takes exactly 0 after correction.
//
// D is alone: offset 0.
func TestEstimateOffsets(t *testing.T) {
	const us = 1000
	n := 4
	d := make([]int64, n*n)
	for i := range d {
		d[i] = noDelay
	}
	d[0*n+1], d[1*n+0], d[1*n+2] = 2300*us, -1500*us, -4000*us
	off, bad := estimateOffsets(n, d, []int{0, 1, 2, 3})
	if want := []int64{0, 1900 * us, -2100 * us, 0}; !slices.Equal(off, want) || bad != 0 {
		t.Errorf("offsets %v, %d inconsistent; want %v, 0", off, bad, want)
	}
	// A receipt 1 µs before its send both ways: a negative round trip that
	// no offsets explain.
	d = []int64{noDelay, -us, -us, noDelay}
	if _, bad := estimateOffsets(2, d, []int{0, 1}); bad != 1 {
		t.Errorf("%d inconsistencies, want 1", bad)
	}
	// A -> B only, B's receipts read 10 µs before A's sends: B moves 10 µs
	// later (offset -10 µs), no more.
	d = []int64{noDelay, -10 * us, noDelay, noDelay}
	off, bad = estimateOffsets(2, d, []int{0, 1})
	if off[1] != -10*us || bad != 0 {
		t.Errorf("one-way: offsets %v, %d inconsistent", off, bad)
	}
}
