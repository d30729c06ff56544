package batch

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/flightrec/flightrec/internal/pin"
	"github.com/flightrec/flightrec/internal/stack"
)

// slots holds each P's buffer. It is global, sized once for every P id
// pin may return, so the emit path finds its buffer in two dependent
// loads (the slot, the buffer) rather than four through the session. One
// session at a time installs buffers in it.
var slots = make([]Slot, max(256, pin.Shards()))

// Current returns P id's buffer, or nil if it has none (or id is out of
// range: GOMAXPROCS grew past what the slots were sized for). The caller
// is pinned to P id.
func Current(id int) *Buffer {
	if uint(id) < uint(len(slots)) {
		return slots[id].buf.Load()
	}
	return nil
}

// Session connects the emit path to one running recorder.
type Session struct {
	// free holds the buffers not in use, up to the session's first
	// count; reserve those that Grow added beyond it, which Swap takes
	// only when free is empty. So the buffers in use stay the few that
	// were used last, warm in the caches, and a grown pool is slack
	// that costs nothing until it is needed (taken in turn with the
	// rest, and with the flusher's limits grown with the pool, four
	// times the buffers dropped two tight loops' events 2-10% where the
	// first count dropped 0-2%). Full has room for every buffer.
	free    chan *Buffer
	reserve chan *Buffer
	// buffers counts the buffers allocated; lowFree is the fewest free
	// ones Swap saw since the flusher last looked (LowFree).
	buffers atomic.Int32
	lowFree atomic.Int32
	// base is how many buffers the session began with: the flusher's
	// limits and Behind are fractions of it, so what Grow adds is slack
	// for the emitters, not bigger flushes.
	base int
	// Full receives buffers that filled up. The flusher drains it when
	// Wake signals and at every flushpoint (at least once a second), not
	// on every buffer: waking it costs the writer a futex call, about
	// 10 us in this VM, which once per buffer measured 1.5 ns per event.
	// Swap signals Wake once wakeAt buffers wait, or when the free ones
	// run low.
	Full   chan *Buffer
	Wake   chan struct{}
	wakeAt int

	DroppedEvents atomic.Uint64
	DroppedBytes  atomic.Uint64

	// stacks numbers the session's stack traces; stacksMu serialises
	// its renewal (RenewStacks).
	stacks          atomic.Pointer[stackIDs]
	stacksMu        sync.Mutex
	stacksExhausted atomic.Bool
}

// NewSession allocates n buffers, and may grow to limit (Grow).
func NewSession(n, limit int) *Session {
	limit = max(n, limit)
	s := &Session{
		free:    make(chan *Buffer, n),
		reserve: make(chan *Buffer, limit-n),
		Full:    make(chan *Buffer, limit),
		Wake:    make(chan struct{}, 1),
		wakeAt:  max(1, n/16),
		base:    n,
	}
	for range n {
		s.free <- NewBuffer()
	}
	s.stacks.Store(newStackIDs(minStackSlots, 0))
	s.buffers.Store(int32(n))
	s.lowFree.Store(int32(n))
	return s
}

// Grow allocates up to n more buffers, as many as the session's limit
// leaves room for, and returns how many it added. The flusher grows the
// pool when it finds it ran low while it waited to run: the emit path
// never allocates. It may be called pinned, as sync.Pool allocates
// pinned: the runtime neither starts nor assists a GC cycle from the
// allocation of a goroutine that holds its P.
func (s *Session) Grow(n int) int {
	n = max(0, min(n, cap(s.free)+cap(s.reserve)-s.Buffers()))
	for range n {
		// Into the reserve, where they stay untouched until needed; n
		// leaves it room, as the buffers beyond the first count are
		// there or in use.
		s.reserve <- NewBuffer()
	}
	s.buffers.Add(int32(n))
	// What was free since LowFree last looked was short of these.
	s.lowFree.Add(int32(n))
	return n
}

// LowFree returns the fewest buffers that were free when Swap took one
// since the last call (or since the session began), and starts counting
// again from those free now.
func (s *Session) LowFree() int {
	return int(s.lowFree.Swap(int32(s.freeCount())))
}

// freeCount is how many buffers are free.
func (s *Session) freeCount() int { return len(s.free) + len(s.reserve) }

// noteFree lowers the low-water mark of free buffers to n.
func (s *Session) noteFree(n int) {
	for {
		low := s.lowFree.Load()
		if int32(n) >= low || s.lowFree.CompareAndSwap(low, int32(n)) {
			return
		}
	}
}

var active atomic.Pointer[Session]

