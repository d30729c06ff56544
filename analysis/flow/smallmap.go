package flow

// smallMap maps the few keys of one trace (its spans, threads, nodes) to
// values: a linear scan of a slice while it holds few keys, which beats
// hashing struct keys, and an index map beyond. It is reused from trace
// to trace; keys keep their insertion order.
type smallMap[K comparable, V any] struct {
	keys  []K
	vals  []V
	index map[K]int // nil while len(keys) <= smallMapScan
}

const smallMapScan = 16

// reset empties the map, keeping its memory unless a large trace grew it.
func (s *smallMap[K, V]) reset() {
	if cap(s.keys) > 1024 {
		*s = smallMap[K, V]{}
		return
	}
	s.keys, s.vals, s.index = s.keys[:0], s.vals[:0], nil
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

// at returns a pointer to k's value, adding the zero value if k is new;
// the pointer is valid until the next add.
func (s *smallMap[K, V]) at(k K) (v *V, added bool) {
	if i := s.find(k); i >= 0 {
		return &s.vals[i], false
	}
	var zero V
	s.keys = append(s.keys, k)
	s.vals = append(s.vals, zero)
	n := len(s.keys)
	if s.index != nil {
		s.index[k] = n - 1
	} else if n > smallMapScan {
		s.index = make(map[K]int, 2*n)
		for i, key := range s.keys {
			s.index[key] = i
		}
	}
	return &s.vals[n-1], true
}

// get returns k's value, or the zero value.
func (s *smallMap[K, V]) get(k K) V {
	if i := s.find(k); i >= 0 {
		return s.vals[i]
	}
	var zero V
	return zero
}

func (s *smallMap[K, V]) len() int { return len(s.keys) }

// appendTo appends e to k's slice. A key new to the map takes the memory
// of the slice an earlier trace left at its index, so that the per-trace
// lists (a node's receptions, a span's tags) do not allocate per trace.
func appendTo[K comparable, E any](s *smallMap[K, []E], k K, e E) {
	i := s.find(k)
	if i < 0 {
		i = len(s.vals)
		var spare []E
		if i < cap(s.vals) {
			spare = s.vals[:i+1][i][:0]
		}
		v, _ := s.at(k)
		*v = spare
	}
	s.vals[i] = append(s.vals[i], e)
}
