package gotrace

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"

	"golang.org/x/exp/trace"

	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/jfr"
)

// GoEventType returns the event type of a kind that has no JDK twin
// (go.MarkAssist, go.NetworkWait), as files declare it; false for the
// kinds written in a JDK type's layout.
func GoEventType(k Kind) (jfr.EventType, bool) {
	et, ok := goEvents[k]
	return et, ok
}

// goEvents are the event types of what Go has and the JDK has no twin for.
var goEvents = map[Kind]jfr.EventType{
	MarkAssist: {Name: kindNames[MarkAssist], Label: "GC Mark Assist", Category: []string{"Go", "GC"}, Timed: true, Thread: true, StackTrace: true,
		Description: "A goroutine made to help the GC mark because it allocated while the GC was marking"},
	NetworkWait: {Name: kindNames[NetworkWait], Label: "Network Wait", Category: []string{"Go", "Network"}, Timed: true, Thread: true, StackTrace: true,
		Description: "A goroutine waiting in the network poller; the tracer records no peer, address or byte count"},
}

// JFRWriter writes converted generations as a JFR recording, one chunk per
// generation, with the JDK 17 layouts of internal/spec.
type JFRWriter struct {
	w       *jfr.Writer
	md      *jfr.Metadata
	c       map[string]*jfr.Class
	kinds   [NumKinds]*jfr.Class
	enabled [NumKinds]bool
	setting *jfr.Class
	conv    *Converter
	base    int64 // ns since the epoch of tick 0

	// Keys only grow, across chunks: OpenJDK's parser takes a key it saw
	// in an earlier chunk to mean the earlier value.
	nextKey uint64
	stacks  map[trace.Stack]uint64
	methods map[string]uint64
	classes map[string]uint64
	symbols map[string]uint64
	// operations are VM operation names (stop-the-world reasons).
	operations map[string]uint64
	threads    map[trace.GoID]bool
	out        io.Writer
	opts       JFRWriterOptions
	gen        *Generation // of the event being written
	err        error
	vals       []jfr.Value
	frames     []jfr.Value
}

// JFRWriterOptions puts converted chunks into another recording's clock
// and key space, to be appended to it.
type JFRWriterOptions struct {
	// Clock is the recording's tick clock, and Ticks converts ns since
	// the epoch to its ticks: readers convert every chunk's ticks with
	// the first chunk's header.
	Clock jfr.Clock
	Ticks func(unixNanos int64) int64
	// FirstKey is where the constant-pool keys start: above the keys of
	// the recording's other chunks, which OpenJDK's parser would take to
	// mean their values.
	FirstKey uint64
	// Metadata, if set, is the recording's: its event type ids are the
	// ones readers saw in the other chunks (jfr summary counts by id).
	// It must declare the converted types and jdk.ActiveSetting.
	Metadata *jfr.Metadata
}

// appendedMetadataID is the metadata id of chunks appended to another
// recording: far above the ids its writer counts up from 1.
const appendedMetadataID = 1 << 40

// NewJFRWriter returns a writer of the generations c converts to out; o
// may be nil. It declares only the event types c converts.
func NewJFRWriter(out io.Writer, c *Converter, o *JFRWriterOptions) (*JFRWriter, error) {
	var md *jfr.Metadata
	if o != nil {
		md = o.Metadata
	}
	if md == nil {
		var err error
		if md, err = declare(c); err != nil {
			return nil, err
		}
	}
	jw := &JFRWriter{md: md, conv: c, c: map[string]*jfr.Class{}}
	for k := Kind(0); k < NumKinds; k++ {
		if c.Enabled(k) {
			if jw.kinds[k] = md.ClassByName(kindNames[k]); jw.kinds[k] == nil {
				return nil, fmt.Errorf("gotrace: the metadata does not declare %s", kindNames[k])
			}
			jw.enabled[k] = true
		}
	}
	jw.setting = md.ClassByName("jdk.ActiveSetting")
	for _, n := range []string{spec.Thread, spec.ThreadGroup, spec.Class, spec.ClassLoader, spec.Method, spec.Symbol, spec.Package,
		spec.StackTrace, spec.StackFrame, spec.FrameType, spec.ThreadState, spec.GCName, spec.GCCause, spec.VMOperationType} {
		jw.c[n] = md.ClassByName(n)
	}
	jw.out = out
	if o != nil {
		jw.opts = *o
		jw.nextKey = o.FirstKey
	}
	return jw, nil
}

