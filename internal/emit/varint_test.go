package emit

import (
	"math"
	"testing"
	"unsafe"

	"github.com/flightrec/flightrec/internal/leb128"
)

// TestSpread checks spread's word against putVarint's bytes, and that the
// reader decodes both, at every length from 1 to 8 bytes and its edges.
func TestSpread(t *testing.T) {
	var vs []uint64
	for bits := 0; bits <= 56; bits++ {
		top := uint64(1)<<bits - 1
		vs = append(vs, top, top>>1|1<<max(bits-1, 0), 0x5555555555555555&top)
	}
	for _, v := range vs {
		if v >= 1<<56 {
			continue
		}
		var want, got [16]byte
		n := putVarint(unsafe.Pointer(&want), 0, v)
		x, m := spread(v)
		for k := range 8 {
			got[k] = byte(x >> (8 * k))
		}
		if m != n || got != want {
			t.Fatalf("spread(%#x) = % x (%d bytes), putVarint wrote % x (%d bytes)", v, got[:8], m, want[:8], n)
		}
		if r, k := leb128.Uvarint(got[:m]); r != v || k != m {
			t.Fatalf("spread(%#x) reads back as %#x (%d bytes)", v, r, k)
		}
	}
	if _, n := spread(math.MaxUint64 >> 8); n != 8 {
		t.Fatalf("spread(2^56-1) takes %d bytes, want 8", n)
	}
}
