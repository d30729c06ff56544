package batch

import "testing"

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
