package jfrtool

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flightrec/flightrec/jfr"
)

func TestSortByEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func(i int) int64{
		"random":     func(int) int64 { return rng.Int64N(1 << 40) },
		"few values": func(int) int64 { return rng.Int64N(4) },
		"negative":   func(int) int64 { return rng.Int64() - math.MaxInt64/2 },
		"extremes": func(i int) int64 {
			if i%2 == 0 {
				return math.MinInt64
			}
			return math.MaxInt64
		},
		"sorted": func(i int) int64 { return int64(i) * 1000 },
		"equal":  func(int) int64 { return 7 },
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, 3, 100, 5000} {
			recs := make([]sortRec, n)
			for i := range recs {
				recs[i] = sortRec{end: gen(i), rec: jfr.Record{Offset: int64(i)}}
			}
			want := slices.Clone(recs)
			slices.SortStableFunc(want, func(a, b sortRec) int { return cmp.Compare(a.end, b.end) })
			got, _ := sortByEnd(slices.Clone(recs), nil)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, %d records: not the stable order", name, n)
			}
		}
	}
}
