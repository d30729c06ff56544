package flow

import (
	"cmp"
	"math"
	"slices"
)

// Clock offsets over time.
//
// One offset per node cannot follow clocks that drift (1000 ppm is 1 ms a
// second) or step (NTP slewing, a manual set). Pass 1 therefore also
// keeps, per directed node pair, the fastest delay of each time bucket
// (clockBucket of the sender's wall clock, a few bytes per bucket and
// pair). After pass 1 the buckets are aligned on the run's single-offset
// estimate, and every bucket gets its own offsets from the delays of it
// and its neighbours, by the rule of estimateOffsets. An event's offset is
// interpolated linearly between the centres of the buckets around it
// (drift), except where two neighbouring buckets differ by more than a
// drift explains (a step): there each bucket keeps its own offset up to
// its edge. A bucket whose delays no offsets satisfy tries the windows
// left and right of it before giving up (the step is inside it).

// clockBucket is the width of a time bucket, ns.
const clockBucket = 100_000_000

// maxDriftPPM is the largest drift taken for drift; a larger change
// between neighbouring buckets is a step.
const maxDriftPPM = 2000

// delaySample is one message's delay: its send, raw wall ns of the
// sender, and receipt - send.
type delaySample struct{ send, d int64 }

// pairDelays holds the fastest delay per time bucket of one directed
// pair, indexed from first, and the samples of the buckets that hold a
// clock step (stepSamples), found while the samples of the last buckets
// are still kept (recent).
type pairDelays struct {
	first       int64
	min         []int64
	recent      []delaySample
	oldest      int64 // bucket of the oldest recent sample
	stepSamples map[int64][]delaySample
}

func (p *pairDelays) add(bucket, d int64) {
	if p.min == nil {
		p.first = bucket
	}
	if bucket < p.first {
		grow := make([]int64, p.first-bucket)
		for i := range grow {
			grow[i] = noDelay
		}
		p.min = append(grow, p.min...)
		p.first = bucket
	}
	for int64(len(p.min)) <= bucket-p.first {
		p.min = append(p.min, noDelay)
	}
	i := bucket - p.first
	p.min[i] = min(p.min[i], d)
}

func (p *pairDelays) at(bucket int64) int64 {
	i := bucket - p.first
	if p.min == nil || i < 0 || i >= int64(len(p.min)) {
		return noDelay
	}
	return p.min[i]
}

// stepJump is the change of a pair's fastest delay between neighbouring
// buckets beyond which the samples around it are kept, to find a clock
// step in them: more than drift explains.
const stepJump = clockBucket * maxDriftPPM / 1e6

// maxStepBuckets bounds the buckets of samples a pair keeps.
const maxStepBuckets = 64

// maxRecent bounds the recent samples a pair keeps (16 bytes each).
const maxRecent = 8192

// noteSample notes a message's delay from a to b in the n*n table. The
// samples of the last four buckets are kept while the bucket minima
// settle; those of the buckets around a jump of the fastest delay (a
// clock step, or a change of the network) are kept for good.
func noteSample(delays []pairDelays, n, a, b int, send, d int64) {
	p := &delays[a*n+b]
	bucket := floorDiv(send, clockBucket)
	p.add(bucket, d)
	if len(p.recent) == 0 || bucket < p.oldest {
		p.oldest = bucket
	}
	if len(p.recent) == maxRecent {
		// Heavy traffic: keep every other sample, so the memory stays
		// bounded and a step is still placed within a few samples.
		for i := range maxRecent / 2 {
			p.recent[i] = p.recent[2*i+1]
		}
		p.recent = p.recent[:maxRecent/2]
	}
	p.recent = append(p.recent, delaySample{send, d})
	if bucket <= p.oldest+3 {
		return
	}
	keep := p.recent[:0]
	p.oldest = bucket
	for _, s := range p.recent {
		if k := floorDiv(s.send, clockBucket); k < bucket-3 {
			p.settle(k, s)
		} else {
			keep = append(keep, s)
			p.oldest = min(p.oldest, k)
		}
	}
	p.recent = keep
}

