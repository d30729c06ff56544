package flow

import (
	"fmt"
	"testing"
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
