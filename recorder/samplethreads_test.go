package recorder

import (
	"encoding/json"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/exp/trace"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/gotrace"
	"github.com/flightrec/flightrec/internal/jfrstack"
	"github.com/flightrec/flightrec/jfr"
)

// Distinct functions, so that a sample's stack tells which goroutine ran.
//
//go:noinline
func busyA(d time.Duration) int { return spin(d) }

//go:noinline
func busyB(d time.Duration) int { return spin(d) }

//go:noinline
func busyC(d time.Duration) int { return spin(d) }

var busyFuncs = []string{"busyA", "busyB", "busyC"}

// sampledGoroutine is what a recording says of one CPU sample.
type sampledGoroutine struct {
	thread       int64 // javaThreadId: the goroutine id, 0 for a pseudo-thread
	osThread     int64
	name, osName string
	busy         string // the busy function on its stack, if any
	stack        []string
}

// TestSamplesCarryGoroutines records CPU-busy goroutines with the profile
// preset: their CPU samples sit on their goroutines (the threads the
// tracer's events use), each goroutine's samples are of its own code, and
// the threads are goroutines or the two named pseudo-threads, nothing
// invented. Our reader and jfr print --json agree.
func TestSamplesCarryGoroutines(t *testing.T) {
	if !samplesExpected(t) {
		t.Skip("no CPU samples here")
	}
	var gids []uint64
	data := recordProfile(t, func() { gids = runBusy() })
	checkRecordingSamples(t, data, gids)
}

// TestSamplesCarryGoroutinesRing: in a ring, the samples wait for a dump,
// which gives them their goroutine from the flight recorder's window.
func TestSamplesCarryGoroutinesRing(t *testing.T) {
	if !samplesExpected(t) {
		t.Skip("no CPU samples here")
	}
	prof, _ := Preset("profile")
	rec, err := Start(WithRing(16<<20, 0), WithSettings(prof))
	if err != nil {
		t.Fatal(err)
	}
	gids := runBusy()
	data := dumped(t, rec)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	checkRecordingSamples(t, data, gids)
}

// runBusy runs busyA, busyB and busyC on goroutines of their own for 1.5 s
// and returns the goroutines' ids.
func runBusy() []uint64 {
	gids := make([]uint64, len(busyFuncs))
	var wg sync.WaitGroup
	for i, f := range []func(time.Duration) int{busyA, busyB, busyC} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gids[i] = uint64(event.CurrentGoroutine())
			f(1500 * time.Millisecond)
		}()
	}
	wg.Wait()
	return gids
}

