package batch

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"
)

// plainSink is where BenchmarkPublish/plain stores: a plain store, as the
// amd64 build published before (a data race under the Go memory model when
// the flusher loads it).
var plainSink uint64

// BenchmarkPublish isolates what publishing costs per event: each op
// writes a 16-byte record into the buffer as the emit path does and
// publishes the extent, with Commit's atomic store or with a plain one.
// Run the two side by side (-count, alternating) to see the difference.
func BenchmarkPublish(b *testing.B) {
	rec := []byte("0123456789abcdef")
	b.Run("atomic", func(b *testing.B) {
		buf := NewBuffer()
		for range b.N {
			if !buf.Fits(len(rec)) {
				buf.n = 0
			}
			copy(buf.Tail(), rec)
			buf.Commit(len(rec))
		}
	})
	b.Run("plain", func(b *testing.B) {
		buf := NewBuffer()
		for range b.N {
			if !buf.Fits(len(rec)) {
				buf.n = 0
			}
			copy(buf.Tail(), rec)
			buf.n += len(rec)
			plainSink = uint64(buf.n) | buf.counts
		}
	})
}

// TestResetEmptiesThreadSet checks that Reset, which clears only the
// slots of the goroutines a buffer listed, leaves the thread set empty,
// also when the goroutines' slots collide (values with the same home slot
// are placed one after the other), and that the buffer then takes the
// same goroutines again as new.
func TestResetEmptiesThreadSet(t *testing.T) {
	const mask = threadSetSize - 1
	// Values sharing home slots, in runs that overlap, and a few others.
	var colliding []uint64
	for v := uint64(1); len(colliding) < 200; v++ {
		if h := home(v, mask); h%512 < 3 {
			colliding = append(colliding, v)
		}
	}
	for _, n := range []int{1, 2, 50, 200, threadSetSize / 8, threadSetSize/8 + 1, threadLimit} {
		b := NewBuffer()
		for round := range 3 {
			vals := colliding
			if n > len(colliding) {
				vals = nil
				for v := uint64(1); len(vals) < n; v++ {
					vals = append(vals, v*7919+uint64(round))
				}
			}
			vals = vals[:min(n, len(vals))]
			for _, v := range vals {
				if !b.AddThread(v) {
					t.Fatalf("%d goroutines: AddThread(%d) found the set full", n, v)
				}
			}
			if b.nthreads != len(vals) {
				t.Fatalf("%d goroutines, round %d: %d listed, want %d (a value left from before Reset?)", n, round, b.nthreads, len(vals))
			}
			b.Reset()
			for i, v := range b.threadSet {
				if v != 0 {
					t.Fatalf("%d goroutines, round %d: slot %d holds %d after Reset", n, round, i, v)
				}
			}
		}
	}
}

// BenchmarkReset is the flusher's cost to recycle a buffer whose events
// came from one goroutine.
func BenchmarkReset(b *testing.B) {
	buf := NewBuffer()
	for range b.N {
		buf.AddThread(1)
		buf.Reset()
	}
}

// TestThreadTail checks the goroutine's varint the emit path stores
// whole: the reader must find the goroutine id and then the key 0.
func TestThreadTail(t *testing.T) {
	b := NewBuffer()
	for _, g := range []uint64{1, 127, 128, 300, 1<<14 - 1, 1 << 14, 1<<42 + 5, 1<<49 - 1, 1 << 49, 1<<56 - 1, 1 << 56, 1<<64 - 1} {
		if !b.AddThread(g) {
			t.Fatalf("AddThread(%d) refused", g)
		}
		w, n := b.ThreadTail()
		want := binary.AppendUvarint(nil, g)
		if len(want) > 7 {
			if n != 0 {
				t.Errorf("goroutine %d (%d bytes): ThreadTail says %d bytes, want 0 (not a word)", g, len(want), n)
			}
			continue
		}
		want = append(want, 0)
		got := binary.LittleEndian.AppendUint64(nil, w)[:n]
		if !bytes.Equal(got, want) {
			t.Errorf("goroutine %d: ThreadTail % x, want % x", g, got, want)
		}
	}
	b.Reset()
	if _, n := b.ThreadTail(); n != 0 {
		t.Errorf("after Reset, ThreadTail says %d bytes, want 0", n)
	}
}

// TestSlack stores a word at the last byte of a full buffer, as the emit
// path may, and checks that the buffer's goroutines are intact.
func TestSlack(t *testing.T) {
	b := NewBuffer()
	b.AddThread(77)
	b.Commit(BufferSize - 1)
	binary.LittleEndian.PutUint64(unsafe.Slice((*byte)(b.Free()), 8), ^uint64(0))
	b.Commit(1)
	if got := b.Take().Threads; len(got) != 1 || got[0] != 77 {
		t.Fatalf("threads after a word stored at the buffer's end: %v, want [77]", got)
	}
}
