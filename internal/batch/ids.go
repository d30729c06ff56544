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
// 42-bit hash and its 22-bit id.
type stackIDs struct {
	slots []atomic.Uint64
	next  atomic.Uint64
}

const (
	stackHashBits = 42
	stackIDBits   = 22
	stackSlots    = 1 << 18 // 2 MiB a session
	maxStackIDs   = stackSlots * 3 / 4
)

// StackID returns the pool key of the stack pcs in this session: a small
// id, the same for the same stack, or past maxStackIDs distinct stacks
// (the table is full) a 42-bit hash above every id.
func (s *Session) StackID(pcs []uintptr) uint64 {
	h := stack.Hash(pcs)&(1<<stackHashBits-1) | 1
	t := &s.stacks
	mask := uint64(len(t.slots) - 1)
	for i := h * 0x9E3779B97F4A7C15 >> 32 & mask; ; i = (i + 1) & mask {
		v := t.slots[i].Load()
		if v == 0 {
			if t.next.Load() >= maxStackIDs {
				break
			}
			id := t.next.Add(1)
			if t.slots[i].CompareAndSwap(0, h<<stackIDBits|id) {
				return id
			}
			// Another stack took the slot: that id is lost, a gap.
			v = t.slots[i].Load()
		}
		if v>>stackIDBits == h {
			return v & (1<<stackIDBits - 1)
		}
	}
	return h | 1<<stackHashBits
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
