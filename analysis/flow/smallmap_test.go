package flow

import "testing"

// TestSmallMap checks the small map against a Go map as it passes from
// scanning to indexing, and after a reset.
func TestSmallMap(t *testing.T) {
	var s smallMap[spanKey, int]
	for round := range 3 {
		s.reset()
		want := map[spanKey]int{}
		n := []int{5, 100, 2000}[round]
		for i := range n {
			k := spanKey{uint16(i % 7), uint32(i / 3)}
			v, added := s.at(k)
			if _, had := want[k]; had == added {
				t.Fatalf("round %d: key %v added %v, in the map %v", round, k, added, had)
			}
			*v += i
			want[k] += i
		}
		if s.len() != len(want) {
			t.Fatalf("round %d: %d keys, want %d", round, s.len(), len(want))
		}
		for k, v := range want {
			if i := s.find(k); i < 0 || s.vals[i] != v {
				got := -1
				if i >= 0 {
					got = s.vals[i]
				}
				t.Errorf("round %d: %v = %d, want %d", round, k, got, v)
			}
		}
		if s.find(spanKey{99, 0}) >= 0 {
			t.Errorf("round %d: a missing key is found", round)
		}
	}
}
