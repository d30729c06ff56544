// Package pin gives the caller exclusive use of one of Shards() slots for
// the time between Pin and Unpin, so per-P buffers need no lock.
//
// The default build links runtime.procPin/procUnpin (what sync.Pool uses):
// the goroutine is not preempted while pinned and the slot is its P's id.
// User code has no supported way to reach them; the runtime keeps them
// linkable for existing users ("hall of shame", go.dev/issue/67401). Build
// with -tags flightrec_nolinkname for the portable fallback: slots are
// sharded by an address on the goroutine's stack and taken with a CAS,
// trying the next slot when one is busy. Race-detector builds use the
// fallback too: the detector does not know that procPin excludes the other
// goroutines of a P, and the CAS tells it.
//
// Pinned code must be short and must not block.
package pin
