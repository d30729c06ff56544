package jfr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/internal/testrec"
)

// interopTypes declares event types using every field type and every
// content type.
func interopTypes(t testing.TB) *Metadata {
	t.Helper()
	b := NewMetadataBuilder()
	add := func(_ int64, err error) { must(t, err) }
	add(b.AddType(StructType{Name: "go.Endpoint", Label: "Endpoint", Fields: []FieldType{
		{Name: "host", Type: spec.String, Label: "Host"},
		{Name: "port", Type: spec.Int, Label: "Port"},
	}}))
	add(b.AddType(StructType{Name: "go.Peer", Label: "Peer", Fields: []FieldType{
		{Name: "name", Type: spec.String, Label: "Name"},
		{Name: "endpoint", Type: "go.Endpoint", Label: "Endpoint"},
	}}))
	add(b.AddEvent(EventType{
		Name: "go.interop.AllTypes", Label: "All Types", Description: "Every field and content type",
		Category: []string{"Go", "Interop"}, Timed: true, Thread: true, StackTrace: true,
		Fields: []FieldType{
			{Name: "b", Type: spec.Boolean, Label: "Boolean"},
			{Name: "i8", Type: spec.Byte, Label: "Byte"},
			{Name: "i16", Type: spec.Short, Label: "Short"},
			{Name: "c", Type: spec.Char, Label: "Char"},
			{Name: "i32", Type: spec.Int, Label: "Int"},
			{Name: "i64", Type: spec.Long, Label: "Long"},
			{Name: "f32", Type: spec.Float, Label: "Float"},
			{Name: "f64", Type: spec.Double, Label: "Double"},
			{Name: "s", Type: spec.String, Label: "String"},
			{Name: "owner", Type: spec.Thread, ConstantPool: true, Label: "Owner"},
			{Name: "where", Type: spec.StackTrace, ConstantPool: true, Label: "Where"},
			{Name: "endpoint", Type: "go.Endpoint", Label: "Endpoint"},
			{Name: "peer", Type: "go.Peer", ConstantPool: true, Label: "Peer"},
			{Name: "ints", Type: spec.Int, Array: true, Label: "Ints"},
			{Name: "names", Type: spec.String, Array: true, Label: "Names"},
			{Name: "tsTicks", Type: spec.Long, ContentType: ContentTimestamp(spec.UnitTicks)},
			{Name: "tsMillis", Type: spec.Long, ContentType: ContentTimestamp(spec.UnitMillisecondsSinceEpoch)},
			{Name: "spanTicks", Type: spec.Long, ContentType: ContentTimespan(spec.UnitTicks)},
			{Name: "spanNanos", Type: spec.Long, ContentType: ContentTimespan(spec.UnitNanoseconds)},
			{Name: "spanMicros", Type: spec.Long, ContentType: ContentTimespan(spec.UnitMicroseconds)},
			{Name: "spanMillis", Type: spec.Long, ContentType: ContentTimespan(spec.UnitMilliseconds)},
			{Name: "spanSeconds", Type: spec.Long, ContentType: ContentTimespan(spec.UnitSeconds)},
			{Name: "bytes", Type: spec.Long, ContentType: ContentDataAmount(spec.UnitBytes)},
			{Name: "bits", Type: spec.Long, ContentType: ContentDataAmount(spec.UnitBits)},
			{Name: "pct", Type: spec.Double, ContentType: ContentPercentage()},
			{Name: "freq", Type: spec.Long, ContentType: ContentFrequency()},
			{Name: "addr", Type: spec.Long, ContentType: ContentMemoryAddress()},
			{Name: "unsigned", Type: spec.Int, ContentType: ContentUnsigned()},
		},
	}))
	add(b.AddEvent(EventType{Name: "go.interop.Mark", Label: "Mark", Fields: []FieldType{{Name: "n", Type: spec.Long, Label: "N"}}}))
	md, err := b.Build()
	must(t, err)
	return md
}

