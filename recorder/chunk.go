package recorder

import (
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/gotrace"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/jfr"
)

// Event types the flusher writes itself, in the JDK's layouts
// (spec.JDKEvents), and the JDK types declared for consumers that join on
// them though no event of them is written.
var (
	rawTypeNames  = slices.Concat([]string{"jdk.ExecutionSample", "jdk.DataLoss", "jdk.ActiveRecording", "jdk.ActiveSetting"}, runtimeTypeNames, tracerTypeNames, factTypeNames)
	declaredTypes = []string{"jdk.OldGarbageCollection", "jdk.YoungGarbageCollection", "jdk.Shutdown"}
)

type chunkInput struct {
	start, end int64
	clock      clock.Calibration // at start: the header's anchor and rate
	recs       *gathered
	recordings []*Recording
	settings   map[string]resolved
	samples    []cpuSample
	runtime    []jdkRecord
	sampler    string          // the CPU sampler's state, for jdk.ExecutionSample's settings
	traced     []gotrace.Event // from the execution tracer (tracer.go)
	tracer     string          // why the tracer does not run, for its types' settings
	// runtimeSkipped: the runtime events were left for the next flush,
	// and sampler and tracer are not known.
	runtimeSkipped bool
	dropped        *batch.Session
}

type frameInfo struct {
	fn      string
	line    int
	inlined bool
}

type chunkBuilder struct {
	ss        *session
	mdVersion uint64
	md        *jfr.Metadata
	raw       map[string]*jfr.Class
	symCache  map[uintptr][]frameInfo
	lostBytes uint64
	lostEvts  uint64
	// Keys, and the goroutine names under them, stay the same across
	// chunks: the JDK's parser reuses a previous chunk's constant for a
	// key it has seen.
	keys    map[string]uint64
	nextKey uint64
	// traceKey is the last key of a stack trace from the execution
	// tracer (tracerchunk.go).
	traceKey uint64
	threads  map[uint64][2]string
	// One writer serves every chunk: growing a fresh one's buffers to a
	// chunk's size cost more than encoding it.
	w     *jfr.Writer
	out   chunkParts
	chunk chunkState
	facts *sysFacts

	// namesVersion is batch.NamesVersion when threads was filled.
	namesVersion uint64
	// steps pins the encoding of a flush's constants (steps.go).
	steps *steps
}

func newChunkBuilder(ss *session) *chunkBuilder {
	return &chunkBuilder{ss: ss, symCache: make(map[uintptr][]frameInfo), mdVersion: ^uint64(0),
		keys: map[string]uint64{}, threads: map[uint64][2]string{}, steps: newSteps(), facts: newSysFacts()}
}

// kindTypes declares uint16 and uint32 fields one size up: their varints
// are zero-extended, and `jfr print` ignores @Unsigned (a uint32 4e9 read
// as an int prints as -294967296). uint8 is written as one raw byte, and
// uint64 has no wider type: they print as signed beyond 127 and 2^63-1.
var kindTypes = map[batch.Kind]string{
	batch.Bool: spec.Boolean, batch.Int8: spec.Byte, batch.Uint8: spec.Byte,
	batch.Int16: spec.Short, batch.Uint16: spec.Int, batch.Int32: spec.Int, batch.Uint32: spec.Long,
	batch.Int64: spec.Long, batch.Uint64: spec.Long, batch.Float32: spec.Float, batch.Float64: spec.Double,
	batch.String: spec.String, batch.Thread: spec.Thread, batch.Time: spec.Long, batch.Func: spec.Method,
}

var unsignedKinds = map[batch.Kind]bool{batch.Uint8: true, batch.Uint16: true, batch.Uint32: true, batch.Uint64: true}

func contentType(c string) jfr.ContentType {
	t := spec.ContentTags[c]
	return jfr.ContentType{Annotation: t[0], Unit: t[1]}
}

// metadata rebuilds the metadata when event types were registered:
// unpinned, as it takes the registry's lock.
func (cb *chunkBuilder) metadata() error {
	if batch.TypesVersion() == cb.mdVersion {
		return nil
	}
	var md *jfr.Metadata
	var version uint64
	var err error
	cb.steps.unpinned(func() { md, version, err = recorderMetadata() })
	if err != nil {
		return err
	}
	cb.md, cb.mdVersion = md, version
	cb.raw = make(map[string]*jfr.Class)
	for _, n := range rawTypeNames {
		cb.raw[n] = md.ClassByName(n)
	}
	return nil
}

