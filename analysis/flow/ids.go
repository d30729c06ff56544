package flow

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// idTable interns message IDs to dense integer keys 0, 1, 2... in the order
// they are first seen.
//
// Compact IDs "node:counter" (what flow.Node sends) are interned as
// integers: per node number, a table indexed by the counter holds the
// key, so such an ID costs its 4-byte slot and its 8-byte integer form,
// with no text, hash or probing. Counters are dense from 1 (a node counts
// its messages), so the slots are nearly all used; a node whose counters
// are too sparse for that has the rest of its IDs hashed as text. Other IDs
// live once in a byte arena behind an open-addressing hash index of 4-byte
// slots.
type idTable struct {
	// ident is each key's ID: a compact ID's node<<48 | counter, or
	// textIdent | the key's index in the text table.
	ident   spilled[uint64]
	byNode  []*counterIndex // by node number, nil until the node's first ID
	text    textTable
	textKey paged[uint32] // global key of each text-table entry
}

// textIdent marks an ident that is an index into the text table; compact
// IDs are taken only for node numbers below 1<<15 so that the bit is free.
const textIdent = 1 << 63

// counterIndex maps one node's counters to keys: key+1 in fixed pages,
// allocated as counters reach them.
type counterIndex struct {
	pages [][]uint32
	used  int // pages allocated
	keys  int // keys in the pages
}

const (
	counterPageBits = 12
	// maxCounterPages bounds the page table of a node (counters up to
	// 2^32).
	maxCounterPages = 1 << (32 - counterPageBits)
)

// allowPage tells whether a node may take one more page: pages must stay
// at least 1/64 full on average (past the first 16), so sparse counters
// cost at most 256 bytes per ID before they are hashed instead.
func (c *counterIndex) allowPage() bool {
	return c.used < 16 || c.used*(1<<counterPageBits)/64 <= c.keys
}

// newIDTable returns an empty table. Its identities stay in memory (a
// nil pool): in the merging pass the goroutines of traceOut (the one
// that sorts a trace's messages, the one fn runs on) read them while the
// merging one spills and loads the pages of the other arrays, and a page
// of a shared pool is not safe to read from one goroutine while another
// evicts it; without a pool, reading one writes nothing.
func newIDTable() *idTable {
	return &idTable{text: newTextTable(), ident: newSpilled[uint64](nil, "message identities")}
}

// Len returns the number of distinct IDs.
func (t *idTable) Len() int { return t.ident.Len() }

// Text returns the text of key k.
func (t *idTable) Text(k uint32) string {
	id := t.ident.Get(int(k))
	if id&textIdent != 0 {
		return string(t.text.text(uint32(id &^ textIdent)))
	}
	return string(AppendCompactID(nil, int64(id)))
}

// parseCompact returns the integer form of a compact ID in its canonical
// text (no sign, no leading zeros), the only text AppendCompactID makes
// of it, so that the text round-trips.
func parseCompact(id []byte) (node uint16, counter uint64, ok bool) {
	i := 0
	var n uint64
	for ; i < len(id) && id[i] >= '0' && id[i] <= '9'; i++ {
		n = n*10 + uint64(id[i]-'0')
		if n >= 1<<15 {
			return 0, 0, false
		}
	}
	if i == 0 || (id[0] == '0' && i > 1) || i+1 >= len(id) || id[i] != ':' {
		return 0, 0, false
	}
	rest := id[i+1:]
	if len(rest) > 15 || (rest[0] == '0' && len(rest) > 1) {
		return 0, 0, false
	}
	var c uint64
	for _, b := range rest {
		if b < '0' || b > '9' {
			return 0, 0, false
		}
		c = c*10 + uint64(b-'0')
	}
	if c >= 1<<48 {
		return 0, 0, false
	}
	return uint16(n), c, true
}

