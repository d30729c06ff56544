package jfr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/spec"
)

const (
	testStartNanos = 1_750_000_000_123_456_789
	testStartTicks = 5_000_000
)

// allKindsEvents returns field values for go.AllKinds events covering
// edge values of every kind.
func allKindsEvents(t testing.TB, md *Metadata) [][]Value {
	ev := class(t, md, "go.AllKinds")
	inner := class(t, md, "go.Inner")
	outer := class(t, md, "go.Outer")
	endpoint := class(t, md, "go.Endpoint")
	strClass := class(t, md, spec.String)
	intClass := class(t, md, spec.Int)
	mkInner := func(a int64, tags ...string) Value {
		vs := make([]Value, len(tags))
		for i, s := range tags {
			vs[i] = StringValue(s)
		}
		return StructValue(inner, IntValue(KindLong, a), ArrayValue(strClass, vs...))
	}
	type row struct {
		b                  bool
		i8, i16, c         int64
		i32, i64           int64
		f32, f64           float64
		s                  Value
		ints               []int64
		strs               []Value
		endpoint           uint64
		endpoints          []uint64
		thread, stack, sym uint64
	}
	rows := []row{
		{true, -128, -32768, 'A', -2147483648, -9223372036854775808, -1.5, 3.141592653589793, StringValue("ascii"), []int64{1, -1, 1 << 30}, []Value{StringValue("x"), StringValue("")}, 1, []uint64{1, 2}, 1, 1, 1},
		{false, 127, 32767, 0xffff, 2147483647, 9223372036854775807, 3.4e38, -1e-300, StringValue("Grüße, 世界 🚀"), nil, nil, 2, nil, 0, 0, 4},
		{true, 0, 0, 0x20ac, 0, 0, 0, 0, StringValue(""), []int64{0}, []Value{NullString(), PooledStringValue(7)}, 0, []uint64{0}, 1, 0, 0},
		{false, -1, -1, 'z', -1, -1, 1, 1, NullString(), []int64{}, []Value{}, 1, nil, 0, 1, 2},
		{true, 1, 1, 1, 1, 1, 1, 1, PooledStringValue(7), []int64{5}, []Value{StringValue(strings.Repeat("long string ", 50))}, 2, []uint64{2}, 1, 1, 3},
	}
	var out [][]Value
	for i, r := range rows {
		ints := make([]Value, len(r.ints))
		for j, n := range r.ints {
			ints[j] = IntValue(KindInt, n)
		}
		eps := make([]Value, len(r.endpoints))
		for j, k := range r.endpoints {
			eps[j] = RefValue(endpoint, k)
		}
		ref := func(name string, k uint64) Value {
			if k == 0 {
				return Null()
			}
			return RefValue(class(t, md, name), k)
		}
		fields := []Value{
			IntValue(KindLong, testStartTicks+int64(i)*1000),
			IntValue(KindLong, int64(i)*250),
			ref(spec.Thread, r.thread),
			ref(spec.StackTrace, r.stack),
			BoolValue(r.b),
			IntValue(KindByte, r.i8),
			IntValue(KindShort, r.i16),
			IntValue(KindChar, r.c),
			IntValue(KindInt, r.i32),
			IntValue(KindLong, r.i64),
			FloatValue(KindFloat, r.f32),
			FloatValue(KindDouble, r.f64),
			r.s,
			ArrayValue(intClass, ints...),
			ArrayValue(strClass, r.strs...),
			StructValue(outer, mkInner(int64(i), "t1", "t2"), ArrayValue(inner, mkInner(-1), mkInner(2, "ü")), ref("go.Endpoint", r.endpoint)),
			ref("go.Endpoint", r.endpoint),
			ArrayValue(endpoint, eps...),
			ref(spec.Symbol, r.sym),
		}
		if len(fields) != len(ev.Fields) {
			t.Fatalf("%d values for %d fields", len(fields), len(ev.Fields))
		}
		out = append(out, fields)
	}
	return out
}

