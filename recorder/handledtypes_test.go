package recorder

import (
	"math/rand/v2"
	"testing"

	"github.com/flightrec/flightrec/internal/leb128"
)

// records returns records end to end of the given type ids and payload
// sizes (one-byte headers unless a size or id takes more).
func records(types []uint64, payloads []int) []byte {
	var b []byte
	for i, typ := range types {
		body := leb128.AppendUvarint(nil, typ)
		body = append(body, make([]byte, payloads[i])...)
		size := uint64(len(body) + 1)
		if size >= 0x80 {
			size++
		}
		b = append(leb128.AppendUvarint(b, size), body...)
	}
	return b
}

// TestHandledTypesIn checks the walk of a flush's records for a type
// with handlers (handledTypes.in), by which deliver leaves out the
// records of a flush with none: a handled record is found after rows of
// one header, after a new size, among records of sizes in random order,
// after a record of a two-byte size and by a two-byte type id; records
// of other types only are not, and records it cannot walk count as found.
func TestHandledTypesIn(t *testing.T) {
	h := handledTypes{byID: make([]bool, 300)}
	h.byID[9], h.byID[200] = true, true
	rng := rand.New(rand.NewPCG(5, 6))
	row := func(n int, typ uint64, payload func() int) ([]uint64, []int) {
		var types []uint64
		var sizes []int
		for range n {
			types, sizes = append(types, typ), append(sizes, payload())
		}
		return types, sizes
	}
	fixed := func() int { return 12 }
	random := func() int { return 10 + rng.IntN(3) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	rowOf := func(n int, typ uint64, payload func() int) []byte { return records(row(n, typ, payload)) }
	for _, c := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"one size, unhandled", rowOf(1000, 7, fixed), false},
		{"one size, then handled of the same size", cat(rowOf(1000, 7, fixed), rowOf(1, 9, fixed)), true},
		{"one size, a new size, handled", cat(rowOf(500, 7, fixed), rowOf(500, 7, func() int { return 20 }), rowOf(1, 9, fixed)), true},
		{"random sizes, unhandled", rowOf(1000, 7, random), false},
		{"random sizes, then handled", cat(rowOf(1000, 7, random), rowOf(1, 9, random)), true},
		{"handled in a two-byte type id", cat(rowOf(100, 7, fixed), rowOf(1, 200, fixed)), true},
		{"a two-byte size among one size", cat(rowOf(100, 7, fixed), rowOf(1, 7, func() int { return 200 }), rowOf(100, 7, fixed)), false},
		{"handled after a two-byte size", cat(rowOf(100, 7, fixed), rowOf(1, 7, func() int { return 200 }), rowOf(100, 7, fixed), rowOf(1, 9, fixed)), true},
		{"cut short in a row of one size", rowOf(100, 7, fixed)[:100*14-3], true},
	} {
		if got := h.in(c.b); got != c.want {
			t.Errorf("%s: in = %v, want %v", c.name, got, c.want)
		}
	}
}

// BenchmarkHandledTypesIn walks 64 K records of a type without handlers,
// as a stream's deliver does for a flush with no handled events: "fixed"
// of one size, "random" of three sizes in random order.
func BenchmarkHandledTypesIn(b *testing.B) {
	h := handledTypes{byID: make([]bool, 10)}
	h.byID[9] = true
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		name    string
		payload func() int
	}{{"fixed", func() int { return 12 }}, {"random", func() int { return 10 + rng.IntN(3) }}} {
		const n = 1 << 16
		types, sizes := make([]uint64, n), make([]int, n)
		for i := range n {
			types[i], sizes[i] = 7, c.payload()
		}
		recs := records(types, sizes)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if h.in(recs) {
					b.Fatal("a handled type found")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}
