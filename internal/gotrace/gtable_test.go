package gotrace

import (
	"math/rand/v2"
	"testing"

	"golang.org/x/exp/trace"
)

// TestGoTable checks the goroutine table against a map under random puts
// and deletes, with ids as the runtime hands them out (mostly rising, in
// batches) and colliding ones, through growth and backward-shift deletes.
func TestGoTable(t *testing.T) {
	var tab goTable
	want := map[trace.GoID]trace.Time{}
	r := rand.New(rand.NewPCG(1, 2))
	next := trace.GoID(1)
	var live []trace.GoID
	for i := range 200000 {
		switch op := r.IntN(10); {
		case op < 5 || len(live) == 0: // a goroutine starts
			id := next
			if r.IntN(4) == 0 {
				id = trace.GoID(r.Uint64N(1 << 40)) // far apart: other homes
			} else {
				next++
			}
			if _, ok := want[id]; !ok {
				live = append(live, id)
			}
			tab.put(id).since = trace.Time(i)
			want[id] = trace.Time(i)
		case op < 9: // one ends
			j := r.IntN(len(live))
			id := live[j]
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
			tab.del(id)
			delete(want, id)
		default: // one that never was
			tab.del(trace.GoID(1<<50 + i))
		}
		if i%5000 == 0 || i > 199900 {
			if tab.n != len(want) {
				t.Fatalf("step %d: %d goroutines, want %d", i, tab.n, len(want))
			}
			for id, since := range want {
				if s := tab.get(id); s == nil || s.since != since {
					t.Fatalf("step %d: goroutine %d: %v, want since %d", i, id, s, since)
				}
			}
		}
	}
	for _, id := range []trace.GoID{0, 1 << 50, -5} {
		if _, ok := want[id]; !ok && tab.get(id) != nil {
			t.Errorf("goroutine %d found, never put", id)
		}
	}
}
