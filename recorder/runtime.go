package recorder

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/gotrace"
	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/jfr"
)

// Go runtime events. Those with a JDK counterpart (GC cycles, heap, CPU
// load, goroutine counts) are written in the JDK's layouts (spec.JDKEvents)
// by the chunk builder, from the jdkRecords collected here: the JDK's
// layouts have no eventThread or stackTrace where the event API writes
// them. The rest are ordinary events.

type runtimeMetric struct {
	event.Instant
	Name  string  `label:"Metric" description:"runtime/metrics name"`
	Value float64 `label:"Value"`
}

var metricEvent = event.Define[runtimeMetric](event.Info{Name: "go.RuntimeMetric", Label: "Go Runtime Metric", Description: "A runtime/metrics sample", Category: []string{"Go", "Runtime"}})

// jdkRecord is an event in the layout of its JDK type (spec.JDKEvent(name)):
// the values of its fields in order. Pool references carry no class
// (jfr.RefValue(nil, key)): the chunk's metadata gives it.
type jdkRecord struct {
	name string
	vals []jfr.Value
}

// The JDK types the runtime events write, written by the chunk builder
// besides the records of the program's events.
var runtimeTypeNames = []string{"jdk.GarbageCollection", "jdk.GCPhasePause", "jdk.GCHeapSummary", "jdk.CPULoad", "jdk.JavaThreadStatistics"}

type cpuSample struct {
	ticks int64
	mono  int64 // CLOCK_MONOTONIC ns
	tid   int32 // the OS thread sampled
	// g is the goroutine that ran on the thread then, from the execution
	// tracer: unknownGoroutine without the tracer, noGoroutine if none
	// ran (the scheduler, GC workers, idle).
	g   int64
	pcs []uintptr
}

const (
	unknownGoroutine = 0
	noGoroutine      = -1
)

type runtimeEvents struct {
	ss   *session
	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}

	periods map[string]time.Duration
	enabled map[string]bool
	pending []jdkRecord // since the last chunk

	// CPU samples, taken while jdk.ExecutionSample is enabled.
	sampler       *cpuSampler
	samplerPeriod time.Duration
	samplerStatus string // what jdk.ActiveSetting says of the sampler
	samples       []cpuSample

	// The execution tracer, while a recording enables one of its types
	// (tracer.go).
	tracer       *tracer
	tracerStatus string
	traced       []gotrace.Event // left by a tracer that stopped
	// tracedGCs are the GC cycles (first, last] whose events came from
	// the tracer.
	tracedGCs [2]uint32
	flight    *flightTracer // instead of tracer while every recording is a ring
	ringOnly  bool

	lastGC      uint32
	lastForced  uint32
	lastGoal    uint64
	peak        int64
	lastCPU     time.Time
	lastUser    time.Duration
	lastSys     time.Duration
	lastMachine [2]uint64
}

func startRuntimeEvents(ss *session) *runtimeEvents {
	rt := &runtimeEvents{ss: ss, stop: make(chan struct{}), done: make(chan struct{}), periods: map[string]time.Duration{}, enabled: map[string]bool{}}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rt.lastGC, rt.lastForced, rt.lastGoal = ms.NumGC, ms.NumForcedGC, ms.NextGC
	rt.lastCPU = time.Now()
	rt.lastUser, rt.lastSys = processCPU()
	rt.lastMachine = machineCPU()
	rt.armGC()
	go rt.loop()
	return rt
}

func (rt *runtimeEvents) close() {
	close(rt.stop)
	<-rt.done
	rt.mu.Lock()
	rt.stopSampler()
	rt.stopTracer()
	rt.stopFlight()
	rt.mu.Unlock()
}

