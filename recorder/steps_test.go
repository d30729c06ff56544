package recorder

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/jfr"
)

func skipUnpinned(t *testing.T) {
	t.Helper()
	if !pinSteps {
		t.Skip("the flusher's steps are not pinned in this build (-race, -tags flightrec_nolinkname) or with FLIGHTREC_FLUSHER=preemptible")
	}
}

// TestStepNotPreempted: a pinned step keeps its P past the scheduler's
// time slice (10 ms), so the flusher does not land in the global run
// queue behind goroutines that never block; a pause then lets the P's
// other goroutines run.
func TestStepNotPreempted(t *testing.T) {
	skipUnpinned(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var ran atomic.Bool
	go ran.Store(true)
	st := newSteps()
	st.begin()
	// Three time slices: an unpinned goroutine is preempted, and the
	// other one runs, within two.
	for start := time.Now(); time.Since(start) < 30*time.Millisecond; {
		if ran.Load() {
			st.end()
			t.Fatal("another goroutine ran on the only P during a pinned step")
		}
	}
	// Goroutines left runnable by earlier tests (CI's purego step once
	// ran them first) may share the pause: the goroutine must run within
	// a few pauses, never during a step.
	for i := 0; i < 100 && !ran.Load(); i++ {
		st.pause()
	}
	if !ran.Load() {
		t.Error("the other goroutine did not run during 100 pauses")
	}
	if !st.pinned {
		t.Error("not pinned again after the pause")
	}
	st.end()
	if st.pinned {
		t.Error("pinned after end")
	}
}

// TestStepBudget: point ends a step once it has lasted stepBudget, and
// not before.
func TestStepBudget(t *testing.T) {
	skipUnpinned(t)
	st := newSteps()
	st.begin()
	defer st.end()
	st.point()
	if st.pauses != 0 {
		t.Fatalf("paused at once: %d pauses", st.pauses)
	}
	for start := time.Now(); time.Since(start) < stepBudget; {
	}
	st.point()
	if st.pauses != 1 || !st.pinned {
		t.Errorf("after the budget: %d pauses, pinned %v; want 1 pause, pinned", st.pauses, st.pinned)
	}
}

// TestFlushWhileNaming: flushes look goroutine names up pinned, without
// blocking on the names' lock (which would end the process: "schedule:
// holding locks"), while goroutines keep naming themselves; every event
// is written under its goroutine's name.
func TestFlushWhileNaming(t *testing.T) {
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	const workers, rounds = 8, 200
	var wg sync.WaitGroup
	var started atomic.Int32
	stop := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			event.SetGoroutineName(fmt.Sprintf("namer-%d", w))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				event.SetGoroutineName(fmt.Sprintf("namer-%d", w))
				emitCounted(1)
				if i == 0 {
					started.Add(1)
				}
				if i%16 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	// The flushes race with the namers only once they run: the flusher
	// and this goroutine, waking each other, can keep the namers waiting
	// in the run queue for all the rounds (CI saw no events at all).
	for started.Load() < workers {
		runtime.Gosched()
	}
	for range rounds {
		theSession.flushNow()
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	data := dumped(t, rec)
	n := 0
	eachEvent(t, data, func(ev *jfr.Event) {
		if ev.Type.Name != "test.Counted" {
			return
		}
		n++
		th, _ := ev.Field("eventThread")
		name, _ := th.Field("javaName")
		if s := name.String(); len(s) < 6 || s[:6] != "namer-" {
			t.Fatalf("an event's thread is named %q", s)
		}
	})
	if n == 0 {
		t.Fatal("no events")
	}
}

// TestPinnedFileWriteKeepsP: the chunk writer's file writes, pinned, keep
// the P: a write through the scheduler lets sysmon hand the P to another
// goroutine, and the writer comes back from the syscall in the global run
// queue, behind every goroutine that never blocks. Only a pause (at the
// step budget) lets the P's other goroutine run.
func TestPinnedFileWriteKeepsP(t *testing.T) {
	skipUnpinned(t)
	if !rawWriteLinked {
		t.Skip("no raw writes on this platform")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "w"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var ran, stop atomic.Bool
	go func() {
		for !stop.Load() {
			ran.Store(true)
		}
	}()
	defer stop.Store(true)
	st := newSteps()
	s := &fileSink{f: f, steps: st}
	buf := make([]byte, rawWriteMax+1000)
	st.begin()
	defer st.end()
	writes := 0
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; writes++ {
		pauses := st.pauses
		ran.Store(false)
		if err := s.writeAt(buf, int64(writes%16)*int64(len(buf))); err != nil {
			t.Fatal(err)
		}
		if ran.Load() && st.pauses == pauses {
			t.Fatalf("write %d: another goroutine ran on the only P during a pinned write", writes)
		}
	}
	if s.slowRaw {
		t.Logf("the writes were slow (%d in 100 ms): written through the scheduler since", writes)
	}
}

// TestLateFlusherGetsTheP: once a flushpoint is late (batch.StallAt),
// each event wakes the flusher and yields the writer's P, so on one P the
// goroutines queued behind the writer, the flusher among them, run within
// its next few events (the scheduler takes one from the global run queue,
// where the writer waits, every 61 turns). Behind goroutines that never
// block, the flusher would otherwise wait for the run queues' 10 ms time
// slices, for seconds (BenchmarkCPUBoundGoroutines). A flush sets the
// next stall time, a second away at least.
func TestLateFlusherGetsTheP(t *testing.T) {
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	emitCounted(1) // the P's buffer, so the next events take the common path
	events := 1
	for round := range 20 {
		batch.SetStallAt(0)
		var ran atomic.Bool
		go ran.Store(true)
		for k := 0; k < 4 && !ran.Load(); k++ {
			emitCounted(1, events)
			events++
		}
		if !ran.Load() {
			t.Fatalf("round %d: the writer kept the only P for 4 events while the flusher was late", round)
		}
	}
	// While the recorder writes its file, the emitters do not yield:
	// yields do not speed up a slow write. The goroutine queued behind
	// the writer runs only if the scheduler preempts it, which 50 events
	// rarely last long enough for.
	kept := 0
	for range 5 {
		batch.SetStallAt(0)
		batch.BeginWrite()
		var ran atomic.Bool
		go ran.Store(true)
		for range 50 {
			emitCounted(1, events)
			events++
		}
		if !ran.Load() {
			kept++
		}
		batch.EndWrite()
		runtime.Gosched()
	}
	if kept < 3 {
		t.Errorf("the writer yielded while the recorder was writing its file: it kept the P in %d of 5 rounds", kept)
	}
	theSession.flushNow()
	if at, now := batch.StallAt(), clock.Now(); at-now < theSession.tps {
		t.Errorf("after a flush the flusher is late in %.3f s, want 1 s or more", float64(at-now)/float64(theSession.tps))
	}
	n := 0
	eachEvent(t, dumped(t, rec), func(ev *jfr.Event) {
		if ev.Type.Name == "test.Counted" {
			n++
		}
	})
	if n != events {
		t.Errorf("%d events recorded, want %d", n, events)
	}
}