// recorderMetadata declares the registered event types and the recorder's
// own, and returns it with the registry's version.
func recorderMetadata() (*jfr.Metadata, uint64, error) {
	types, version := batch.Types()
	b := jfr.NewMetadataBuilder()
	for _, d := range types {
		id, err := declare(b, d)
		if err != nil {
			return nil, 0, err
		}
		if id != d.ID {
			return nil, 0, fmt.Errorf("recorder: internal error: %s got id %d, emitted as %d", d.Name, id, d.ID)
		}
	}
	for _, name := range append(rawTypeNames, declaredTypes...) {
		var err error
		if k, ok := goTracedKinds[name]; ok {
			et, _ := gotrace.GoEventType(k)
			_, err = b.AddEvent(et)
		} else {
			_, err = b.AddJDKEvent(name)
		}
		if err != nil {
			return nil, 0, err
		}
	}
	md, err := b.Build()
	return md, version, err
}

// pools interns the chunk's constants.
type pools struct {
	w       *jfr.Writer
	c       map[string]*jfr.Class
	keys    map[string]uint64 // kind + "\x00" + name -> key, kept across chunks
	nextKey *uint64           // the last key handed out
	added   map[string]bool   // in this chunk
	threads map[uint64][2]string
	steps   *steps
	err     error
}

func (p *pools) add(class string, key uint64, v jfr.Value) {
	if p.err == nil {
		p.err = p.w.AddConstant(p.c[class], key, v)
	}
}

// maxKeys caps the interned constants kept from chunk to chunk.
const maxKeys = 1 << 16

func (p *pools) intern(kind, s string, add func(key uint64)) uint64 {
	id := kind + "\x00" + s
	k, ok := p.keys[id]
	if !ok {
		if len(p.keys) >= maxKeys {
			// Forget the oldest keys rather than grow without end (labels
			// can be per request); values seen again get new keys, as
			// keys are never reused.
			clear(p.keys)
		}
		// Odd: even keys of the Method pool are event.Func ids.
		*p.nextKey++
		k = 2**p.nextKey - 1
		p.keys[id] = k
	}
	if !p.added[id] {
		p.added[id] = true
		add(k)
	}
	return k
}

func (p *pools) symbol(s string) uint64 {
	return p.intern(spec.Symbol, s, func(k uint64) { p.add(spec.Symbol, k, jfr.StringValue(s)) })
}

// method interns a Go function as a jdk.types.Method whose class is the
// package path and whose package is null (JMC cuts a class name at its
// package's prefix, jfr-format.md §8.3).
func (p *pools) method(fn string) uint64 {
	return p.intern(spec.Method, fn, func(k uint64) { p.add(spec.Method, k, p.methodValue(fn)) })
}

// funcRef adds the jdk.types.Method of the function of id (an event.Func
// field's value, batch.FuncID) under the key id.
func (p *pools) funcRef(id uint64) {
	fn := "unknown"
	if f := runtime.FuncForPC(batch.FuncPC(id)); f != nil {
		fn = f.Name()
	}
	p.add(spec.Method, id, p.methodValue(fn))
}

// class interns a jdk.types.Class named name, in no package.
func (p *pools) class(name string) uint64 {
	return p.intern(spec.Class, name, func(ck uint64) {
		p.add(spec.Class, ck, jfr.StructValue(p.c[spec.Class], jfr.RefValue(p.c[spec.ClassLoader], 0),
			jfr.RefValue(p.c[spec.Symbol], p.symbol(name)), jfr.RefValue(p.c[spec.Package], 0),
			jfr.IntValue(jfr.KindInt, 0), jfr.BoolValue(false)))
	})
}

func (p *pools) methodValue(fn string) jfr.Value {
	pkg, name := spec.SplitFunc(fn)
	return jfr.StructValue(p.c[spec.Method], jfr.RefValue(p.c[spec.Class], p.class(pkg)),
		jfr.RefValue(p.c[spec.Symbol], p.symbol(name)), jfr.RefValue(p.c[spec.Symbol], p.symbol("()V")),
		jfr.IntValue(jfr.KindInt, 0), jfr.BoolValue(false))
}

// maxThreadNames caps the goroutine names kept from chunk to chunk; past
// it they are looked up afresh.
const maxThreadNames = 1 << 16

