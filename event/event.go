package event

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/emit"
	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/internal/stack"
)

// Goroutine is a goroutine id; a field of this type is written as a
// reference to the goroutine's java.lang.Thread. CurrentGoroutine returns
// the caller's.
type Goroutine uint64

// Func is a Go function; a field of this type is written as a reference to
// a jdk.types.Method, its package path as the class, as stack frames are.
// FuncOf makes one (a small id of the function, its pool key); 0 is null.
type Func uintptr

// FuncOf returns the Func of f, a function value, or 0 if f is not a
// non-nil function. It goes through reflection: call it once and keep the
// Func, rather than on every event.
func FuncOf(f any) Func {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Func || v.IsNil() {
		return 0
	}
	return Func(batch.FuncID(v.Pointer()))
}

// Info names and describes an event type.
type Info struct {
	Name        string // e.g. "app.HTTPRequest"; unique
	Label       string // human-readable name, e.g. "HTTP Request"
	Description string
	Category    []string // path, e.g. {"App", "HTTP"}
	// StackTrace is the default of the type's stackTrace setting.
	StackTrace bool
	// Disabled makes the type off in the default settings.
	Disabled bool
}

// Instant makes a struct an event type without a duration. Embed it first.
type Instant struct{ h emit.Header }

// Timed makes a struct an event type with a duration, from Begin to
// ShouldCommit or Commit. Embed it first.
type Timed struct{ h emit.Header }

// Type is a defined event type. Its methods are safe for concurrent use.
type Type[T any] struct {
	d *batch.Desc
}

// Define declares the event type of struct T, which embeds Instant or
// Timed as its first field. It panics, naming its caller's file and line,
// on a malformed definition: an unsupported field type, a name that is
// not a dotted Java identifier (app.HTTPRequest) or that is taken (by
// another Define, or by a type JFR or flightrec declares: the java., jdk.
// and go. namespaces are reserved), a field name that is not a Java
// identifier or is used twice. Definitions are static, like
// regexp.MustCompile's patterns; a bad one would otherwise make every
// file a recorder writes unreadable.
func Define[T any](info Info) *Type[T] {
	pc, file, line, _ := runtime.Caller(1)
	d, err := describe(reflect.TypeFor[T](), info, ownPackage(pc))
	if err != nil {
		panic(fmt.Sprintf("event.Define at %s:%d: %v", file, line, err))
	}
	d.DefaultOff, d.DefaultStack = info.Disabled, info.StackTrace
	if err := batch.Register(d); err != nil {
		panic(fmt.Sprintf("event.Define at %s:%d: %v", file, line, err))
	}
	return &Type[T]{d: d}
}

var (
	instantType = reflect.TypeFor[Instant]()
	timedType   = reflect.TypeFor[Timed]()
	goroutineT  = reflect.TypeFor[Goroutine]()
	funcT       = reflect.TypeFor[Func]()
	timeT       = reflect.TypeFor[time.Time]()
	durationT   = reflect.TypeFor[time.Duration]()
)

// module is the path prefix of flightrec's packages, which alone may
// define types in the reserved namespaces (the Go runtime's events under
// the JDK's names).
const module = "github.com/flightrec/flightrec/"

// reserved are the namespaces of the types JFR and flightrec declare.
var reserved = []string{"java.", "jdk.", "go."}

// ownPackage tells whether the code at pc (Define's call) is in a
// package of flightrec.
func ownPackage(pc uintptr) bool {
	f := runtime.FuncForPC(pc)
	return f != nil && strings.HasPrefix(f.Name(), module)
}