// WriteGeneration writes g as one chunk.
func (jw *JFRWriter) WriteGeneration(g *Generation) error {
	if jw.err != nil {
		return jw.err
	}
	if jw.w == nil {
		// Tick 0 is the first generation's start; a tick is a nanosecond.
		wo := &jfr.WriterOptions{StartNanos: g.Start, Now: func() int64 { return 0 }}
		if c := jw.opts.Clock; jw.opts.Ticks != nil {
			wo = &jfr.WriterOptions{TicksPerSecond: c.TicksPerSecond, StartNanos: c.StartNanos, StartTicks: c.StartTicks,
				Now: func() int64 { return c.StartTicks }, MetadataID: appendedMetadataID}
		} else {
			jw.base = g.Start
		}
		jw.w = jfr.NewWriter(jw.out, wo)
		if err := jw.w.SetMetadata(jw.md); err != nil {
			return err
		}
	}
	w := jw.w
	jw.err = w.StartChunk(jw.ticks(g.Start))
	jw.stacks = map[trace.Stack]uint64{}
	jw.methods = map[string]uint64{}
	jw.classes = map[string]uint64{}
	jw.symbols = map[string]uint64{}
	jw.operations = map[string]uint64{}
	jw.threads = map[trace.GoID]bool{}
	jw.add(spec.FrameType, 1, jfr.StringValue(spec.FrameTypes[1]))
	jw.add(spec.ThreadState, spec.StateRunnable, jfr.StringValue(spec.ThreadStates[spec.StateRunnable]))
	jw.add(spec.GCName, spec.GCNameGo, jfr.StringValue(spec.GCNames[spec.GCNameGo]))
	for _, k := range slices.Sorted(maps.Keys(spec.GCCauses)) { // in order: the same trace makes the same file
		jw.add(spec.GCCause, k, jfr.StringValue(spec.GCCauses[k]))
	}
	jw.settings(g.Start)
	for i := range g.Events {
		jw.event(g, &g.Events[i])
	}
	if jw.err == nil {
		jw.err = w.EndChunk(jw.ticks(g.End))
	}
	return jw.err
}

// Close finishes the recording. A trace without generations makes a
// recording without chunks.
func (jw *JFRWriter) Close() error {
	if jw.w == nil {
		return jw.err
	}
	if err := jw.w.Close(); jw.err == nil {
		jw.err = err
	}
	return jw.err
}

func (jw *JFRWriter) ticks(ns int64) int64 {
	if jw.opts.Ticks != nil {
		return jw.opts.Ticks(ns)
	}
	return ns - jw.base
}

func (jw *JFRWriter) add(class string, key uint64, v jfr.Value) {
	if jw.err == nil {
		jw.err = jw.w.AddConstant(jw.c[class], key, v)
	}
}

func (jw *JFRWriter) key() uint64 {
	jw.nextKey++
	return jw.nextKey
}

// settings writes the jdk.ActiveSetting events of the converted types, as
// the JDK does at each chunk's start.
func (jw *JFRWriter) settings(at int64) {
	for k := Kind(0); k < NumKinds; k++ {
		c := jw.kinds[k]
		if c == nil {
			continue
		}
		set := func(name, value string) {
			if jw.err == nil {
				jw.err = jw.w.WriteEvent(jw.setting, []jfr.Value{jfr.IntValue(jfr.KindLong, jw.ticks(at)), jfr.IntValue(jfr.KindLong, 0),
					jfr.RefValue(jw.c[spec.Thread], 0), jfr.RefValue(jw.c[spec.StackTrace], 0),
					jfr.IntValue(jfr.KindLong, c.ID), jfr.StringValue(name), jfr.StringValue(value)})
			}
		}
		set("enabled", "true")
		if k.Blocking() {
			set("threshold", strconv.FormatInt(jw.conv.Threshold(k).Nanoseconds(), 10)+" ns")
		}
	}
}