func (p *pools) thread(g uint64) {
	info, ok := p.threads[g]
	if !ok {
		if len(p.threads) >= maxThreadNames {
			clear(p.threads)
		}
		info[0], info[1] = p.steps.lookupName(g)
		p.threads[g] = info
	}
	name, labels := info[0], info[1]
	// Not fmt, which may lock a mutex: the caller may be pinned.
	os := "goroutine " + strconv.FormatUint(g, 10)
	if name == "" {
		name = os
	}
	var gk uint64
	if labels != "" {
		gk = p.intern(spec.ThreadGroup, labels, func(k uint64) {
			p.add(spec.ThreadGroup, k, jfr.StructValue(p.c[spec.ThreadGroup], jfr.RefValue(p.c[spec.ThreadGroup], 0), jfr.StringValue(labels)))
		})
	}
	p.add(spec.Thread, g, jfr.StructValue(p.c[spec.Thread], jfr.StringValue(os), jfr.IntValue(jfr.KindLong, int64(g)),
		jfr.StringValue(name), jfr.IntValue(jfr.KindLong, int64(g)), jfr.RefValue(p.c[spec.ThreadGroup], gk)))
}

func (cb *chunkBuilder) frames(pc uintptr) []frameInfo {
	if f, ok := cb.symCache[pc]; ok {
		return f
	}
	var out []frameInfo
	// The 0 after pc makes CallersFrames expand the frames inlined at pc
	// (it does so only for a PC with more after it); it stops at the 0.
	fr := runtime.CallersFrames([]uintptr{pc, 0})
	for {
		f, more := fr.Next()
		if f.Function != "" {
			out = append(out, frameInfo{fn: f.Function, line: f.Line, inlined: more})
		}
		if !more {
			break
		}
	}
	if len(cb.symCache) > 1<<16 {
		clear(cb.symCache)
	}
	cb.symCache[pc] = out
	return out
}

// apiPrefix names the functions of package event, which an emitted
// event's stack starts in when Commit is inlined into the caller.
const apiPrefix = "github.com/flightrec/flightrec/event."

func (cb *chunkBuilder) stack(p *pools, key uint64, pcs []uintptr) {
	var frames []jfr.Value
	fc := p.c[spec.StackFrame]
	top := true // the stack starts at the program's code, not in Commit
	// The first frames are event's or those flightrec gen wrote (in the
	// program's package): flightrecCommit where the unwinder keeps it
	// (runtime.Callers, off amd64), then the generated Commit, inlined
	// into the caller.
	genCommit := true
	for _, pc := range pcs {
		for _, f := range cb.frames(pc) {
			api := strings.HasPrefix(f.fn, apiPrefix) || strings.HasSuffix(f.fn, ").flightrecCommit")
			generated := genCommit && strings.HasSuffix(f.fn, ").Commit")
			genCommit = api
			if top && (api || generated) {
				continue
			}
			top = false
			ft := uint64(1) // JIT compiled
			if f.inlined {
				ft = 2
			}
			frames = append(frames, jfr.StructValue(fc, jfr.RefValue(p.c[spec.Method], p.method(f.fn)),
				jfr.IntValue(jfr.KindInt, int64(f.line)), jfr.IntValue(jfr.KindInt, 0), jfr.RefValue(p.c[spec.FrameType], ft)))
		}
	}
	p.add(spec.StackTrace, key, jfr.StructValue(p.c[spec.StackTrace], jfr.BoolValue(len(pcs) >= 64), jfr.ArrayValue(fc, frames...)))
}

// The java.lang.Threads of CPU samples that are not a goroutine's:
// sampleThread when the sampler alone does not say which goroutine a
// sample came from (the execution tracer is off), runtimeThread when the
// tracer saw no goroutine on the sampled thread (the scheduler, GC
// workers, idle). Their keys are the largest 32-bit ones, which goroutine
// ids (the other threads' keys) do not reach.
const (
	sampleThread  = math.MaxInt32
	runtimeThread = math.MaxInt32 - 1
)

