package jfr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"testing"

	"github.com/flightrec/flightrec/internal/spec"
)

// Shared helpers of the writer tests.

// testTypes declares a user constant-pool type, a nested struct and an event
// type with a field of every kind.
func testTypes(t testing.TB) *Metadata {
	t.Helper()
	b := NewMetadataBuilder()
	mustAdd := func(_ int64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mustAdd(b.AddType(StructType{Name: "go.Endpoint", Label: "Endpoint", Fields: []FieldType{
		{Name: "host", Type: spec.String, Label: "Host"},
		{Name: "port", Type: spec.Int, Label: "Port"},
	}}))
	mustAdd(b.AddType(StructType{Name: "go.Inner", Fields: []FieldType{
		{Name: "a", Type: spec.Long},
		{Name: "tags", Type: spec.String, Array: true},
	}}))
	mustAdd(b.AddType(StructType{Name: "go.Outer", Fields: []FieldType{
		{Name: "inner", Type: "go.Inner"},
		{Name: "inners", Type: "go.Inner", Array: true},
		{Name: "endpoint", Type: "go.Endpoint", ConstantPool: true},
	}}))
	mustAdd(b.AddEvent(EventType{
		Name: "go.AllKinds", Label: "All Kinds", Description: "Every field kind", Category: []string{"Go", "Test"},
		Timed: true, Thread: true, StackTrace: true,
		Fields: []FieldType{
			{Name: "b", Type: spec.Boolean},
			{Name: "i8", Type: spec.Byte},
			{Name: "i16", Type: spec.Short},
			{Name: "c", Type: spec.Char},
			{Name: "i32", Type: spec.Int},
			{Name: "i64", Type: spec.Long},
			{Name: "f32", Type: spec.Float},
			{Name: "f64", Type: spec.Double},
			{Name: "s", Type: spec.String},
			{Name: "ints", Type: spec.Int, Array: true},
			{Name: "strs", Type: spec.String, Array: true},
			{Name: "outer", Type: "go.Outer"},
			{Name: "endpoint", Type: "go.Endpoint", ConstantPool: true},
			{Name: "endpoints", Type: "go.Endpoint", ConstantPool: true, Array: true},
			{Name: "symbol", Type: spec.Symbol, ConstantPool: true},
		},
	}))
	mustAdd(b.AddEvent(EventType{Name: "go.Instant", Fields: []FieldType{{Name: "n", Type: spec.Long}}}))
	md, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// class returns the named class or fails.
func class(t testing.TB, md *Metadata, name string) *Class {
	t.Helper()
	c := md.ClassByName(name)
	if c == nil {
		t.Fatalf("class %s missing", name)
	}
	return c
}

// addStandardConstants adds one thread (key 1, group 1), a stack trace
// (key 1) of two frames and everything they refer to.
func addStandardConstants(t testing.TB, w *Writer) {
	t.Helper()
	md := w.Metadata()
	c := func(name string) *Class { return class(t, md, name) }
	sym := func(key uint64, s string) { must(t, w.AddConstant(c(spec.Symbol), key, StringValue(s))) }
	must(t, w.AddConstant(c(spec.ThreadGroup), 1, StructValue(c(spec.ThreadGroup), Null(), StringValue("main"))))
	must(t, w.AddConstant(c(spec.Thread), 1, StructValue(c(spec.Thread),
		StringValue("goroutine-1"), IntValue(KindLong, 1), StringValue("goroutine-1"), IntValue(KindLong, 1), RefValue(c(spec.ThreadGroup), 1))))
	sym(1, "net/http")
	sym(2, "(*conn).serve")
	sym(3, "()V")
	sym(4, "main.main")
	for k, s := range spec.FrameTypes {
		must(t, w.AddConstant(c(spec.FrameType), uint64(k), StringValue(s)))
	}
	must(t, w.AddConstant(c(spec.Class), 1, StructValue(c(spec.Class),
		Null(), RefValue(c(spec.Symbol), 1), Null(), IntValue(KindInt, 1), BoolValue(false))))
	must(t, w.AddConstant(c(spec.Method), 1, StructValue(c(spec.Method),
		RefValue(c(spec.Class), 1), RefValue(c(spec.Symbol), 2), RefValue(c(spec.Symbol), 3), IntValue(KindInt, 1), BoolValue(false))))
	must(t, w.AddConstant(c(spec.Method), 2, StructValue(c(spec.Method),
		RefValue(c(spec.Class), 1), RefValue(c(spec.Symbol), 4), RefValue(c(spec.Symbol), 3), IntValue(KindInt, 1), BoolValue(false))))
	frame := func(method uint64, line int64) Value {
		return StructValue(c(spec.StackFrame), RefValue(c(spec.Method), method), IntValue(KindInt, line), IntValue(KindInt, -1), RefValue(c(spec.FrameType), 1))
	}
	must(t, w.AddConstant(c(spec.StackTrace), 1, StructValue(c(spec.StackTrace),
		BoolValue(false), ArrayValue(c(spec.StackFrame), frame(1, 42), frame(2, 7)))))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// readEvents reads every event of a recording and calls fn for each.
func readEvents(t testing.TB, data []byte, fn func(ev *Event)) (chunks int) {
	t.Helper()
	r := NewReader(bytes.NewReader(data), nil)
	var ev Event
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(&ev)
	}
	if r.Chunk() == nil {
		return 0
	}
	return r.Chunk().Index + 1
}

// valueDiff compares two values recursively and describes the first
// difference, or returns "". With resolve set, constant-pool references and
// pooled strings are compared by the content they resolve to; otherwise by
// class name and key.
type valueDiff struct {
	resolve bool
	same    map[refPair]bool // reference pairs known equal, or being compared
}

type refPair struct {
	class string
	a, b  uint64
}

func (d *valueDiff) diff(path string, a, b Value) string {
	if d.resolve {
		if a.Kind() == KindRef && b.Kind() == KindRef && a.Class() != nil && b.Class() != nil {
			p := refPair{a.Class().Name, a.Key(), b.Key()}
			if d.same[p] {
				return "" // equal, or a cycle being compared further up
			}
			if d.same == nil {
				d.same = make(map[refPair]bool)
			}
			d.same[p] = true
			if s := d.diff(path, a.Resolve(), b.Resolve()); s != "" {
				delete(d.same, p)
				return s
			}
			return ""
		}
		a, b = a.Resolve(), b.Resolve()
	}
	ka, kb := nullKind(a), nullKind(b)
	if ka != kb {
		return fmt.Sprintf("%s: kind %s != %s", path, ka, kb)
	}
	switch ka {
	case KindBool:
		if a.Bool() != b.Bool() {
			return fmt.Sprintf("%s: %v != %v", path, a.Bool(), b.Bool())
		}
	case KindByte, KindShort, KindChar, KindInt, KindLong:
		if a.Int() != b.Int() {
			return fmt.Sprintf("%s: %d != %d", path, a.Int(), b.Int())
		}
	case KindFloat:
		if math.Float32bits(float32(a.Float())) != math.Float32bits(float32(b.Float())) {
			return fmt.Sprintf("%s: %v != %v", path, a.Float(), b.Float())
		}
	case KindDouble:
		if math.Float64bits(a.Float()) != math.Float64bits(b.Float()) {
			return fmt.Sprintf("%s: %v != %v", path, a.Float(), b.Float())
		}
	case KindString:
		if !d.resolve && (a.Encoding() == encPool) != (b.Encoding() == encPool) {
			return fmt.Sprintf("%s: pooled string vs inline string", path)
		}
		if !d.resolve && a.Encoding() == encPool {
			if a.Key() != b.Key() {
				return fmt.Sprintf("%s: string pool key %d != %d", path, a.Key(), b.Key())
			}
			return ""
		}
		if a.String() != b.String() {
			return fmt.Sprintf("%s: %q != %q", path, a.String(), b.String())
		}
	case KindRef:
		if a.Class().Name != b.Class().Name || a.Key() != b.Key() {
			return fmt.Sprintf("%s: ref %s/%d != %s/%d", path, a.Class().Name, a.Key(), b.Class().Name, b.Key())
		}
	case KindStruct, KindArray:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d elements != %d", path, a.Len(), b.Len())
		}
		for i := 0; i < a.Len(); i++ {
			name := fmt.Sprintf("[%d]", i)
			if ka == KindStruct && a.Class() != nil && i < len(a.Class().Fields) {
				name = "." + a.Class().Fields[i].Name
			}
			if s := d.diff(path+name, a.Index(i), b.Index(i)); s != "" {
				return s
			}
		}
	}
	return ""
}

// nullKind returns the kind of v, with the reference key 0 (null by
// convention, jfr-format.md §7.4) and invalid values as KindNull.
func nullKind(v Value) Kind {
	switch k := v.Kind(); {
	case k == KindInvalid, k == KindRef && v.Key() == 0:
		return KindNull
	default:
		return k
	}
}

// writeTemp writes data to a file in t.TempDir and returns its path.
func writeTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := t.TempDir() + "/" + name
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