// slot returns the slot of a compact ID, or nil if its page does not
// exist (and alloc is false or the node may not take another page).
func (t *idTable) slot(node uint16, counter uint64, alloc bool) *uint32 {
	if counter>>counterPageBits >= maxCounterPages {
		return nil
	}
	if int(node) >= len(t.byNode) {
		if !alloc {
			return nil
		}
		t.byNode = append(t.byNode, make([]*counterIndex, int(node)+1-len(t.byNode))...)
	}
	ci := t.byNode[node]
	if ci == nil {
		if !alloc {
			return nil
		}
		ci = &counterIndex{}
		t.byNode[node] = ci
	}
	p := int(counter >> counterPageBits)
	if p >= len(ci.pages) || ci.pages[p] == nil {
		if !alloc || !ci.allowPage() {
			return nil
		}
		if p >= len(ci.pages) {
			ci.pages = append(ci.pages, make([][]uint32, p+1-len(ci.pages))...)
		}
		ci.pages[p] = make([]uint32, 1<<counterPageBits)
		ci.used++
	}
	return &ci.pages[p][counter&(1<<counterPageBits-1)]
}

// Message IDs go from the readers to the table as "wire" bytes: a
// compact ID the table keeps as an integer (node below 1<<15, counter
// below 1<<48: what parseCompact accepts) as wireMark and its 8 bytes
// big-endian, any other ID as its text, a text that starts with wireMark
// escaped by a second one before it. A recording holds compact IDs as
// longs: its reader writes them in the compact form rather than as text
// that both passes would parse again, and equal IDs keep equal bytes (the
// reader makes a text in compact form compact too), which the span
// assembly, the span logs and spanIDs compare. The second byte of a
// compact form is below 0x80 (node < 1<<15), so it is never an escape.
const (
	wireMark       = 0xFF
	wireCompactLen = 9
)

// appendWireCompact appends the compact form of node:counter, which
// parseCompact would accept.
func appendWireCompact(dst []byte, node uint16, counter uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, wireMark), uint64(node)<<48|counter)
}

// appendWireID appends a compact ID held in a long: in compact form if
// the table keeps it as an integer, else as its text.
func appendWireID(dst []byte, id int64) []byte {
	if node, counter := flowspec.SplitMessageID(id); node < 1<<15 {
		return appendWireCompact(dst, node, counter)
	}
	return AppendCompactID(dst, id)
}

// appendWireText appends an ID given as text: in compact form if it is
// the canonical text of one, else escaped if it must be.
func appendWireText(dst, text []byte) []byte {
	if len(text) > 0 && isDigit(text[0]) {
		if node, counter, ok := parseCompact(text); ok {
			return appendWireCompact(dst, node, counter)
		}
	}
	if len(text) > 0 && text[0] == wireMark {
		dst = append(dst, wireMark)
	}
	return append(dst, text...)
}

// wireCompact returns the integer form of an ID in compact form.
func wireCompact(w []byte) (node uint16, counter uint64, ok bool) {
	if len(w) != wireCompactLen || w[0] != wireMark || w[1] >= 0x80 {
		return 0, 0, false
	}
	node, counter = flowspec.SplitMessageID(int64(binary.BigEndian.Uint64(w[1:])))
	return node, counter, true
}

// wireText returns the text of an ID not in compact form.
func wireText(w []byte) []byte {
	if len(w) > 0 && w[0] == wireMark {
		return w[1:]
	}
	return w
}

// wireNode returns the node part of a compact ID in wire form, as
// compactNode does for its text.
func wireNode(w []byte) (uint16, bool) {
	if node, _, ok := wireCompact(w); ok {
		return node, true
	}
	return compactNode(w) // an escaped text starts with no digit
}

// compactText appends the text of a compact ID to buf.
func compactText(buf []byte, node uint16, counter uint64) []byte {
	return AppendCompactID(buf, int64(uint64(node)<<48|counter))
}

// idOf returns the integer form of a wire ID if it is compact (given so
// or as canonical text), else its text.
func idOf(w []byte) (node uint16, counter uint64, text []byte, ok bool) {
	if node, counter, ok = wireCompact(w); ok {
		return node, counter, nil, true
	}
	text = wireText(w)
	node, counter, ok = parseCompact(text)
	return node, counter, text, ok
}

