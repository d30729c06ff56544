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