func (p *pairDelays) settle(k int64, s delaySample) {
	jump := func(a, b int64) bool {
		x, y := p.at(a), p.at(b)
		return x != noDelay && y != noDelay && (x-y > stepJump || y-x > stepJump)
	}
	if !jump(k-1, k) && !jump(k, k+1) && !jump(k-2, k-1) && !jump(k+1, k+2) {
		return
	}
	if p.stepSamples == nil {
		p.stepSamples = make(map[int64][]delaySample)
	}
	if _, ok := p.stepSamples[k]; ok || len(p.stepSamples) < maxStepBuckets {
		p.stepSamples[k] = append(p.stepSamples[k], s)
	}
}

// settleAll settles every sample still recent, at the end of pass 1.
func settleAll(delays []pairDelays) {
	for i := range delays {
		p := &delays[i]
		for _, s := range p.recent {
			p.settle(floorDiv(s.send, clockBucket), s)
		}
		p.recent = nil
	}
}

// clockModel gives each node's offset at a time.
type clockModel struct {
	centre []int64   // corrected time of the centre of each bucket with an estimate
	off    [][]int64 // per such bucket, per node
	steps  [][]clockStep
}

// clockStep is a step of one node's clock, found in its samples.
type clockStep struct {
	from, to      int64 // the corrected times it decides: two bucket centres apart
	at            int64 // corrected time of the first event after the step
	before, after int64 // the offsets on either side
}

