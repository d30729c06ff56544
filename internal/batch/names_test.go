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

// TestTryLookups: the lookups for callers that must not block (the
// recorder's pinned flusher) say busy, rather than wait, while the table
// is locked, and otherwise find what the blocking ones find.
func TestTryLookups(t *testing.T) {
	const g = 1 << 52
	SetName(g, GoroutineInfo{Name: "worker", Labels: "pool=a"})
	k, ok := intern("try-lookups")
	if !ok || k == 0 {
		t.Fatalf("intern: %d, %v", k, ok)
	}
	names.Lock()
	if _, _, busy := TryLookupName(g); !busy {
		t.Error("TryLookupName did not say busy with the names locked")
	}
	names.Unlock()
	if info, found, busy := TryLookupName(g); busy || !found || info.Name != "worker" || info.Labels != "pool=a" {
		t.Errorf("TryLookupName = %+v, %v, %v", info, found, busy)
	}
	if _, found, busy := TryLookupName(g + 1); busy || found {
		t.Errorf("TryLookupName of an unnamed goroutine: found %v, busy %v", found, busy)
	}
	interned.Lock()
	if _, ok := TryInterned(k); ok {
		t.Error("TryInterned did not fail with the table locked")
	}
	interned.Unlock()
	if s, ok := TryInterned(k); !ok || s != "try-lookups" {
		t.Errorf("TryInterned = %q, %v", s, ok)
	}
}
