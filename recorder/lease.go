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
// flush holds): while they are out, streams copy the next flushes, as
// they did before, and the emitters have the rest of the pool, which
// grows (growPool) when they run short.
type lease struct {
	s    *batch.Session
	out  *atomic.Bool // the session has a lease out
	bufs []*batch.Buffer
	refs atomic.Int32
}

// release drops a reference to l, and recycles its buffers with the last.
func (l *lease) release() {
	if l.refs.Add(-1) != 0 {
		return
	}
	for _, b := range l.bufs {
		l.s.Recycle(b)
	}
	clear(l.bufs)
	l.out.Store(false)
}

// lend returns the lease of g's held buffers, with a reference for the
// caller to release, or nil if g has none or the session has another
// lease out. Called by the chunk writer while it writes g, before reset.
func (g *gathered) lend() *lease {
	if g.lease == nil {
		if len(g.held) == 0 || !g.leaseOut.CompareAndSwap(false, true) {
			return nil
		}
		g.lease = &lease{s: g.session, out: g.leaseOut, bufs: slices.Clone(g.held)}
		g.lease.refs.Store(1) // g's own, dropped by reset
	}
	g.lease.refs.Add(1)
	return g.lease
}
