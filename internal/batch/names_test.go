package batch

import "testing"

// TestNamesSecondChance: past maxNames, the names a recorder keeps
// looking up stay, and the others go oldest first.
func TestNamesSecondChance(t *testing.T) {
	const keep, base = 1 << 50, 1 << 51
	SetName(keep, GoroutineInfo{Name: "long-lived"})
	for i := range uint64(3 * maxNames) {
		if i%(maxNames/4) == 0 {
			LookupName(keep) // a chunk written
		}
		SetName(base+i, GoroutineInfo{Name: "short"})
	}
	if info, ok := LookupName(keep); !ok || info.Name != "long-lived" {
		t.Errorf("the name looked up all along was evicted: %v %v", info, ok)
	}
	if _, ok := LookupName(base); ok {
		t.Error("the oldest name stayed")
	}
	if _, ok := LookupName(base + 3*maxNames - 1); !ok {
		t.Error("the newest name is gone")
	}
	names.Lock()
	n, q := len(names.m), len(names.queue)-names.head
	names.Unlock()
	if n > maxNames || q > 2*maxNames+64 {
		t.Errorf("%d names, %d queued; want at most %d", n, q, maxNames)
	}
}
