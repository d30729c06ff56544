package recorder

import (
	"bytes"
	"testing"
	"time"
	"unsafe"
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

// TestRingReusesMemory checks that a full ring takes each new chunk's
// memory from the chunk it drops, when chunks are cut at the cut size
// after flushpoints of varying sizes, as a busy recording's are: each
// fresh chunk is memory the flusher faults in and zeroes, about half of
// the flusher's time beside a tight emit loop (BenchmarkFlightrec/enabled
// showed it as 5-7 B/op).
func TestRingReusesMemory(t *testing.T) {
	const cut = 256 << 10
	r := &Recording{cfg: config{ring: true, maxSize: 4 * cut, maxChunkSize: cut}}
	hdr := []byte{1, 2, 3, 4}
	end := time.Now()
	// Flushpoints of up to a third of the cut size (as behind a tight emit
	// loop: a third of the buffers, 3-4.5 MB against 12 MB chunks), in an
	// order that repeats only every few chunks, so that chunks end at
	// different sizes past the cut.
	sizes := []int{85 << 10, 5 << 10, 70 << 10, 40 << 10, 85 << 10, 12 << 10, 60 << 10, 85 << 10, 30 << 10}
	parts := make([][]byte, len(sizes))
	for i, n := range sizes {
		parts[i] = bytes.Repeat([]byte{byte(i)}, n)
	}
	next := 0
	chunk := func() {
		for size := 0; size < cut; next++ {
			size += ringAddPart(r, size == 0, parts[next%len(parts)], hdr, end)
		}
	}
	for range 6 { // fill the ring
		chunk()
	}
	// From here on every chunk's bytes must be memory the ring had: the
	// arrays of its chunks and its spare, and the list of chunks its own.
	// (Checked by address rather than by counting allocations, which
	// other goroutines of the test binary would disturb.)
	known := ringMemory(r)
	list := unsafe.SliceData(r.chunks)
	for i := range 30 {
		chunk()
		for _, c := range r.chunks {
			if !known[unsafe.SliceData(c.data)] {
				t.Fatalf("chunk %d after the ring filled: a chunk in fresh memory (cap %d; the ring's have %v)", i, cap(c.data), capsOf(r.chunks))
			}
		}
		if unsafe.SliceData(r.chunks) != list {
			t.Fatalf("chunk %d after the ring filled: the list of chunks was reallocated", i)
		}
	}
	if got := r.ringSize(); got > r.cfg.maxSize {
		t.Fatalf("ring holds %d bytes, more than its %d", got, r.cfg.maxSize)
	}
}

// ringAddPart adds to r a segment of part, the first of a chunk (after 4
// bytes of header) if first, and returns its size.
func ringAddPart(r *Recording, first bool, part, hdr []byte, end time.Time) int {
	seg := segment{first: first, parts: [][]byte{part}, header: hdr}
	if first {
		seg.parts = [][]byte{{0, 0, 0, 0}, part}
	}
	r.ringAdd(seg, end)
	return int(seg.size())
}

// ringMemory returns the arrays r holds: its chunks' and its spare's.
func ringMemory(r *Recording) map[*byte]bool {
	known := map[*byte]bool{}
	if cap(r.spare) > 0 {
		known[unsafe.SliceData(r.spare)] = true
	}
	for _, c := range r.chunks {
		known[unsafe.SliceData(c.data)] = true
	}
	return known
}

func capsOf(chunks []ringChunk) []int {
	var caps []int
	for _, c := range chunks {
		caps = append(caps, cap(c.data))
	}
	return caps
}

// TestRingReusesMemoryAfterCuts checks that a full ring whose chunks are
// cut short now and then (a recording or a stream started or stopped cuts
// the chunk being written) still takes each new chunk's memory from
// memory it has, and holds at most about twice its bytes. Before, the
// chunk after a cut was sized like the short one and regrew into fresh
// memory: BenchmarkStream's ring allocated 1.3 GB in 16 ops.
func TestRingReusesMemoryAfterCuts(t *testing.T) {
	const cut = 1 << 20
	r := &Recording{cfg: config{ring: true, maxSize: 6 * cut, maxChunkSize: cut}}
	hdr := []byte{1, 2, 3, 4}
	end := time.Now()
	part := bytes.Repeat([]byte{5}, cut/4)
	short := bytes.Repeat([]byte{6}, 20<<10)
	// chunk adds a chunk of flushpoints of part's size up to the cut size,
	// or, if cutShort, one of short's.
	chunk := func(cutShort bool) {
		if cutShort {
			ringAddPart(r, true, short, hdr, end)
			return
		}
		for size := 0; size < cut; {
			size += ringAddPart(r, size == 0, part, hdr, end)
		}
	}
	// pattern: two full chunks, then a short one, as streams come and go.
	pattern := func(i int) bool { return i%3 == 2 }
	for i := range 12 { // fill the ring
		chunk(pattern(i))
	}
	known := ringMemory(r)
	for i := range 30 {
		chunk(pattern(i))
		for j, c := range r.chunks[:len(r.chunks)-1] {
			// A short chunk's bytes may move to memory of their size.
			if len(c.data) > len(short)+8 && !known[unsafe.SliceData(c.data)] {
				t.Fatalf("chunk %d after the ring filled: chunk %d (%d bytes) in fresh memory (cap %d; the ring's have %v)", i, j, len(c.data), cap(c.data), capsOf(r.chunks))
			}
			if cap(c.data) > 2*len(c.data)+minReclaim {
				t.Fatalf("chunk %d after the ring filled: a complete chunk of %d bytes holds %d", i, len(c.data), cap(c.data))
			}
		}
		if c := r.chunks[len(r.chunks)-1]; !known[unsafe.SliceData(c.data)] {
			t.Fatalf("chunk %d after the ring filled: the new chunk in fresh memory (cap %d; the ring's have %v)", i, cap(c.data), capsOf(r.chunks))
		}
	}
	if got := r.ringSize(); got > r.cfg.maxSize {
		t.Fatalf("ring holds %d bytes, more than its %d", got, r.cfg.maxSize)
	}
}