func (rt *runtimeEvents) setPeriods(m map[string]resolved) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	clear(rt.periods)
	clear(rt.enabled)
	for _, n := range runtimeTypeNames {
		_, rt.enabled[n] = m[n]
	}
	for _, n := range []string{"jdk.CPULoad", "jdk.JavaThreadStatistics", "go.RuntimeMetric", "jdk.ExecutionSample"} {
		if v, ok := m[n]; ok {
			rt.periods[n] = max(v.period, 10*time.Millisecond)
		}
	}
	rt.setTracer(m)
	period, want := rt.periods["jdk.ExecutionSample"]
	switch {
	case !want:
		rt.stopSampler()
	case rt.sampler == nil || period != rt.samplerPeriod:
		rt.stopSampler()
		rt.samplerPeriod = period
		var err error
		if rt.sampler, err = startCPUSampler(period); err != nil {
			rt.samplerStatus = "no CPU samples: " + err.Error()
		}
	}
}

// startCPUSampler is newCPUSampler; a test makes it fail.
var startCPUSampler = newCPUSampler

func (rt *runtimeEvents) stopSampler() {
	if rt.sampler != nil {
		rt.sampler.close()
		rt.sampler = nil
	}
	rt.samplerStatus = ""
}

// maxSamples bounds the CPU samples kept between two chunks; past it they
// are counted lost.
const maxSamples = 1 << 16

// readSamples moves the samples the sampler has taken into rt.samples;
// rt.mu is held.
func (rt *runtimeEvents) readSamples() {
	if rt.sampler == nil {
		return
	}
	n := len(rt.samples)
	// They wait for the trace to say which goroutines ran: the stream's,
	// or a ring's dump of the flight recorder.
	switch t, f := rt.tracer, rt.flight; {
	case t != nil && t.samples != nil:
		rt.samples = append(rt.samples, t.resolveSamples(rt.sampler.read(nil), rt.sampler.readMono, false)...)
	case f != nil && (f.samples || len(f.held) > 0):
		rt.samples = append(rt.samples, f.hold(rt.sampler.read(nil), rt.sampler.readMono)...)
	default:
		rt.samples = rt.sampler.read(rt.samples)
	}
	if len(rt.samples) > maxSamples {
		rt.sampler.lost += uint64(len(rt.samples) - max(n, maxSamples))
		rt.samples = rt.samples[:max(n, maxSamples)]
	}
	rt.samplerStatus = rt.sampler.describe()
}

// take returns the runtime records and the CPU samples taken since the
// last call, and what to say of the sampler (empty when no samples are
// wanted).
// rt.mu is held. Pinned (st, the flusher's), it reads the sampler, which
// makes syscalls, unpinned.
func (rt *runtimeEvents) take(st *steps) ([]cpuSample, []jdkRecord, string) {
	if rt.sampler != nil {
		st.unpinned(rt.readSamples)
	}
	recs, samples := rt.pending, rt.samples
	rt.pending, rt.samples = nil, nil
	return samples, recs, rt.samplerStatus
}

// armGC sets a finalizer that runs after the next GC and re-arms itself.
func (rt *runtimeEvents) armGC() {
	s := new([16]byte)
	runtime.SetFinalizer(s, func(*[16]byte) {
		select {
		case <-rt.stop:
			return
		default:
		}
		rt.onGC()
		rt.armGC()
	})
}