// interopEvents writes the constants and events of one chunk and records
// the field values in written, keyed by type and the i64 (AllTypes) or n
// (Mark) field that tells events apart.
func interopEvents(t testing.TB, w *Writer, chunk int, written map[string][]Value) {
	md := w.Metadata()
	c := func(n string) *Class { return class(t, md, n) }
	addStandardConstants(t, w)
	ep := c("go.Endpoint")
	peer := c("go.Peer")
	must(t, w.AddConstant(peer, 3, StructValue(peer, StringValue("db"), StructValue(ep, StringValue("db.local"), IntValue(KindInt, 5432)))))
	must(t, w.AddConstant(peer, 4, StructValue(peer, NullString(), StructValue(ep, StringValue(""), IntValue(KindInt, -1)))))
	base := testStartTicks + int64(chunk)*1e9
	type row struct {
		b             bool
		i8, i16, c    int64
		i32           int64
		f32, f64      float64
		s             Value
		peer          uint64
		ints          []int64
		names         []Value
		span          int64
		pct           float64
		addr          int64
		unsigned      int64
		thread, stack uint64
	}
	rows := []row{
		{true, -128, -32768, 'A', math.MinInt32, 1.25, 2.5e-7, StringValue("héllo, 世界 🚀"), 3, []int64{1, -2, 1 << 30}, []Value{StringValue("a"), NullString(), StringValue("")}, 1234567, 0.25, 0x7fff12345678, -1, 1, 1},
		{false, 127, 32767, 'é', math.MaxInt32, 3.4028235e38, -1e-300, StringValue(""), 4, nil, []Value{}, 0, 1, 0, 7, 0, 0},
		{true, 0, 0, '世', 0, -0.5, math.MaxFloat64, NullString(), 0, []int64{0}, []Value{StringValue("x")}, 999_999_999_999, 0.123456789, 1, math.MaxInt32, 1, 0},
	}
	all := c("go.interop.AllTypes")
	for i, r := range rows {
		ints := make([]Value, len(r.ints))
		for j, n := range r.ints {
			ints[j] = IntValue(KindInt, n)
		}
		ref := func(name string, k uint64) Value {
			if k == 0 {
				return Null()
			}
			return RefValue(c(name), k)
		}
		l := func(n int64) Value { return IntValue(KindLong, n) }
		start := base + int64(i)*1_000_000
		fields := []Value{
			l(start), l(int64(i) * 1500), ref(spec.Thread, r.thread), ref(spec.StackTrace, r.stack),
			BoolValue(r.b), IntValue(KindByte, r.i8), IntValue(KindShort, r.i16), IntValue(KindChar, r.c),
			IntValue(KindInt, r.i32), l(int64(chunk*100 + i)), FloatValue(KindFloat, r.f32), FloatValue(KindDouble, r.f64), r.s,
			ref(spec.Thread, r.thread), ref(spec.StackTrace, r.stack),
			StructValue(ep, StringValue(fmt.Sprintf("host-%d", i)), IntValue(KindInt, int64(80+i))), ref("go.Peer", r.peer),
			ArrayValue(c(spec.Int), ints...), ArrayValue(c(spec.String), r.names...),
			l(start + 12345), l(1_750_000_000_123 + int64(chunk)), l(r.span), l(r.span), l(r.span), l(r.span), l(r.span % 100_000),
			l(4096 << i), l(8 << i), FloatValue(KindDouble, r.pct), l(1_000_000 + int64(i)), l(r.addr), IntValue(KindInt, r.unsigned),
		}
		must(t, w.WriteEvent(all, fields))
		written[fmt.Sprintf("%s/%d", all.Name, chunk*100+i)] = fields
	}
	mark := []Value{IntValue(KindLong, base+5_000_000), IntValue(KindLong, int64(chunk))}
	must(t, w.WriteEvent(c("go.interop.Mark"), mark))
	written[fmt.Sprintf("go.interop.Mark/%d", chunk)] = mark
}