// runtimeThread is the java.lang.Thread of CPU samples taken while no
// goroutine ran (the scheduler, GC workers on the system stack). Its key is
// the largest 32-bit one, as the recorder's CPU profiler thread's.
const runtimeThread = math.MaxInt32

func (jw *JFRWriter) sampledThread(g *Generation, id trace.GoID) jfr.Value {
	if id != trace.NoGoroutine {
		return jw.thread(g, id)
	}
	if !jw.threads[runtimeThread] {
		jw.threads[runtimeThread] = true
		jw.add(spec.Thread, runtimeThread, jfr.StructValue(jw.c[spec.Thread], jfr.StringValue("Go runtime"), jfr.IntValue(jfr.KindLong, 0),
			jfr.StringValue("Go runtime (no goroutine)"), jfr.IntValue(jfr.KindLong, 0), jfr.RefValue(jw.c[spec.ThreadGroup], 0)))
	}
	return jfr.RefValue(jw.c[spec.Thread], runtimeThread)
}

func (jw *JFRWriter) thread(g *Generation, id trace.GoID) jfr.Value {
	if id == trace.NoGoroutine || id <= 0 {
		return jfr.RefValue(jw.c[spec.Thread], 0)
	}
	if !jw.threads[id] {
		jw.threads[id] = true
		name := g.Goroutines[id]
		if name == "" {
			name = fmt.Sprintf("goroutine %d", id)
		}
		jw.add(spec.Thread, uint64(id), jfr.StructValue(jw.c[spec.Thread], jfr.StringValue(fmt.Sprintf("goroutine %d", id)),
			jfr.IntValue(jfr.KindLong, int64(id)), jfr.StringValue(name), jfr.IntValue(jfr.KindLong, int64(id)),
			jfr.RefValue(jw.c[spec.ThreadGroup], 0)))
	}
	return jfr.RefValue(jw.c[spec.Thread], uint64(id))
}

func (jw *JFRWriter) operation(name string) jfr.Value {
	k, ok := jw.operations[name]
	if !ok {
		k = jw.key()
		jw.operations[name] = k
		jw.add(spec.VMOperationType, k, jfr.StructValue(jw.c[spec.VMOperationType], jfr.StringValue(name)))
	}
	return jfr.RefValue(jw.c[spec.VMOperationType], k)
}

func (jw *JFRWriter) symbol(s string) jfr.Value {
	k, ok := jw.symbols[s]
	if !ok {
		k = jw.key()
		jw.symbols[s] = k
		jw.add(spec.Symbol, k, jfr.StringValue(s))
	}
	return jfr.RefValue(jw.c[spec.Symbol], k)
}

// class returns a jdk.types.Class named name, in no package (JMC cuts a
// class name at its package's prefix), or null for "".
func (jw *JFRWriter) class(name string) jfr.Value {
	if name == "" {
		return jfr.RefValue(jw.c[spec.Class], 0)
	}
	k, ok := jw.classes[name]
	if !ok {
		k = jw.key()
		jw.classes[name] = k
		jw.add(spec.Class, k, jfr.StructValue(jw.c[spec.Class], jfr.RefValue(jw.c[spec.ClassLoader], 0), jw.symbol(name),
			jfr.RefValue(jw.c[spec.Package], 0), jfr.IntValue(jfr.KindInt, 0), jfr.BoolValue(false)))
	}
	return jfr.RefValue(jw.c[spec.Class], k)
}

