package gotrace

import "golang.org/x/exp/trace"

// goTable holds the state of live goroutines by id: an open-addressing
// hash table with linear probing. The converter looks a goroutine up on
// most trace events, and this costs a multiply and a compare or two where
// a Go map costs several times the reader's own work per event.
type goTable struct {
	slots []goSlot // a power of two long; id noSlot marks a free slot
	n     int      // slots in use
	shift uint     // 64 - log2(len(slots))
}

type goSlot struct {
	id trace.GoID
	s  gState
}

// noSlot is the id of a free slot: no goroutine has it.
const noSlot = trace.NoGoroutine

func (t *goTable) home(id trace.GoID) int {
	return int(uint64(id) * 0x9E3779B97F4A7C15 >> t.shift) // Fibonacci hashing
}

// get returns the state of goroutine id, nil if it has none. The pointer
// is valid until the next put or del.
func (t *goTable) get(id trace.GoID) *gState {
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		switch t.slots[i].id {
		case id:
			return &t.slots[i].s
		case noSlot:
			return nil
		}
	}
}

// put returns the state of goroutine id, a zero one added if it had
// none. The pointer is valid until the next put or del.
func (t *goTable) put(id trace.GoID) *gState {
	if (t.n+1)*2 > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		switch t.slots[i].id {
		case id:
			return &t.slots[i].s
		case noSlot:
			t.slots[i].id = id
			t.n++
			return &t.slots[i].s
		}
	}
}

// del removes goroutine id's state. Linear probing needs no tombstones:
// the entries after it move back into the hole when their home allows.
func (t *goTable) del(id trace.GoID) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for t.slots[i].id != id {
		if t.slots[i].id == noSlot {
			return
		}
		i = (i + 1) & mask
	}
	for j := i; ; {
		j = (j + 1) & mask
		if t.slots[j].id == noSlot {
			break
		}
		// The entry at j may fill the hole at i if its home is not
		// cyclically within (i, j].
		h := t.home(t.slots[j].id)
		if i <= j && (h <= i || h > j) || i > j && h <= i && h > j {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = goSlot{id: noSlot}
	t.n--
}

func (t *goTable) grow() {
	old := t.slots
	size := max(2*len(old), 64)
	t.slots = make([]goSlot, size)
	for i := range t.slots {
		t.slots[i].id = noSlot
	}
	t.shift = 64
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	t.n = 0
	for i := range old {
		if old[i].id != noSlot {
			*t.put(old[i].id) = old[i].s
		}
	}
}