func (rt *runtimeEvents) onGC() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	live := readMetric("/gc/heap/live:bytes")
	heap := jfr.StructValue(nil, jfr.IntValue(jfr.KindLong, 0), jfr.IntValue(jfr.KindLong, 0),
		jfr.IntValue(jfr.KindLong, int64(ms.HeapSys-ms.HeapReleased)), jfr.IntValue(jfr.KindLong, 0), jfr.IntValue(jfr.KindLong, int64(ms.HeapSys)))
	tps := clock.TicksPerSecond()
	for id := rt.lastGC + 1; id <= ms.NumGC && id > rt.lastGC; id++ {
		if ms.NumGC-id >= 256 {
			continue
		}
		i := (id + 255) % 256
		pause := int64(ms.PauseNs[i]) * tps / 1e9
		end := clock.TicksAt(int64(ms.PauseEnd[i]))
		start := end - pause
		cause := uint64(spec.GCCauseHeapTarget)
		if ms.NumForcedGC > rt.lastForced {
			cause = spec.GCCauseSystemGC
		}
		gcID := jfr.IntValue(jfr.KindInt, int64(id))
		if rt.enabled["jdk.GCHeapSummary"] {
			rt.add("jdk.GCHeapSummary", jfr.IntValue(jfr.KindLong, start), gcID, jfr.RefValue(nil, spec.GCBefore), heap,
				jfr.IntValue(jfr.KindLong, int64(rt.lastGoal)))
		}
		// While the execution tracer runs, GC cycles and pauses come
		// from it, exact.
		traced := id > rt.tracedGCs[0] && id <= rt.tracedGCs[1]
		if rt.enabled["jdk.GarbageCollection"] && !traced {
			rt.add("jdk.GarbageCollection", jfr.IntValue(jfr.KindLong, start), jfr.IntValue(jfr.KindLong, pause), gcID,
				jfr.RefValue(nil, spec.GCNameGo), jfr.RefValue(nil, cause), jfr.IntValue(jfr.KindLong, pause), jfr.IntValue(jfr.KindLong, pause))
		}
		if rt.enabled["jdk.GCPhasePause"] && !traced {
			rt.add("jdk.GCPhasePause", jfr.IntValue(jfr.KindLong, start), jfr.IntValue(jfr.KindLong, pause), jfr.RefValue(nil, 0), gcID,
				jfr.StringValue("GC Pause"))
		}
		if rt.enabled["jdk.GCHeapSummary"] {
			rt.add("jdk.GCHeapSummary", jfr.IntValue(jfr.KindLong, end), gcID, jfr.RefValue(nil, spec.GCAfter), heap,
				jfr.IntValue(jfr.KindLong, int64(live)))
		}
	}
	rt.lastGC, rt.lastForced, rt.lastGoal = ms.NumGC, ms.NumForcedGC, ms.NextGC
}

// maxPending bounds the runtime records kept between two chunks.
const maxPending = 1 << 16

// add notes a record for the next chunk; rt.mu is held.
func (rt *runtimeEvents) add(name string, vals ...jfr.Value) {
	if len(rt.pending) < maxPending {
		rt.pending = append(rt.pending, jdkRecord{name, vals})
	}
}

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return s[0].Value.Uint64()
	}
	return 0
}

// loopInterval is how often loop wakes (rt.mu is held): every 10 ms while
// the CPU sampler runs, whose rings hold a few seconds; else a tenth of
// the shortest period, from 10 to 100 ms; once a second when nothing is
// periodic. A goroutine woken by its timer goes to its P's runnext slot,
// pushing out one readied there before it (the flusher, paused between
// its steps) to the back of the run queues: loop wakes no more often than
// it needs to.
func (rt *runtimeEvents) loopInterval() time.Duration {
	if rt.sampler != nil {
		return 10 * time.Millisecond
	}
	d := time.Second
	for _, p := range rt.periods {
		d = min(d, max(p/10, 10*time.Millisecond), 100*time.Millisecond)
	}
	return d
}

