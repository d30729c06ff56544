package batch

import (
	"sync"
	"unsafe"
)

// Strings that events repeat are written once per chunk, in the chunk's
// java.lang.String constant pool, and events refer to them by key (tag 2):
// 2 or 3 bytes instead of the string. A buffer notices repetition by the
// address of a string's bytes: a string seen a second time at the same
// address (a literal, or a long-lived value) is interned and its key
// cached; a string built afresh for each event never repeats its address
// and stays inline, at the cost of one cache store. Go strings are
// immutable and the cache keeps the bytes alive, so an address with a
// length names one value.

// minPooled is the shortest string worth pooling: a reference takes 2 or
// 3 bytes, an inline string its length plus 2. maxPooled is the longest:
// the table keeps its strings for the life of the process.
const (
	minPooled = 3
	maxPooled = 256
)

const strCacheSize = 64 // power of two

type strSlot struct {
	p       *byte
	n       int
	key     uint64 // 0: not pooled
	refused bool   // not to be pooled: the table or the buffer is full
}

// CachedKey returns s's pool key if this buffer already pooled s, else 0
// (then call StringKey). Small enough to inline into the emit path.
func (b *Buffer) CachedKey(s string) uint64 {
	c := &b.strCache[uintptr(unsafe.Pointer(unsafe.StringData(s)))>>3&(strCacheSize-1)]
	if c.p == unsafe.StringData(s) && c.n == len(s) {
		return c.key
	}
	return 0
}

// StringKey returns the pool key to write s as, or 0 to write it inline:
// CachedKey's answer, and on a miss the cache's update. The caller is the
// buffer's writer; the emit path tries CachedKey first, inlined.
func (b *Buffer) StringKey(s string) uint64 {
	p := unsafe.StringData(s)
	c := &b.strCache[uintptr(unsafe.Pointer(p))>>3&(strCacheSize-1)]
	if c.p == p && c.n == len(s) && c.key != 0 {
		return c.key
	}
	if len(s) < minPooled || len(s) > maxPooled {
		return 0
	}
	if c.p != p || c.n != len(s) {
		*c = strSlot{p: p, n: len(s)}
		return 0
	}
	if c.refused {
		return 0
	}
	// Seen a second time: pool it, if the buffer has room for one more.
	if b.nstrs == len(b.strs) {
		c.refused = true
		return 0
	}
	k, ok := intern(s)
	if !ok {
		return 0 // busy: try again next time
	}
	if k == 0 {
		c.refused = true
		return 0
	}
	b.strs[b.nstrs] = k
	b.nstrs++
	b.recount()
	c.key = k
	return k
}

// maxInterned caps the strings interned over the life of the process; past
// it strings stay inline.
const maxInterned = 1 << 16

var interned struct {
	sync.Mutex
	keys map[string]uint64
	vals []string // key k at k-1
}

// intern returns the key of s, assigning the next one on first sight, or 0
// if the table is full. Keys never change, as the JDK's parser expects of
// a key seen in an earlier chunk. Its caller is pinned to a P and must not
// block: if the table is locked, intern returns ok false.
func intern(s string) (key uint64, ok bool) {
	if !interned.TryLock() {
		return 0, false
	}
	defer interned.Unlock()
	if k, ok := interned.keys[s]; ok {
		return k, true
	}
	if len(interned.vals) >= maxInterned {
		return 0, true
	}
	if interned.keys == nil {
		interned.keys = make(map[string]uint64)
	}
	interned.vals = append(interned.vals, s)
	k := uint64(len(interned.vals))
	interned.keys[s] = k
	return k, true
}

// Interned returns the string of key k.
func Interned(k uint64) string {
	interned.Lock()
	defer interned.Unlock()
	return internedLocked(k)
}

// TryInterned is Interned for a caller that must not block (one pinned to
// its P): ok is false, and nothing is looked up, when the table is locked.
func TryInterned(k uint64) (s string, ok bool) {
	if !interned.TryLock() {
		return "", false
	}
	defer interned.Unlock()
	return internedLocked(k), true
}

// internedLocked is Interned's body, under interned's lock.
func internedLocked(k uint64) string {
	if k == 0 || k > uint64(len(interned.vals)) {
		return ""
	}
	return interned.vals[k-1]
}
