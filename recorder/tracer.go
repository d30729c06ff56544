package recorder

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	rtrace "runtime/trace"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/gotrace"
	"github.com/flightrec/flightrec/jfr"
)

// The Go execution tracer, streamed in process into gotrace's converter,
// gives the JDK's scheduler, lock and GC events. It runs while a recording
// enables one of tracerTypeNames (the profile preset does): it costs 7-16%
// on scheduler-heavy servers (shared docs/go-runtime-events.md) and takes
// the process's one runtime/trace.Start, which it gives back when no
// recording wants it. If the program traces itself already, the tracer
// does not run and jdk.ActiveSetting says why.

// tracerTypeNames are the types only the execution tracer produces: JDK
// types, and go.* types for what has no JDK twin (goTracedKinds).
var tracerTypeNames = []string{"jdk.JavaMonitorEnter", "jdk.JavaMonitorWait", "jdk.ThreadPark", "jdk.ThreadSleep",
	"jdk.ExecuteVMOperation", "jdk.SafepointBegin", "jdk.SafepointEnd", "go.MarkAssist", "go.NetworkWait"}

// goTracedKinds are the tracer's types that are not JDK types, declared
// as gotrace declares them (gotrace.GoEventType).
var goTracedKinds = map[string]gotrace.Kind{"go.MarkAssist": gotrace.MarkAssist, "go.NetworkWait": gotrace.NetworkWait}

// tracerThresholds are the profile preset's thresholds of the tracer's
// types, the JDK profile's: 10 ms for waits, every VM operation and
// safepoint.
var tracerThresholds = map[string]time.Duration{
	"jdk.JavaMonitorEnter": 10 * time.Millisecond, "jdk.JavaMonitorWait": 10 * time.Millisecond,
	"jdk.ThreadPark": 10 * time.Millisecond, "jdk.ThreadSleep": 10 * time.Millisecond,
	// A goroutine made to assist the GC's marking for 5 ms is allocating
	// faster than the GC keeps up with; a network wait of 20 ms is
	// jdk.SocketRead's default threshold.
	"go.MarkAssist": 5 * time.Millisecond, "go.NetworkWait": 20 * time.Millisecond,
}

// tracedKinds maps the recorder's types to the converter's kinds. While
// the tracer runs, the GC types come from it rather than from MemStats.
var tracedKinds = map[string]gotrace.Kind{
	"jdk.JavaMonitorEnter": gotrace.MonitorEnter, "jdk.JavaMonitorWait": gotrace.MonitorWait, "jdk.ThreadPark": gotrace.ThreadPark,
	"jdk.ThreadSleep": gotrace.ThreadSleep, "jdk.ExecuteVMOperation": gotrace.VMOperation, "jdk.SafepointBegin": gotrace.SafepointBegin,
	"jdk.SafepointEnd": gotrace.SafepointEnd, "jdk.GarbageCollection": gotrace.GarbageCollection, "jdk.GCPhasePause": gotrace.GCPhasePause,
	"go.MarkAssist": gotrace.MarkAssist, "go.NetworkWait": gotrace.NetworkWait,
}

// maxTraceLag is how far behind the converter may fall before the watchdog
// drops what the tracer has queued: the runtime buffers unread trace data
// without bound.
var maxTraceLag = 3 * time.Second

// slowConverter, when set (by a test), runs after each converted
// generation.
var slowConverter func()

// maxTraced bounds the converted events kept between two flushes; past it
// they are counted lost.
const maxTraced = 1 << 16

// startTrace is runtime/trace.Start; a test takes the tracer first.
var startTrace = rtrace.Start

type tracer struct {
	conv      *gotrace.Converter
	firstGC   uint64 // the gcId of the first cycle it traces
	pr        *io.PipeReader
	pw        *io.PipeWriter
	read      atomic.Int64 // trace bytes the converter has read
	discarded atomic.Int64 // trace bytes written after a drop
	running   bool         // the tracer is ours: trace.Stop is ours to call
	done      chan struct{}
	stop      chan struct{}
	watched   chan struct{}

	mu         sync.Mutex
	pending    []gotrace.Event
	lastEnd    int64 // wall ns of the last converted generation's end
	emittedAt  int64 // bytes read when it was converted
	lostEvents int64
	lostBytes  int64
	totalLost  int64
	drops      int
	status     string // why the tracer stopped, if it did
	// samples gives CPU samples their goroutine while jdk.ExecutionSample
	// is enabled; nil otherwise.
	samples *sampleGoroutines
}

