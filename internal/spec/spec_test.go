package spec

import (
	"strings"
	"testing"
)

func TestTableIsConsistent(t *testing.T) {
	if err := Check(Types); err != nil {
		t.Fatal(err)
	}
	for _, ty := range Types {
		if ty.ID < BuiltinFirst || ty.ID >= BuiltinEnd {
			t.Errorf("%s: built-in id %d outside [%d, %d), where user ids do not go", ty.Name, ty.ID, BuiltinFirst, BuiltinEnd)
		}
		for _, fd := range ty.Fields {
			if fd.ConstantPool && Lookup(fd.Type) == nil {
				t.Errorf("%s.%s: pool type %s missing", ty.Name, fd.Name, fd.Type)
			}
		}
	}
}

// The JDK 17 layouts (jfr-format.md §7.1): readers go by field position,
// so the order is part of the format.
func TestJDK17Layouts(t *testing.T) {
	want := map[string]string{
		Thread:      "osName:java.lang.String osThreadId:long javaName:java.lang.String javaThreadId:long group:*jdk.types.ThreadGroup",
		ThreadGroup: "parent:*jdk.types.ThreadGroup name:java.lang.String",
		Class:       "classLoader:*jdk.types.ClassLoader name:*jdk.types.Symbol package:*jdk.types.Package modifiers:int hidden:boolean",
		ClassLoader: "type:*java.lang.Class name:*jdk.types.Symbol",
		Method:      "type:*java.lang.Class name:*jdk.types.Symbol descriptor:*jdk.types.Symbol modifiers:int hidden:boolean",
		Symbol:      "string:java.lang.String",
		Package:     "name:*jdk.types.Symbol module:*jdk.types.Module exported:boolean",
		Module:      "name:*jdk.types.Symbol version:*jdk.types.Symbol location:*jdk.types.Symbol classLoader:*jdk.types.ClassLoader",
		StackTrace:  "truncated:boolean frames:jdk.types.StackFrame[]",
		StackFrame:  "method:*jdk.types.Method lineNumber:int bytecodeIndex:int type:*jdk.types.FrameType",
		FrameType:   "description:java.lang.String",
	}
	for name, layout := range want {
		ty := Lookup(name)
		if ty == nil {
			t.Errorf("%s not declared", name)
			continue
		}
		var parts []string
		for _, fd := range ty.Fields {
			s := fd.Name + ":"
			if fd.ConstantPool {
				s += "*"
			}
			s += fd.Type
			if fd.Array {
				s += "[]"
			}
			parts = append(parts, s)
		}
		if got := strings.Join(parts, " "); got != layout {
			t.Errorf("%s:\n got  %s\n want %s", name, got, layout)
		}
	}
	for _, name := range []string{Symbol, FrameType, ThreadState} {
		if !Lookup(name).SimpleType {
			t.Errorf("%s is not a simple type", name)
		}
	}
}

func isContentType(ty *Type) bool {
	return ty != nil && len(ty.Annotations) > 0 && ty.Annotations[0].Type == ContentType
}

func TestContentTypes(t *testing.T) {
	for _, name := range []string{Timestamp, Timespan, DataAmount, Percentage, Frequency, MemoryAddress, Unsigned} {
		if !isContentType(Lookup(name)) {
			t.Errorf("%s is not marked with %s", name, ContentType)
		}
	}
}

// TestContentTags checks that every content tag names a declared content
// type annotation, with a unit exactly where the annotation takes one.
func TestContentTags(t *testing.T) {
	takesUnit := map[string]bool{Timestamp: true, Timespan: true, DataAmount: true}
	for tag, ct := range ContentTags {
		if !isContentType(Lookup(ct[0])) {
			t.Errorf("content tag %q: %s is not a content type annotation", tag, ct[0])
		}
		if (ct[1] != "") != takesUnit[ct[0]] {
			t.Errorf("content tag %q: unit %q for %s", tag, ct[1], ct[0])
		}
	}
}