// floorDiv divides rounding down.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// buildClockModel estimates the offsets of every bucket. delays[a*n+b]
// are the bucketed fastest delays by the sender's raw wall time, global
// the single offsets of the run. It returns nil when no bucket has data.
func buildClockModel(n int, delays []pairDelays, global []int64, order []int) *clockModel {
	// Align: a sender's raw bucket b covers corrected time b*B - off.
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	shift := make([]int64, n)
	for a := range n {
		shift[a] = floorDiv(global[a]+clockBucket/2, clockBucket)
		for b := range n {
			p := &delays[a*n+b]
			if p.min == nil {
				continue
			}
			lo = min(lo, p.first-shift[a])
			hi = max(hi, p.first-shift[a]+int64(len(p.min))-1)
		}
	}
	if lo > hi {
		return nil
	}
	// The delay of a->b in corrected bucket k, the single offsets taken
	// out so that a bucket's estimate is a small correction.
	at := func(a, b int, k int64) int64 {
		d := delays[a*n+b].at(k + shift[a])
		if d == noDelay {
			return noDelay
		}
		return d - (global[b] - global[a])
	}
	md := make([]int64, n*n)
	// connected tells whether every node has a two-way path to the
	// first in the window's delays: otherwise the window's offsets are
	// relative to another node for some.
	connected := func() bool {
		seen := make([]bool, n)
		seen[order[0]] = true
		queue := []int{order[0]}
		for len(queue) > 0 {
			a := queue[0]
			queue = queue[1:]
			for b := range n {
				if !seen[b] && md[a*n+b] != noDelay && md[b*n+a] != noDelay {
					seen[b] = true
					queue = append(queue, b)
				}
			}
		}
		return !slices.Contains(seen, false)
	}
	window := func(from, to int64) (off []int64, any bool) {
		for i := range md {
			md[i] = noDelay
		}
		for a := range n {
			for b := range n {
				for k := from; k <= to; k++ {
					if d := at(a, b, k); d != noDelay {
						md[a*n+b] = min(md[a*n+b], d)
						any = true
					}
				}
			}
		}
		if !connected() {
			return nil, false
		}
		off, _ = estimateOffsets(n, md, order)
		return off, any
	}
	// A bucket's own fastest delays estimate the offsets at its centre
	// (with drift, the fastest trip each way comes from opposite ends).
	// A bucket without traffic both ways between all nodes has no
	// estimate: its neighbours' are interpolated.
	cm := &clockModel{steps: make([][]clockStep, n)}
	for k := lo; k <= hi; k++ {
		off, any := window(k, k)
		if !any {
			continue
		}
		row := make([]int64, n)
		for i := range row {
			row[i] = global[i] + off[i]
		}
		cm.centre = append(cm.centre, k*clockBucket+clockBucket/2)
		cm.off = append(cm.off, row)
	}
	if len(cm.off) == 0 {
		return nil
	}
	// Steps: a node whose offsets on either side of a bucket differ by
	// more than drift explains stepped in it; its samples say when.
	for x := range n {
		for k := 1; k+1 < len(cm.off); k++ {
			d := cm.off[k+1][x] - cm.off[k-1][x]
			if d <= 2*stepJump && -d <= 2*stepJump {
				continue
			}
			if k+2 < len(cm.off) && abs(cm.off[k+2][x]-cm.off[k][x]) > abs(d) {
				continue // the step is in the next bucket
			}
			if st, ok := cm.findStep(n, x, k, delays, global); ok {
				cm.steps[x] = append(cm.steps[x], st)
			}
			k++
		}
	}
	return cm
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// findStep finds when node x's clock stepped in bucket k (of the model)
// from the samples kept of the messages x sent and received: the split
// that leaves the most of them with a delay of at least 0 when x takes
// its offset before the step until then and after it from then on.
func (cm *clockModel) findStep(n, x, k int, delays []pairDelays, global []int64) (clockStep, bool) {
	from, to := cm.centre[k-1], cm.centre[k+1]
	before, after := cm.off[k-1][x], cm.off[k+1][x]
	type point struct {
		t         int64 // corrected time at x
		pre, post bool
	}
	var pts []point
	other := func(y int, t int64) int64 {
		a, b := cm.off[k-1][y], cm.off[k+1][y]
		return a + int64(float64(b-a)*float64(t-from)/float64(to-from))
	}
	for y := range n {
		if y == x {
			continue
		}
		for _, dir := range [2][2]int{{x, y}, {y, x}} {
			p := &delays[dir[0]*n+dir[1]]
			for _, samples := range p.stepSamples {
				for _, s := range samples {
					tx := s.send
					if dir[1] == x {
						tx += s.d
					}
					t := tx - global[x]
					if t < from || t >= to {
						continue
					}
					oy := other(y, t)
					// corrected delay = d - off(receiver) + off(sender)
					cd := func(ox int64) int64 {
						if dir[0] == x {
							return s.d - oy + ox
						}
						return s.d - ox + oy
					}
					pts = append(pts, point{t, cd(before) >= 0, cd(after) >= 0})
				}
			}
		}
	}
	if len(pts) == 0 {
		return clockStep{}, false
	}
	slices.SortFunc(pts, func(a, b point) int { return cmp.Compare(a.t, b.t) })
	post := 0
	for _, p := range pts {
		if p.post {
			post++
		}
	}
	best, bestAt, pre := post, 0, 0
	for j, p := range pts {
		// Split before pts[j+1]: pts[..j] take the offset before.
		if p.pre {
			pre++
		}
		if p.post {
			post--
		}
		if pre+post > best {
			best, bestAt = pre+post, j+1
		}
	}
	st := clockStep{from: from, to: to, before: before, after: after, at: to}
	if bestAt < len(pts) {
		st.at = pts[bestAt].t
	}
	if bestAt > 0 {
		st.at = (pts[bestAt-1].t + st.at + 1) / 2
	}
	return st, true
}

// atFrom returns node i's offset at corrected time t (approximately: t
// is the raw wall time less the single offset). *k is the estimate at or
// before the time asked last (-1 for none), tried before a search: a
// reader of times in order stays in one bucket for thousands of events.
func (cm *clockModel) atFrom(i int, t int64, k *int) int64 {
	for _, st := range cm.steps[i] {
		if t >= st.from && t < st.to {
			if t < st.at {
				return st.before
			}
			return st.after
		}
	}
	last := len(cm.off) - 1
	if last == 0 {
		return cm.off[0][i]
	}
	// The estimates k and k+1 around t: centre[k] < t <= centre[k+1];
	// before the first centre and after the last, the drift of the two
	// nearest goes on.
	if j := *k; j < 0 || j >= last || j > 0 && t <= cm.centre[j] || j < last-1 && t > cm.centre[j+1] {
		j, _ = slices.BinarySearch(cm.centre, t)
		*k = min(max(j-1, 0), last-1)
	}
	a, b := cm.off[*k][i], cm.off[*k+1][i]
	c0, c1 := cm.centre[*k], cm.centre[*k+1]
	if d := b - a; d > stepJump*(c1-c0)/clockBucket || -d > stepJump*(c1-c0)/clockBucket {
		// A step whose moment no sample tells: each estimate holds up to
		// half way.
		if t < (c0+c1)/2 {
			return a
		}
		return b
	}
	frac := float64(t-c0) / float64(c1-c0)
	return a + int64(math.Round(frac*float64(b-a)))
}
