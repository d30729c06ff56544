// Package batch holds what the emit path and the recorder share: the
// registry of event type descriptors (with their live settings), the
// fixed-size per-P buffers events are encoded into, and the session that
// hands full buffers to the recorder's flusher.
//
// A buffer carries, besides the encoded event records, the goroutines,
// stack traces, pooled strings and functions its events refer to, so the
// flusher can write each chunk's constant pools without decoding the
// events (deduplication per buffer on the hot path, per chunk at the
// flusher).
//
// A buffer has one writer, the goroutine pinned to its P, and no lock:
// after each event the writer publishes how much is complete with one
// atomic store, and the flusher may take that much at any time (at a chunk
// cut) while the writer fills the rest; a full buffer is handed off
// through a channel and holds no more writes. Buffer's comment sets the
// protocol out. Nothing is allocated and
// nothing blocks on the emit path; when no empty buffer is available the
// event is dropped and counted.
package batch