// writeAllKinds writes the test constants and events into the current
// chunk of w.
func writeAllKinds(t testing.TB, w *Writer, events [][]Value) {
	md := w.Metadata()
	addStandardConstants(t, w)
	endpoint := class(t, md, "go.Endpoint")
	must(t, w.AddConstant(endpoint, 1, StructValue(endpoint, StringValue("localhost"), IntValue(KindInt, 8080))))
	must(t, w.AddConstant(endpoint, 2, StructValue(endpoint, StringValue("example.com"), IntValue(KindInt, 443))))
	must(t, w.AddConstant(class(t, md, spec.String), 7, StringValue("pooled string")))
	for _, fs := range events {
		must(t, w.WriteEvent(class(t, md, "go.AllKinds"), fs))
	}
}

// allKindsWriter returns the test types, their events and a Writer (with
// tps ticks a second, 0 for the default) of them to a buffer.
func allKindsWriter(t *testing.T, tps int64) (*Metadata, [][]Value, *bytes.Buffer, *Writer) {
	t.Helper()
	md := testTypes(t)
	buf := new(bytes.Buffer)
	w := NewWriter(buf, &WriterOptions{StartNanos: testStartNanos, StartTicks: testStartTicks, TicksPerSecond: tps})
	must(t, w.SetMetadata(md))
	return md, allKindsEvents(t, md), buf, w
}

func TestWriterAllKinds(t *testing.T) {
	_, events, buf, w := allKindsWriter(t, 0)
	writeAllKinds(t, w, events)
	must(t, w.Close())

	i := 0
	d := valueDiff{}
	readEvents(t, buf.Bytes(), func(ev *Event) {
		if ev.Type.Name != "go.AllKinds" {
			t.Fatalf("event type %s", ev.Type.Name)
		}
		want := events[i]
		for j := range want {
			if s := d.diff(ev.Type.Fields[j].Name, want[j], ev.Fields[j]); s != "" {
				t.Errorf("event %d: %s", i, s)
			}
		}
		if got, want := ev.StartTime().UnixNano(), int64(testStartNanos+i*1000); got != want {
			t.Errorf("event %d: start %d, want %d", i, got, want)
		}
		i++
	})
	if i != len(events) {
		t.Fatalf("read %d events, want %d", i, len(events))
	}

	// References resolve to the constants written.
	readEvents(t, buf.Bytes(), func(ev *Event) {
		th := ev.Fields[2].Resolve()
		if th.IsNull() {
			return
		}
		name, _ := th.Field("javaName")
		group, _ := th.Field("group")
		gname, _ := group.Field("name")
		if name.String() != "goroutine-1" || gname.String() != "main" {
			t.Errorf("thread resolves to %q in group %q", name.String(), gname.String())
		}
		st, _ := ev.Field("stackTrace")
		if !st.IsNull() && st.Resolve().Kind() == KindStruct {
			frames, _ := st.Field("frames")
			m, _ := frames.Index(0).Field("method")
			mname, _ := m.Field("name")
			if frames.Len() != 2 || mname.Resolve().String() != "(*conn).serve" {
				t.Errorf("stack trace: %d frames, first method %q", frames.Len(), mname.Resolve().String())
			}
		}
		ep, _ := ev.Field("endpoint")
		if !ep.Resolve().IsNull() {
			host, _ := ep.Field("host")
			if h := host.String(); h != "localhost" && h != "example.com" {
				t.Errorf("endpoint host %q", h)
			}
		}
		s, _ := ev.Field("s")
		if s.Encoding() == encPool && s.Resolve().String() != "pooled string" {
			t.Errorf("pooled string resolves to %q", s.Resolve().String())
		}
	})
}

