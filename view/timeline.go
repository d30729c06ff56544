package view

import (
	"cmp"
	"runtime"
	"slices"
	"sort"
	"sync"
)

// threadEvents lists each thread's events by start time, built on the
// first timeline request.
type threadEvents struct {
	once sync.Once
	evs  [][]int32
}

func (ix *Index) byThread() [][]int32 {
	ix.lanes.once.Do(func() {
		evs := make([][]int32, len(ix.Threads))
		for e, th := range ix.thread {
			if th != 0 {
				evs[th] = append(evs[th], int32(e))
			}
		}
		for _, l := range evs {
			slices.SortStableFunc(l, func(a, b int32) int { return cmp.Compare(ix.t[a], ix.t[b]) })
		}
		ix.lanes.evs = evs
	})
	return ix.lanes.evs
}

// Lane is one thread's activity at pixel resolution: Spans are runs of
// pixels covered by timed events [from, to, type id], the longest event
// winning a pixel; Ticks counts the other events per pixel [px, count].
type Lane struct {
	Thread int      `json:"thread"`
	Name   string   `json:"name"`
	Events int      `json:"events"`
	Spans  [][3]int `json:"spans"`
	Ticks  [][2]int `json:"ticks"`
	Busy   float64  `json:"busy"` // share of the range covered by timed events
}

// maxLanes bounds the lanes of one reply: the busiest threads.
const maxLanes = 300

// Lanes bins the events of [from, to) into px pixel columns per thread,
// the threads shared out among GOMAXPROCS goroutines.
func (ix *Index) Lanes(from, to int64, px int) []Lane {
	px = min(max(px, 10), 8000)
	byThread := ix.byThread()
	out := make([]Lane, len(byThread))
	keep := make([]bool, len(byThread))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := newLaneBuf(px)
			for th := range next {
				out[th], keep[th] = ix.lane(th, byThread[th], from, to, b)
			}
		}()
	}
	for th := 1; th < len(byThread); th++ {
		next <- th
	}
	close(next)
	wg.Wait()
	var lanes []Lane
	for th, l := range out {
		if keep[th] {
			lanes = append(lanes, l)
		}
	}
	slices.SortStableFunc(lanes, func(a, b Lane) int { return cmp.Compare(b.Events, a.Events) })
	if len(lanes) > maxLanes {
		lanes = lanes[:maxLanes]
	}
	slices.SortStableFunc(lanes, func(a, b Lane) int { return cmp.Compare(a.Name, b.Name) })
	return lanes
}

// laneBuf is one goroutine's pixel columns.
type laneBuf struct {
	long  []int64
	kind  []int
	ticks []int
}

func newLaneBuf(px int) *laneBuf {
	return &laneBuf{long: make([]int64, px), kind: make([]int, px), ticks: make([]int, px)}
}

// lane bins one thread's events; ok is false when none is in the range.
func (ix *Index) lane(th int, evs []int32, from, to int64, b *laneBuf) (Lane, bool) {
	px := len(b.long)
	span := max(to-from, 1)
	long, kind, ticks := b.long, b.kind, b.ticks
	// Events starting before from may still cover it: look back a little
	// (timed events are rarely long).
	i := sort.Search(len(evs), func(i int) bool { return ix.t[evs[i]] >= from })
	for i > 0 && from-ix.t[evs[i-1]] < span && ix.t[evs[i-1]]+ix.dur[evs[i-1]] > from {
		i--
	}
	clear(long)
	clear(ticks)
	for k := range kind {
		kind[k] = -1
	}
	n := 0
	var busy int64
	for ; i < len(evs) && ix.t[evs[i]] < to; i++ {
		e := evs[i]
		n++
		s, d := ix.t[e], ix.dur[e]
		p0 := int((max(s, from) - from) * int64(px) / span)
		if d <= 0 {
			if p0 >= 0 && p0 < px {
				ticks[p0]++
			}
			continue
		}
		busy += min(s+d, to) - max(s, from)
		p1 := int((min(s+d, to) - from) * int64(px) / span)
		for p := max(p0, 0); p <= min(p1, px-1); p++ {
			if d > long[p] {
				long[p], kind[p] = d, int(ix.typ[e])
			}
		}
	}
	if n == 0 {
		return Lane{}, false
	}
	l := Lane{Thread: th, Name: ix.Threads[th], Events: n, Busy: min(float64(busy)/float64(span), 1), Spans: [][3]int{}, Ticks: [][2]int{}}
	for p := 0; p < px; {
		if kind[p] < 0 {
			p++
			continue
		}
		q := p
		for q+1 < px && kind[q+1] == kind[p] {
			q++
		}
		l.Spans = append(l.Spans, [3]int{p, q + 1, kind[p]})
		p = q + 1
	}
	for p, c := range ticks {
		if c > 0 {
			l.Ticks = append(l.Ticks, [2]int{p, c})
		}
	}
	return l, true
}

// SeriesData is a counter downsampled to at most px points (the mean per
// pixel).
type SeriesData struct {
	Name   string       `json:"name"`
	File   int          `json:"file"`
	Points [][2]float64 `json:"points"` // [pixel, value]
	Max    float64      `json:"max"`
}

// timelineSeries are the counters the timeline draws, by name prefix.
var timelineSeries = []string{"jdk.CPULoad.", "jdk.GCHeapSummary.heapUsed", "jdk.JavaThreadStatistics.activeCount", "/gc/heap/live:bytes", "/sched/goroutines:goroutines"}

// Counters returns the timeline's counters over [from, to).
func (ix *Index) Counters(from, to int64, px int) []SeriesData {
	px = min(max(px, 10), 8000)
	span := max(to-from, 1)
	var out []SeriesData
	for _, s := range ix.Series {
		keep := false
		for _, p := range timelineSeries {
			if len(s.Name) >= len(p) && s.Name[:len(p)] == p {
				keep = true
			}
		}
		if !keep {
			continue
		}
		sd := SeriesData{Name: s.Name, File: s.File}
		sum := make([]float64, px)
		n := make([]int, px)
		for _, pt := range s.Points {
			if pt.T < from || pt.T >= to {
				continue
			}
			p := int((pt.T - from) * int64(px) / span)
			sum[p] += pt.V
			n[p]++
		}
		for p := range sum {
			if n[p] > 0 {
				v := sum[p] / float64(n[p])
				sd.Points = append(sd.Points, [2]float64{float64(p), v})
				sd.Max = max(sd.Max, v)
			}
		}
		out = append(out, sd)
	}
	return out
}