func (rt *runtimeEvents) loop() {
	defer close(rt.done)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	last := map[string]time.Time{}
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if d.Kind == metrics.KindUint64 || d.Kind == metrics.KindFloat64 {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	for {
		select {
		case <-rt.stop:
			return
		case now := <-tick.C:
			rt.mu.Lock()
			// Drained every tick: a ring holds a few seconds.
			rt.readSamples()
			due := map[string]bool{}
			for n, p := range rt.periods {
				if now.Sub(last[n]) >= p {
					due[n] = true
					last[n] = now
				}
			}
			next := rt.loopInterval()
			rt.mu.Unlock()
			tick.Reset(next)
			if due["jdk.CPULoad"] {
				rt.cpuLoad(now)
			}
			if due["jdk.JavaThreadStatistics"] {
				n := int64(runtime.NumGoroutine())
				rt.peak = max(rt.peak, n)
				rt.mu.Lock()
				rt.add("jdk.JavaThreadStatistics", jfr.IntValue(jfr.KindLong, clock.Now()), jfr.IntValue(jfr.KindLong, n),
					jfr.IntValue(jfr.KindLong, 0), jfr.IntValue(jfr.KindLong, int64(readMetric("/sched/goroutines-created:goroutines"))),
					jfr.IntValue(jfr.KindLong, rt.peak))
				rt.mu.Unlock()
			}
			if due["go.RuntimeMetric"] && metricEvent.Enabled() {
				metrics.Read(samples)
				for _, s := range samples {
					var ev runtimeMetric
					metricEvent.Begin(&ev)
					if ev.ShouldCommit() {
						ev.Name = s.Name
						if s.Value.Kind() == metrics.KindUint64 {
							ev.Value = float64(s.Value.Uint64())
						} else if s.Value.Kind() == metrics.KindFloat64 {
							ev.Value = s.Value.Float64()
						}
					}
					ev.Commit()
				}
			}
		}
	}
}

func (rt *runtimeEvents) cpuLoad(time.Time) {
	// The wall time is read with the CPU times: a loop woken late on a busy
	// machine would otherwise divide CPU time used after its wake-up time
	// by too short a period.
	user, sys := processCPU()
	mach := machineCPU()
	now := time.Now()
	jvmUser, jvmSystem, machine, ok := cpuFractions(user-rt.lastUser, sys-rt.lastSys, now.Sub(rt.lastCPU), runtime.NumCPU(),
		mach[0]-rt.lastMachine[0], mach[1]-rt.lastMachine[1])
	if !ok {
		return
	}
	rt.mu.Lock()
	rt.add("jdk.CPULoad", jfr.IntValue(jfr.KindLong, clock.Now()), jfr.FloatValue(jfr.KindFloat, jvmUser),
		jfr.FloatValue(jfr.KindFloat, jvmSystem), jfr.FloatValue(jfr.KindFloat, machine))
	rt.mu.Unlock()
	rt.lastCPU, rt.lastUser, rt.lastSys, rt.lastMachine = now, user, sys, mach
}

// cpuFractions turns a period's process CPU times and the machine's busy
// and total jiffies into jdk.CPULoad's fractions of the machine. Clocks
// that disagree a little (getrusage's and the wall clock's, /proc/stat's
// jiffies) can give a process more than the machine had, or a machine
// busy less than the process: as HotSpot does, each is clamped to [0, 1]
// and the machine to at least the process ("other processes: -1 %" is not
// shown).
func cpuFractions(user, sys, wall time.Duration, ncpu int, busy, total uint64) (jvmUser, jvmSystem, machine float64, ok bool) {
	if wall <= 0 || ncpu <= 0 {
		return 0, 0, 0, false
	}
	frac := func(v float64) float64 { return min(max(v, 0), 1) }
	jvmUser = frac(float64(user) / float64(wall) / float64(ncpu))
	jvmSystem = frac(float64(sys) / float64(wall) / float64(ncpu))
	if jvmUser+jvmSystem > 1 {
		jvmSystem = 1 - jvmUser
	}
	machine = jvmUser + jvmSystem
	if total > 0 {
		machine = max(frac(float64(busy)/float64(total)), machine)
	}
	return jvmUser, jvmSystem, machine, true
}

// machineCPU returns busy and total jiffies from /proc/stat (zeros where it
// does not exist).
func machineCPU() [2]uint64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return [2]uint64{}
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	var busy, total uint64
	for i, s := range f[1:] {
		v, _ := strconv.ParseUint(s, 10, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return [2]uint64{busy, total}
}