func describe(t reflect.Type, info Info, own bool) (*batch.Desc, error) {
	if err := checkTypeName(info.Name, own); err != nil {
		return nil, fmt.Errorf("%v: %w", t, err)
	}
	if t.Kind() != reflect.Struct || t.NumField() == 0 || t.Field(0).Offset != 0 ||
		(t.Field(0).Type != instantType && t.Field(0).Type != timedType) {
		return nil, fmt.Errorf("%s: %v must be a struct embedding event.Instant or event.Timed first", info.Name, t)
	}
	d := &batch.Desc{
		Name: info.Name, Label: info.Label, Description: info.Description,
		Category: info.Category, Timed: t.Field(0).Type == timedType,
	}
	// size(4, padded if large) + type id + startTime + duration + thread + stack
	d.FixedMax = 4 + 2 + 9 + 9 + 9 + 9
	taken := map[string]bool{spec.FieldStartTime: true, spec.FieldDuration: true, spec.FieldEventThread: true, spec.FieldStackTrace: true}
	for i := 1; i < t.NumField(); i++ {
		sf := t.Field(i)
		name := sf.Tag.Get("jfr")
		if name == "-" {
			continue
		}
		if name == "" {
			r, n := utf8.DecodeRuneInString(sf.Name)
			name = string(unicode.ToLower(r)) + sf.Name[n:]
		}
		if !batch.JavaIdentifier(name) {
			return nil, fmt.Errorf("%s: field %s: name %q is not a Java identifier (a letter, _ or $, then letters, digits, _ or $)", info.Name, sf.Name, name)
		}
		if taken[name] {
			return nil, fmt.Errorf("%s: field %s: name %q is used twice or reserved (startTime, duration, eventThread, stackTrace)", info.Name, sf.Name, name)
		}
		taken[name] = true
		k, size := kindOf(sf.Type)
		if k == 0 {
			return nil, fmt.Errorf("%s: field %s has unsupported type %v", info.Name, sf.Name, sf.Type)
		}
		content := sf.Tag.Get("content")
		if _, ok := spec.ContentTags[content]; content != "" && !ok {
			return nil, fmt.Errorf("%s: field %s: unknown content type %q", info.Name, sf.Name, content)
		}
		switch {
		case k == batch.Time:
			if content != "" && content != "timestamp" {
				return nil, fmt.Errorf("%s: field %s: a time.Time is a timestamp, not %q", info.Name, sf.Name, content)
			}
			content = "timestamp"
		case content == "timestamp" && k != batch.Int64:
			return nil, fmt.Errorf("%s: field %s: content timestamp needs an int64 (ns since the Unix epoch) or a time.Time", info.Name, sf.Name)
		case content == "" && sf.Type == durationT:
			content = "ns"
		case content == "" && k >= batch.Uint8 && k <= batch.Uint64:
			content = "unsigned"
		}
		d.Fields = append(d.Fields, batch.Field{
			Name: name, Label: sf.Tag.Get("label"), Description: sf.Tag.Get("description"),
			Content: content, Kind: k, Offset: sf.Offset,
		})
		d.FixedMax += size
		d.Ops = append(d.Ops, batch.Op{Enc: batch.EncOf(k, content), Offset: uint32(sf.Offset)})
		if k == batch.String {
			d.Strings = append(d.Strings, sf.Offset)
		}
		d.Refs = d.Refs || k == batch.Thread || k == batch.Func
	}
	return d, nil
}

// checkTypeName checks that name is a dotted Java identifier that no other
// type takes: an event type's name is its class name in the file, and a
// reader rejects a file whose metadata declares a class twice or with a
// malformed name. (batch.Register rejects a name defined before.) Only
// flightrec's own packages (own) may use the reserved namespaces, where
// the types it writes live; the types of the JFR table are never free.
func checkTypeName(name string, own bool) error {
	if name == "" {
		return errors.New("the type has no name (Info.Name)")
	}
	if err := batch.CheckName(name); err != nil {
		return err
	}
	if spec.Lookup(name) != nil {
		return fmt.Errorf("name %q is a type JFR declares", name)
	}
	for _, ns := range reserved {
		if strings.HasPrefix(name, ns) && !own {
			return fmt.Errorf("name %q is in the namespace %s*, reserved for the types JFR and flightrec declare", name, ns)
		}
	}
	return nil
}

// kindOf maps a Go type to a field kind and its largest encoded size (for
// strings, without the bytes).
func kindOf(t reflect.Type) (batch.Kind, int) {
	switch t {
	case goroutineT:
		return batch.Thread, 9
	case funcT:
		return batch.Func, 9
	case timeT:
		return batch.Time, 9
	}
	switch t.Kind() {
	case reflect.Bool:
		return batch.Bool, 1
	case reflect.Int8:
		return batch.Int8, 1
	case reflect.Int16:
		return batch.Int16, 3
	case reflect.Int32:
		return batch.Int32, 5
	case reflect.Int64, reflect.Int:
		if t.Size() == 4 {
			return batch.Int32, 5
		}
		return batch.Int64, 9
	case reflect.Uint8:
		return batch.Uint8, 1
	case reflect.Uint16:
		return batch.Uint16, 3
	case reflect.Uint32:
		return batch.Uint32, 5
	case reflect.Uint64, reflect.Uint, reflect.Uintptr:
		if t.Size() == 4 {
			return batch.Uint32, 5
		}
		return batch.Uint64, 9
	case reflect.Float32:
		return batch.Float32, 4
	case reflect.Float64:
		return batch.Float64, 8
	case reflect.String:
		return batch.String, 1 + 9
	}
	return 0, 0
}

