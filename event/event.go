package event

import (
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
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

// header is the state of an event handle; Instant and Timed wrap it and
// must be the first field of an event struct, so a pointer to the struct
// is a pointer to its header.
type header struct {
	d     *batch.Desc // nil: disabled or committed
	start int64       // ticks; 0 for an Instant until committed (or SetTime)
	end   int64       // ticks; 0 until ShouldCommit, Commit or SetTimes
}

// Instant makes a struct an event type without a duration. Embed it first.
type Instant struct{ h header }

// Timed makes a struct an event type with a duration, from Begin to
// ShouldCommit or Commit. Embed it first.
type Timed struct{ h header }

// Type is a defined event type. Its methods are safe for concurrent use.
type Type[T any] struct {
	d *batch.Desc
}

// Define declares the event type of struct T, which embeds Instant or
// Timed as its first field. It panics on a malformed definition (an
// unsupported field type, a duplicate name): definitions are static, like
// regexp.MustCompile's patterns.
func Define[T any](info Info) *Type[T] {
	d, err := describe(reflect.TypeFor[T](), info)
	if err != nil {
		panic("event.Define: " + err.Error())
	}
	d.DefaultOff, d.DefaultStack = info.Disabled, info.StackTrace
	batch.Register(d)
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

func describe(t reflect.Type, info Info) (*batch.Desc, error) {
	if info.Name == "" {
		return nil, fmt.Errorf("type %v has no name", t)
	}
	if t.Kind() != reflect.Struct || t.NumField() == 0 || t.Field(0).Offset != 0 ||
		(t.Field(0).Type != instantType && t.Field(0).Type != timedType) {
		return nil, fmt.Errorf("%s: %v must be a struct embedding event.Instant or event.Timed first", info.Name, t)
	}
	types, _ := batch.Types()
	for _, o := range types {
		if o.Name == info.Name {
			return nil, fmt.Errorf("%s defined twice", info.Name)
		}
	}
	d := &batch.Desc{
		Name: info.Name, Label: info.Label, Description: info.Description,
		Category: info.Category, Timed: t.Field(0).Type == timedType,
	}
	// size(4, padded if large) + type id + startTime + duration + thread + stack
	d.FixedMax = 4 + 2 + 9 + 9 + 9 + 9
	reserved := map[string]bool{"startTime": true, "duration": true, "eventThread": true, "stackTrace": true}
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
		if reserved[name] {
			return nil, fmt.Errorf("%s: field name %q is used twice or reserved", info.Name, name)
		}
		reserved[name] = true
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

// Name returns the type's name.
func (t *Type[T]) Name() string { return t.d.Name }

// Enabled tells whether events of this type are being recorded. Use it to
// skip computing costly field values.
func (t *Type[T]) Enabled() bool { return t.d.On.Load() }

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
func (t *Type[T]) Begin(ev *T) {
	if t.d.On.Load() {
		begin((*header)(unsafe.Pointer(ev)), t.d)
	}
}

// begin marks h enabled and, for a Timed event, reads its start; an
// Instant takes its time at Commit. It is out of line so that Begin
// inlines, and nosplit: a leaf needs no stack check. commit leaves start
// and end zero.
//
//go:noinline
//go:nosplit
func begin(h *header, d *batch.Desc) {
	h.d = d
	if d.Timed {
		h.start, h.end = clock.Now(), 0
	}
}

// ShouldCommit tells whether the event will be recorded: its type is
// enabled. Set the fields only then.
func (e *Instant) ShouldCommit() bool { return e.h.d != nil }

// Commit records the event, at the current time unless SetTime set one.
// An event is committed once: Commit marks it done.
func (e *Instant) Commit() {
	if e.h.d != nil {
		commit(&e.h)
	}
}

// ShouldCommit ends the event's duration and tells whether it will be
// recorded: its type is enabled and it lasted at least the type's
// threshold. Set the fields only then.
func (e *Timed) ShouldCommit() bool { return e.h.d != nil && e.h.shouldCommit() }

func (h *header) shouldCommit() bool {
	h.end = clock.Now()
	return !h.d.Short(h.end - h.start)
}

// Commit ends the event's duration, unless ShouldCommit did, and records
// it if it lasted at least the type's threshold. An event is committed
// once: Commit marks it done.
func (e *Timed) Commit() {
	if e.h.d != nil {
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
	if e.h.d != nil && !t.IsZero() {
		e.h.start = ticksAt(t)
	}
}

// SetTimes sets the event's start and end, for an event describing
// something that happened earlier. No-op when disabled or for a zero time.
func (e *Timed) SetTimes(start, end time.Time) {
	if e.h.d != nil && !start.IsZero() && !end.IsZero() {
		e.h.start, e.h.end = ticksAt(start), ticksAt(end)
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