// sampledThread returns the thread key of a CPU sample of goroutine g
// (cpuSample.g), adding the thread to the chunk's pool the first time.
func (cb *chunkBuilder) sampledThread(p *pools, ch *chunkState, g int64) uint64 {
	switch g {
	case unknownGoroutine:
		if isNew(ch.threads, sampleThread) {
			p.add(spec.Thread, sampleThread, jfr.StructValue(p.c[spec.Thread], jfr.StringValue("Go CPU profiler"), jfr.IntValue(jfr.KindLong, 0),
				jfr.StringValue("goroutines (CPU profile)"), jfr.IntValue(jfr.KindLong, 0), jfr.RefValue(p.c[spec.ThreadGroup], 0)))
		}
		return sampleThread
	case noGoroutine:
		if isNew(ch.threads, runtimeThread) {
			p.add(spec.Thread, runtimeThread, jfr.StructValue(p.c[spec.Thread], jfr.StringValue("Go runtime"), jfr.IntValue(jfr.KindLong, 0),
				jfr.StringValue("no goroutine (scheduler, GC workers, idle)"), jfr.IntValue(jfr.KindLong, 0), jfr.RefValue(p.c[spec.ThreadGroup], 0)))
		}
		return runtimeThread
	}
	if isNew(ch.threads, uint64(g)) {
		p.thread(uint64(g))
	}
	return uint64(g)
}

// chunkParts collects the pieces a jfr.Writer writes a segment in, without
// copying them: they are the writer's own buffers, which stay as they are
// until its next call, and are delivered before that.
type chunkParts struct {
	parts [][]byte
}

func (c *chunkParts) Write(b []byte) (int, error) {
	c.parts = append(c.parts, b)
	return len(b), nil
}

// segment is what one flush adds to the chunk being written.
type segment struct {
	first  bool      // the chunk starts here: parts begin with its header
	parts  [][]byte  // the chunk's next bytes, valid until the next flush
	header []byte    // the chunk's header as of the end of parts
	closed bool      // the chunk is complete
	recs   *gathered // the emitted records among parts
}

// chunkState is what the builder knows of the chunk being written: the
// constants it holds so far, so each flushpoint adds only new ones.
type chunkState struct {
	open     bool
	first    bool // no segment delivered yet
	start    int64
	added    map[string]bool
	threads  map[uint64]struct{}
	stacks   map[uint64]struct{}
	strs     map[uint64]struct{}
	funcs    map[uintptr]struct{}
	settings map[string]resolved // as written in jdk.ActiveSetting
}

func (c *chunkState) reset(start int64) {
	*c = chunkState{open: true, first: true, start: start, added: map[string]bool{}, threads: map[uint64]struct{}{},
		stacks: map[uint64]struct{}{}, strs: map[uint64]struct{}{}, funcs: map[uintptr]struct{}{}}
}

// flush writes the gathered records and the recorder's own events as the
// next segment of the open chunk (opening one if none is), ending in a
// flushpoint, and closes the chunk after it if cut is set. It hands each
// segment to deliver, whose parts stay valid only during the call.
func (cb *chunkBuilder) flush(in chunkInput, cut bool, deliver func(segment)) error {
	cb.out.parts = cb.out.parts[:0]
	err := cb.encode(in, cut, deliver)
	if err != nil {
		// The writer's state is unknown: start afresh next time.
		cb.w = nil
		cb.chunk.open = false
	}
	return err
}

