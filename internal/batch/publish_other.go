//go:build !amd64 || race || purego

package batch

import "sync/atomic"

// publish stores v at p with release order. Under the race detector this
// atomic store is also what tells it that the flusher's reads of the bytes
// written before are ordered after them.
func publish(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
