package recorder

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/clock"
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
	pcs   []uintptr
}

type runtimeEvents struct {
	ss   *session
	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}

	periods map[string]time.Duration
	enabled map[string]bool
	pending []jdkRecord // since the last chunk

	profiling bool
	prof      bytes.Buffer
	profStart int64

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
	if rt.profiling {
		pprof.StopCPUProfile()
		rt.profiling = false
	}
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
	_, want := rt.periods["jdk.ExecutionSample"]
	if want && !rt.profiling {
		rt.startProfile()
	} else if !want && rt.profiling {
		pprof.StopCPUProfile()
		rt.profiling = false
	}
}

// startProfile starts the Go CPU profiler (100 Hz); it fails, and no
// samples are recorded, if the program profiles the CPU itself.
func (rt *runtimeEvents) startProfile() {
	rt.prof.Reset()
	rt.profStart = clock.Now()
	rt.profiling = pprof.StartCPUProfile(&rt.prof) == nil
}

// minProfile is the shortest profile takeSamples ends unless forced:
// restarting the profiler costs about 1.5 MB of allocation, and a busy
// recording may cut a chunk every 20 ms.
const minProfile = time.Second

// take returns the runtime records noted since the last call and the CPU
// samples.
func (rt *runtimeEvents) take(force bool) ([]cpuSample, []jdkRecord) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	recs := rt.pending
	rt.pending = nil
	return rt.takeSamples(force), recs
}

// takeSamples restarts the CPU profiler and returns the samples of the
// profile it ends, spread evenly over its time (the profile does not keep
// sample times). Unless forced, it leaves a profile younger than
// minProfile running and returns nothing: its samples go to a later chunk.
// rt.mu is held.
func (rt *runtimeEvents) takeSamples(force bool) []cpuSample {
	if !rt.profiling {
		return nil
	}
	if !force && clock.Now()-rt.profStart < int64(float64(minProfile)*float64(clock.TicksPerSecond())/1e9) {
		return nil
	}
	pprof.StopCPUProfile()
	end := clock.Now()
	stacks, _ := parseCPUProfile(rt.prof.Bytes())
	start := rt.profStart
	rt.startProfile()
	var out []cpuSample
	total := 0
	for _, s := range stacks {
		total += s.count
	}
	i := 0
	for _, s := range stacks {
		for range s.count {
			t := start + (end-start)*int64(2*i+1)/int64(2*total)
			out = append(out, cpuSample{ticks: t, pcs: s.pcs})
			i++
		}
	}
	return out
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
		if rt.enabled["jdk.GarbageCollection"] {
			rt.add("jdk.GarbageCollection", jfr.IntValue(jfr.KindLong, start), jfr.IntValue(jfr.KindLong, pause), gcID,
				jfr.RefValue(nil, spec.GCNameGo), jfr.RefValue(nil, cause), jfr.IntValue(jfr.KindLong, pause), jfr.IntValue(jfr.KindLong, pause))
		}
		if rt.enabled["jdk.GCPhasePause"] {
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
			due := map[string]bool{}
			for n, p := range rt.periods {
				if now.Sub(last[n]) >= p {
					due[n] = true
					last[n] = now
				}
			}
			rt.mu.Unlock()
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

func (rt *runtimeEvents) cpuLoad(now time.Time) {
	user, sys := processCPU()
	mach := machineCPU()
	wall := now.Sub(rt.lastCPU)
	if wall <= 0 {
		return
	}
	ncpu := float64(runtime.NumCPU())
	jvmUser := float64(user-rt.lastUser) / float64(wall) / ncpu
	jvmSystem := float64(sys-rt.lastSys) / float64(wall) / ncpu
	machine := jvmUser + jvmSystem
	if busy, total := mach[0]-rt.lastMachine[0], mach[1]-rt.lastMachine[1]; total > 0 {
		machine = float64(busy) / float64(total)
	}
	rt.mu.Lock()
	rt.add("jdk.CPULoad", jfr.IntValue(jfr.KindLong, clock.Now()), jfr.FloatValue(jfr.KindFloat, jvmUser),
		jfr.FloatValue(jfr.KindFloat, jvmSystem), jfr.FloatValue(jfr.KindFloat, machine))
	rt.mu.Unlock()
	rt.lastCPU, rt.lastUser, rt.lastSys, rt.lastMachine = now, user, sys, mach
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

type profStack struct {
	count int
	pcs   []uintptr
}

// parseCPUProfile reads the samples of a gzipped pprof profile: each
// sample's count (its first value) and its locations' addresses.
func parseCPUProfile(gz []byte) ([]profStack, error) {
	if len(gz) == 0 {
		return nil, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	type sample struct {
		locs  []uint64
		count int64
	}
	var samples []sample
	addr := map[uint64]uint64{}
	err = protoFields(data, func(num int, v uint64, b []byte) error {
		switch num {
		case 2: // Sample
			var s sample
			first := true
			err := protoFields(b, func(num int, v uint64, b []byte) error {
				switch num {
				case 1:
					if b != nil {
						s.locs = appendPacked(s.locs, b)
					} else {
						s.locs = append(s.locs, v)
					}
				case 2:
					if first {
						if b != nil {
							vals := appendPacked(nil, b)
							if len(vals) > 0 {
								s.count = int64(vals[0])
							}
						} else {
							s.count = int64(v)
						}
						first = false
					}
				}
				return nil
			})
			samples = append(samples, s)
			return err
		case 4: // Location
			var id, a uint64
			err := protoFields(b, func(num int, v uint64, b []byte) error {
				switch num {
				case 1:
					id = v
				case 3:
					a = v
				}
				return nil
			})
			addr[id] = a
			return err
		}
		return nil
	})
	var out []profStack
	for _, s := range samples {
		ps := profStack{count: int(s.count)}
		for _, l := range s.locs {
			if len(ps.pcs) < 64 {
				ps.pcs = append(ps.pcs, uintptr(addr[l]))
			}
		}
		out = append(out, ps)
	}
	return out, err
}

func appendPacked(dst []uint64, b []byte) []uint64 {
	for len(b) > 0 {
		v, n := uvarint(b)
		if n == 0 {
			break
		}
		dst = append(dst, v)
		b = b[n:]
	}
	return dst
}

func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// protoFields calls fn for each field of a protobuf message: varints with
// v, length-delimited fields with b.
func protoFields(data []byte, fn func(num int, v uint64, b []byte) error) error {
	for len(data) > 0 {
		key, n := uvarint(data)
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		data = data[n:]
		num, typ := int(key>>3), key&7
		switch typ {
		case 0:
			v, n := uvarint(data)
			if n == 0 {
				return io.ErrUnexpectedEOF
			}
			data = data[n:]
			if err := fn(num, v, nil); err != nil {
				return err
			}
		case 1:
			if len(data) < 8 {
				return io.ErrUnexpectedEOF
			}
			data = data[8:]
		case 2:
			l, n := uvarint(data)
			if n == 0 || uint64(len(data)-n) < l {
				return io.ErrUnexpectedEOF
			}
			b := data[n : n+int(l)]
			data = data[n+int(l):]
			if err := fn(num, 0, b); err != nil {
				return err
			}
		case 5:
			if len(data) < 4 {
				return io.ErrUnexpectedEOF
			}
			data = data[4:]
		default:
			return io.ErrUnexpectedEOF
		}
	}
	return nil
}