// Active returns the running session, or nil. Call it pinned: Quiesce
// relies on that.
func Active() *Session { return active.Load() }

// Activate makes s the running session (nil: none).
func Activate(s *Session) {
	stallAt.Store(math.MaxInt64)
	active.Store(s)
}

// stallAt is the clock time (ticks) past which the flusher is late: its
// flushpoint was due a while before and it has not written it. Behind
// goroutines that never block, a flusher that lost its P (preempted, or
// pushed out of its P's runnext slot) waits in a run queue behind
// thousands of 10 ms time slices, and the tick that should wake it may
// wait as well. Then writers take Record's uncommon path, wake the
// flusher and yield their P once per event, so the run queues move by
// the time between two events rather than by time slices, and the
// flusher's turn comes.
var stallAt = func() (a atomic.Int64) { a.Store(math.MaxInt64); return }()

// StallAt returns the time past which the flusher is late (see stallAt):
// one load, for the emit path.
func StallAt() int64 { return stallAt.Load() }

// SetStallAt sets the time past which the flusher is late.
func SetStallAt(ticks int64) { stallAt.Store(ticks) }

// writing counts the recorder's file writes in progress. A flusher late
// because a write is slow (a slow or stalled disk) is not helped by the
// emitters' yields, which would only slow the program down: they skip
// them while a write is in progress.
var writing atomic.Int32

// BeginWrite and EndWrite bracket a file write of the recorder's.
func BeginWrite() { writing.Add(1) }

// EndWrite ends what BeginWrite began.
func EndWrite() { writing.Add(-1) }

// Writing tells whether a file write of the recorder's is in progress.
func Writing() bool { return writing.Load() != 0 }

// Scratch returns P id's room for a stack trace, or nil if id is out of
// range. The caller is pinned to P id.
func Scratch(id int) *stack.PCs {
	if uint(id) < uint(len(slots)) {
		return &slots[id].scratch
	}
	return nil
}

// Swap hands P id's buffer (if any) to the flusher and installs an empty
// one, returning it, or nil if none is free. The caller is pinned to P id.
func (s *Session) Swap(id int) *Buffer {
	if uint(id) >= uint(len(slots)) {
		return nil
	}
	slot := &slots[id]
	if b := slot.buf.Load(); b != nil {
		slot.buf.Store(nil)
		// Full has room for every buffer, so this never blocks.
		s.Full <- b
		if len(s.Full) >= s.wakeAt || s.Behind() {
			select {
			case s.Wake <- struct{}{}:
			default:
			}
		}
	}
	select {
	case b := <-s.free:
		slot.buf.Store(b)
		s.noteFree(s.freeCount())
		return b
	default:
	}
	select {
	case b := <-s.reserve:
		slot.buf.Store(b)
		s.noteFree(len(s.reserve))
		return b
	default:
		s.noteFree(0)
		return nil
	}
}

// Behind tells whether the flusher is falling behind: fewer than half of
// the buffers are free. A writer that just handed a buffer off then
// yields its P once (runtime.Gosched, after unpinning), so the flusher,
// woken onto that P's run queue, gets to run before the free buffers run
// out and events are dropped. (At a quarter, two goroutines emitting
// flat out on two cores lost up to 0.4% of their events.)
func (s *Session) Behind() bool { return len(s.free) < s.base/2 }

// WakeFlusher wakes the flusher (after it is late) without waiting.
func (s *Session) WakeFlusher() {
	select {
	case s.Wake <- struct{}{}:
	default:
	}
}

// Buffers returns how many buffers the session has.
func (s *Session) Buffers() int { return int(s.buffers.Load()) }

// BaseBuffers returns how many buffers the session began with.
func (s *Session) BaseBuffers() int { return s.base }

// Drop counts an event of n bytes (its encoded size) that could not be
// recorded.
func (s *Session) Drop(n int) {
	s.DroppedEvents.Add(1)
	s.DroppedBytes.Add(uint64(n))
}

// Recycle returns a buffer the flusher is done with.
func (s *Session) Recycle(b *Buffer) {
	b.Reset()
	select {
	case s.free <- b:
	default:
		select {
		case s.reserve <- b:
		default:
		}
	}
}

// Live calls f with each buffer installed on a P, whose writer may be
// adding events meanwhile: f takes what is published with Take.
func (s *Session) Live(f func(*Buffer)) {
	for i := range slots {
		if b := slots[i].buf.Load(); b != nil {
			f(b)
		}
	}
}

// Release takes the session's buffers out of the slots, after its last
// Live: the next session starts with empty slots.
func (s *Session) Release() {
	for i := range slots {
		slots[i].buf.Store(nil)
	}
}
