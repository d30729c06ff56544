package recorder

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"golang.org/x/exp/trace"

	"github.com/flightrec/flightrec/internal/gotrace"
)

// sampleGoroutines gives the CPU sampler's samples, which carry their OS
// thread and time, the goroutine the execution tracer saw running on that
// thread then (gotrace.ThreadTimeline). A sample waits until the trace
// covers its time, about a second as a generation converts when it ends.
// A generation's runs find the samples waiting for them when it comes;
// only the runs samples not yet read may fall in are kept, until those
// are: a scheduler-heavy server has hundreds of thousands of runs a
// second, for a hundred samples a thread. A period whose trace the lag
// watchdog dropped has no timeline: its samples are dropped and counted,
// as the trace's events.
type sampleGoroutines struct {
	runs     map[trace.ThreadID][]gotrace.Running // in time order
	nruns    int
	readMono int64 // when the sampler's last read began: no older sample is still to come
	// from and to bound the period the trace covers (monotonic ns); 0
	// before its first generation. Generations follow each other: the
	// goroutines on threads at one's end go on in the next.
	from, to  int64
	gaps      [][2]int64 // periods whose trace was dropped
	restarted bool       // the trace restarted: the period until the next generation is a gap
	// unkept is when the runs of the generation being read stopped being
	// kept (maxRuns): from it to the generation's end is a gap; 0 if none.
	unkept  int64
	waiting []cpuSample
}

// maxRuns bounds the runs kept (32 bytes a run), which only a sampler
// that stopped reading could fill: past it, the rest of a generation's runs
// are not kept, and the samples read later in that period are dropped.
const maxRuns = 1 << 18

func newSampleGoroutines() *sampleGoroutines {
	return &sampleGoroutines{runs: map[trace.ThreadID][]gotrace.Running{}}
}

// add takes a piece of the timeline (gotrace.Options.Timeline): the
// waiting samples find their goroutine in its runs, and the runs samples
// not yet read may fall in are kept. The generation's last piece, with its
// end, makes the samples up to that end resolvable.
func (s *sampleGoroutines) add(tl *gotrace.ThreadTimeline) {
	if tl.Start == 0 {
		return // no clock snapshot: the trace's times are not the sampler's
	}
	if s.restarted && s.to > 0 {
		s.gaps = append(s.gaps, [2]int64{s.to, tl.Start})
	}
	s.restarted = false
	if s.from == 0 {
		s.from = tl.Start
	}
	s.match(tl.Running)
	n := 0
	for _, r := range tl.Running {
		if r.End >= s.readMono {
			n++
		}
	}
	switch {
	case s.unkept != 0:
	case s.nruns+n > maxRuns:
		s.unkept = max(tl.Start, s.readMono)
	default:
		s.nruns += n
		for _, r := range tl.Running {
			if r.End >= s.readMono {
				s.runs[r.Thread] = append(s.runs[r.Thread], r)
			}
		}
	}
	if tl.End != 0 {
		if s.unkept != 0 {
			s.gaps = append(s.gaps, [2]int64{s.unkept, tl.End})
			s.unkept = 0
		}
		s.to = max(s.to, tl.End)
	}
}

// match gives the waiting samples that fall in runs their goroutine.
func (s *sampleGoroutines) match(runs []gotrace.Running) {
	if len(s.waiting) == 0 {
		return
	}
	w := s.waiting
	slices.SortFunc(w, func(a, b cpuSample) int { return cmp.Or(cmp.Compare(a.tid, b.tid), cmp.Compare(a.mono, b.mono)) })
	for _, r := range runs {
		i := sort.Search(len(w), func(i int) bool {
			return int64(w[i].tid) > int64(r.Thread) || int64(w[i].tid) == int64(r.Thread) && w[i].mono >= r.Start
		})
		for ; i < len(w) && int64(w[i].tid) == int64(r.Thread) && w[i].mono <= r.End; i++ {
			w[i].g = matchedGoroutine(r.G)
		}
	}
}

