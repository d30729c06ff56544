package flow

import "hash/maphash"

// idTable interns message IDs to dense integer keys 0, 1, 2... The text of
// every ID lives once in one byte arena and the hash index holds only
// 4-byte keys, so a run of ten million messages costs tens of bytes per
// message instead of a map entry, a string header and an allocation each.
type idTable struct {
	seed  maphash.Seed
	arena []byte
	off   []uint32 // start of key k's text in arena; the end is off[k+1] or len(arena)
	hash  []uint32 // low bits of each key's hash, to skip most text compares
	slots []uint32 // open addressing, linear probing; key+1, 0 = empty
	mask  uint64
}

func newIDTable() *idTable {
	t := &idTable{seed: maphash.MakeSeed()}
	t.slots = make([]uint32, 1024)
	t.mask = 1023
	return t
}

// Len returns the number of distinct IDs.
func (t *idTable) Len() int { return len(t.off) }

// Text returns the text of key k.
func (t *idTable) Text(k uint32) string {
	end := len(t.arena)
	if int(k)+1 < len(t.off) {
		end = int(t.off[k+1])
	}
	return string(t.arena[t.off[k]:end])
}

func (t *idTable) text(k uint32) []byte {
	end := len(t.arena)
	if int(k)+1 < len(t.off) {
		end = int(t.off[k+1])
	}
	return t.arena[t.off[k]:end]
}

// Lookup returns the key of id, or false.
func (t *idTable) Lookup(id []byte) (uint32, bool) {
	h := maphash.Bytes(t.seed, id)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		k := s - 1
		if t.hash[k] == uint32(h) && string(t.text(k)) == string(id) {
			return k, true
		}
	}
}

// Intern returns the key of id, adding it if it is new.
func (t *idTable) Intern(id []byte) (key uint32, added bool) {
	h := maphash.Bytes(t.seed, id)
	i := h & t.mask
	for ; ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s == 0 {
			break
		}
		k := s - 1
		if t.hash[k] == uint32(h) && string(t.text(k)) == string(id) {
			return k, false
		}
	}
	key = uint32(len(t.off))
	t.off = append(t.off, uint32(len(t.arena)))
	t.arena = append(t.arena, id...)
	t.hash = append(t.hash, uint32(h))
	t.slots[i] = key + 1
	if uint64(len(t.off))*4 > uint64(len(t.slots))*3 {
		t.grow()
	}
	return key, true
}

func (t *idTable) grow() {
	t.slots = make([]uint32, len(t.slots)*2)
	t.mask = uint64(len(t.slots) - 1)
	for k := range t.off {
		h := maphash.Bytes(t.seed, t.text(uint32(k)))
		i := h & t.mask
		for t.slots[i] != 0 {
			i = (i + 1) & t.mask
		}
		t.slots[i] = uint32(k) + 1
	}
}
