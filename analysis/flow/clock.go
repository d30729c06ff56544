package flow

import "math"

// Clock offsets.
//
// Every node stamps events with its own wall clock. The merger corrects
// them as corrected = wall - offset[node] and estimates the offsets from
// message pairs in pass 1:
//
//	d(a,b) = min over messages sent by a and received by b of
//	         wall_b(receipt) - wall_a(first causal send)
//
// d(a,b) is the fastest one-way delay plus (offset_b - offset_a). When
// both directions were seen, the minimal delays are assumed equal (the NTP
// assumption) and
//
//	offset_b - offset_a = (d(a,b) - d(b,a)) / 2,
//
// which also satisfies both causal constraints offset_b - offset_a <=
// d(a,b) and offset_a - offset_b <= d(b,a) whenever the fastest round trip
// d(a,b) + d(b,a) is not negative. Nodes joined by such pairs form
// components, laid out along a breadth-first tree from the component's
// first node by name. Between components only one-way constraints exist;
// each component keeps its own wall clock (offset 0) unless a constraint
// says a receipt would precede its send, in which case the receiving
// component is moved later by exactly the violation (Bellman-Ford on the
// difference constraints, starting from 0, so the fewest and smallest
// moves). A cycle of violated constraints cannot be satisfied by offsets;
// its edges are counted as inconsistencies and left for the causal order
// to repair.
//
// The reference tool meant to do this with Floyd-Warshall over minimum
// delays but split node names into characters, so it applied no
// correction (or one in the wrong direction, for one-letter names).

const noDelay = math.MaxInt64

// estimateOffsets returns each node's offset in nanoseconds and the number
// of constraints no offsets could satisfy. minDelay[a*n+b] is d(a,b), or
// noDelay. order lists the node indexes sorted by name.
func estimateOffsets(n int, minDelay []int64, order []int) (off []int64, inconsistent int) {
	off = make([]int64, n)
	comp := make([]int, n)
	for i := range comp {
		comp[i] = -1
	}
	two := func(a, b int) bool { return minDelay[a*n+b] != noDelay && minDelay[b*n+a] != noDelay }
	ncomp := 0
	for _, root := range order {
		if comp[root] >= 0 {
			continue
		}
		comp[root] = ncomp
		queue := []int{root}
		for len(queue) > 0 {
			a := queue[0]
			queue = queue[1:]
			for _, b := range order {
				if comp[b] < 0 && two(a, b) {
					comp[b] = ncomp
					off[b] = off[a] + (minDelay[a*n+b]-minDelay[b*n+a])/2
					queue = append(queue, b)
				}
			}
		}
		ncomp++
	}
	// Component offsets from the one-way constraints
	// Θ[cb] - Θ[ca] <= d(a,b) - off[b] + off[a].
	theta := make([]int64, ncomp)
	for iter := 0; iter <= ncomp; iter++ {
		changed := false
		for a := 0; a < n; a++ {
			for b := 0; b < n; b++ {
				d := minDelay[a*n+b]
				if d == noDelay || comp[a] == comp[b] {
					continue
				}
				w := d - off[b] + off[a]
				if theta[comp[a]]+w < theta[comp[b]] {
					if iter == ncomp {
						inconsistent++
						continue
					}
					theta[comp[b]] = theta[comp[a]] + w
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
	for i := range off {
		off[i] += theta[comp[i]]
	}
	// Inside a component a negative fastest round trip is a contradiction
	// no offset fixes.
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			if comp[a] == comp[b] && two(a, b) && minDelay[a*n+b]+minDelay[b*n+a] < 0 {
				inconsistent++
			}
		}
	}
	return off, inconsistent
}
