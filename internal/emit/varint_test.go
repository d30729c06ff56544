package emit

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/flightrec/flightrec/internal/leb128"
)

// TestPutVarint checks the emit path's varint writers against the leb128
// package's encoder and decoder, at each length's bounds: putVarint's two
// loops meet at 2^56, where JFR's 9-byte form begins.
func TestPutVarint(t *testing.T) {
	vals := []uint64{0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 1<<56 - 1, 1 << 56, 1<<56 + 1, 1<<63 - 1, 1 << 63, 1<<63 + 5, math.MaxUint64}
	for n := 1; n < 64; n++ {
		vals = append(vals, 1<<n-1, 1<<n)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		vals = append(vals, r.Uint64()>>r.IntN(64))
	}
	for _, v := range vals {
		want := leb128.AppendUvarint(nil, v)
		var buf [16]byte
		n := putVarint(unsafe.Pointer(&buf), 3, v) - 3
		if got := buf[3 : 3+n]; !bytes.Equal(got, want) {
			t.Fatalf("putVarint(%#x) = % x, want % x", v, got, want)
		}
		if got, m := leb128.Uvarint(buf[3:]); got != v || m != n {
			t.Fatalf("putVarint(%#x) reads back as %#x in %d bytes, want %d", v, got, m, n)
		}
		if v >= 1<<56 {
			continue
		}
		buf = [16]byte{}
		if m := putUvarint(unsafe.Pointer(&buf), 3, v) - 3; !bytes.Equal(buf[3:3+m], want) {
			t.Fatalf("putUvarint(%#x) = % x, want % x", v, buf[3:3+m], want)
		}
	}
}