// A file with custom event types using every field type and content type,
// in several chunks, accepted by OpenJDK's jfr tool, which shows the values
// written.
func TestJFRToolInterop(t *testing.T) {
	testrec.JFR(t)
	md := interopTypes(t)
	var buf bytes.Buffer
	w := NewWriter(&buf, &WriterOptions{StartNanos: testStartNanos, StartTicks: testStartTicks})
	must(t, w.SetMetadata(md))
	const chunks = 3
	written := make(map[string][]Value)
	for c := 0; c < chunks; c++ {
		if c > 0 {
			must(t, w.StartChunk(testStartTicks+int64(c)*1e9))
		}
		interopEvents(t, w, c, written)
	}
	must(t, w.EndChunk(testStartTicks+chunks*1e9))
	must(t, w.Close())
	path := writeTemp(t, "interop.jfr", buf.Bytes())

	summary := string(testrec.RunJFR(t, "summary", path))
	if !strings.Contains(summary, fmt.Sprintf("Chunks: %d", chunks)) || !strings.Contains(summary, "go.interop.AllTypes") {
		t.Errorf("jfr summary:\n%s", summary)
	}
	if meta := string(testrec.RunJFR(t, "metadata", path)); !strings.Contains(meta, "class AllTypes") && !strings.Contains(meta, "go.interop.AllTypes") {
		t.Errorf("jfr metadata lacks the event type:\n%s", meta)
	}
	printed := testrec.RunJFR(t, "print", "--json", path)

	var doc struct {
		Recording struct {
			Events []struct {
				Type   string
				Values map[string]any
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(printed))
	dec.UseNumber()
	must(t, dec.Decode(&doc))
	byKey := make(map[string]map[string]any)
	for _, e := range doc.Recording.Events {
		keyField := "i64"
		if e.Type == "go.interop.Mark" {
			keyField = "n"
		}
		byKey[fmt.Sprintf("%s/%v", e.Type, e.Values[keyField])] = e.Values
	}

	seen := 0
	readEvents(t, buf.Bytes(), func(ev *Event) {
		keyField := "i64"
		if ev.Type.Name == "go.interop.Mark" {
			keyField = "n"
		}
		k, _ := ev.Field(keyField)
		key := fmt.Sprintf("%s/%d", ev.Type.Name, k.Int())
		// What was written is what our reader reads back...
		var d valueDiff
		if len(written[key]) != len(ev.Fields) {
			t.Fatalf("read back %s, which was not written", key)
		}
		for i, want := range written[key] {
			if s := d.diff(key+"."+ev.Type.Fields[i].Name, want, ev.Fields[i]); s != "" {
				t.Errorf("read back: %s", s)
			}
		}
		// ...and what jfr shows.
		j, ok := byKey[key]
		if !ok {
			t.Errorf("event %s %d missing from jfr's output", ev.Type.Name, k.Int())
			return
		}
		seen++
		jc := jsonCheck{t: t, clock: ev.Chunk.Clock()}
		for i := range ev.Type.Fields {
			f := &ev.Type.Fields[i]
			jc.field(ev.Type.Name+"."+f.Name, f, ev.Fields[i], j[f.Name])
		}
	})
	if want := chunks * 4; seen != want || len(doc.Recording.Events) != want {
		t.Errorf("compared %d events, jfr printed %d, want %d", seen, len(doc.Recording.Events), want)
	}
}

// jsonCheck compares values against `jfr print --json` output, converting
// as the JDK does: timestamps print as instants, timespans as ISO-8601
// durations, chars as one-char strings, references as the resolved value.
type jsonCheck struct {
	t     testing.TB
	clock Clock
}

func (c *jsonCheck) errorf(format string, args ...any) {
	c.t.Helper()
	c.t.Errorf(format, args...)
}

func (c *jsonCheck) field(path string, f *Field, v Value, j any) {
	c.t.Helper()
	if f.Array {
		arr, ok := j.([]any)
		if !ok || len(arr) != v.Len() {
			c.errorf("%s: jfr shows %v for an array of %d", path, j, v.Len())
			return
		}
		for i := range arr {
			c.single(fmt.Sprintf("%s[%d]", path, i), f, v.Index(i), arr[i])
		}
		return
	}
	c.single(path, f, v, j)
}

func (c *jsonCheck) single(path string, f *Field, v Value, j any) {
	c.t.Helper()
	v = v.Resolve()
	if v.IsNull() {
		if j != nil {
			c.errorf("%s: null, jfr shows %v", path, j)
		}
		return
	}
	cl := f.Type
	if cl.SimpleType {
		c.single(path, &cl.Fields[0], v, j)
		return
	}
	switch cl.Kind() {
	case KindBool:
		if b, ok := j.(bool); !ok || b != v.Bool() {
			c.errorf("%s: %v, jfr shows %v", path, v.Bool(), j)
		}
	case KindChar:
		if s, ok := j.(string); !ok || s != string(rune(v.Int())) {
			c.errorf("%s: %q, jfr shows %v", path, rune(v.Int()), j)
		}
	case KindByte, KindShort, KindInt, KindLong:
		c.integer(path, f, v.Int(), j)
	case KindFloat, KindDouble:
		n, ok := j.(json.Number)
		got, err := strconv.ParseFloat(string(n), 64)
		if !ok || err != nil || sig6(got) != sig6(v.Float()) {
			c.errorf("%s: %v, jfr shows %v", path, v.Float(), j)
		}
	case KindString:
		if s, ok := j.(string); !ok || s != v.String() {
			c.errorf("%s: %q, jfr shows %v", path, v.String(), j)
		}
	default:
		m, ok := j.(map[string]any)
		if !ok {
			c.errorf("%s: struct, jfr shows %v", path, j)
			return
		}
		for i := range cl.Fields {
			sf := &cl.Fields[i]
			c.field(path+"."+sf.Name, sf, v.Index(i), m[sf.Name])
		}
	}
}

// integer compares an integral value, converted by its content type.
func (c *jsonCheck) integer(path string, f *Field, n int64, j any) {
	c.t.Helper()
	ct, _ := f.ContentType()
	switch ct.Name() {
	case spec.Timestamp:
		want := time.Unix(0, n*1e6)
		if ct.Value() == spec.UnitTicks {
			want = c.clock.Time(n)
		}
		s, _ := j.(string)
		got, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !got.Equal(want) {
			c.errorf("%s: %v, jfr shows %v", path, want.UTC(), j)
		}
	case spec.Timespan:
		var want int64 // nanoseconds
		switch ct.Value() {
		case spec.UnitTicks:
			want = int64(c.clock.Duration(n))
		case spec.UnitNanoseconds:
			want = n
		case spec.UnitMicroseconds:
			want = n * 1e3
		case spec.UnitMilliseconds:
			want = n * 1e6
		case spec.UnitSeconds:
			want = n * 1e9
		}
		s, _ := j.(string)
		got, err := parseISODuration(s)
		if err != nil || got != want {
			c.errorf("%s: %d ns, jfr shows %v (%v)", path, want, j, err)
		}
	default:
		num, _ := j.(json.Number)
		if got, err := strconv.ParseInt(string(num), 10, 64); err != nil || got != n {
			c.errorf("%s: %d, jfr shows %v", path, n, j)
		}
	}
}

// sig6 formats a number to 6 significant digits.
func sig6(f float64) string { return strconv.FormatFloat(f, 'e', 5, 64) }

// parseISODuration parses java.time.Duration's text form ("PT20M34.567S",
// "PT-0.5S", "PT48H") into nanoseconds, exactly.
func parseISODuration(s string) (int64, error) {
	rest, ok := strings.CutPrefix(s, "PT")
	if !ok || rest == "" {
		return 0, fmt.Errorf("not an ISO-8601 duration: %q", s)
	}
	var total int64
	for rest != "" {
		i := strings.IndexAny(rest, "HMS")
		if i <= 0 {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		num, unit := rest[:i], rest[i]
		rest = rest[i+1:]
		neg := strings.HasPrefix(num, "-")
		num = strings.TrimPrefix(num, "-")
		whole, frac, _ := strings.Cut(num, ".")
		if len(frac) > 9 {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		w, err := strconv.ParseInt(whole, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad duration %q: %w", s, err)
		}
		var fr int64
		if frac != "" {
			if fr, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
				return 0, fmt.Errorf("bad duration %q: %w", s, err)
			}
		}
		scale := map[byte]int64{'H': 3600e9, 'M': 60e9, 'S': 1e9}[unit]
		if unit != 'S' && fr != 0 {
			return 0, fmt.Errorf("fraction on %c in %q", unit, s)
		}
		v := w*scale + fr
		if neg {
			v = -v
		}
		total += v
	}
	return total, nil
}

func TestParseISODuration(t *testing.T) {
	for s, want := range map[string]int64{
		"PT0S": 0, "PT12S": 12e9, "PT0.001234567S": 1234567, "PT20M34.567S": 1234567e6, "PT48H": 48 * 3600e9,
		"PT1H2M3.5S": 3723.5e9, "PT-0.5S": -5e8,
	} {
		if got, err := parseISODuration(s); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", s, got, err, want)
		}
	}
}
