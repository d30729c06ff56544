package recorder

import (
	"os"
	"sync"
	"time"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/pin"
)

// The flusher's work runs in steps pinned to a P, so that goroutines that
// never block cannot starve it. A goroutine the scheduler preempts goes to
// the global run queue, behind every other runnable goroutine: with 10,000
// goroutines that never block, each running 10 ms time slices on 2 Ps,
// that is a wait of about 50 s. The flusher is woken by a timer or a
// channel send, which puts it in its P's runnext slot, where it runs at
// the P's next scheduling point; but it then inherits the time slice of
// the goroutine it follows, usually one just preempted for using it up,
// so sysmon preempts the flusher at its next look (within 10 ms, and
// within 20 us after a P was retaken from a syscall). Pinned
// (runtime.procPin, as sync.Pool pins), a goroutine is not preempted:
// the flusher gathers buffers and encodes a flush in steps of at most
// stepBudget, and between steps it sleeps for stepPause, so the P's other
// goroutines run, and the timer puts it back in runnext.
//
// Pinned code must not block: no contended mutex (TryLock, and a pause
// when it fails), no channel operation that waits, no syscall, no fmt
// (its sync.Pool may take a mutex). What does (the recorder's lock, the
// file writes) runs between the pinned parts.
//
// Pinning cannot cover the times the flusher waits to run: woken (by its
// ticks or the emitters), after a pause, after a settle. A goroutine
// readied in runnext is pushed to the back of the P's run queue by the
// next one readied there before it runs, and one woken with a used-up
// time slice may be preempted before it pins: then it waits behind the
// run queues' time slices, 1-28 s in BenchmarkCPUBoundGoroutines. So once
// a flushpoint is late (stallGrace past due), the emitters wake the
// flusher and yield their P at each event (batch.StallAt), and the run
// queues move by the time between two events until it runs.
//
// Builds without procPin (-tags flightrec_nolinkname, -race) and
// FLIGHTREC_FLUSHER=preemptible run the same work unpinned, as one step.
const (
	stepBudget = time.Millisecond
	stepPause  = 50 * time.Microsecond
)

// pinSteps tells whether the flusher's steps are pinned.
var pinSteps = pin.Linked && os.Getenv("FLIGHTREC_FLUSHER") != "preemptible"

// steps runs a goroutine's work in pinned steps. Its zero value runs it
// unpinned.
type steps struct {
	on     bool // pin the steps
	pinned bool
	began  time.Time
	pauses int // how many times it paused (for tests)
}

func newSteps() *steps { return &steps{on: pinSteps} }

// begin pins the caller for a step.
func (s *steps) begin() {
	if s == nil || !s.on || s.pinned {
		return
	}
	pin.Pin()
	s.pinned = true
	s.began = time.Now()
}

// end unpins the caller.
func (s *steps) end() {
	if s == nil || !s.pinned {
		return
	}
	s.pinned = false
	pin.Unpin(0)
}

// point ends the step if it has lasted stepBudget, and begins the next
// after a pause.
func (s *steps) point() {
	if s != nil && s.pinned && time.Since(s.began) >= stepBudget {
		s.pause()
	}
}

// pause unpins, sleeps for stepPause and pins again.
//
// Unpinned, the goroutine does nothing but sleep: woken, it inherits the
// time slice of the goroutine it follows on the P, which sysmon may ask
// to preempt at any moment, and only a pinned goroutine refuses.
func (s *steps) pause() {
	s.pauses++
	t := phaseStart()
	s.end()
	time.Sleep(stepPause)
	s.begin()
	phaseSince(phasePause, t)
}

// settle ends the step and, pinned, sleeps for stepPause before the
// caller runs unpinned code (code that may block: a syscall, fmt, a
// lock). A preemption request the runtime refused while the step was
// pinned stays set, and the runtime re-arms it at the next lock release,
// allocation or syscall return: the caller would be preempted there, into
// the global run queue. A goroutine that sleeps parks without such a
// check, and its request is cleared when it runs again.
func (s *steps) settle() {
	if s == nil || !s.pinned {
		return
	}
	t := phaseStart()
	s.end()
	time.Sleep(stepPause)
	phaseSince(phaseSettle, t)
}

// unpinned runs f, which may block, unpinned (after settling) when the
// steps are pinned, and pins again after it.
func (s *steps) unpinned(f func()) {
	if s == nil || !s.pinned {
		f()
		return
	}
	s.settle()
	f()
	s.begin()
}

// lock locks mu; pinned, it pauses while mu is locked rather than block.
func (s *steps) lock(mu *sync.Mutex) {
	if s == nil || !s.pinned {
		mu.Lock()
		return
	}
	for !mu.TryLock() {
		s.pause()
	}
}

// send sends v on c; pinned, it pauses while c is not ready rather than
// block.
func send[T any](s *steps, c chan<- T, v T) {
	if s == nil || !s.pinned {
		c <- v
		return
	}
	for {
		select {
		case c <- v:
			return
		default:
			s.pause()
		}
	}
}

// receive receives from c, and tells whether c was open. Pinned, it takes
// what is there without blocking; when c is empty, it unpins to park, and
// pins again once woken. A goroutine that parks on a channel does so
// holding the channel's lock, which keeps a preemption request the
// runtime refused while it was pinned from preempting it on the way, and
// the request is cleared when it runs again.
func receive[T any](s *steps, c <-chan T) (T, bool) {
	if s == nil || !s.pinned {
		v, ok := <-c
		return v, ok
	}
	select {
	case v, ok := <-c:
		return v, ok
	default:
	}
	s.end()
	v, ok := <-c
	s.begin()
	return v, ok
}

// lookupName returns goroutine g's name and labels; pinned, it pauses
// while the names are locked rather than block.
func (s *steps) lookupName(g uint64) (name, group string) {
	if s == nil || !s.pinned {
		return goroutineThread(g)
	}
	for {
		info, found, busy := batch.TryLookupName(g)
		if !busy {
			if !found {
				return "", ""
			}
			return info.Name, info.Labels
		}
		s.pause()
	}
}

// interned returns the pooled string of key k; pinned, it pauses while
// the pool is locked rather than block.
func (s *steps) interned(k uint64) string {
	if s == nil || !s.pinned {
		return batch.Interned(k)
	}
	for {
		if v, ok := batch.TryInterned(k); ok {
			return v
		}
		s.pause()
	}
}

// goroutineThread returns the java.lang.Thread fields of goroutine g.
func goroutineThread(g uint64) (name, group string) {
	if info, ok := event.LookupGoroutine(g); ok {
		return info.Name, info.Labels
	}
	return "", ""
}