// startTracer starts the execution tracer and its converter with the
// thresholds of m, or returns why it could not.
func startTracer(m map[string]resolved) (*tracer, error) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t := &tracer{stop: make(chan struct{}), watched: make(chan struct{})}
	off := map[gotrace.Kind]time.Duration{gotrace.ExecutionSample: -1, gotrace.MarkAssist: -1, gotrace.NetworkWait: -1}
	t.firstGC = uint64(ms.NumGC) + 1
	_, sampled := m["jdk.ExecutionSample"]
	if sampled {
		t.samples = newSampleGoroutines()
	}
	o := gotrace.Options{Thresholds: off, FirstGCID: t.firstGC}
	if sampled {
		o.Timeline = t.timeline
	}
	t.conv = gotrace.NewConverter(o)
	t.apply(m)
	if err := t.start(); err != nil {
		return nil, err
	}
	go t.watch()
	return t, nil
}

// apply sets the converter's kinds from the settings.
func (t *tracer) apply(m map[string]resolved) {
	for name, k := range tracedKinds {
		th := time.Duration(-1)
		if v, ok := m[name]; ok {
			th = v.threshold
		}
		t.conv.SetThreshold(k, th)
	}
}

// start starts tracing into a fresh pipe read by the converter.
func (t *tracer) start() error {
	pr, pw := io.Pipe()
	if err := startTrace(&lossWriter{pw, &t.discarded}); err != nil {
		return err
	}
	t.running = true
	t.mu.Lock()
	t.pr, t.pw = pr, pw
	t.lastEnd, t.emittedAt = time.Now().UnixNano(), t.read.Load()
	t.mu.Unlock()
	done := make(chan struct{})
	t.done = done
	go func() {
		defer close(done)
		err := t.conv.Convert(&countReader{pr, &t.read}, t.take)
		// A failure of the tracer's own data (not our closing of the
		// pipe) stops the stream: drain so that trace.Stop can finish.
		if err != nil && !errors.Is(err, errTraceDropped) {
			pr.CloseWithError(err)
		}
	}()
	return nil
}

var errTraceDropped = errors.New("trace dropped: the converter lagged")

// take keeps a converted generation's events for the next flush.
func (t *tracer) take(g *gotrace.Generation) error {
	t.mu.Lock()
	room := maxTraced - len(t.pending)
	n := min(room, len(g.Events))
	t.pending = append(t.pending, g.Events[:n]...)
	t.lostEvents += int64(len(g.Events) - n)
	t.lastEnd, t.emittedAt = max(t.lastEnd, g.End), t.read.Load()
	t.mu.Unlock()
	if slowConverter != nil {
		slowConverter()
	}
	return nil
}

// timeline takes a piece of the converter's thread timeline for the CPU
// samples.
func (t *tracer) timeline(tl *gotrace.ThreadTimeline) {
	t.mu.Lock()
	t.samples.add(tl)
	t.mu.Unlock()
}

// watch drops the trace when the converter lags more than maxTraceLag:
// whole generations, as the stream restarts with a new trace.Start.
func (t *tracer) watch() {
	defer close(t.watched)
	tick := time.NewTicker(min(maxTraceLag/4, 250*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			t.mu.Lock()
			lag := time.Duration(now.UnixNano() - t.lastEnd)
			t.mu.Unlock()
			if lag > maxTraceLag+time.Second { // a generation lasts about a second
				if !t.drop() {
					return
				}
			}
		}
	}
}

// drop discards the trace in flight and starts a new one, counting the
// bytes lost; false if the tracer could not start again.
func (t *tracer) drop() bool {
	t.pw.CloseWithError(errTraceDropped) // fails the runtime's writes...
	t.pr.CloseWithError(errTraceDropped) // ...and the converter's reads
	<-t.done
	rtrace.Stop()
	t.running = false
	t.mu.Lock()
	lost := t.read.Load() - t.emittedAt + t.discarded.Swap(0)
	t.lostBytes += lost
	t.totalLost += lost
	t.drops++
	if t.samples != nil {
		t.samples.restarted = true // the samples until the next generation go too
	}
	t.mu.Unlock()
	if err := t.start(); err != nil {
		// The program took the tracer meanwhile: leave it to it.
		t.mu.Lock()
		t.status = "stopped after a lag: " + err.Error()
		t.mu.Unlock()
		return false
	}
	return true
}

// close stops the tracer and gives runtime/trace back; the events
// converted so far stay for the last flush.
func (t *tracer) close() {
	close(t.stop)
	<-t.watched
	if !t.running {
		return
	}
	// Stop writes the last generation into the pipe; the converter reads
	// it to the end.
	rtrace.Stop()
	t.running = false
	t.pw.Close()
	<-t.done
}

