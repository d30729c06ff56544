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
// by an empty one whose ids follow its own (Session.RenewStacks): a stack
// seen before gets a new id then, which is as good, as an id names one
// stack for the whole session.
type stackIDs struct {
	slots []atomic.Uint64
	next  atomic.Uint64
	base  uint64
}

const (
	stackHashBits = 42
	stackIDBits   = 22
	stackSlots    = 1 << 18 // 2 MiB a table
	maxStackIDs   = stackSlots * 3 / 4
	// stackKeyEnd bounds the keys of the session's tables: below the
	// execution tracer's stack keys (recorder's traceStackKeys, 2^30),
	// within the 31 bits consumers read keys as. 4,095 tables take
	// 805 M distinct stacks; past them events are recorded without one.
	stackKeyEnd = 1 << 30
)

func newStackIDs(base uint64) *stackIDs {
	return &stackIDs{slots: make([]atomic.Uint64, stackSlots), base: base}
}

// StackID returns the pool key of the stack pcs in this session: a small
// id, the same for the same stack while the table lasts. It returns 0 when
// the table is full: RenewStacks, called unpinned, replaces it.
func (s *Session) StackID(pcs []uintptr) uint64 {
	h := stack.Hash(pcs)&(1<<stackHashBits-1) | 1
	t := s.stacks.Load()
	mask := uint64(len(t.slots) - 1)
	for i := h * 0x9E3779B97F4A7C15 >> 32 & mask; ; i = (i + 1) & mask {
		v := t.slots[i].Load()
		if v == 0 {
			if t.next.Load() >= maxStackIDs {
				return 0
			}
			// next passes maxStackIDs by at most one per caller that
			// passed the test above at once: far below stackSlots.
			id := t.next.Add(1)
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

// RenewStacks replaces the table of stack ids with an empty one if it is
// full, and tells whether StackID can give ids again: false once the
// session's key space is used up, and then events go without a stack
// trace. It allocates: the emit path calls it unpinned.
func (s *Session) RenewStacks() bool {
	s.stacksMu.Lock()
	defer s.stacksMu.Unlock()
	t := s.stacks.Load()
	if t.next.Load() < maxStackIDs {
		return true // renewed by another caller meanwhile
	}
	base := t.base + stackSlots
	if base+stackSlots > stackKeyEnd {
		return false
	}
	s.stacks.Store(newStackIDs(base))
	return true
}

// StackKey is StackID for callers that are not pinned: it renews a full
// table. 0: the key space is used up.
func (s *Session) StackKey(pcs []uintptr) uint64 {
	for {
		if k := s.StackID(pcs); k != 0 || !s.RenewStacks() {
			return k
		}
	}
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
