package batch

import (
	"sync"
	"testing"
)

// TestManyThreads checks that a buffer notes thousands of distinct
// goroutines before it must be handed off, and that Take returns them all
// with the records.
func TestManyThreads(t *testing.T) {
	b := NewBuffer()
	n := 0
	for g := uint64(1); b.AddThread(g); g++ {
		n++
		b.Tail()[0] = 2
		b.Tail()[1] = 9
		b.Commit(2)
	}
	if n != threadLimit || n < 3000 {
		t.Fatalf("a buffer took %d goroutines, want %d", n, threadLimit)
	}
	tk := b.Take()
	if len(tk.Threads) != n || len(tk.Records) != 2*n {
		t.Fatalf("Take: %d threads, %d bytes; want %d, %d", len(tk.Threads), len(tk.Records), n, 2*n)
	}
	for i, g := range tk.Threads {
		if g != uint64(i+1) {
			t.Fatalf("thread %d is %d", i, g)
		}
	}
}

// TestDistinctGoroutinesFillBuffer: a buffer whose events each come from
// another goroutine (thousands of goroutines that emit now and then, as in
// BenchmarkManyGoroutines) takes records of that benchmark's size (17
// bytes) into at least three quarters of its bytes before its thread set
// is full. With room for 3,072 goroutines such a buffer was handed off 40%
// full: the pool held 2.5 times fewer events than it has room for, and
// ran out while a flush was delayed.
func TestDistinctGoroutinesFillBuffer(t *testing.T) {
	const recSize = 17
	b := NewBuffer()
	for g := uint64(1); b.Fits(recSize) && b.AddThread(g); g++ {
		b.Commit(recSize)
	}
	if b.Len() < BufferSize*3/4 {
		t.Fatalf("the thread set filled at %d goroutines, %d of %d bytes (%.0f%%): want 75%% or more",
			b.nthreads, b.Len(), BufferSize, 100*float64(b.Len())/BufferSize)
	}
}

// TestStackIDs checks that stacks get small ids, the same for the same
// stack and distinct for distinct ones.
func TestStackIDs(t *testing.T) {
	s := NewSession(1, 1)
	ids := map[uint64]bool{}
	for i := range 1000 {
		pcs := []uintptr{uintptr(i + 1), 0x1000, uintptr(i * 7)}
		id := s.StackID(pcs)
		if id == 0 || id > 1000 || ids[id] {
			t.Fatalf("stack %d: id %d (seen: %v)", i, id, ids[id])
		}
		ids[id] = true
		if again := s.StackID(pcs); again != id {
			t.Fatalf("stack %d: id %d, then %d", i, id, again)
		}
	}
}

// TestStackIDsRenew fills a session's table of stack ids: StackID then
// says so (0); RenewStacks grows it, keeping the ids given; at the
// largest size it replaces it with an empty one whose ids follow; and
// past the last keys (2^30, below the tracer's) StackKey gives 0.
func TestStackIDsRenew(t *testing.T) {
	s := NewSession(1, 1)
	pcs := func(i int) []uintptr { return []uintptr{uintptr(i + 1), 0x1000, uintptr(i * 7)} }
	max := uint64(minStackSlots * 3 / 4)
	ids := map[uint64]int{}
	for i := range int(max) {
		id := s.StackID(pcs(i))
		if _, seen := ids[id]; id == 0 || id > max || seen {
			t.Fatalf("stack %d: id %d (stack %d had it)", i, id, ids[id])
		}
		ids[id] = i
	}
	if id := s.StackID(pcs(int(max))); id != 0 {
		t.Fatalf("a new stack in a full table: id %d, want 0", id)
	}
	if !s.RenewStacks() || len(s.stacks.Load().slots) != 2*minStackSlots {
		t.Fatal("RenewStacks did not grow the table")
	}
	for id, i := range ids {
		if again := s.StackID(pcs(i)); again != id {
			t.Fatalf("stack %d: id %d, %d in the grown table", i, id, again)
		}
	}
	if id := s.StackKey(pcs(int(max))); id != max+1 {
		t.Fatalf("a new stack in the grown table: id %d, want %d", id, max+1)
	}

	// The largest table, full: an empty one follows it.
	big := newStackIDs(maxStackSlots, 0)
	s.stacks.Store(big)
	seen := s.StackID(pcs(1))
	big.next.Store(big.max)
	if id := s.StackID(pcs(2)); id != 0 {
		t.Fatalf("a new stack in the full largest table: id %d", id)
	}
	if !s.RenewStacks() || len(s.stacks.Load().slots) != maxStackSlots {
		t.Fatal("RenewStacks did not replace the largest table")
	}
	if id := s.StackID(pcs(1)); id != big.max+1 || id == seen {
		t.Fatalf("a stack of the replaced table: id %d, want %d", id, big.max+1)
	}

	// The last table: when it fills, the keys are used up.
	last := newStackIDs(maxStackSlots, stackKeyEnd-big.max-1)
	s.stacks.Store(last)
	if id := s.StackKey(pcs(3)); id != stackKeyEnd-big.max {
		t.Fatalf("the last table's first key: %d", id)
	}
	last.next.Store(last.max)
	if id := s.StackKey(pcs(4)); id != 0 || !s.StacksExhausted() {
		t.Fatalf("past the last table: key %d, exhausted %v", id, s.StacksExhausted())
	}
	if s.RenewStacks() {
		t.Fatal("RenewStacks renewed past the last keys")
	}
}

// TestStackIDsConcurrent: goroutines asking for the ids of overlapping
// stacks across renewals (grown and replaced tables) never see one key
// name two stacks, and every key is below 2^30.
func TestStackIDsConcurrent(t *testing.T) {
	s := NewSession(1, 1)
	var mu sync.Mutex
	owner := map[uint64]int{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := map[uint64]int{}
			for i := range 300_000 {
				st := (i*7 + w*1000) % 400_000
				k := s.StackKey([]uintptr{uintptr(st + 1), 0x3000})
				if k == 0 || k >= stackKeyEnd {
					t.Errorf("stack %d: key %d", st, k)
					return
				}
				local[k] = st
			}
			mu.Lock()
			defer mu.Unlock()
			for k, st := range local {
				if o, ok := owner[k]; ok && o != st {
					t.Errorf("key %d names stacks %d and %d", k, o, st)
				}
				owner[k] = st
			}
		}()
	}
	wg.Wait()
}

// TestFuncIDs checks that function ids are small, even and map back.
func TestFuncIDs(t *testing.T) {
	a, b := FuncID(0x401000), FuncID(0x402000)
	if a == b || a%2 != 0 || b%2 != 0 || a == 0 || b > 1<<20 || FuncID(0x401000) != a {
		t.Fatalf("ids %d, %d", a, b)
	}
	if FuncPC(a) != 0x401000 || FuncPC(b) != 0x402000 || FuncPC(a+1) != 0 {
		t.Fatalf("FuncPC(%d) = %#x, FuncPC(%d) = %#x", a, FuncPC(a), b, FuncPC(b))
	}
}