// method returns a Go function as a jdk.types.Method whose class is its
// package path, as the recorder writes them.
func (jw *JFRWriter) method(fn string) jfr.Value {
	k, ok := jw.methods[fn]
	if !ok {
		k = jw.key()
		jw.methods[fn] = k
		pkg, name := spec.SplitFunc(fn)
		jw.add(spec.Method, k, jfr.StructValue(jw.c[spec.Method], jw.class(pkg), jw.symbol(name), jw.symbol("()V"),
			jfr.IntValue(jfr.KindInt, 0), jfr.BoolValue(false)))
	}
	return jfr.RefValue(jw.c[spec.Method], k)
}

// maxFrames is the runtime's default trace stack depth: a stack this deep
// may have been cut.
const maxFrames = 128

func (jw *JFRWriter) stack(st trace.Stack) jfr.Value {
	if st == trace.NoStack {
		return jfr.RefValue(jw.c[spec.StackTrace], 0)
	}
	k, ok := jw.stacks[st]
	if !ok {
		k = jw.key()
		jw.stacks[st] = k
		fc := jw.c[spec.StackFrame]
		frames := jw.frames[:0]
		for f := range st.Frames() {
			frames = append(frames, jfr.StructValue(fc, jw.method(f.Func), jfr.IntValue(jfr.KindInt, int64(f.Line)),
				jfr.IntValue(jfr.KindInt, 0), jfr.RefValue(jw.c[spec.FrameType], 1)))
		}
		jw.frames = frames
		jw.add(spec.StackTrace, k, jfr.StructValue(jw.c[spec.StackTrace], jfr.BoolValue(len(frames) >= maxFrames), jfr.ArrayValue(fc, frames...)))
	}
	return jfr.RefValue(jw.c[spec.StackTrace], k)
}

func (jw *JFRWriter) event(g *Generation, e *Event) {
	if jw.err != nil || !jw.enabled[e.Kind] {
		return
	}
	jw.gen = g
	start := jw.ticks(e.Start)
	jw.vals = AppendValues(jw.vals[:0], e, start, jw.ticks(e.End)-start, jw)
	if jw.err == nil {
		jw.err = jw.w.WriteEvent(jw.kinds[e.Kind], jw.vals)
	}
}

// Thread, SampledThread, Stack, Class and Operation make JFRWriter the Refs
// of its events.

// Thread returns goroutine g as a java.lang.Thread, null for none.
func (jw *JFRWriter) Thread(g trace.GoID) jfr.Value { return jw.thread(jw.gen, g) }

// Stack returns st as a jdk.types.StackTrace.
func (jw *JFRWriter) Stack(st trace.Stack) jfr.Value { return jw.stack(st) }

// SampledThread returns the thread of a CPU sample: goroutine g, or one
// standing for the runtime when no goroutine ran.
func (jw *JFRWriter) SampledThread(g trace.GoID) jfr.Value { return jw.sampledThread(jw.gen, g) }

// Class returns the jdk.types.Class named name, null for "".
func (jw *JFRWriter) Class(name string) jfr.Value { return jw.class(name) }

// Operation returns the jdk.types.VMOperationType named name.
func (jw *JFRWriter) Operation(name string) jfr.Value { return jw.operation(name) }

// Convert converts the Go execution trace read from r into a JFR recording
// written to w, one chunk per trace generation.
func Convert(r io.Reader, w io.Writer, o Options) error {
	c := NewConverter(o)
	jw, err := NewJFRWriter(w, c, nil)
	if err != nil {
		return err
	}
	if err := c.Convert(r, jw.WriteGeneration); err != nil {
		jw.Close()
		return err
	}
	return jw.Close()
}

// declare builds the metadata of the types c converts.
func declare(c *Converter) (*jfr.Metadata, error) {
	b := jfr.NewMetadataBuilder()
	for k := Kind(0); k < NumKinds; k++ {
		if !c.Enabled(k) {
			continue
		}
		var err error
		if et, ok := goEvents[k]; ok {
			_, err = b.AddEvent(et)
		} else {
			_, err = b.AddJDKEvent(kindNames[k])
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := b.AddJDKEvent("jdk.ActiveSetting"); err != nil {
		return nil, err
	}
	return b.Build()
}
