package recorder

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/jfr"
)

// Event types the flusher writes itself, in the JDK's layouts
// (spec.JDKEvents), and the JDK types declared for consumers that join on
// them though no event of them is written.
var (
	rawTypeNames  = append([]string{"jdk.ExecutionSample", "jdk.DataLoss", "jdk.ActiveRecording", "jdk.ActiveSetting"}, runtimeTypeNames...)
	declaredTypes = []string{"jdk.OldGarbageCollection", "jdk.YoungGarbageCollection", "jdk.Shutdown"}
)

type chunkInput struct {
	start, end int64
	recs       *gathered
	recordings []*Recording
	settings   map[string]resolved
	samples    []cpuSample
	runtime    []jdkRecord
	sampler    string // the CPU sampler's state, for jdk.ExecutionSample's settings
	dropped    *batch.Session
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
	types     []*batch.Desc
	raw       map[string]*jfr.Class
	symCache  map[uintptr][]frameInfo
	lostBytes uint64
	lostEvts  uint64
	// Keys, and the goroutine names under them, stay the same across
	// chunks: the JDK's parser reuses a previous chunk's constant for a
	// key it has seen.
	keys    map[string]uint64
	nextKey uint64
	threads map[uint64][2]string
	// One writer serves every chunk: growing a fresh one's buffers to a
	// chunk's size cost more than encoding it.
	w   *jfr.Writer
	out chunkParts
}

