package flow

import "hash/maphash"

// idTable interns message IDs to dense integer keys 0, 1, 2... The text of
// every ID lives once in one byte arena and the hash index holds only
// 4-byte keys, so a run of ten million messages costs tens of bytes per
// message instead of a map entry, a string header and an allocation each.
type idTable struct {
	seed  maphash.Seed
	arena [][]byte      // pages of arenaPage bytes, filled in order
	off   paged[uint32] // where key k's text starts: page<<20 | offset
	size  paged[uint16] // its length (IDs are cut to 64 KiB - 1)
	hash  paged[uint32] // low bits of each key's hash, to skip most text compares
	slots []uint32      // open addressing, linear probing; key+1, 0 = empty
	mask  uint64
}

func newIDTable() *idTable {
	t := &idTable{seed: maphash.MakeSeed()}
	t.slots = make([]uint32, 1024)
	t.mask = 1023
	return t
}

// Len returns the number of distinct IDs.
func (t *idTable) Len() int { return t.off.Len() }

// Text returns the text of key k.
func (t *idTable) Text(k uint32) string { return string(t.text(k)) }

func (t *idTable) text(k uint32) []byte {
	o := t.off.Get(int(k))
	start := int(o & (arenaPage - 1))
	return t.arena[o>>20][start : start+int(t.size.Get(int(k)))]
}

// Lookup returns the key of id, or false.
func (t *idTable) Lookup(id []byte) (uint32, bool) {
	id = id[:min(len(id), 1<<16-1)]
	h := maphash.Bytes(t.seed, id)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		k := s - 1
		if t.hash.Get(int(k)) == uint32(h) && string(t.text(k)) == string(id) {
			return k, true
		}
	}
}

// Intern returns the key of id, adding it if it is new.
func (t *idTable) Intern(id []byte) (key uint32, added bool) {
	id = id[:min(len(id), 1<<16-1)]
	h := maphash.Bytes(t.seed, id)
	i := h & t.mask
	for ; ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s == 0 {
			break
		}
		k := s - 1
		if t.hash.Get(int(k)) == uint32(h) && string(t.text(k)) == string(id) {
			return k, false
		}
	}
	key = uint32(t.off.Len())
	last := len(t.arena) - 1
	if last < 0 || len(t.arena[last])+len(id) > arenaPage {
		t.arena = append(t.arena, make([]byte, 0, arenaPage))
		last++
	}
	t.off.Append(uint32(last)<<20 | uint32(len(t.arena[last])))
	t.arena[last] = append(t.arena[last], id...)
	t.size.Append(uint16(len(id)))
	t.hash.Append(uint32(h))
	t.slots[i] = key + 1
	if uint64(t.off.Len())*4 > uint64(len(t.slots))*3 {
		t.grow()
	}
	return key, true
}

func (t *idTable) grow() {
	t.slots = make([]uint32, len(t.slots)*2)
	t.mask = uint64(len(t.slots) - 1)
	for k := range t.off.Len() {
		h := maphash.Bytes(t.seed, t.text(uint32(k)))
		i := h & t.mask
		for t.slots[i] != 0 {
			i = (i + 1) & t.mask
		}
		t.slots[i] = uint32(k) + 1
	}
}
