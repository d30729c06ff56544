package jfrstack

import (
	"strconv"
	"strings"

	"github.com/flightrec/flightrec/jfr"
)

// Frame is one frame of a stack: a function and a line (0 when unknown).
type Frame struct {
	Func uint32 // index into Table.Funcs
	Line int32
}

// Table interns functions, frames and stacks by content. Stack id 0 is
// "no stack". The zero value is not ready: use New.
type Table struct {
	Funcs []string // function names, by id

	funcIDs  map[string]uint32
	frames   []Frame
	frameIDs map[Frame]uint32
	// stacks holds every stack's frame ids, leaf first, back to back;
	// stack i is stacks[offs[i]:offs[i+1]].
	stacks    []uint32
	offs      []uint32
	truncated []bool
	stackIDs  map[string]uint32

	chunk  *jfr.Chunk
	byKey  map[uint64]uint32 // this chunk's stack-trace pool keys
	keybuf []byte
	ids    []uint32
}

// New returns an empty table.
func New() *Table {
	return &Table{
		funcIDs:   map[string]uint32{},
		frameIDs:  map[Frame]uint32{},
		offs:      []uint32{0, 0}, // stack 0: empty
		truncated: []bool{false},
		stackIDs:  map[string]uint32{},
		byKey:     map[uint64]uint32{},
	}
}

// Len returns the number of stacks, counting the empty stack 0.
func (t *Table) Len() int { return len(t.offs) - 1 }

// Frames returns the frame ids of stack id, leaf first. The slice is the
// table's own.
func (t *Table) Frames(id uint32) []uint32 { return t.stacks[t.offs[id]:t.offs[id+1]] }

// Frame returns frame id.
func (t *Table) Frame(id uint32) Frame { return t.frames[id] }

// NumFrames returns the number of distinct frames.
func (t *Table) NumFrames() int { return len(t.frames) }

// Truncated tells whether stack id was cut short by the recorder.
func (t *Table) Truncated(id uint32) bool { return t.truncated[id] }

// FuncID interns a function name, for callers that add synthetic frames
// (the allocated class as a leaf).
func (t *Table) FuncID(name string) uint32 {
	id, ok := t.funcIDs[name]
	if !ok {
		id = uint32(len(t.Funcs))
		t.Funcs = append(t.Funcs, name)
		t.funcIDs[name] = id
	}
	return id
}

// FrameID interns a frame.
func (t *Table) FrameID(f Frame) uint32 {
	id, ok := t.frameIDs[f]
	if !ok {
		id = uint32(len(t.frames))
		t.frames = append(t.frames, f)
		t.frameIDs[f] = id
	}
	return id
}

// StackField returns the index of the event type's stackTrace field, or -1.
func StackField(c *jfr.Class) int {
	i := c.FieldIndex("stackTrace")
	if i >= 0 && c.Fields[i].Type != nil && c.Fields[i].Type.Name == "jdk.types.StackTrace" {
		return i
	}
	return -1
}

// Stack returns the id of the stack trace in field i of ev (from
// StackField), or 0 if it has none. Stacks are remembered per chunk by
// pool key, so each distinct stack of a chunk is resolved once.
func (t *Table) Stack(ev *jfr.Event, i int) uint32 {
	if i < 0 || i >= len(ev.Fields) {
		return 0
	}
	v := ev.Fields[i]
	if ev.Chunk != t.chunk {
		t.chunk = ev.Chunk
		clear(t.byKey)
	}
	ref := v.Kind() == jfr.KindRef
	if ref {
		if id, ok := t.byKey[v.Key()]; ok {
			return id
		}
	}
	id := t.intern(v.Resolve())
	if ref {
		t.byKey[v.Key()] = id
	}
	return id
}

// intern adds the resolved jdk.types.StackTrace st.
func (t *Table) intern(st jfr.Value) uint32 {
	if st.Kind() != jfr.KindStruct {
		return 0
	}
	frames, _ := st.Field("frames")
	frames = frames.Resolve()
	t.ids = t.ids[:0]
	if frames.Kind() == jfr.KindArray {
		for _, f := range frames.Elems() {
			f = f.Resolve()
			if f.Kind() != jfr.KindStruct {
				continue
			}
			m, _ := f.Field("method")
			line, _ := f.Field("lineNumber")
			ln := int32(line.Int())
			if ln < 0 {
				ln = 0
			}
			t.ids = append(t.ids, t.FrameID(Frame{Func: t.FuncID(MethodName(m)), Line: ln}))
		}
	}
	trunc, _ := st.Field("truncated")
	return t.StackOf(t.ids, trunc.Bool())
}