// header reads the chunk header at off in a file.
func header(t testing.TB, data []byte, off int64) Header {
	t.Helper()
	h, err := parseHeader(data[off : off+HeaderSize])
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestWriterMultiChunk(t *testing.T) {
	const tps = 2_500_000_000 // like the JVM's TSC clock: tick != ns
	md, events, buf, w := allKindsWriter(t, tps)
	inst := class(t, md, "go.Instant")
	const chunks = 4
	for c := 0; c < chunks; c++ {
		start := int64(testStartTicks + c*tps)
		if c > 0 {
			must(t, w.StartChunk(start))
		}
		writeAllKinds(t, w, events)
		must(t, w.WriteEvent(inst, []Value{IntValue(KindLong, start+tps/2), IntValue(KindLong, int64(c))}))
		if c < chunks-1 {
			must(t, w.EndChunk(start+tps-1))
		}
	}
	must(t, w.Close())

	data := buf.Bytes()
	var off int64
	for c := 0; c < chunks; c++ {
		h := header(t, data, off)
		if h.Major != 2 || h.Minor != 1 || h.State != 0 || h.TicksPerSecond != tps {
			t.Errorf("chunk %d: version %d.%d state %d tps %d", c, h.Major, h.Minor, h.State, h.TicksPerSecond)
		}
		wantFlags := uint16(1)
		if c == chunks-1 {
			wantFlags = 3
		}
		if got := binary.BigEndian.Uint16(data[off+66:]); got != wantFlags || data[off+64] != 0 {
			t.Errorf("chunk %d: byte 64 = %d, flags %#x, want 0 and %#x", c, data[off+64], got, wantFlags)
		}
		if want := int64(testStartTicks + c*tps); h.StartTicks != want {
			t.Errorf("chunk %d: start ticks %d, want %d", c, h.StartTicks, want)
		}
		if want := int64(testStartNanos + c*1e9); h.StartNanos != want {
			t.Errorf("chunk %d: start nanos %d, want %d (one clock for the file)", c, h.StartNanos, want)
		}
		off += h.Size
	}
	if off != int64(len(data)) {
		t.Errorf("chunks cover %d of %d bytes", off, len(data))
	}

	var instants []int64
	n := readEvents(t, data, func(ev *Event) {
		if ev.Type.Name == "go.Instant" {
			c := ev.Fields[1].Int()
			instants = append(instants, c)
			if got, want := ev.StartTime().UnixNano(), testStartNanos+c*1e9+5e8; got != want {
				t.Errorf("chunk %d: instant at %d, want %d", c, got, want)
			}
		}
	})
	if n != chunks || len(instants) != chunks {
		t.Errorf("read %d chunks, %d instants; want %d", n, len(instants), chunks)
	}
}

// A chunk without constants still gets a checkpoint (with no pools), and a
// writer closed without events writes one empty chunk.
func TestWriterEmpty(t *testing.T) {
	md := testTypes(t)
	var buf bytes.Buffer
	w := NewWriter(&buf, &WriterOptions{StartNanos: testStartNanos})
	must(t, w.SetMetadata(md))
	must(t, w.Close())
	data := buf.Bytes()
	h := header(t, data, 0)
	if h.Size != int64(len(data)) || h.ConstantPoolOffset != HeaderSize || binary.BigEndian.Uint16(data[66:]) != 3 {
		t.Fatalf("header %+v for %d bytes", h, len(data))
	}
	// size, type 1, start, duration, delta 0, mask 0, 0 pools
	cp := data[HeaderSize:h.MetadataOffset]
	if cp[1] != 1 || cp[len(cp)-3] != 0 || cp[len(cp)-2] != 0 || cp[len(cp)-1] != 0 || int(cp[0]) != len(cp) {
		t.Errorf("checkpoint % x", cp)
	}
	if n := readEvents(t, data, func(*Event) {}); n != 1 {
		t.Errorf("%d chunks", n)
	}
	if err := w.WriteEvent(class(t, md, "go.Instant"), nil); !errors.Is(err, ErrWriterClosed) {
		t.Errorf("write after close: %v", err)
	}
}

// Event sizes are minimal self-inclusive varints around the 1- and 2-byte
// boundaries.
func TestWriterEventSizes(t *testing.T) {
	b := NewMetadataBuilder()
	if _, err := b.AddEvent(EventType{Name: "go.Str", Fields: []FieldType{{Name: "s", Type: spec.String}}}); err != nil {
		t.Fatal(err)
	}
	md, err := b.Build()
	must(t, err)
	ev := md.ClassByName("go.Str")
	var buf bytes.Buffer
	w := NewWriter(&buf, nil)
	must(t, w.SetMetadata(md))
	var lens []int
	for n := 100; n < 140; n++ {
		lens = append(lens, n)
	}
	for n := 16300; n < 16400; n++ {
		lens = append(lens, n)
	}
	for _, n := range lens {
		must(t, w.WriteEvent(ev, []Value{IntValue(KindLong, 1), StringValue(strings.Repeat("x", n))}))
	}
	must(t, w.Close())
	data := buf.Bytes()
	r := NewReader(bytes.NewReader(data), nil)
	i := 0
	for {
		rec, err := r.ReadRecord()
		if err != nil {
			break
		}
		if rec.TypeID != ev.ID {
			continue
		}
		size, n := leb128.Uvarint(data[rec.Offset:])
		if size != uint64(rec.Size) || n != leb128.Len(size) || n != leb128.Len(leb128.SelfSize(size-uint64(n))) {
			t.Errorf("string of %d: size %d in %d bytes", lens[i], size, n)
		}
		if min := leb128.SelfSize(size - uint64(n)); min != size {
			t.Errorf("string of %d: size %d, minimal %d", lens[i], size, min)
		}
		i++
	}
	if i != len(lens) {
		t.Errorf("%d events, want %d", i, len(lens))
	}
	var got []int
	readEvents(t, data, func(ev *Event) { got = append(got, len(ev.Fields[1].String())) })
	for i := range got {
		if got[i] != lens[i] {
			t.Fatalf("event %d: string of %d, want %d", i, got[i], lens[i])
		}
	}
}

// Events encoded by the caller: a payload, and pre-framed records with
// 4-byte padded sizes as a per-P buffer holds them.
func TestWriterPayloads(t *testing.T) {
	md, _, buf, w := allKindsWriter(t, 0)
	inst := class(t, md, "go.Instant")
	payload := leb128.AppendUvarint(leb128.AppendUvarint(nil, 10), 20)
	must(t, w.WriteEventPayload(inst.ID, payload))
	rec := make([]byte, 4, 32)
	rec = leb128.AppendUvarint(rec, uint64(inst.ID))
	rec = leb128.AppendUvarint(rec, 30)
	rec = leb128.AppendUvarint(rec, 40)
	leb128.PutPadded(rec[:4], uint64(len(rec)))
	recs := append(append([]byte(nil), rec...), AppendRecord(nil, inst.ID, []byte{50, 60})...)
	must(t, w.WriteRecords(recs))
	for name, bad := range map[string][]byte{
		"truncated":     rec[:len(rec)-1],
		"size only":     {1},
		"zero size":     {0, 5},
		"type 0":        {2, 0},
		"type 1":        {3, 1, 0},
		"metadata type": {0x84, 0x80, 0x80, 0x00, 0x01},
		"size past end": {9, 20, 1},
	} {
		if err := w.WriteRecords(bad); err == nil {
			t.Errorf("%s record % x accepted", name, bad)
		}
	}
	must(t, w.Close())
	var got []int64
	readEvents(t, buf.Bytes(), func(ev *Event) { got = append(got, ev.Fields[0].Int(), ev.Fields[1].Int()) })
	if want := []int64{10, 20, 30, 40, 50, 60}; !equalInts(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWriterErrors(t *testing.T) {
	md := testTypes(t)
	other := testTypes(t)
	inst := class(t, md, "go.Instant")
	var buf bytes.Buffer
	w := NewWriter(&buf, nil)
	if err := w.WriteEvent(inst, []Value{IntValue(KindLong, 1), IntValue(KindLong, 2)}); err == nil {
		t.Error("event without metadata accepted")
	}
	must(t, w.SetMetadata(md))
	for _, c := range []struct {
		name   string
		fields []Value
	}{
		{"int for long", []Value{IntValue(KindLong, 1), IntValue(KindInt, 2)}},
		{"string for long", []Value{IntValue(KindLong, 1), StringValue("x")}},
		{"too few", []Value{IntValue(KindLong, 1)}},
	} {
		if err := w.WriteEvent(inst, c.fields); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if err := w.WriteEvent(inst, []Value{IntValue(KindLong, 1), StringValue("x")}); !errors.Is(err, ErrValueKind) {
		t.Errorf("kind mismatch: %v", err)
	}
	if err := w.WriteEvent(other.ClassByName("go.Instant"), []Value{IntValue(KindLong, 1), IntValue(KindLong, 2)}); err == nil {
		t.Error("class of another metadata accepted")
	}
	th := class(t, md, spec.Thread)
	if err := w.AddConstant(th, 1, StringValue("x")); !errors.Is(err, ErrValueKind) {
		t.Errorf("string as thread: %v", err)
	}
	ev := class(t, md, "go.AllKinds")
	fields := allKindsEvents(t, md)[0]
	fields[2] = RefValue(class(t, md, spec.StackTrace), 1) // stack trace where a thread belongs
	if err := w.WriteEvent(ev, fields); !errors.Is(err, ErrValueKind) {
		t.Errorf("wrong reference class: %v", err)
	}
	must(t, w.WriteEvent(inst, []Value{IntValue(KindLong, 1), IntValue(KindLong, 2)}))
	if err := w.SetMetadata(other); err == nil {
		t.Error("metadata changed inside a chunk")
	}
	must(t, w.Close())
	// The failed writes left nothing behind: one event.
	n := 0
	readEvents(t, buf.Bytes(), func(*Event) { n++ })
	if n != 1 {
		t.Errorf("%d events", n)
	}
}

func TestWriteEventAllocs(t *testing.T) {
	md := testTypes(t)
	inst := class(t, md, "go.Instant")
	ev := class(t, md, "go.AllKinds")
	w := NewWriter(discard{}, nil)
	must(t, w.SetMetadata(md))
	all := allKindsEvents(t, md)
	fields := []Value{IntValue(KindLong, 1), IntValue(KindLong, 2)}
	for i := 0; i < 10000; i++ {
		must(t, w.WriteEvent(inst, fields))
		must(t, w.WriteEvent(ev, all[i%len(all)]))
	}
	must(t, w.EndChunk(w.Now()))
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		_ = w.WriteEvent(inst, fields)
		_ = w.WriteEvent(ev, all[i%len(all)])
		i++
	})
	if allocs != 0 {
		t.Errorf("%v allocations per event", allocs)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// The builder's metadata survives a write and read unchanged, and metadata
// read from a file can be written again.
func TestMetadataRoundTrip(t *testing.T) {
	md := testTypes(t)
	var buf bytes.Buffer
	w := NewWriter(&buf, nil)
	must(t, w.SetMetadata(md))
	must(t, w.Close())
	r := NewReader(bytes.NewReader(buf.Bytes()), nil)
	c, err := r.NextChunk()
	must(t, err)
	if a, b := metadataText(md), metadataText(c.Metadata); a != b {
		t.Errorf("metadata differs after a round trip:\n%s\n---\n%s", a, b)
	}
	f := c.Metadata.ClassByName("go.AllKinds").Fields
	if ct, ok := f[1].ContentType(); !ok || ct.Name() != spec.Timespan || ct.Value() != "TICKS" {
		t.Errorf("duration content type %v", ct)
	}
	if cat, _ := c.Metadata.ClassByName("go.AllKinds").Annotation(spec.Category); len(cat.Values) != 2 || cat.Values[1].Key != "value-1" {
		t.Errorf("category %v", cat.Values)
	}
}

// metadataText renders metadata for comparison.
func metadataText(md *Metadata) string {
	var sb strings.Builder
	anns := func(as []Annotation) {
		for _, a := range as {
			sb.WriteString(" @" + a.Name())
			for _, v := range a.Values {
				sb.WriteString(" " + v.Key + "=" + v.Value)
			}
		}
	}
	for _, c := range md.Classes {
		sb.WriteString(c.Name + " " + c.SuperType)
		if c.SimpleType {
			sb.WriteString(" simple")
		}
		anns(c.Annotations)
		sb.WriteString("\n")
		for _, f := range c.Fields {
			sb.WriteString("  " + f.Name + " " + f.Type.Name)
			if f.Array {
				sb.WriteString("[]")
			}
			if f.ConstantPool {
				sb.WriteString(" cp")
			}
			anns(f.Annotations)
			sb.WriteString("\n")
		}
		for _, s := range c.Settings {
			sb.WriteString("  setting " + s.Name + " " + s.Type.Name + " " + s.DefaultValue)
			anns(s.Annotations)
			sb.WriteString("\n")
		}
	}
	for _, a := range md.Region {
		sb.WriteString(a.Key + "=" + a.Value + "\n")
	}
	return sb.String()
}

// Metadata may change between chunks; each chunk carries its own metadata
// (with a new id) and its own constants.
func TestWriterMetadataChange(t *testing.T) {
	md1 := testTypes(t)
	b := NewMetadataBuilder()
	_, err := b.AddEvent(EventType{Name: "go.Other", Thread: true, Fields: []FieldType{{Name: "s", Type: spec.String}}})
	must(t, err)
	md2, err := b.Build()
	must(t, err)
	var buf bytes.Buffer
	w := NewWriter(&buf, &WriterOptions{StartNanos: testStartNanos})
	must(t, w.SetMetadata(md1))
	writeAllKinds(t, w, allKindsEvents(t, md1))
	must(t, w.EndChunk(100))
	must(t, w.SetMetadata(md2))
	addStandardConstants(t, w)
	must(t, w.WriteEvent(md2.ClassByName("go.Other"), []Value{IntValue(KindLong, 150), RefValue(md2.ClassByName(spec.Thread), 1), StringValue("second")}))
	must(t, w.Close())
	var types []string
	n := readEvents(t, buf.Bytes(), func(ev *Event) {
		types = append(types, ev.Type.Name)
		if th := ev.Fields[2].Resolve(); ev.Type.Name == "go.Other" && th.IsNull() {
			t.Errorf("%s: thread does not resolve", ev.Type.Name)
		}
	})
	if n != 2 || len(types) != 6 || types[5] != "go.Other" {
		t.Errorf("%d chunks, events %v", n, types)
	}
	if binary.BigEndian.Uint16(buf.Bytes()[66:]) != 1 {
		t.Errorf("first chunk flagged final")
	}
}

// TestWriterFlush delivers each chunk as it ends from one Writer: after
// Flush the output holds the chunk, not marked final, and each chunk
// carries only its own constants.
func TestWriterFlush(t *testing.T) {
	_, events, buf, w := allKindsWriter(t, 0)
	var ends []int
	for c := 0; c < 3; c++ {
		start := int64(testStartTicks + c*1e9)
		must(t, w.StartChunk(start))
		writeAllKinds(t, w, events)
		must(t, w.EndChunk(start+1e9-1))
		if len(ends) > 0 && buf.Len() != ends[len(ends)-1] {
			t.Fatalf("chunk %d: written before Flush", c)
		}
		must(t, w.Flush())
		ends = append(ends, buf.Len())
		data := buf.Bytes()
		from := 0
		if c > 0 {
			from = ends[c-1]
		}
		h := header(t, data, int64(from))
		if h.Size != int64(buf.Len()-from) {
			t.Fatalf("chunk %d: size %d, %d bytes written", c, h.Size, buf.Len()-from)
		}
		if got := binary.BigEndian.Uint16(data[from+66:]); got != FlagCompressedInts {
			t.Errorf("chunk %d: flags %#x, want %#x (not final)", c, got, FlagCompressedInts)
		}
		// Varint times make chunks differ by a few bytes; constants
		// carried over would add hundreds.
		if d := len(data) - from - ends[0]; c > 0 && (d < -8 || d > 8) {
			t.Errorf("chunk %d is %d bytes, the first %d: constants carried over?", c, len(data)-from, ends[0])
		}
	}
	if n := readEvents(t, buf.Bytes(), func(*Event) {}); n != 3 {
		t.Errorf("read %d chunks, want 3", n)
	}
}

// TestWriterAdoptRecords hands a chunk's records to the Writer in pieces,
// without a copy, then adds an event after them.
func TestWriterAdoptRecords(t *testing.T) {
	md, _, buf, w := allKindsWriter(t, 0)
	inst := class(t, md, "go.Instant")
	a := AppendRecord(nil, inst.ID, []byte{10, 20})
	b := AppendRecord(AppendRecord(nil, inst.ID, []byte{30, 40}), inst.ID, []byte{50, 60})
	must(t, w.AdoptRecords(a, nil, b))
	must(t, w.WriteEvent(inst, []Value{IntValue(KindLong, 70), IntValue(KindLong, 80)}))
	if err := w.SetMetadata(testTypes(t)); err == nil {
		t.Error("SetMetadata accepted while the chunk holds adopted records")
	}
	must(t, w.EndChunk(w.Now()))
	must(t, w.Flush())
	// The next chunk holds none of them.
	must(t, w.WriteEvent(inst, []Value{IntValue(KindLong, 90), IntValue(KindLong, 100)}))
	must(t, w.Close())
	var got []int64
	readEvents(t, buf.Bytes(), func(ev *Event) { got = append(got, ev.Fields[0].Int(), ev.Fields[1].Int()) })
	if want := []int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}; !equalInts(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestWriterSetClock re-anchors the second chunk: its header carries the
// new start time and frequency, the first chunk's keeps the old ones.
func TestWriterSetClock(t *testing.T) {
	const tps = 2_500_000_000
	md, events, buf, w := allKindsWriter(t, tps)
	writeAllKinds(t, w, events)
	must(t, w.EndChunk(testStartTicks+tps))
	// The wall clock ran 3 ms ahead of the ticks meanwhile, and the rate
	// was measured again.
	moved := Clock{StartNanos: testStartNanos + 1e9 + 3e6, StartTicks: testStartTicks + tps, TicksPerSecond: tps + 1000}
	w.SetClock(moved)
	must(t, w.StartChunk(testStartTicks+tps))
	must(t, w.WriteEvent(class(t, md, "go.Instant"), []Value{IntValue(KindLong, testStartTicks+tps+1), IntValue(KindLong, 1)}))
	must(t, w.Close())
	data := buf.Bytes()
	first := header(t, data, 0)
	second := header(t, data, first.Size)
	if first.StartNanos != testStartNanos || first.TicksPerSecond != tps {
		t.Errorf("first chunk: start %d at %d ticks/s, want %d at %d", first.StartNanos, first.TicksPerSecond, int64(testStartNanos), int64(tps))
	}
	if second.StartNanos != moved.StartNanos || second.StartTicks != moved.StartTicks || second.TicksPerSecond != moved.TicksPerSecond {
		t.Errorf("second chunk: start %d, tick %d, %d ticks/s; want %+v", second.StartNanos, second.StartTicks, second.TicksPerSecond, moved)
	}
}
