// Package batch holds what the emit path and the recorder share: the
// registry of event type descriptors (with their live settings), the
// fixed-size per-P buffers events are encoded into, and the session that
// hands full buffers to the recorder's flusher.
//
// A buffer carries, besides the encoded event records, the sets of
// goroutine ids and stack traces its events refer to, so the flusher can
// write each chunk's constant pools without decoding the events
// (deduplication per buffer on the hot path, per chunk at the flusher).
//
// Each per-P slot is guarded by a word taken with one CAS and released
// with one store: the owning P takes it on every event (uncontended), the
// flusher takes it to swap a partly filled buffer out at each flush. No
// mutex is held and nothing is allocated on the emit path; when no empty
// buffer is available the event is dropped and counted.
package batch
