package emit

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/leb128"
)

// TestPutVarint checks both encoders against leb128's at every length,
// from 1 byte to the 9-byte form, and that each writes only what it says
// plus, for putVarintWide, garbage within 8 bytes of the value's start.
func TestPutVarint(t *testing.T) {
	vals := []uint64{0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 1<<56 - 1, 1 << 56, 1<<63 - 1, 1 << 63, math.MaxUint64}
	for l := 1; l <= 64; l++ {
		vals = append(vals, 1<<(l-1), 1<<(l-1)|rand.Uint64N(1<<(l-1)))
	}
	for _, v := range vals {
		want := leb128.AppendUvarint(nil, v)
		for name, put := range map[string]func(unsafe.Pointer, int, uint64) int{"putVarint": putVarint, "putVarintWide": putVarintWide} {
			buf := bytes.Repeat([]byte{0xee}, 32)
			n := put(unsafe.Pointer(&buf[0]), 3, v)
			if got := buf[3:n]; !bytes.Equal(got, want) {
				t.Errorf("%s(%#x) = % x, want % x", name, v, got, want)
			}
			if !bytes.Equal(buf[:3], []byte{0xee, 0xee, 0xee}) || !bytes.Equal(buf[3+max(8, len(want)):], bytes.Repeat([]byte{0xee}, 32-3-max(8, len(want)))) {
				t.Errorf("%s(%#x) wrote outside its bytes: % x", name, v, buf)
			}
		}
	}
}

// TestWideAtBufferEnd writes a 2-byte timestamp at a buffer's last byte
// but one: the store's other 6 bytes land in the buffer's slack, not in
// what follows it.
func TestWideAtBufferEnd(t *testing.T) {
	b := batch.NewBuffer()
	if !b.Fits(batch.BufferSize) || !b.AddThread(42) {
		t.Fatal("a new buffer is not empty")
	}
	before := *b
	end := unsafe.Add(b.Free(), batch.BufferSize-2)
	if n := putVarintWide(end, 0, 0x3fff); n != 2 {
		t.Fatalf("putVarintWide(0x3fff) took %d bytes, want 2", n)
	}
	after := *b
	if got := unsafe.Slice((*byte)(end), 2); !bytes.Equal(got, []byte{0xff, 0x7f}) {
		t.Errorf("wrote % x, want ff 7f", got)
	}
	// Only the value's 2 bytes and the slack after data changed.
	lo := uintptr(end) - uintptr(unsafe.Pointer(b))
	bb, ab := unsafe.Slice((*byte)(unsafe.Pointer(&before)), unsafe.Sizeof(before)), unsafe.Slice((*byte)(unsafe.Pointer(&after)), unsafe.Sizeof(after))
	for i := range bb {
		if bb[i] != ab[i] && (uintptr(i) < lo || uintptr(i) >= lo+2+batch.Slack) {
			t.Fatalf("byte %d of the buffer changed: the value's 2 bytes are at %d, then %d bytes of slack", i, lo, batch.Slack)
		}
	}
}
