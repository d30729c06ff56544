package recorder

import (
	"bytes"
	"testing"
	"time"
)

// TestRingAddGrowth checks that ringAdd keeps a ring chunk's bytes as
// delivered, header last, and that a chunk the size of the previous one
// takes its flushpoints without regrowing: the flusher copied each 16 MB
// chunk several times over as append grew it by a quarter at a time,
// and fell behind the emitters (BenchmarkEmit/enabled dropped events).
func TestRingAddGrowth(t *testing.T) {
	r := &Recording{cfg: config{ring: true, maxChunkSize: 256 << 10}}
	part := bytes.Repeat([]byte{7}, 4<<10)
	hdr := []byte{1, 2, 3, 4}
	firstSeg := segment{first: true, parts: [][]byte{{0, 0, 0, 0}, part}, header: hdr}
	nextSeg := segment{parts: [][]byte{part}, header: hdr}
	end := time.Now()
	deliver := func(first bool) {
		if first {
			r.ringAdd(firstSeg, end)
		} else {
			r.ringAdd(nextSeg, end)
		}
	}
	for chunk := range 3 {
		deliver(true)
		for range 63 {
			deliver(false)
		}
		c := r.chunks[len(r.chunks)-1].data
		if want := 4 + 64*len(part); len(c) != want {
			t.Fatalf("chunk %d: %d bytes, want %d", chunk, len(c), want)
		}
		if !bytes.Equal(c[:4], []byte{1, 2, 3, 4}) || !bytes.Equal(c[4:4+len(part)], part) || c[len(c)-1] != 7 {
			t.Fatalf("chunk %d: bytes not as delivered", chunk)
		}
	}
	// Each next chunk is sized like the last (no limit on the ring, so no
	// dropped chunk's memory to reuse): one allocation per chunk.
	if n := testing.AllocsPerRun(5, func() {
		deliver(true)
		for range 63 {
			deliver(false)
		}
	}); n != 1 {
		t.Fatalf("%v allocations per chunk of 64 flushpoints, want 1", n)
	}
}