// StackOf interns a stack given as frame ids, leaf first.
func (t *Table) StackOf(frames []uint32, truncated bool) uint32 {
	if len(frames) == 0 && !truncated {
		return 0
	}
	key := t.keybuf[:0]
	for _, f := range frames {
		key = append(key, byte(f), byte(f>>8), byte(f>>16), byte(f>>24))
	}
	if truncated {
		key = append(key, 1)
	}
	t.keybuf = key
	if id, ok := t.stackIDs[string(key)]; ok {
		return id
	}
	id := uint32(len(t.offs) - 1)
	t.stacks = append(t.stacks, frames...)
	t.offs = append(t.offs, uint32(len(t.stacks)))
	t.truncated = append(t.truncated, truncated)
	t.stackIDs[string(key)] = id
	return id
}

// MethodName names a jdk.types.Method value as profilers do: Java's
// "java.util.HashMap.put", Go's "net/http.(*Server).Serve" (the recorder
// stores a Go function's package path as its class, which has no package
// constant; a Java class's '/' separators become '.').
func MethodName(m jfr.Value) string {
	m = m.Resolve()
	if m.Kind() != jfr.KindStruct {
		return "[unknown]"
	}
	name := Text(field(m, "name"))
	cls := field(m, "type").Resolve()
	if cls.Kind() != jfr.KindStruct {
		return name
	}
	cn := Text(field(cls, "name"))
	if pkg := field(cls, "package").Resolve(); pkg.Kind() == jfr.KindStruct {
		cn = strings.ReplaceAll(cn, "/", ".")
	}
	if cn == "" {
		return name
	}
	return cn + "." + name
}

// ClassName names a java.lang.Class value as Java source does:
// "java.lang.String", "byte[]", "java.lang.Object[][]".
func ClassName(c jfr.Value) string {
	c = c.Resolve()
	if c.Kind() != jfr.KindStruct {
		return "[unknown]"
	}
	name := strings.ReplaceAll(Text(field(c, "name")), "/", ".")
	dims := 0
	for dims < len(name) && name[dims] == '[' {
		dims++
	}
	if dims == 0 {
		return name
	}
	elem := name[dims:]
	if len(elem) > 2 && elem[0] == 'L' && elem[len(elem)-1] == ';' {
		elem = elem[1 : len(elem)-1]
	} else if p, ok := primitives[elem]; ok {
		elem = p
	}
	return elem + strings.Repeat("[]", dims)
}

var primitives = map[string]string{"Z": "boolean", "B": "byte", "C": "char", "S": "short", "I": "int", "J": "long", "F": "float", "D": "double"}

// ThreadField returns the index of the event type's thread field: the
// sampled thread of a JDK sample event, else eventThread; -1 if none.
func ThreadField(c *jfr.Class) int {
	if i := c.FieldIndex("sampledThread"); i >= 0 {
		return i
	}
	return c.FieldIndex("eventThread")
}

// ThreadName names a java.lang.Thread value: its Java name, else its OS
// name, else "".
func ThreadName(th jfr.Value) string {
	th = th.Resolve()
	if th.Kind() != jfr.KindStruct {
		return ""
	}
	if n := Text(field(th, "javaName")); n != "" {
		return n
	}
	return Text(field(th, "osName"))
}

// ThreadIdentity is what tells a java.lang.Thread value from another
// across chunks and files, whose pool keys are chunk-scoped: its name and
// its Java and OS thread ids. Views that lay out events by thread key
// their tracks by it.
func ThreadIdentity(th jfr.Value) string {
	th = th.Resolve()
	jid, _ := th.Field("javaThreadId")
	oid, _ := th.Field("osThreadId")
	return ThreadName(th) + "\x00" + strconv.FormatInt(jid.Int(), 10) + "\x00" + strconv.FormatInt(oid.Int(), 10)
}

func field(v jfr.Value, name string) jfr.Value {
	f, ok := v.Field(name)
	if !ok {
		return jfr.Null()
	}
	return f
}

// Text returns the text of a string value, following references and
// single-field wrappers such as jdk.types.Symbol.
func Text(v jfr.Value) string {
	for range 4 {
		v = v.Resolve()
		if v.Kind() == jfr.KindStruct && v.Len() == 1 {
			v = v.Index(0)
			continue
		}
		break
	}
	if v.Kind() != jfr.KindString {
		return ""
	}
	return v.String()
}
