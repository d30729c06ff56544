package recorder

import (
	"slices"
	"sync/atomic"

	"github.com/flightrec/flightrec/internal/batch"
)

// A lease keeps a flush's full buffers out of the pool after the flush is
// written, so that streams read the records in place rather than copy
// them (Stream.deliver): copying them was a third of a stream's work, a
// store of every byte into a chunk buffer larger than the caches and a
// load of it back (docs/perf/stream.md). The buffers go back to the pool
// when the flush's writer and every stream that borrowed them are done.
//
// A stream's handler that takes long holds them meanwhile, so a session
// lends one flush's buffers at a time (at most the third of the pool a
// flush holds; maxLeases): while they are out, streams copy the next
// flushes, as they did before, and the emitters have the rest of the
// pool, which grows (growPool) when they run short.
type lease struct {
	s    *batch.Session
	out  *atomic.Int32 // the session's leases out
	bufs []*batch.Buffer
	refs atomic.Int32
}

// maxLeases is how many flushes' buffers a session lends at a time.
const maxLeases = 1

// release drops a reference to l, and recycles its buffers with the last.
func (l *lease) release() {
	if l.refs.Add(-1) != 0 {
		return
	}
	for _, b := range l.bufs {
		l.s.Recycle(b)
	}
	clear(l.bufs)
	l.out.Add(-1)
}

// lend returns the lease of g's held buffers, with a reference for the
// caller to release, or nil if g has none or the session has lent as many
// as it may. Called by the chunk writer while it writes g, before reset.
func (g *gathered) lend() *lease {
	if g.lease == nil {
		if len(g.held) == 0 || g.session == nil || !takeLease(g.leases) {
			return nil
		}
		g.lease = &lease{s: g.session, out: g.leases, bufs: slices.Clone(g.held)}
		g.lease.refs.Store(1) // g's own, dropped by reset
	}
	g.lease.refs.Add(1)
	return g.lease
}

// takeLease counts a lease out of the session's, unless maxLeases are.
func takeLease(out *atomic.Int32) bool {
	for {
		n := out.Load()
		if n >= maxLeases {
			return false
		}
		if out.CompareAndSwap(n, n+1) {
			return true
		}
	}
}