func newChunkBuilder(ss *session) *chunkBuilder {
	return &chunkBuilder{ss: ss, symCache: make(map[uintptr][]frameInfo), mdVersion: ^uint64(0),
		keys: map[string]uint64{}, threads: map[uint64][2]string{}}
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

// metadata rebuilds the metadata when event types were registered.
func (cb *chunkBuilder) metadata() error {
	types, version := batch.Types()
	if version == cb.mdVersion {
		return nil
	}
	b := jfr.NewMetadataBuilder()
	for _, d := range types {
		et := jfr.EventType{Name: d.Name, Label: d.Label, Description: d.Description, Category: d.Category,
			Timed: d.Timed, Thread: true, StackTrace: true}
		for _, f := range d.Fields {
			ft := jfr.FieldType{Name: f.Name, Type: kindTypes[f.Kind], Label: f.Label, Description: f.Description,
				ContentType: contentType(f.Content), ConstantPool: f.Kind == batch.Thread || f.Kind == batch.Func,
				Unsigned: unsignedKinds[f.Kind]}
			et.Fields = append(et.Fields, ft)
		}
		id, err := b.AddEvent(et)
		if err != nil {
			return err
		}
		if id != d.ID {
			return fmt.Errorf("recorder: internal error: %s got id %d, emitted as %d", d.Name, id, d.ID)
		}
	}
	for _, name := range append(rawTypeNames, declaredTypes...) {
		if _, err := b.AddJDKEvent(name); err != nil {
			return err
		}
	}
	md, err := b.Build()
	if err != nil {
		return err
	}
	cb.md, cb.types, cb.mdVersion = md, types, version
	cb.raw = make(map[string]*jfr.Class)
	for _, n := range rawTypeNames {
		cb.raw[n] = md.ClassByName(n)
	}
	return nil
}

// pools interns the chunk's constants.
type pools struct {
	w       *jfr.Writer
	md      *jfr.Metadata
	c       map[string]*jfr.Class
	keys    map[string]uint64 // kind + "\x00" + name -> key, kept across chunks
	nextKey *uint64           // the last key handed out
	added   map[string]bool   // in this chunk
	threads map[uint64][2]string
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
		*p.nextKey++
		k = *p.nextKey
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

// funcRef adds the jdk.types.Method of the function at entry PC pc (an
// event.Func field's value) under the key pc. PCs lie far above the small
// keys intern hands out.
func (p *pools) funcRef(pc uintptr) {
	fn := "unknown"
	if f := runtime.FuncForPC(pc); f != nil {
		fn = f.Name()
	}
	p.add(spec.Method, uint64(pc), p.methodValue(fn))
}

func (p *pools) methodValue(fn string) jfr.Value {
	pkg, name := splitFunc(fn)
	ck := p.intern(spec.Class, pkg, func(ck uint64) {
		p.add(spec.Class, ck, jfr.StructValue(p.c[spec.Class], jfr.RefValue(p.c[spec.ClassLoader], 0),
			jfr.RefValue(p.c[spec.Symbol], p.symbol(pkg)), jfr.RefValue(p.c[spec.Package], 0),
			jfr.IntValue(jfr.KindInt, 0), jfr.BoolValue(false)))
	})
	return jfr.StructValue(p.c[spec.Method], jfr.RefValue(p.c[spec.Class], ck),
		jfr.RefValue(p.c[spec.Symbol], p.symbol(name)), jfr.RefValue(p.c[spec.Symbol], p.symbol("()V")),
		jfr.IntValue(jfr.KindInt, 0), jfr.BoolValue(false))
}

// splitFunc splits "example.com/a/b.(*T).M" into "example.com/a/b" and
// "(*T).M".
func splitFunc(fn string) (pkg, name string) {
	slash := strings.LastIndexByte(fn, '/') + 1
	dot := strings.IndexByte(fn[slash:], '.')
	if dot < 0 {
		return fn, fn
	}
	return fn[:slash+dot], fn[slash+dot+1:]
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
		info[0], info[1] = goroutineThread(g)
		p.threads[g] = info
	}
	name, labels := info[0], info[1]
	os := fmt.Sprintf("goroutine %d", g)
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

// sampleThread is the java.lang.Thread of CPU samples: the Go profiler does
// not say which goroutine a sample came from.
const sampleThread = 1 << 62

// chunkParts collects the pieces a jfr.Writer writes a chunk in, without
// copying them: they are the writer's own buffers, which stay as they are
// until its next call, and are delivered before that.
type chunkParts struct {
	header [jfr.HeaderSize]byte // a copy, to set the final flag in
	parts  [][]byte
}

func (c *chunkParts) Write(b []byte) (int, error) {
	if len(c.parts) == 0 && len(b) == jfr.HeaderSize {
		copy(c.header[:], b)
		b = c.header[:]
	}
	c.parts = append(c.parts, b)
	return len(b), nil
}

// build encodes a chunk and returns its pieces (final flag set), valid
// until the next call.
func (cb *chunkBuilder) build(in chunkInput) ([][]byte, error) {
	cb.out.parts = cb.out.parts[:0]
	if err := cb.encode(in); err != nil {
		// The writer's state is unknown: start afresh next time.
		cb.w = nil
		return nil, err
	}
	if len(cb.out.parts) == 0 || len(cb.out.parts[0]) != jfr.HeaderSize {
		return nil, fmt.Errorf("recorder: internal error: chunk written in %d parts", len(cb.out.parts))
	}
	markFinal(cb.out.parts[0])
	return cb.out.parts, nil
}

func (cb *chunkBuilder) encode(in chunkInput) error {
	if err := cb.metadata(); err != nil {
		return err
	}
	ss := cb.ss
	if cb.w == nil {
		cb.w = jfr.NewWriter(&cb.out, &jfr.WriterOptions{TicksPerSecond: ss.tps, StartNanos: ss.anchor.UnixNanos, StartTicks: ss.anchor.Ticks})
	}
	w := cb.w
	if err := w.SetMetadata(cb.md); err != nil {
		return err
	}
	if err := w.StartChunk(in.start); err != nil {
		return err
	}
	p := &pools{w: w, md: cb.md, c: map[string]*jfr.Class{}, keys: cb.keys, nextKey: &cb.nextKey, added: map[string]bool{},
		threads: cb.threads}
	for _, n := range []string{spec.String, spec.Thread, spec.ThreadGroup, spec.Class, spec.ClassLoader, spec.Method, spec.Symbol,
		spec.Package, spec.StackTrace, spec.StackFrame, spec.FrameType, spec.ThreadState} {
		p.c[n] = cb.md.ClassByName(n)
	}
	p.add(spec.FrameType, 1, jfr.StringValue(spec.FrameTypes[1]))
	p.add(spec.FrameType, 2, jfr.StringValue(spec.FrameTypes[2]))
	threads := map[uint64]bool{}
	stacks := map[uint64]bool{}
	// The writer takes the gathered records where they are.
	if err := w.AdoptRecords(in.recs.parts...); err != nil {
		return err
	}
	if err := w.AdoptRecords(in.recs.copied); err != nil {
		return err
	}
	for _, k := range in.recs.strs {
		p.add(spec.String, k, jfr.StringValue(batch.Interned(k)))
	}
	for _, pc := range in.recs.funcs {
		p.funcRef(pc)
	}
	for _, g := range in.recs.threads {
		if !threads[g] {
			threads[g] = true
			p.thread(g)
		}
	}
	for i := 0; i < len(in.recs.stacks); {
		key, n := uint64(in.recs.stacks[i]), int(in.recs.stacks[i+1])
		if !stacks[key] {
			stacks[key] = true
			cb.stack(p, key, in.recs.stacks[i+2:i+2+n])
		}
		i += 2 + n
	}
	at := func(name string) bool { _, ok := in.settings[name]; return ok }
	ev := func(name string, vals ...jfr.Value) {
		if p.err == nil {
			p.err = w.WriteEvent(cb.raw[name], append([]jfr.Value{jfr.IntValue(jfr.KindLong, in.end)}, vals...))
		}
	}
	cb.writeRuntime(p, in)
	if len(in.samples) > 0 && at("jdk.ExecutionSample") {
		for k, name := range spec.ThreadStates {
			p.add(spec.ThreadState, k, jfr.StringValue(name))
		}
		p.add(spec.Thread, sampleThread, jfr.StructValue(p.c[spec.Thread], jfr.StringValue("Go CPU profiler"), jfr.IntValue(jfr.KindLong, 0),
			jfr.StringValue("goroutines (CPU profile)"), jfr.IntValue(jfr.KindLong, 0), jfr.RefValue(p.c[spec.ThreadGroup], 0)))
		for _, s := range in.samples {
			key := batch.StackKey(s.pcs)
			if !stacks[key] {
				stacks[key] = true
				cb.stack(p, key, s.pcs)
			}
			if p.err == nil {
				p.err = w.WriteEvent(cb.raw["jdk.ExecutionSample"], []jfr.Value{jfr.IntValue(jfr.KindLong, s.ticks),
					jfr.RefValue(p.c[spec.Thread], sampleThread), jfr.RefValue(p.c[spec.StackTrace], key),
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
	if at("jdk.ActiveRecording") {
		for _, r := range in.recordings {
			dest := r.cfg.file
			if r.cfg.ring {
				dest = "memory (ring)"
			}
			ev("jdk.ActiveRecording", noDuration, noThread, noStack, jfr.IntValue(jfr.KindLong, r.id), jfr.StringValue(r.cfg.name), jfr.StringValue(dest),
				jfr.IntValue(jfr.KindLong, r.cfg.maxAge.Milliseconds()), jfr.IntValue(jfr.KindLong, r.cfg.maxChunkAge.Milliseconds()),
				jfr.IntValue(jfr.KindLong, r.cfg.maxSize), jfr.IntValue(jfr.KindLong, r.start.UnixMilli()),
				jfr.IntValue(jfr.KindLong, time.Since(r.start).Milliseconds()))
		}
	}
	if at("jdk.ActiveSetting") {
		ids := map[string]int64{}
		for _, c := range cb.md.EventTypes() {
			ids[c.Name] = c.ID
		}
		for _, c := range cb.md.EventTypes() {
			v, on := in.settings[c.Name]
			set := func(name, val string) {
				ev("jdk.ActiveSetting", noDuration, noThread, noStack, jfr.IntValue(jfr.KindLong, ids[c.Name]), jfr.StringValue(name), jfr.StringValue(val))
			}
			set("enabled", fmt.Sprint(on))
			if on {
				set("threshold", fmt.Sprintf("%d ns", v.threshold.Nanoseconds()))
				set("stackTrace", fmt.Sprint(v.stack))
				if v.period > 0 {
					set("period", fmt.Sprintf("%d ms", v.period.Milliseconds()))
				}
				if c.Name == "jdk.ExecutionSample" && in.sampler != "" {
					set("sampler", in.sampler)
				}
			}
		}
	}
	if p.err != nil {
		return p.err
	}
	if err := w.EndChunk(in.end); err != nil {
		return err
	}
	return w.Flush()
}