// expectAll makes samples the only ones to resolve: no run is kept
// beyond matching them.
func (s *sampleGoroutines) expectAll(samples []cpuSample) {
	s.waiting = samples
	s.readMono = math.MaxInt64
}

// resolve gives the waiting samples and those in fresh whose time the
// trace covers their goroutine, and returns them with how many it dropped
// (their trace was dropped, or too many waited). With final (the tracer
// stopped), it gives every sample: those after the trace without a
// goroutine known. readMono is when the sampler's last read began: no
// sample older than it is still to come.
func (s *sampleGoroutines) resolve(fresh []cpuSample, readMono int64, final bool) (out []cpuSample, lost int) {
	s.readMono = max(s.readMono, readMono)
	s.waiting = append(s.waiting, fresh...)
	if n := len(s.waiting) - maxSamples; n > 0 {
		slices.SortFunc(s.waiting, func(a, b cpuSample) int { return cmp.Compare(a.mono, b.mono) })
		s.waiting = slices.Delete(s.waiting, 0, n)
		lost += n
	}
	keep := s.waiting[:0]
	cutoff := readMono
	for _, sm := range s.waiting {
		switch {
		case sm.g == untracedGoroutine:
			sm.g = unknownGoroutine
		case sm.g > 0: // matched when its generation came
		case s.inGap(sm.mono):
			lost++
			continue
		case s.to > 0 && sm.mono < s.from:
			sm.g = unknownGoroutine // before the trace
		case s.to > 0 && sm.mono <= s.to:
			sm.g = s.goroutine(trace.ThreadID(sm.tid), sm.mono)
		case final:
			sm.g = unknownGoroutine
		default:
			keep = append(keep, sm)
			cutoff = min(cutoff, sm.mono)
			continue
		}
		out = append(out, sm)
	}
	clear(s.waiting[len(keep):])
	s.waiting = keep
	s.prune(cutoff)
	return out, lost
}

func (s *sampleGoroutines) inGap(mono int64) bool {
	for _, g := range s.gaps {
		if g[0] < mono && mono < g[1] {
			return true
		}
	}
	return false
}

// goroutine returns the goroutine on thread tid at mono, or noGoroutine.
func (s *sampleGoroutines) goroutine(tid trace.ThreadID, mono int64) int64 {
	runs := s.runs[tid]
	i := sort.Search(len(runs), func(i int) bool { return runs[i].End >= mono })
	if i < len(runs) && runs[i].Start <= mono {
		if runs[i].G == trace.NoGoroutine {
			return unknownGoroutine
		}
		return int64(runs[i].G)
	}
	return noGoroutine
}

// untracedGoroutine marks a waiting sample that a run of no known
// goroutine (gotrace.Running) matched.
const untracedGoroutine = -2

func matchedGoroutine(g trace.GoID) int64 {
	if g == trace.NoGoroutine {
		return untracedGoroutine
	}
	return int64(g)
}

// prune forgets the timeline before cutoff: no sample to resolve is older.
func (s *sampleGoroutines) prune(cutoff int64) {
	for tid, runs := range s.runs {
		i := sort.Search(len(runs), func(i int) bool { return runs[i].End >= cutoff })
		if i == 0 {
			continue
		}
		s.nruns -= i
		if i == len(runs) {
			delete(s.runs, tid)
			continue
		}
		if i < len(runs)/2 {
			s.runs[tid] = runs[i:]
		} else {
			s.runs[tid] = slices.Clone(runs[i:]) // frees the old array
		}
	}
	s.gaps = slices.DeleteFunc(s.gaps, func(g [2]int64) bool { return g[1] < cutoff })
}

// resolveSamples resolves CPU samples against the tracer's timeline,
// counting those it drops with the trace's lost events.
func (t *tracer) resolveSamples(fresh []cpuSample, readMono int64, final bool) []cpuSample {
	t.mu.Lock()
	defer t.mu.Unlock()
	out, lost := t.samples.resolve(fresh, readMono, final)
	t.lostEvents += int64(lost)
	return out
}