// takeEvents returns the events converted since the last call, and a
// jdk.DataLoss record if the watchdog or the bound lost any.
func (t *tracer) takeEvents() ([]gotrace.Event, []jdkRecord) {
	t.mu.Lock()
	defer t.mu.Unlock()
	evs := t.pending
	t.pending = nil
	var recs []jdkRecord
	if t.lostBytes > 0 || t.lostEvents > 0 {
		recs = append(recs, jdkRecord{"jdk.DataLoss", []jfr.Value{jfr.IntValue(jfr.KindLong, clock.Now()),
			jfr.IntValue(jfr.KindLong, t.lostBytes), jfr.IntValue(jfr.KindLong, t.totalLost), jfr.IntValue(jfr.KindLong, t.lostEvents)}})
		t.lostBytes, t.lostEvents = 0, 0
	}
	return evs, recs
}

type countReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// lossWriter counts the bytes its writer refuses: the runtime's tracer
// ignores write errors.
type lossWriter struct {
	w    io.Writer
	lost *atomic.Int64
}

func (l *lossWriter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if err != nil {
		l.lost.Add(int64(len(p) - n))
	}
	return n, err
}

// flightTracer keeps the execution trace in runtime/trace's flight
// recorder while only ring recordings want the tracer's types: it leaves
// trace.Start to the program, and costs no conversion until a dump.
type flightTracer struct {
	fr         *rtrace.FlightRecorder
	thresholds map[gotrace.Kind]time.Duration
	// While jdk.ExecutionSample is enabled, the CPU samples of the last
	// flightHold wait here for a dump to give them their goroutine; older
	// ones go to the ring without.
	samples bool
	held    []cpuSample
}

// flightHold is how long CPU samples wait for a dump: longer than the
// flight recorder's window of a busy server, which gives their goroutine.
const flightHold = 10 * time.Second

// hold keeps fresh CPU samples for a dump and returns those older than
// flightHold at readMono, or all if the samples are no longer wanted.
func (f *flightTracer) hold(fresh []cpuSample, readMono int64) []cpuSample {
	f.held = append(f.held, fresh...)
	if n := len(f.held) - maxSamples; n > 0 {
		slices.SortFunc(f.held, func(a, b cpuSample) int { return cmp.Compare(a.mono, b.mono) })
		old := slices.Clone(f.held[:n])
		f.held = slices.Delete(f.held, 0, n)
		return old
	}
	if !f.samples {
		old := f.held
		f.held = nil
		return old
	}
	var old []cpuSample
	f.held = slices.DeleteFunc(f.held, func(s cpuSample) bool {
		if s.mono < readMono-flightHold.Nanoseconds() {
			old = append(old, s)
			return true
		}
		return false
	})
	return old
}

// flightWindow is the flight recorder's size hint: about 2 s of a busy
// server's trace (shared docs/go-runtime-events.md).
const flightWindow = 16 << 20

func startFlightTracer() (*flightTracer, error) {
	fr := rtrace.NewFlightRecorder(rtrace.FlightRecorderConfig{MaxBytes: flightWindow})
	if err := fr.Start(); err != nil {
		return nil, err
	}
	return &flightTracer{fr: fr}, nil
}

// apply keeps the thresholds of m for the next dump. GC cycles stay with
// MemStats, which covers the whole ring, and CPU samples with the
// recorder's sampler.
func (f *flightTracer) apply(m map[string]resolved) {
	f.thresholds = map[gotrace.Kind]time.Duration{gotrace.ExecutionSample: -1, gotrace.MarkAssist: -1, gotrace.NetworkWait: -1,
		gotrace.GarbageCollection: -1, gotrace.GCPhasePause: -1}
	for _, n := range tracerTypeNames {
		th := time.Duration(-1)
		if v, ok := m[n]; ok {
			th = v.threshold
		}
		f.thresholds[tracedKinds[n]] = th
	}
	_, f.samples = m["jdk.ExecutionSample"]
}

// setRingOnly tells whether every recording is a ring, which the flight
// recorder serves.
func (rt *runtimeEvents) setRingOnly(ringOnly bool) {
	rt.mu.Lock()
	rt.ringOnly = ringOnly
	rt.mu.Unlock()
}

