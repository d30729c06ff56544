package batch

import "testing"

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
// says so (0), and after RenewStacks gives ids that follow the full
// table's, new for stacks seen before, and every key stays below the
// tracer's (2^30). Past the last table, StackKey gives 0: no stack.
func TestStackIDsRenew(t *testing.T) {
	s := NewSession(1, 1)
	pcs := func(i int) []uintptr { return []uintptr{uintptr(i + 1), 0x1000, uintptr(i * 7)} }
	first := map[uint64]bool{}
	for i := range maxStackIDs {
		id := s.StackID(pcs(i))
		if id == 0 || id > stackSlots || first[id] {
			t.Fatalf("stack %d: id %d (seen: %v)", i, id, first[id])
		}
		first[id] = true
	}
	if id := s.StackID(pcs(maxStackIDs)); id != 0 {
		t.Fatalf("a new stack in a full table: id %d, want 0", id)
	}
	if id := s.StackID(pcs(5)); !first[id] {
		t.Fatalf("a stack of the full table: id %d, not its own", id)
	}
	if !s.RenewStacks() {
		t.Fatal("RenewStacks refused the second table")
	}
	for _, i := range []int{5, maxStackIDs} {
		id := s.StackID(pcs(i))
		if id <= stackSlots || id > 2*stackSlots || first[id] {
			t.Fatalf("stack %d in the second table: id %d", i, id)
		}
		if again := s.StackKey(pcs(i)); again != id {
			t.Fatalf("stack %d: id %d, then %d", i, id, again)
		}
	}
	// The last table: when it fills, the keys are used up.
	s.stacks.Store(newStackIDs(stackKeyEnd - stackSlots))
	for i := range maxStackIDs {
		if id := s.StackKey(pcs(i)); id == 0 || id >= stackKeyEnd {
			t.Fatalf("stack %d in the last table: id %d", i, id)
		}
	}
	if id := s.StackKey(pcs(maxStackIDs)); id != 0 {
		t.Fatalf("past the last table: key %d, want 0", id)
	}
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
