package view

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortByTime: events come out by time, ties by index, as a plain sort
// through the time column orders them; sorted input stays as it is.
func TestSortByTime(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 100, 5000} {
		ts := make([]int64, n)
		for i := range ts {
			ts[i] = r.Int64N(int64(n/4 + 1)) // many ties
		}
		events := make([]int32, n)
		for i := range events {
			events[i] = int32(i)
		}
		r.Shuffle(n, func(i, j int) { events[i], events[j] = events[j], events[i] })
		want := slices.Clone(events)
		slices.SortFunc(want, func(a, b int32) int { return cmp.Or(cmp.Compare(ts[a], ts[b]), cmp.Compare(a, b)) })
		sortByTime(events, ts)
		if !slices.Equal(events, want) {
			t.Fatalf("n=%d: sorted %v, want %v", n, events[:min(n, 10)], want[:min(n, 10)])
		}
		sortByTime(events, ts)
		if !slices.Equal(events, want) {
			t.Fatalf("n=%d: a sorted input changed", n)
		}
	}
}