// flightDump converts the flight recorder's window into chunks on the
// recording's clock cal and in a key range of their own, to be appended to
// a ring's dump; nil if the flight recorder does not run.
func (rt *runtimeEvents) flightDump(cal clock.Calibration) ([]byte, error) {
	rt.mu.Lock()
	f := rt.flight
	var th map[gotrace.Kind]time.Duration
	if f != nil {
		th = maps.Clone(f.thresholds)
	}
	rt.mu.Unlock()
	if f == nil {
		return nil, nil
	}
	var window, out bytes.Buffer
	if _, err := f.fr.WriteTo(&window); err != nil {
		return nil, fmt.Errorf("recorder: the flight recorder's trace: %w", err)
	}
	// The recording's metadata: its type ids are the ones readers saw in
	// the ring's chunks.
	md, _, err := recorderMetadata()
	if err != nil {
		return nil, err
	}
	threads := newSampleGoroutines()
	c := gotrace.NewConverter(gotrace.Options{Thresholds: th, Timeline: threads.add})
	jw, err := gotrace.NewJFRWriter(&out, c, &gotrace.JFRWriterOptions{Metadata: md,
		Clock: jfr.Clock{StartNanos: cal.UnixNanos, StartTicks: cal.Ticks, TicksPerSecond: cal.TicksPerSecond},
		Ticks: clock.TicksAt, FirstKey: flightKeys})
	if err != nil {
		return nil, err
	}
	// The samples held for the dump find their goroutine in the window
	// (or are older or newer than it), and go into the ring's next chunk.
	rt.mu.Lock()
	if rt.flight == f {
		rt.readSamples()
		threads.expectAll(f.held)
		f.held = nil
	}
	rt.mu.Unlock()
	defer func() {
		held, _ := threads.resolve(nil, 0, true)
		rt.mu.Lock()
		rt.samples = append(rt.samples, held...)
		rt.mu.Unlock()
	}()
	err = c.Convert(&window, jw.WriteGeneration)
	if err != nil {
		return nil, fmt.Errorf("recorder: the flight recorder's trace: %w", err)
	}
	if err := jw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// flightKeys is where the keys of the flight recorder's chunks start:
// above the recorder's and the streamed stacks'.
const flightKeys = traceStackKeys + 1<<29

// setTracer starts the tracer when m enables one of its types, and stops
// it when none is: the flight recorder while only rings record, else the
// stream; rt.mu is held.
func (rt *runtimeEvents) setTracer(m map[string]resolved) {
	want := false
	for _, n := range tracerTypeNames {
		_, on := m[n]
		want = want || on
	}
	if !want || !rt.ringOnly {
		rt.stopFlight()
	}
	switch {
	case !want:
		rt.stopTracer()
		rt.tracerStatus = ""
	case rt.ringOnly:
		rt.stopTracer()
		if rt.flight == nil {
			f, err := startFlightTracer()
			if err != nil {
				rt.tracerStatus = "not running: " + err.Error()
				return
			}
			rt.flight, rt.tracerStatus = f, ""
		}
		rt.flight.apply(m)
	case rt.tracer != nil:
		rt.tracer.apply(m)
	default:
		t, err := startTracer(m)
		if err != nil {
			// The program traces itself (trace.Start, go test -trace,
			// /debug/pprof/trace): its tracing goes on, ours does not.
			rt.tracerStatus = "not running: " + err.Error()
			return
		}
		rt.tracer, rt.tracerStatus = t, ""
		rt.tracedGCs = [2]uint32{uint32(t.firstGC - 1), math.MaxUint32}
	}
}

// stopTracer stops the tracer, keeping its last events for the next
// flush; rt.mu is held.
func (rt *runtimeEvents) stopTracer() {
	if rt.tracer == nil {
		return
	}
	rt.tracer.close()
	if rt.tracer.samples != nil {
		// The trace is converted to its end: every sample taken so far
		// finds its goroutine, or is after the trace.
		rt.readSamples()
		rt.samples = append(rt.samples, rt.tracer.resolveSamples(nil, 0, true)...)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rt.tracedGCs[1] = ms.NumGC
	evs, recs := rt.tracer.takeEvents()
	rt.traced = append(rt.traced, evs...)
	rt.pending = append(rt.pending, recs...)
	rt.tracer = nil
}

// stopFlight stops the flight recorder; the samples it held go to the
// ring without a goroutine. rt.mu is held.
func (rt *runtimeEvents) stopFlight() {
	if rt.flight == nil {
		return
	}
	rt.flight.fr.Stop()
	rt.samples = append(rt.samples, rt.flight.held...)
	rt.flight = nil
}

// finishTracer stops the tracer before the last recording stops.
func (rt *runtimeEvents) finishTracer() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.stopTracer()
}

// takeTraced returns the events converted since the last call, the
// jdk.DataLoss records of what the tracer lost, and what to say of the
// tracer in its types' settings.
// rt.mu is held. Pinned (st, the flusher's), it takes the tracer's
// events unpinned.
func (rt *runtimeEvents) takeTraced(st *steps) ([]gotrace.Event, []jdkRecord, string) {
	evs, recs := rt.traced, []jdkRecord(nil)
	rt.traced = nil
	status := rt.tracerStatus
	if rt.tracer != nil {
		pinned := st.pinned
		st.settle()
		if pinned {
			defer st.begin()
		}
		more, lost := rt.tracer.takeEvents()
		evs, recs = append(evs, more...), lost
		rt.tracer.mu.Lock()
		if rt.tracer.status != "" {
			status = rt.tracer.status
		}
		rt.tracer.mu.Unlock()
	}
	return evs, recs, status
}
