package batch

import (
	"sync"
	"sync/atomic"

	"github.com/flightrec/flightrec/internal/stack"
)

// Constant-pool keys are small sequential numbers, as the JDK's are:
// consumers such as async-profiler's converter read them as 32-bit.

// stackIDs gives the stacks of a session small sequential ids, from their
// hash, without a lock: the emit path calls it pinned. A slot holds a
// 42-bit hash and its id less base, in 22 bits. A full table is replaced
// (Session.RenewStacks) by one twice its size holding its stacks with
// their ids, up to maxStackSlots; past that, by an empty one whose ids
// follow its own, where a stack seen before gets a new id, which is as
// good: an id names one stack for the whole session.
type stackIDs struct {
	slots []atomic.Uint64
	max   uint64        // the ids it gives: three quarters of its slots
	next  atomic.Uint64 // the last id given, less base; at most max
	base  uint64
}

const (
	stackHashBits = 42
	stackIDBits   = 22
	minStackSlots = 1 << 16 // 512 KiB to begin with
	// maxStackSlots bounds a table, 8 MiB for 786,432 stacks: the
	// chance that two of them share a hash (41 bits) is then about 14%,
	// and grows as the square of the count.
	maxStackSlots = 1 << 20
	// stackKeyEnd bounds the keys of the session's tables: below the
	// execution tracer's stack keys (recorder's traceStackKeys, 2^30),
	// within the 31 bits consumers read keys as. Past it events are
	// recorded without a stack trace.
	stackKeyEnd = 1 << 30
)

// A table's ids, less its base, fit their bits in a slot (a negative
// constant does not convert to uint: a build error).
const _ = uint(1<<stackIDBits - 1 - maxStackSlots*3/4)

func newStackIDs(slots int, base uint64) *stackIDs {
	return &stackIDs{slots: make([]atomic.Uint64, slots), max: uint64(slots) * 3 / 4, base: base}
}

// home is the slot where the search for hash h starts.
func (t *stackIDs) home(h uint64) uint64 {
	return h * 0x9E3779B97F4A7C15 >> 32 & uint64(len(t.slots)-1)
}

// StackID returns the pool key of the stack pcs in this session: a small
// id, the same for the same stack while the table lasts. It returns 0 when
// the table is full (RenewStacks, called unpinned, replaces it) or the
// session's keys are used up (StacksExhausted).
func (s *Session) StackID(pcs []uintptr) uint64 {
	h := stack.Hash(pcs)&(1<<stackHashBits-1) | 1
	t := s.stacks.Load()
	mask := uint64(len(t.slots) - 1)
	for i := t.home(h); ; i = (i + 1) & mask {
		v := t.slots[i].Load()
		if v == 0 {
			// An id, unless the table has given them all: next never
			// passes max, so the ids of the next table (RenewStacks)
			// follow every one this one gave.
			id := t.next.Load()
			for id < t.max && !t.next.CompareAndSwap(id, id+1) {
				id = t.next.Load()
			}
			if id >= t.max {
				return 0
			}
			id++
			if t.slots[i].CompareAndSwap(0, h<<stackIDBits|id) {
				return t.base + id
			}
			// Another stack took the slot: that id is lost, a gap.
			v = t.slots[i].Load()
		}
		if v>>stackIDBits == h {
			return t.base + v&(1<<stackIDBits-1)
		}
	}
}

// RenewStacks replaces the table of stack ids if it is full, and tells
// whether StackID can give ids again: false once the session's keys are
// used up (StacksExhausted). It allocates: the emit path calls it
// unpinned. A stack being added to the full table meanwhile may be left
// out of a grown one: it gets a second id then, which is harmless.
func (s *Session) RenewStacks() bool {
	s.stacksMu.Lock()
	defer s.stacksMu.Unlock()
	t := s.stacks.Load()
	switch {
	case s.stacksExhausted.Load():
		return false
	case t.next.Load() < t.max:
		return true // renewed by another caller meanwhile
	case len(t.slots) < maxStackSlots:
		g := newStackIDs(2*len(t.slots), t.base)
		mask := uint64(len(g.slots) - 1)
		for i := range t.slots {
			v := t.slots[i].Load()
			if v == 0 {
				continue
			}
			j := g.home(v >> stackIDBits)
			for g.slots[j].Load() != 0 {
				j = (j + 1) & mask
			}
			g.slots[j].Store(v)
		}
		g.next.Store(t.next.Load())
		s.stacks.Store(g)
	case t.base+2*t.max >= stackKeyEnd:
		s.stacksExhausted.Store(true)
		return false
	default:
		s.stacks.Store(newStackIDs(len(t.slots), t.base+t.max))
	}
	return true
}

// StacksExhausted tells whether the session's stack keys are used up:
// events are then recorded without a stack trace.
func (s *Session) StacksExhausted() bool { return s.stacksExhausted.Load() }

// StackKey is StackID for callers that are not pinned: it renews a full
// table. 0: the keys are used up.
func (s *Session) StackKey(pcs []uintptr) uint64 {
	for !s.StacksExhausted() {
		if k := s.StackID(pcs); k != 0 || !s.RenewStacks() {
			return k
		}
	}
	return 0
}

// Func ids: a Go function's id for event.Func fields, the key of its
// jdk.types.Method. They are even, so that the recorder's own Method keys
// (odd) never meet them in the pool, and process-wide, as an event.Func
// is kept from one recording to the next.
var funcIDs struct {
	sync.Mutex
	ids map[uintptr]uint64
	pcs []uintptr // id 2k+2 at k
}

// FuncID returns the id of the function whose entry PC is pc (non-zero).
func FuncID(pc uintptr) uint64 {
	funcIDs.Lock()
	defer funcIDs.Unlock()
	if id, ok := funcIDs.ids[pc]; ok {
		return id
	}
	if funcIDs.ids == nil {
		funcIDs.ids = make(map[uintptr]uint64)
	}
	funcIDs.pcs = append(funcIDs.pcs, pc)
	id := uint64(2 * len(funcIDs.pcs))
	funcIDs.ids[pc] = id
	return id
}

// FuncPC returns the entry PC of the function of id, or 0.
func FuncPC(id uint64) uintptr {
	funcIDs.Lock()
	defer funcIDs.Unlock()
	if k := id/2 - 1; id%2 == 0 && id > 0 && k < uint64(len(funcIDs.pcs)) {
		return funcIDs.pcs[k]
	}
	return 0
}
