package batch

import (
	"strconv"
	"testing"
	"unsafe"
)

func TestStringKey(t *testing.T) {
	b := NewBuffer()
	const lit = "a repeated literal"
	if k := b.StringKey(lit); k != 0 {
		t.Fatalf("first sight pooled as %d", k)
	}
	k := b.StringKey(lit)
	if k == 0 || Interned(k) != lit {
		t.Fatalf("second sight: key %d, interned %q", k, Interned(k))
	}
	if k2 := b.StringKey(lit); k2 != k {
		t.Fatalf("third sight: key %d, then %d", k, k2)
	}
	b.Commit(0) // publish, as after an event
	if got := b.Take().Strings; len(got) != 1 || got[0] != k {
		t.Fatalf("buffer refers to %v, want [%d]", got, k)
	}
	// Strings built afresh never repeat their address: they stay inline.
	for i := range 10 {
		if k := b.StringKey("id-" + strconv.Itoa(1000+i%2)); k != 0 {
			t.Fatalf("fresh string pooled as %d", k)
		}
	}
	// A second buffer gets the same key for the same value.
	b2 := NewBuffer()
	b2.StringKey(lit)
	if k2 := b2.StringKey(lit); k2 != k {
		t.Fatalf("other buffer: key %d, want %d", k2, k)
	}
	if k := b.StringKey("ab"); k != 0 || b.StringKey("ab") != 0 {
		t.Fatal("a 2-byte string was pooled")
	}
}

// TestCommittedAligned: the flusher loads committed with a 64-bit atomic,
// which 32-bit platforms allow only on 8-byte aligned words.
func TestCommittedAligned(t *testing.T) {
	if off := unsafe.Offsetof(Buffer{}.committed); off%8 != 0 {
		t.Fatalf("Buffer.committed at offset %d", off)
	}
}
