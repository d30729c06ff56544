package flow

// smallMap maps the few keys of one trace (its spans, messages, a
// message's tags) to values: a linear scan of a slice while it holds few
// keys, which beats hashing struct keys, and an index map beyond. It is
// reused from trace to trace; keys keep their insertion order.
type smallMap[K comparable, V any] struct {
	keys  []K
	vals  []V
	index map[K]int // nil while len(keys) <= smallMapScan
	spare map[K]int // an index emptied by reset, for the next trace
}

const smallMapScan = 16

// reset empties the map, keeping its memory (its index map too: one per
// large trace was an allocation per trace) unless a large trace grew it.
func (s *smallMap[K, V]) reset() {
	if cap(s.keys) > 1024 {
		*s = smallMap[K, V]{}
		return
	}
	s.keys, s.vals = s.keys[:0], s.vals[:0]
	if s.index != nil {
		clear(s.index)
		s.spare, s.index = s.index, nil
	}
}

// find returns the index of k's value, or -1.
func (s *smallMap[K, V]) find(k K) int {
	if s.index != nil {
		if i, ok := s.index[k]; ok {
			return i
		}
		return -1
	}
	for i := range s.keys {
		if s.keys[i] == k {
			return i
		}
	}
	return -1
}

// slot returns the index of k's value, adding the zero value if k is
// new; the map's keys and values keep that index until reset.
func (s *smallMap[K, V]) slot(k K) (i int, added bool) {
	if i := s.find(k); i >= 0 {
		return i, false
	}
	var zero V
	s.keys = append(s.keys, k)
	s.vals = append(s.vals, zero)
	n := len(s.keys)
	if s.index != nil {
		s.index[k] = n - 1
	} else if n > smallMapScan {
		s.index, s.spare = s.spare, nil
		if s.index == nil {
			s.index = make(map[K]int, 2*n)
		}
		for i, key := range s.keys {
			s.index[key] = i
		}
	}
	return n - 1, true
}

// at returns a pointer to k's value, adding the zero value if k is new;
// the pointer is valid until the next add.
func (s *smallMap[K, V]) at(k K) (v *V, added bool) {
	i, added := s.slot(k)
	return &s.vals[i], added
}

func (s *smallMap[K, V]) len() int { return len(s.keys) }