// TestJDKEvents checks the JDK event table as the metadata builder declares
// it: after the built-ins, with user ids.
func TestJDKEvents(t *testing.T) {
	types := append([]Type(nil), Types...)
	for i, ev := range JDKEvents {
		ev.ID = UserID(i)
		types = append(types, ev)
		if JDKEvent(ev.Name) == nil {
			t.Errorf("JDKEvent(%q) = nil", ev.Name)
		}
	}
	if err := Check(types); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  uint64
		enum map[uint64]string
	}{{StateRunnable, ThreadStates}, {GCBefore, GCWhens}, {GCAfter, GCWhens},
		{GCNameGo, GCNames}, {GCCauseSystemGC, GCCauses}, {GCCauseHeapTarget, GCCauses}} {
		if c.enum[c.key] == "" {
			t.Errorf("key %d has no constant", c.key)
		}
	}
}

func TestUserID(t *testing.T) {
	seen := map[int64]bool{}
	for n := range 3000 {
		id := UserID(n)
		if id < FirstUserID || (id >= BuiltinFirst && id < BuiltinEnd) || id == MagicTypeID || seen[id] {
			t.Fatalf("UserID(%d) = %d: reserved or repeated", n, id)
		}
		seen[id] = true
	}
	if UserID(106) != 127 {
		t.Errorf("UserID(106) = %d: the first 107 user types should get one-byte ids", UserID(106))
	}
}

func TestEventFields(t *testing.T) {
	for _, timed := range []bool{false, true} {
		for _, thread := range []bool{false, true} {
			for _, stack := range []bool{false, true} {
				ev := Type{ID: FirstUserID, Name: "test.Event", SuperType: SuperEvent, Fields: EventFields(timed, thread, stack),
					Annotations: ClassAnnotations("Test", "A test event", []string{"Go", "Test"})}
				if err := Check(append(append([]Type(nil), Types...), ev)); err != nil {
					t.Errorf("timed=%v thread=%v stack=%v: %v", timed, thread, stack, err)
				}
				if timed && ev.Fields[1].Name != FieldDuration {
					t.Errorf("duration is not the second field")
				}
			}
		}
	}
}

func TestCheckCatchesErrors(t *testing.T) {
	bad := []Type{
		{ID: 1, Name: "reserved"},
		{ID: 2, Name: "a", Fields: []Field{{Name: "x", Type: "missing"}}},
		{ID: 2, Name: "b"},
		{ID: 3, Name: "a"},
		{ID: 4, Name: "c", Fields: []Field{{Name: "n", Type: "long", ConstantPool: true}}},
		{ID: 5, Name: "ev", SuperType: SuperEvent, Fields: []Field{{Name: "startTime", Type: "long"}, {Name: "x", Type: "long"}, {Name: "duration", Type: "long"}}},
		{ID: 6, Name: "s", SimpleType: true},
		{ID: 17, Name: "long"},
		{ID: 7, Name: "an", Annotations: []Annotation{{Type: "long"}}},
	}
	err := Check(bad)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"reserved", "missing", "already used", "declared twice", "has no pool", "duration must be", "simple type", "not an annotation type"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestSplitFunc(t *testing.T) {
	for _, c := range [][3]string{
		{"example.com/a/b.(*T).M", "example.com/a/b", "(*T).M"},
		{"main.main", "main", "main"},
		{"net/http.(*Server).Serve", "net/http", "(*Server).Serve"},
		{"example.com/a.b/c.F.func1", "example.com/a.b/c", "F.func1"},
		{"nodot", "nodot", "nodot"},
	} {
		if pkg, name := SplitFunc(c[0]); pkg != c[1] || name != c[2] {
			t.Errorf("SplitFunc(%q) = %q, %q; want %q, %q", c[0], pkg, name, c[1], c[2])
		}
	}
}