// checkRecordingSamples checks the CPU samples of a recording of runBusy,
// read by our reader and by jfr print --json.
func checkRecordingSamples(t *testing.T, data []byte, gids []uint64) {
	t.Helper()
	var ours []sampledGoroutine
	threadStarts := 0
	eachEvent(t, data, func(ev *jfr.Event) {
		switch ev.Type.Name {
		case "jdk.ThreadStart":
			threadStarts++
		case "jdk.ExecutionSample":
			th, _ := ev.Field("sampledThread")
			s := sampledGoroutine{}
			v, _ := th.Field("javaThreadId")
			s.thread = v.Int()
			v, _ = th.Field("osThreadId")
			s.osThread = v.Int()
			v, _ = th.Field("javaName")
			s.name = jfrstack.Text(v)
			v, _ = th.Field("osName")
			s.osName = jfrstack.Text(v)
			st, _ := ev.Field("stackTrace")
			fr, _ := st.Field("frames")
			for _, f := range fr.Elems() {
				m, _ := f.Field("method")
				n, _ := m.Field("name")
				s.stack = append(s.stack, jfrstack.Text(n))
				if slices.Contains(busyFuncs, jfrstack.Text(n)) {
					s.busy = jfrstack.Text(n)
				}
			}
			ours = append(ours, s)
		}
	})
	if threadStarts != 0 {
		t.Errorf("%d jdk.ThreadStart: goroutines are not started as threads", threadStarts)
	}
	checkSampledGoroutines(t, ours, gids)
	checkSummary(t, writeTemp(t, data))

	if _, err := exec.LookPath("jfr"); err != nil {
		t.Log("jfr not installed: jfr print --json not checked")
		return
	}
	out, err := exec.Command("jfr", "print", "--json", "--events", "jdk.ExecutionSample", writeTemp(t, data)).Output()
	if err != nil {
		t.Fatalf("jfr print --json: %v", err)
	}
	var doc struct {
		Recording struct {
			Events []struct {
				Values struct {
					SampledThread struct {
						OSName       string `json:"osName"`
						OSThreadID   int64  `json:"osThreadId"`
						JavaName     string `json:"javaName"`
						JavaThreadID int64  `json:"javaThreadId"`
					} `json:"sampledThread"`
					StackTrace struct {
						Frames []struct {
							Method struct {
								Name string `json:"name"`
							} `json:"method"`
						} `json:"frames"`
					} `json:"stackTrace"`
				} `json:"values"`
			} `json:"events"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("jfr print --json: %v", err)
	}
	var theirs []sampledGoroutine
	for _, e := range doc.Recording.Events {
		th := e.Values.SampledThread
		s := sampledGoroutine{thread: th.JavaThreadID, osThread: th.OSThreadID, name: th.JavaName, osName: th.OSName}
		for _, f := range e.Values.StackTrace.Frames {
			s.stack = append(s.stack, f.Method.Name)
			if slices.Contains(busyFuncs, f.Method.Name) {
				s.busy = f.Method.Name
			}
		}
		theirs = append(theirs, s)
	}
	if len(theirs) != len(ours) {
		t.Fatalf("jfr print --json shows %d samples, our reader %d", len(theirs), len(ours))
	}
	checkSampledGoroutines(t, theirs, gids)
}

func checkSampledGoroutines(t *testing.T, samples []sampledGoroutine, gids []uint64) {
	t.Helper()
	own := map[string]int{}   // busy function -> samples on its goroutine
	other := map[string]int{} // ... on a pseudo-thread
	for _, s := range samples {
		switch {
		case s.thread == 0:
			if !(s.osName == "Go runtime" && s.name == "no goroutine (scheduler, GC workers, idle)") &&
				!(s.osName == "Go CPU profiler" && s.name == "goroutines (CPU profile)") {
				t.Errorf("a sample on pseudo-thread %q/%q", s.osName, s.name)
			}
			if s.busy != "" {
				other[s.busy]++
			}
		case s.osThread != s.thread:
			t.Errorf("goroutine thread %d with OS thread id %d", s.thread, s.osThread)
		default:
			i := slices.Index(gids, uint64(s.thread))
			switch {
			case s.busy == "":
			case i < 0 || busyFuncs[i] != s.busy:
				t.Errorf("a sample of %s on goroutine %d (%s); the busy goroutines are %v; its stack: %v", s.busy, s.thread, s.name, gids, s.stack)
			default:
				own[s.busy]++
			}
		}
	}
	onGoroutines := 0
	for _, f := range busyFuncs {
		if own[f] >= 5 {
			onGoroutines++
		}
		// Samples before the trace's first generation, or the odd one at
		// a switch, may stay on a pseudo-thread: not most.
		if other[f] > own[f]/4+2 {
			t.Errorf("%s: %d samples on its goroutine, %d on a pseudo-thread", f, own[f], other[f])
		}
	}
	t.Logf("samples of the busy goroutines on their goroutine: %v, on a pseudo-thread: %v (of %d)", own, other, len(samples))
	if onGoroutines < 2 {
		t.Errorf("CPU samples on %d busy goroutines, want >= 2: %v", onGoroutines, own)
	}
}

// TestSamplesDroppedWithTrace slows the converter down so that the
// watchdog drops the trace while a goroutine is busy: the samples of the
// dropped periods are counted in jdk.DataLoss's droppedEvents, and none of
// the busy goroutine's samples lands on another goroutine.
func TestSamplesDroppedWithTrace(t *testing.T) {
	if !samplesExpected(t) {
		t.Skip("no CPU samples here")
	}
	defer func(lag time.Duration) { maxTraceLag, slowConverter = lag, nil }(maxTraceLag)
	maxTraceLag = 100 * time.Millisecond
	slowConverter = func() { time.Sleep(1500 * time.Millisecond) }
	var gid uint64
	data := recordProfile(t, func() {
		done := make(chan int)
		go func() {
			gid = uint64(event.CurrentGoroutine())
			done <- busyA(4 * time.Second)
		}()
		spinSink += <-done
	})
	dropped, elsewhere := int64(0), 0
	eachEvent(t, data, func(ev *jfr.Event) {
		switch ev.Type.Name {
		case "jdk.DataLoss":
			n, _ := ev.Field("droppedEvents")
			dropped += n.Int()
		case "jdk.ExecutionSample":
			th, _ := ev.Field("sampledThread")
			id, _ := th.Field("javaThreadId")
			st, _ := ev.Field("stackTrace")
			fr, _ := st.Field("frames")
			for _, f := range fr.Elems() {
				m, _ := f.Field("method")
				if n, _ := m.Field("name"); jfrstack.Text(n) == "busyA" && id.Int() != 0 && uint64(id.Int()) != gid {
					elsewhere++
				}
			}
		}
	})
	if dropped == 0 {
		t.Error("no events or samples counted dropped after the trace was dropped")
	}
	if elsewhere > 0 {
		t.Errorf("%d samples of busyA on another goroutine than %d", elsewhere, gid)
	}
	t.Logf("%d events and samples dropped", dropped)
}

// TestSampleGoroutinesDroppedTrace: samples wait for the trace to cover
// them, find the goroutine on their thread (or none), and those of a
// period whose trace the watchdog dropped are dropped and counted; the
// timeline is forgotten once its samples are written.
func TestSampleGoroutinesDroppedTrace(t *testing.T) {
	s := newSampleGoroutines()
	sample := func(tid int32, mono int64) cpuSample { return cpuSample{tid: tid, mono: mono} }
	out, lost := s.resolve([]cpuSample{sample(7, 50), sample(7, 150), sample(8, 150), sample(9, 500), sample(7, 1500)}, 1600, false)
	if len(out) != 0 || lost != 0 {
		t.Fatalf("before the trace covers them: %d out, %d lost", len(out), lost)
	}
	s.add(&gotrace.ThreadTimeline{Start: 100, End: 1000, Running: []gotrace.Running{
		{Thread: 7, G: 42, Start: 100, End: 200}, {Thread: 8, G: 43, Start: 300, End: 400}, {Thread: 9, G: trace.NoGoroutine, Start: 450, End: 550}}})
	// The waiting samples found their runs; no sample still to come (the
	// sampler read up to 1600) can fall in them: none is kept.
	if s.nruns != 0 {
		t.Errorf("%d runs kept that end before the sampler's last read", s.nruns)
	}
	out, lost = s.resolve(nil, 1600, false)
	got := map[int64]int64{}
	for _, sm := range out {
		got[sm.mono*10+int64(sm.tid)] = sm.g
	}
	// Thread 9's run at 500 says the trace does not know its goroutine.
	want := map[int64]int64{507: unknownGoroutine, 1507: 42, 1508: noGoroutine, 5009: unknownGoroutine}
	if lost != 0 || len(got) != len(want) {
		t.Fatalf("resolved %v, lost %d; want %v", got, lost, want)
	}
	for k, g := range want {
		if got[k] != g {
			t.Errorf("sample %d: goroutine %d, want %d", k, got[k], g)
		}
	}
	if s.nruns != 0 {
		t.Errorf("%d runs kept after their samples were written", s.nruns)
	}
	// The watchdog drops the trace: the waiting sample at 1500 and those
	// until the next generation have no timeline.
	s.restarted = true
	s.add(&gotrace.ThreadTimeline{Start: 2000, End: 3000, Running: []gotrace.Running{{Thread: 7, G: 44, Start: 2000, End: 3000}}})
	out, lost = s.resolve([]cpuSample{sample(7, 1800), sample(7, 2500), sample(7, 3500)}, 3600, false)
	if lost != 2 || len(out) != 1 || out[0].g != 44 {
		t.Errorf("after a dropped trace: %d lost (want 2), resolved %+v (want goroutine 44)", lost, out)
	}
	out, lost = s.resolve(nil, 0, true)
	if lost != 0 || len(out) != 1 || out[0].g != unknownGoroutine {
		t.Errorf("after the trace stopped: %d lost, %+v (want one sample of no known goroutine)", lost, out)
	}
}

// TestFlightHold: a ring's samples wait for a dump only flightHold; older
// ones, and all once samples are no longer wanted, go to the ring as they
// are (no goroutine known), none lost.
func TestFlightHold(t *testing.T) {
	f := &flightTracer{samples: true}
	hold := flightHold.Nanoseconds()
	now := 3 * hold
	old := f.hold([]cpuSample{{mono: now - hold - 1}, {mono: now - hold + 1}, {mono: now}}, now)
	if len(old) != 1 || old[0].mono != now-hold-1 || len(f.held) != 2 {
		t.Fatalf("%d released (want the one older than flightHold), %d held (want 2)", len(old), len(f.held))
	}
	f.samples = false
	if old = f.hold(nil, now); len(old) != 2 || len(f.held) != 0 {
		t.Errorf("samples no longer wanted: %d released, %d held; want 2, 0", len(old), len(f.held))
	}
}

// TestSampleGoroutinesPieces: a generation's timeline comes in pieces;
// waiting samples find their goroutine in any piece, and once the runs
// kept would pass maxRuns the rest of the generation is a gap whose
// samples read later are dropped and counted.
func TestSampleGoroutinesPieces(t *testing.T) {
	s := newSampleGoroutines()
	sample := func(tid int32, mono int64) cpuSample { return cpuSample{tid: tid, mono: mono} }
	s.resolve([]cpuSample{sample(7, 150)}, 1000, false)
	s.add(&gotrace.ThreadTimeline{Start: 100, Running: []gotrace.Running{{Thread: 7, G: 42, Start: 100, End: 200}}})
	// A run the sampler's next read may still fall in, past the bound.
	many := make([]gotrace.Running, maxRuns+1)
	for i := range many {
		many[i] = gotrace.Running{Thread: 8, G: 43, Start: 1000 + int64(i), End: 1001 + int64(i)}
	}
	s.add(&gotrace.ThreadTimeline{Start: 100, Running: many})
	if s.nruns != 0 {
		t.Fatalf("%d runs kept past the bound", s.nruns)
	}
	s.add(&gotrace.ThreadTimeline{Start: 100, End: 1_000_000})
	out, lost := s.resolve([]cpuSample{sample(8, 1500)}, 2_000_000, false)
	if lost != 1 || len(out) != 1 || out[0].g != 42 {
		t.Errorf("resolved %+v, %d lost; want the sample at 150 on goroutine 42, the one at 1500 lost", out, lost)
	}
}
