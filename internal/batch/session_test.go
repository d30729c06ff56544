package batch

import "testing"

// TestGrowReserve: what Grow adds is taken only once the first buffers
// are all in use, recycled buffers go back to the first ones first, the
// pool stops at its limit, and LowFree reports the fewest buffers that
// were free.
func TestGrowReserve(t *testing.T) {
	s := NewSession(4, 10)
	defer s.Release()
	if n := s.Buffers(); n != 4 {
		t.Fatalf("Buffers() = %d, want 4", n)
	}
	first := map[*Buffer]bool{}
	for range 4 {
		b := s.Swap(0)
		if b == nil {
			t.Fatal("Swap found no free buffer among the first four")
		}
		first[b] = true
	}
	if b := s.Swap(0); b != nil {
		t.Fatal("Swap found a fifth buffer in a pool of four")
	}
	if low := s.LowFree(); low != 0 {
		t.Errorf("LowFree() = %d after the pool ran out, want 0", low)
	}
	if n := s.Grow(4); n != 4 || s.Buffers() != 8 {
		t.Fatalf("Grow(4) = %d, Buffers() = %d; want 4 and 8", n, s.Buffers())
	}
	if n := s.Grow(4); n != 2 || s.Buffers() != 10 {
		t.Fatalf("Grow(4) at 8 of 10 = %d, Buffers() = %d; want 2 and 10", n, s.Buffers())
	}
	if n := s.Grow(1); n != 0 {
		t.Fatalf("Grow(1) at the limit = %d, want 0", n)
	}
	// The full buffers come back, as the flusher recycles them: they are
	// taken again before any that Grow added.
	for range len(s.Full) {
		s.Recycle(<-s.Full)
	}
	for range 4 {
		if b := s.Swap(0); !first[b] {
			t.Fatal("Swap took a grown buffer while one of the first was free")
		}
	}
	if b := s.Swap(0); b == nil || first[b] {
		t.Fatal("Swap did not take a grown buffer once the first were all in use")
	}
	// 0 when the pool ran out, 6 once it grew, 5 after the fifth Swap.
	if low, want := s.LowFree(), 5; low != want {
		t.Errorf("LowFree() = %d, want %d (of 10 buffers, 5 taken)", low, want)
	}
	if low := s.LowFree(); low != 5 {
		t.Errorf("LowFree() right after = %d, want the 5 free now", low)
	}
}
