package flow

import (
	"fmt"
	"testing"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// TestIDTable interns compact IDs (dense and sparse counters), texts that
// look compact but are not canonical, and free-form texts: every ID keeps
// one key, keys are dense in first-seen order, and each key's text is the
// ID's.
func TestIDTable(t *testing.T) {
	var ids []string
	for c := 1; c <= 20000; c++ {
		ids = append(ids, fmt.Sprintf("3:%d", c))
	}
	// Sparse counters: far more pages than IDs, so most are hashed.
	for c := 1; c <= 2000; c++ {
		ids = append(ids, fmt.Sprintf("7:%d", c*1_000_003))
	}
	ids = append(ids, "01:5", "1:05", "1:5", "-1:5", "1:", ":5", "32767:1", "32768:1", "65535:9",
		"1:281474976710655", "1:281474976710656", "req-17", "", "4:0")
	tab := newIDTable()
	for i, id := range ids {
		k, added := tab.Intern([]byte(id))
		if !added || int(k) != i {
			t.Fatalf("Intern(%q) = %d, %v; want %d, true", id, k, added, i)
		}
	}
	if tab.text.Len() == 0 || tab.text.Len() > 2100 {
		t.Errorf("%d IDs hashed as text, want the sparse and free-form ones", tab.text.Len())
	}
	for i, id := range ids {
		if k, added := tab.Intern([]byte(id)); added || int(k) != i {
			t.Errorf("Intern(%q) again = %d, %v; want %d, false", id, k, added, i)
		}
		if k, ok := tab.Lookup([]byte(id)); !ok || int(k) != i {
			t.Errorf("Lookup(%q) = %d, %v; want %d", id, k, ok, i)
		}
		if got := tab.Text(uint32(i)); got != id {
			t.Errorf("Text(%d) = %q, want %q", i, got, id)
		}
	}
	for _, id := range []string{"3:20001", "7:5", "2:1", "req-18", "1:6"} {
		if k, ok := tab.Lookup([]byte(id)); ok {
			t.Errorf("Lookup(%q) = %d, not interned", id, k)
		}
	}
	if tab.Len() != len(ids) {
		t.Errorf("Len = %d, want %d", tab.Len(), len(ids))
	}
}

// TestWireIDs checks the wire form of message IDs (ids.go): an ID has the
// same key whether the table is given its text, its long (the reader's
// compact form) or its text as a recording's String field (made compact
// when canonical), also when its node's counters are hashed as text; texts
// that start with the mark byte, even shaped like a compact form, stay
// distinct texts.
func TestWireIDs(t *testing.T) {
	tab := newIDTable()
	mark := "\xff"
	// A text shaped like the compact form of 1:2.
	shaped := string(appendWireCompact(nil, 1, 2))
	texts := []string{mark, mark + "x", mark + mark, shaped, shaped[1:], "x" + shaped, "1:3"}
	for i, id := range texts {
		w := string(appendWireText(nil, []byte(id)))
		k, added := tab.Intern([]byte(w))
		if !added || int(k) != i {
			t.Fatalf("Intern(wire of %q) = %d, %v; want %d, true", id, k, added, i)
		}
		if got := tab.Text(k); got != id {
			t.Errorf("Text(%d) = %q, want %q", k, got, id)
		}
		if textWire := textWire([]byte(id)); string(textWire) != w && id != "1:3" {
			t.Errorf("textWire(%q) = %q, want %q", id, textWire, w)
		}
	}
	if k, ok := tab.Lookup([]byte("1:3")); !ok || k != 6 {
		t.Errorf("Lookup(1:3 as text) = %d, %v; want 6", k, ok)
	}
	if k, ok := tab.Lookup(appendWireID(nil, flowspec.MessageID(1, 3))); !ok || k != 6 {
		t.Errorf("Lookup(1:3 from its long) = %d, %v; want 6", k, ok)
	}
	if _, ok := tab.Lookup(appendWireID(nil, flowspec.MessageID(1, 2))); ok {
		t.Errorf("1:2 found: a text shaped like its compact form was taken for it")
	}
	// Sparse counters: past the pages a node may take, its IDs are
	// hashed as text, given as text or as longs alike.
	for c := uint64(1); c <= 3000; c++ {
		id := flowspec.MessageID(9, c*1_000_003)
		var w []byte
		if c%2 == 0 {
			w = appendWireText(nil, AppendCompactID(nil, id))
		} else {
			w = appendWireID(nil, id)
		}
		k, added := tab.Intern(w)
		if !added {
			t.Fatalf("9:%d not added", c*1_000_003)
		}
		for _, again := range [][]byte{appendWireID(nil, id), AppendCompactID(nil, id)} {
			if k2, ok := tab.Lookup(again); !ok || k2 != k {
				t.Fatalf("Lookup(%q) = %d, %v; want %d", again, k2, ok, k)
			}
			if k2, added := tab.Intern(again); added || k2 != k {
				t.Fatalf("Intern(%q) = %d, %v; want %d, false", again, k2, added, k)
			}
		}
		if got, want := tab.Text(k), string(AppendCompactID(nil, id)); got != want {
			t.Fatalf("Text(%d) = %q, want %q", k, got, want)
		}
	}
	if tab.text.Len() < 1000 {
		t.Errorf("%d IDs hashed as text: the sparse node's were not", tab.text.Len())
	}
	// A node number the table keeps no integer for stays text.
	big := flowspec.MessageID(40000, 5)
	if w := appendWireID(nil, big); string(w) != "40000:5" {
		t.Errorf("appendWireID(40000:5) = %q", w)
	}
	if n, ok := wireNode(appendWireID(nil, flowspec.MessageID(7, 1))); !ok || n != 7 {
		t.Errorf("wireNode = %d, %v; want 7", n, ok)
	}
	if _, ok := wireNode([]byte(shaped[:1] + shaped)); ok {
		t.Errorf("wireNode took an escaped text for a compact ID")
	}
}