// Name returns the type's name ("" for a nil Type).
func (t *Type[T]) Name() string {
	if t == nil {
		return ""
	}
	return t.d.Name
}

// Enabled tells whether events of this type are being recorded. Use it to
// skip computing costly field values. A nil Type is never enabled.
func (t *Type[T]) Enabled() bool { return t != nil && on(t.d) }

// Begin starts the event ev, a zero value or an event already committed:
// when the type is enabled it marks ev to be recorded and, for a Timed
// event, reads the start time; otherwise ev stays disabled and its methods
// do nothing. Declare ev where it is used:
//
//	var ev HTTPRequest
//	httpRequest.Begin(&ev)
//
// Begin fills the caller's variable instead of returning the struct: a
// returned struct is zeroed and copied through a temporary, which costs
// about 6 ns on the disabled path (a stalled store-to-load forward),
// against under 1 ns here.
//
// A nil Type (a variable not yet assigned its Define) is disabled.
func (t *Type[T]) Begin(ev *T) {
	if t != nil && t.d.On.Load() {
		begin((*emit.Header)(unsafe.Pointer(ev)), t.d)
	}
}

// on tells whether d is enabled. Begin and Enabled, being generic, are
// compiled in the packages that use them, which can inline d.On.Load
// only if this package's export data carries its body: it does because
// on, an inlinable function, calls it. Without it Begin cost a call more
// and did not inline (TestInlining).
func on(d *batch.Desc) bool { return d.On.Load() }

// begin marks h enabled and, for a Timed event, reads its start; an
// Instant takes its time at Commit. It is out of line so that Begin
// inlines, and nosplit: a leaf needs no stack check. emit.Record leaves
// Start and End zero.
//
//go:noinline
//go:nosplit
func begin(h *emit.Header, d *batch.Desc) {
	h.D = d
	if d.Timed {
		h.Start, h.End = clock.Now(), 0
	}
}

// ShouldCommit tells whether the event will be recorded: its type is
// enabled. Set the fields only then.
func (e *Instant) ShouldCommit() bool { return e.h.D != nil }

// Commit records the event, at the current time unless SetTime set one.
// An event is committed once: Commit marks it done.
func (e *Instant) Commit() {
	if e.h.D != nil {
		commit(&e.h)
	}
}

// ShouldCommit ends the event's duration and tells whether it will be
// recorded: its type is enabled and it lasted at least the type's
// threshold. Set the fields only then.
func (e *Timed) ShouldCommit() bool { return e.h.D != nil && shouldCommit(&e.h) }

func shouldCommit(h *emit.Header) bool {
	h.End = clock.Now()
	return !h.D.Short(h.End - h.Start)
}

// Commit ends the event's duration, unless ShouldCommit did, and records
// it if it lasted at least the type's threshold. An event is committed
// once: Commit marks it done.
func (e *Timed) Commit() {
	if e.h.D != nil {
		commit(&e.h)
	}
}

// CurrentGoroutine returns the calling goroutine's id.
func CurrentGoroutine() Goroutine { return Goroutine(stack.Goid()) }

// Labels returns "k1=v1 k2=v2" for the pairs, ignoring an odd last key.
func labelString(kv []string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv[i])
		b.WriteByte('=')
		b.WriteString(kv[i+1])
	}
	return b.String()
}

// SetTime sets the event's time, for an event describing something that
// happened earlier (the runtime's statistics, say). No-op when disabled or
// for the zero time.
func (e *Instant) SetTime(t time.Time) {
	if e.h.D != nil && !t.IsZero() {
		e.h.Start = ticksAt(t)
	}
}

// SetTimes sets the event's start and end, for an event describing
// something that happened earlier. No-op when disabled or for a zero time.
func (e *Timed) SetTimes(start, end time.Time) {
	if e.h.D != nil && !start.IsZero() && !end.IsZero() {
		e.h.Start, e.h.End = ticksAt(start), ticksAt(end)
	}
}

// ticksAt converts a time to a tick: through t's monotonic reading when
// it has one and is within a day (exact across wall-clock steps), else
// through the wall clock (clock.TicksAt).
func ticksAt(t time.Time) int64 {
	if d := time.Since(t); d > -24*time.Hour && d < 24*time.Hour && t.Round(0) != t {
		tps := clock.TicksPerSecond()
		return clock.Now() - (int64(d)/1e9*tps + int64(d)%1e9*tps/1e9)
	}
	return clock.TicksAt(t.UnixNano())
}