// Lookup returns the key of the wire ID w, or false.
func (t *idTable) Lookup(w []byte) (uint32, bool) {
	node, counter, id, ok := idOf(w)
	if ok {
		if s := t.slot(node, counter, false); s != nil && *s != 0 {
			return *s - 1, true
		}
		if t.text.Len() == 0 {
			return 0, false
		}
		if id == nil {
			var buf [24]byte
			id = compactText(buf[:0], node, counter)
		}
	}
	if tk, ok := t.text.Lookup(id); ok {
		return t.textKey.Get(int(tk)), true
	}
	return 0, false
}

// Intern returns the key of the wire ID w, adding it if it is new.
func (t *idTable) Intern(w []byte) (key uint32, added bool) {
	var buf [24]byte
	node, counter, id, ok := idOf(w)
	if ok {
		s := t.slot(node, counter, false)
		if s != nil && *s != 0 {
			return *s - 1, false
		}
		// The ID may have been hashed when its node's page was refused.
		if t.text.Len() > 0 {
			if id == nil {
				id = compactText(buf[:0], node, counter)
			}
			if tk, ok := t.text.Lookup(id); ok {
				return t.textKey.Get(int(tk)), false
			}
		}
		if s == nil {
			s = t.slot(node, counter, true)
		}
		if s != nil {
			key = uint32(t.ident.Len())
			*s = key + 1
			t.byNode[node].keys++
			t.ident.Append(uint64(node)<<48 | counter)
			return key, true
		}
		if id == nil {
			id = compactText(buf[:0], node, counter)
		}
	}
	tk, added := t.text.Intern(id)
	if !added {
		return t.textKey.Get(int(tk)), false
	}
	key = uint32(t.ident.Len())
	t.ident.Append(textIdent | uint64(tk))
	t.textKey.Append(key)
	return key, true
}

// textTable interns IDs by their text. The text of every ID lives once in
// one byte arena and the hash index holds only 4-byte keys.
type textTable struct {
	seed  maphash.Seed
	arena [][]byte      // pages of arenaPage bytes, filled in order
	off   paged[uint32] // where key k's text starts: page<<20 | offset
	size  paged[uint16] // its length (IDs are cut to 64 KiB - 1)
	hash  paged[uint32] // low bits of each key's hash, to skip most text compares
	slots []uint32      // open addressing, linear probing; key+1, 0 = empty
	mask  uint64
}

func newTextTable() textTable {
	return textTable{seed: maphash.MakeSeed(), slots: make([]uint32, 64), mask: 63}
}

// Len returns the number of distinct IDs.
func (t *textTable) Len() int { return t.off.Len() }

func (t *textTable) text(k uint32) []byte {
	o := t.off.Get(int(k))
	start := int(o & (arenaPage - 1))
	return t.arena[o>>20][start : start+int(t.size.Get(int(k)))]
}

// Lookup returns the key of id, or false.
func (t *textTable) Lookup(id []byte) (uint32, bool) {
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
func (t *textTable) Intern(id []byte) (key uint32, added bool) {
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
	if last < 0 || cap(t.arena[last])-len(t.arena[last]) < len(id) {
		// The first page starts small: most merges hash few texts.
		size := arenaPage
		if last < 0 && len(id) <= 4096 {
			size = 4096
		}
		t.arena = append(t.arena, make([]byte, 0, size))
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

func (t *textTable) grow() {
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

// spanIDs finds the keys of one span's message IDs, remembering those it
// found: a span's events name its incoming and outgoing IDs again, and
// comparing a few bytes costs less than parsing an ID and finding it in
// the table. reset forgets them before the next span (the bytes are the
// span's).
type spanIDs struct {
	find func(id []byte) uint32 // pass 1's intern
	ids  [][]byte
	keys []uint32
}

// maxSpanIDs bounds the IDs remembered: a span names few.
const maxSpanIDs = 8

func (c *spanIDs) reset() {
	clear(c.ids)
	c.ids, c.keys = c.ids[:0], c.keys[:0]
}

// key returns id's key as find does.
func (c *spanIDs) key(id []byte) uint32 {
	for i, p := range c.ids {
		if string(p) == string(id) {
			return c.keys[i]
		}
	}
	k := c.find(id)
	if len(c.ids) < maxSpanIDs {
		c.ids = append(c.ids, id)
		c.keys = append(c.keys, k)
	}
	return k
}
