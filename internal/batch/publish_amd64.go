//go:build amd64 && !race && !purego

package batch

// publish stores v at p with release order: a plain MOV, which x86 keeps
// after every earlier store, so the flusher that loads v sees the bytes
// written before it. It is in assembly because sync/atomic's Store is an
// XCHG, a full fence costing ten times as much, and the compiler keeps
// every store before a call.
//
//go:noescape
func publish(p *uint64, v uint64)
