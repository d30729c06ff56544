//go:build linux

package probe

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"os"
	"strings"
	"time"

	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/jfr"
)

// JFRWriter writes probed calls as JFR events: one event type per probed
// function, flightrec.probe.<function>, with the call's start and
// duration, its goroutine as the thread, its arguments and results as
// fields and its stack trace. Timestamps are on the recorder's tick clock
// (internal/clock), so the file lines up with the target's own flightrec
// recordings.
type JFRWriter struct {
	f     *os.File
	buf   *bufio.Writer
	w     *jfr.Writer
	s     *Session
	md    *jfr.Metadata
	types []*probeType // by probe id
	c     map[string]*jfr.Class

	events  int // in the open chunk
	keys    map[string]uint64
	added   map[string]bool // constants in the open chunk
	threads map[uint64]bool // goroutines added in the open chunk
	next    uint64
	seed    maphash.Seed
	fields  []jfr.Value
	err     error // the first error adding a constant
}

// probeType is the event type of one probe and how its fields fill.
type probeType struct {
	class  *jfr.Class
	params []*Param
}

// chunkEvents caps the events of a chunk: the writer holds a chunk in
// memory until it ends.
const chunkEvents = 1 << 16

// CreateJFR creates path and declares the event types of s's probes.
func CreateJFR(path string, s *Session) (*JFRWriter, error) {
	b := jfr.NewMetadataBuilder()
	names := make([]string, len(s.Probes))
	for i, p := range s.Probes {
		names[i] = EventName(p.Func)
		et := jfr.EventType{Name: names[i], Label: p.Func, Description: "Calls of " + p.Func + " seen by flightrec probe",
			Category: []string{"Go", "Probes"}, Timed: true, Thread: true, StackTrace: true}
		used := map[string]bool{}
		for _, prm := range p.Params {
			et.Fields = append(et.Fields, paramFields(prm, used)...)
		}
		if _, err := b.AddEvent(et); err != nil {
			return nil, fmt.Errorf("declaring %s: %w", names[i], err)
		}
	}
	none := jfr.ContentType{}
	bytes := jfr.ContentDataAmount(spec.UnitBytes)
	if _, err := b.AddEvent(jfr.EventType{Name: "jdk.DataLoss", Label: "Data Loss",
		Description: "Probed calls lost: the ring buffer or a map was full",
		Category:    []string{"Flight Recorder"}, Fields: []jfr.FieldType{
			{Name: "amount", Type: spec.Long, Label: "Amount", ContentType: bytes},
			{Name: "total", Type: spec.Long, Label: "Total", ContentType: bytes},
			{Name: "droppedEvents", Type: spec.Long, Label: "Dropped Events", ContentType: none},
		}}); err != nil {
		return nil, err
	}
	md, err := b.Build()
	if err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	a := clock.Epoch()
	buf := bufio.NewWriterSize(f, 1<<20)
	w := jfr.NewWriter(buf, &jfr.WriterOptions{TicksPerSecond: clock.TicksPerSecond(), StartNanos: a.UnixNanos, StartTicks: a.Ticks, Now: clock.Now})
	if err := w.SetMetadata(md); err != nil {
		f.Close()
		return nil, err
	}
	j := &JFRWriter{f: f, buf: buf, w: w, s: s, md: md, c: map[string]*jfr.Class{},
		keys: map[string]uint64{}, added: map[string]bool{}, threads: map[uint64]bool{}, seed: maphash.MakeSeed()}
	for _, n := range []string{spec.Thread, spec.ThreadGroup, spec.StackTrace, spec.StackFrame, spec.Method, spec.Class, spec.Symbol, spec.FrameType, spec.ClassLoader, spec.Package, "jdk.DataLoss"} {
		j.c[n] = md.ClassByName(n)
	}
	for i, p := range s.Probes {
		j.types = append(j.types, &probeType{class: md.ClassByName(names[i]), params: p.Params})
	}
	if err := j.startChunk(clock.Now()); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

// EventName makes the JFR event type name of a Go function: package path
// elements become name segments and every character a Java identifier
// cannot hold becomes '_' (net/http.(*conn).serve ->
// flightrec.probe.net.http._conn_.serve).
func EventName(fn string) string {
	var b strings.Builder
	b.WriteString("flightrec.probe")
	for _, seg := range strings.FieldsFunc(fn, func(r rune) bool { return r == '/' || r == '.' }) {
		b.WriteByte('.')
		for i, r := range seg {
			switch {
			case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || (i > 0 && r >= '0' && r <= '9'):
				b.WriteRune(r)
			default:
				b.WriteByte('_')
			}
		}
	}
	return b.String()
}

// fieldName makes a JFR field name of a parameter (word) name.
func fieldName(name string, used map[string]bool) string {
	n := strings.TrimPrefix(EventName(strings.TrimLeft(name, "~")), "flightrec.probe.")
	n = strings.ReplaceAll(n, ".", "_")
	if n == "" || used[n] || n == spec.FieldStartTime || n == spec.FieldDuration || n == "eventThread" || n == "stackTrace" {
		n = "_" + n
	}
	for used[n] {
		n += "_"
	}
	used[n] = true
	return n
}

// paramFields declares the fields of one parameter: one for a scalar or a
// string, one per register word for a composite, none when it was passed
// on the stack.
func paramFields(p *Param, used map[string]bool) []jfr.FieldType {
	if p.OnStack {
		return nil
	}
	label := p.Name
	if p.Result {
		label = "result " + p.Name
	}
	field := func(name, lbl string, kind string) jfr.FieldType {
		ft := jfr.FieldType{Name: fieldName(name, used), Label: lbl, Description: p.Type}
		switch kind {
		case "int":
			ft.Type = spec.Long
		case "uint":
			ft.Type, ft.ContentType = spec.Long, jfr.ContentUnsigned()
		case "bool":
			ft.Type = spec.Boolean
		case "string":
			ft.Type = spec.String
		case "float":
			ft.Type = spec.Double
		default:
			ft.Type, ft.ContentType = spec.Long, jfr.ContentMemoryAddress()
		}
		return ft
	}
	switch k := p.Kind(); k {
	case "words":
		var fs []jfr.FieldType
		for _, w := range p.words {
			kind := "pointer"
			switch w.kind {
			case wordInt:
				kind = "int"
			case wordUint, wordBool:
				kind = "uint"
			case wordFloat:
				kind = "float"
			}
			fs = append(fs, field(p.Name+"_"+w.name, label+"."+w.name, kind))
		}
		return fs
	default:
		return []jfr.FieldType{field(p.Name, label, k)}
	}
}

// Write adds one call. Entry-only probes' records become events of zero
// duration.
func (j *JFRWriter) Write(c *Call) error {
	if j.events >= chunkEvents {
		now := clock.Now()
		if err := j.w.EndChunk(now); err != nil {
			return err
		}
		if err := j.startChunk(now); err != nil {
			return err
		}
	}
	pt := j.types[c.Probe.ID]
	start := clock.TicksAt(c.Start.UnixNano())
	var dur int64
	if !c.End.IsZero() {
		dur = clock.TicksAt(c.End.UnixNano()) - start
	}
	j.thread(c.Goid)
	fs := append(j.fields[:0], jfr.IntValue(jfr.KindLong, start), jfr.IntValue(jfr.KindLong, dur),
		jfr.RefValue(j.c[spec.Thread], c.Goid), j.stack(c.Stack))
	args, results := c.Args, c.Results
	for _, p := range pt.params {
		var v *Value
		if p.Result {
			if len(results) > 0 {
				v, results = &results[0], results[1:]
			}
		} else if len(args) > 0 {
			v, args = &args[0], args[1:]
		}
		fs = appendParam(fs, p, v)
	}
	j.fields = fs
	j.events++
	if j.err != nil {
		return j.err
	}
	return j.w.WriteEvent(pt.class, fs)
}

// startChunk opens a chunk; its constants are added afresh as events
// refer to them.
func (j *JFRWriter) startChunk(ticks int64) error {
	if err := j.w.StartChunk(ticks); err != nil {
		return err
	}
	j.events = 0
	clear(j.added)
	clear(j.threads)
	for k, s := range spec.FrameTypes {
		if err := j.w.AddConstant(j.c[spec.FrameType], uint64(k), jfr.StringValue(s)); err != nil {
			return err
		}
	}
	return nil
}

func (j *JFRWriter) add(c string, key uint64, v jfr.Value) error {
	if j.err == nil {
		j.err = j.w.AddConstant(j.c[c], key, v)
	}
	return j.err
}

// appendParam appends the field values of p; v is nil when the call has
// none (no --args, or a result of an entry-only record).
func appendParam(fs []jfr.Value, p *Param, v *Value) []jfr.Value {
	if p.OnStack {
		return fs
	}
	missing := v == nil || v.Missing != ""
	scalar := func(kind string, val *Value) jfr.Value {
		switch {
		case kind == "string" && missing:
			return jfr.NullString()
		case kind == "float":
			return jfr.FloatValue(jfr.KindDouble, math.NaN())
		case missing:
			return jfr.IntValue(jfr.KindLong, 0)
		case kind == "string":
			return jfr.StringValue(val.Str)
		case kind == "bool":
			return jfr.BoolValue(val.Bool)
		case kind == "int":
			return jfr.IntValue(jfr.KindLong, val.Int)
		}
		return jfr.IntValue(jfr.KindLong, int64(val.Uint))
	}
	if k := p.Kind(); k != "words" {
		if k == "bool" && missing {
			return append(fs, jfr.BoolValue(false))
		}
		return append(fs, scalar(k, v))
	}
	for i, w := range p.words {
		switch {
		case w.kind == wordFloat:
			fs = append(fs, jfr.FloatValue(jfr.KindDouble, math.NaN()))
		case missing || i >= len(v.Words):
			fs = append(fs, jfr.IntValue(jfr.KindLong, 0))
		default:
			fs = append(fs, jfr.IntValue(jfr.KindLong, int64(v.Words[i])))
		}
	}
	return fs
}

func (j *JFRWriter) intern(kind, s string, add func(key uint64) error) (uint64, error) {
	id := kind + "\x00" + s
	k, ok := j.keys[id]
	if !ok {
		if len(j.keys) >= 1<<16 {
			clear(j.keys) // keys are never reused, so forgetting is safe
		}
		j.next++
		k = j.next
		j.keys[id] = k
	}
	if !j.added[id] {
		j.added[id] = true
		if err := add(k); err != nil {
			return 0, err
		}
	}
	return k, nil
}

func (j *JFRWriter) symbol(s string) jfr.Value {
	k, _ := j.intern(spec.Symbol, s, func(k uint64) error {
		return j.add(spec.Symbol, k, jfr.StringValue(s))
	})
	return jfr.RefValue(j.c[spec.Symbol], k)
}

// thread adds the goroutine as a java.lang.Thread keyed by its id.
func (j *JFRWriter) thread(g uint64) {
	if j.threads[g] {
		return
	}
	j.threads[g] = true
	name := fmt.Sprintf("goroutine %d", g)
	j.add(spec.Thread, g, jfr.StructValue(j.c[spec.Thread], jfr.StringValue(name), jfr.IntValue(jfr.KindLong, int64(g)),
		jfr.StringValue(name), jfr.IntValue(jfr.KindLong, int64(g)), jfr.RefValue(j.c[spec.ThreadGroup], 0)))
}

// method adds a Go function as a jdk.types.Method whose class is its
// package path, as the recorder names them.
func (j *JFRWriter) method(fn string) jfr.Value {
	pkg, name := spec.SplitFunc(fn)
	k, _ := j.intern(spec.Method, fn, func(k uint64) error {
		ck, _ := j.intern(spec.Class, pkg, func(ck uint64) error {
			return j.add(spec.Class, ck, jfr.StructValue(j.c[spec.Class], jfr.RefValue(j.c[spec.ClassLoader], 0),
				j.symbol(pkg), jfr.RefValue(j.c[spec.Package], 0), jfr.IntValue(jfr.KindInt, 0), jfr.BoolValue(false)))
		})
		return j.add(spec.Method, k, jfr.StructValue(j.c[spec.Method], jfr.RefValue(j.c[spec.Class], ck),
			j.symbol(name), j.symbol("()V"), jfr.IntValue(jfr.KindInt, 0), jfr.BoolValue(false)))
	})
	return jfr.RefValue(j.c[spec.Method], k)
}

// stack adds the captured stack as a jdk.types.StackTrace.
func (j *JFRWriter) stack(pcs []uint64) jfr.Value {
	if len(pcs) == 0 {
		return jfr.Null()
	}
	var h maphash.Hash
	h.SetSeed(j.seed)
	var b [8]byte
	for _, pc := range pcs {
		h.Write(binary.LittleEndian.AppendUint64(b[:0], pc))
	}
	id := fmt.Sprint(h.Sum64())
	k, _ := j.intern(spec.StackTrace, id, func(k uint64) error {
		var frames []jfr.Value
		compiled := jfr.RefValue(j.c[spec.FrameType], 1) // "JIT compiled": machine code
		for _, f := range j.s.Symbolize(pcs) {
			if f.Func == "" {
				continue
			}
			frames = append(frames, jfr.StructValue(j.c[spec.StackFrame], j.method(f.Func),
				jfr.IntValue(jfr.KindInt, int64(f.Line)), jfr.IntValue(jfr.KindInt, int64(f.Offset)), compiled))
		}
		return j.add(spec.StackTrace, k, jfr.StructValue(j.c[spec.StackTrace],
			jfr.BoolValue(len(pcs) >= j.s.bpf.Layout.StackDepth), jfr.ArrayValue(j.c[spec.StackFrame], frames...)))
	})
	return jfr.RefValue(j.c[spec.StackTrace], k)
}

// Close writes a jdk.DataLoss event if records were dropped, and ends the
// recording.
func (j *JFRWriter) Close(sums []Summary) error {
	var lost uint64
	for _, s := range sums {
		lost += s.Dropped + s.Lost
	}
	var err error
	if lost > 0 {
		size := int64(lost) * int64(j.s.bpf.Layout.Size())
		err = j.w.WriteEvent(j.c["jdk.DataLoss"], []jfr.Value{jfr.IntValue(jfr.KindLong, clock.TicksAt(time.Now().UnixNano())),
			jfr.IntValue(jfr.KindLong, size), jfr.IntValue(jfr.KindLong, size), jfr.IntValue(jfr.KindLong, int64(lost))})
	}
	if err == nil {
		err = j.w.Close()
	}
	if err == nil {
		err = j.buf.Flush()
	}
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	return err
}