func (cb *chunkBuilder) encode(in chunkInput, cut bool, deliver func(segment)) error {
	// Pinned, in steps (steps.go): the gathered records' constants are
	// most of a flush's work. A caller that came pinned (the chunk
	// writer) leaves pinned.
	st := cb.steps
	if !st.pinned {
		defer st.end()
	}
	st.begin()
	version := cb.mdVersion
	if err := cb.metadata(); err != nil {
		return err
	}
	ss := cb.ss
	if cb.chunk.open && cb.mdVersion != version {
		// New event types: their records need the new metadata, which
		// takes a new chunk.
		if err := cb.w.EndChunk(in.start); err != nil {
			return err
		}
		deliver(segment{header: cb.w.Header(), closed: true})
		cb.chunk.open = false
	}
	if v := batch.NamesVersion(); v != cb.namesVersion {
		// A goroutine was named since: look the names up again. A
		// thread already in this chunk keeps its constant (a key has
		// one value in a chunk), so the new name shows from the next.
		clear(cb.threads)
		cb.namesVersion = v
	}
	if cb.w == nil {
		cb.w = jfr.NewWriter(&cb.out, &jfr.WriterOptions{TicksPerSecond: ss.tps, StartNanos: ss.anchor.UnixNanos, StartTicks: ss.anchor.Ticks})
	}
	w := cb.w
	ch := &cb.chunk
	if !ch.open {
		if err := w.SetMetadata(cb.md); err != nil {
			return err
		}
		w.SetClock(jfr.Clock{StartNanos: in.clock.UnixNanos, StartTicks: in.clock.Ticks, TicksPerSecond: in.clock.TicksPerSecond})
		if err := w.StartChunk(in.start); err != nil {
			return err
		}
		ch.reset(in.start)
	}
	p := &pools{w: w, c: map[string]*jfr.Class{}, keys: cb.keys, nextKey: &cb.nextKey, added: ch.added,
		threads: cb.threads, steps: cb.steps}
	for _, n := range []string{spec.String, spec.Thread, spec.ThreadGroup, spec.Class, spec.ClassLoader, spec.Method, spec.Symbol,
		spec.Package, spec.StackTrace, spec.StackFrame, spec.FrameType, spec.ThreadState} {
		p.c[n] = cb.md.ClassByName(n)
	}
	if ch.first {
		p.add(spec.FrameType, 1, jfr.StringValue(spec.FrameTypes[1]))
		p.add(spec.FrameType, 2, jfr.StringValue(spec.FrameTypes[2]))
	}
	// The writer takes the gathered records where they are.
	if err := w.AdoptRecords(in.recs.parts...); err != nil {
		return err
	}
	if err := w.AdoptRecords(in.recs.copied); err != nil {
		return err
	}
	for _, k := range in.recs.strs {
		if isNew(ch.strs, k) {
			p.add(spec.String, k, jfr.StringValue(st.interned(k)))
		}
		st.point()
	}
	for _, pc := range in.recs.funcs { // Func ids
		if isNew(ch.funcs, pc) {
			p.funcRef(uint64(pc))
		}
		st.point()
	}
	for _, g := range in.recs.threads {
		if isNew(ch.threads, g) {
			p.thread(g)
		}
		st.point()
	}
	for i := 0; i < len(in.recs.stacks); {
		key, n := uint64(in.recs.stacks[i]), int(in.recs.stacks[i+1])
		if isNew(ch.stacks, key) {
			cb.stack(p, key, in.recs.stacks[i+2:i+2+n])
		}
		i += 2 + n
		st.point()
	}
	// The recorder's own events are few. Those of a chunk's start and
	// end, CPU samples, traced events and changed settings take locks,
	// make syscalls or call fmt: then they are written unpinned.
	// A flush that left the runtime events for the next one (their lock
	// was busy) does not know the sampler's and the tracer's states: the
	// changed settings wait for that flush, which takes the lock.
	settingsChanged := !maps.Equal(ch.settings, in.settings) && !in.runtimeSkipped
	if ch.first || cut || len(in.samples) > 0 || len(in.traced) > 0 || settingsChanged {
		st.settle()
	}
	at := func(name string) bool { _, ok := in.settings[name]; return ok }
	ev := func(name string, vals ...jfr.Value) {
		if p.err == nil {
			p.err = w.WriteEvent(cb.raw[name], append([]jfr.Value{jfr.IntValue(jfr.KindLong, in.end)}, vals...))
		}
	}
	cb.writeRuntime(p, in)
	cb.writeTraced(p, ch, in)
	fact := func(name string, vals ...jfr.Value) {
		if p.err == nil {
			p.err = w.WriteEvent(cb.raw[name], vals)
		}
	}
	if ch.first {
		var redact []string
		for _, r := range in.recordings {
			redact = append(redact, r.cfg.envRedaction...)
		}
		cb.writeEnums(p)
		cb.facts.begin(in.start, redact, at, fact)
	}
	if cut {
		cb.facts.end(in.end, at, fact)
	}
	if len(in.samples) > 0 && at("jdk.ExecutionSample") {
		if !p.added[spec.ThreadState] {
			p.added[spec.ThreadState] = true
			for k, name := range spec.ThreadStates {
				p.add(spec.ThreadState, k, jfr.StringValue(name))
			}
		}
		for _, s := range in.samples {
			key := in.dropped.StackKey(s.pcs)
			if key != 0 && isNew(ch.stacks, key) {
				cb.stack(p, key, s.pcs)
			}
			thread := cb.sampledThread(p, ch, s.g)
			if p.err == nil {
				p.err = w.WriteEvent(cb.raw["jdk.ExecutionSample"], []jfr.Value{jfr.IntValue(jfr.KindLong, s.ticks),
					jfr.RefValue(p.c[spec.Thread], thread), jfr.RefValue(p.c[spec.StackTrace], key),
					jfr.RefValue(p.c[spec.ThreadState], spec.StateRunnable)})
			}
		}
	}
	if in.dropped != nil {
		lb, le := in.dropped.DroppedBytes.Load(), in.dropped.DroppedEvents.Load()
		if le != cb.lostEvts && at("jdk.DataLoss") {
			ev("jdk.DataLoss", jfr.IntValue(jfr.KindLong, int64(lb-cb.lostBytes)), jfr.IntValue(jfr.KindLong, int64(lb)),
				jfr.IntValue(jfr.KindLong, int64(le-cb.lostEvts)))
		}
		cb.lostBytes, cb.lostEvts = lb, le
	}
	// The recordings and their settings: once per chunk, as the JDK
	// writes them at each chunk's start, and again when settings change.
	if ch.first && at("jdk.ActiveRecording") {
		for _, r := range in.recordings {
			dest := r.cfg.file
			if r.cfg.ring {
				dest = "memory (ring)"
			}
			ev("jdk.ActiveRecording", noDuration, noThread, noStack, jfr.IntValue(jfr.KindLong, r.id), jfr.StringValue(r.cfg.name), jfr.StringValue(dest),
				jfr.IntValue(jfr.KindLong, r.cfg.maxAge.Milliseconds()), jfr.IntValue(jfr.KindLong, flushInterval.Milliseconds()),
				jfr.IntValue(jfr.KindLong, r.cfg.maxSize), jfr.IntValue(jfr.KindLong, r.start.UnixMilli()),
				jfr.IntValue(jfr.KindLong, time.Since(r.start).Milliseconds()))
		}
	}
	if at("jdk.ActiveSetting") && settingsChanged {
		ch.settings = in.settings
		for _, c := range cb.md.EventTypes() {
			if slices.Contains(declaredTypes, c.Name) {
				continue // never written: no settings to speak of
			}
			v, on := in.settings[c.Name]
			set := func(name, val string) {
				ev("jdk.ActiveSetting", noDuration, noThread, noStack, jfr.IntValue(jfr.KindLong, c.ID), jfr.StringValue(name), jfr.StringValue(val))
			}
			set("enabled", fmt.Sprint(on))
			if on {
				set("threshold", fmt.Sprintf("%d ns", v.threshold.Nanoseconds()))
				set("stackTrace", fmt.Sprint(v.stack))
				if period, ok := factPeriods[c.Name]; ok {
					set("period", period)
				} else if v.period > 0 {
					set("period", fmt.Sprintf("%d ms", v.period.Milliseconds()))
				}
				if c.Name == "jdk.ExecutionSample" && in.sampler != "" {
					set("sampler", in.sampler)
				}
				if _, traced := tracedKinds[c.Name]; traced && in.tracer != "" {
					set("tracer", in.tracer)
				}
			}
		}
	}
	if p.err != nil {
		return p.err
	}
	// Encoding the constants: one step.
	st.begin()
	if err := w.Flushpoint(in.end); err != nil {
		return err
	}
	if cut {
		if err := w.EndChunk(in.end); err != nil {
			return err
		}
		ch.open = false
	}
	deliver(segment{first: ch.first, parts: cb.out.parts, header: w.Header(), closed: cut, recs: in.recs})
	ch.first = false
	return nil
}

// isNew adds v to set and tells whether it was not there.
func isNew[T comparable](set map[T]struct{}, v T) bool {
	if _, ok := set[v]; ok {
		return false
	}
	set[v] = struct{}{}
	return true
}

// size returns how many bytes the segment adds to the chunk.
func (s segment) size() int64 {
	var n int64
	for _, p := range s.parts {
		n += int64(len(p))
	}
	return n
}

// appendTo appends the segment's bytes to chunk, the bytes of its chunk
// so far, and brings the chunk's header up to date.
func (s segment) appendTo(chunk []byte) []byte {
	for _, p := range s.parts {
		chunk = append(chunk, p...)
	}
	copy(chunk, s.header)
	return chunk
}

// events counts the gathered records the segment holds, by walking their
// sizes: only for accounting what a failed recording loses.
func (s segment) events() int64 {
	if s.recs == nil {
		return 0
	}
	var n int64
	count := func(b []byte) {
		for len(b) > 0 {
			size, k := leb128.Uvarint(b)
			if k <= 0 || size == 0 || size > uint64(len(b)) {
				return
			}
			b = b[size:]
			n++
		}
	}
	for _, p := range s.recs.parts {
		count(p)
	}
	count(s.recs.copied)
	return n
}
