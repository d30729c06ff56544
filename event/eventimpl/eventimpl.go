package eventimpl

import (
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/emit"
)

// Writer encodes the fields of the event Record began, in order, and
// publishes the record with End; Unpin then ends what Record began. Its
// methods return it updated, so that the compiler keeps it in registers.
type Writer = emit.Writer

// Header is the handle an event struct embeds first. Both hold an
// emit.Header as their only field, which Pending and Record convert to
// (written out in each rather than through a generic helper, which would
// be a call through the instance's dictionary and keep Commit from
// inlining).
type Header interface{ event.Instant | event.Timed }

// Pending tells whether the event whose embedded handle is h has a record
// to write: its type was enabled at Begin and it is not committed yet.
func Pending[H Header](h *H) bool { return (*emit.Header)(unsafe.Pointer(h)).D != nil }

// Record begins the record of a pending event, marks it committed and
// returns the Writer for its fields, or false if it is not to be written:
// the recorder stopped, the event is shorter than its type's threshold,
// or it is lost (no free buffer, or over the size limit; counted). extra
// is the total length of the event's string fields. The goroutine stays
// pinned to its P until the Writer's Unpin, which must follow at once.
func Record[H Header](h *H, extra int) (Writer, bool) {
	return emit.Record((*emit.Header)(unsafe.Pointer(h)), extra)
}

// Check panics, naming T, unless schema is T's: the generated file calls
// it at program start with the schema it was written for. A generated
// Commit encodes T's fields in a fixed order and form; the file also
// fails to compile when T's fields change, but a content tag of timestamp
// added or removed, or a field's jfr:"-" tag, changes the encoding and
// not the struct's type.
func Check[T any](schema string) {
	t := reflect.TypeFor[T]()
	if got := Schema(t); got != schema {
		panic(fmt.Sprintf("flightrec: the generated Commit of %v is out of date (written for %q, the type is now %q): run go generate", t, schema, got))
	}
}

var (
	instantType = reflect.TypeFor[event.Instant]()
	timedType   = reflect.TypeFor[event.Timed]()
)

// Schema describes what a generated Commit of event struct t depends on:
// whether t is instant or timed, and its recorded fields in order, each
// as its Go name, its Go kind (or goroutine, func, time for the types of
// those names) and @timestamp if its content tag says so. `flightrec gen`
// computes the same from source; Check compares them. It returns "" if t
// is not an event struct.
func Schema(t reflect.Type) string {
	if t.Kind() != reflect.Struct || t.NumField() == 0 || (t.Field(0).Type != instantType && t.Field(0).Type != timedType) {
		return ""
	}
	var b strings.Builder
	if t.Field(0).Type == timedType {
		b.WriteString("timed")
	} else {
		b.WriteString("instant")
	}
	for i := 1; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Tag.Get("jfr") == "-" {
			continue
		}
		b.WriteString(" " + sf.Name + ":" + emit.SchemaKind(typeName(sf.Type), sf.Type.Kind().String(), sf.Tag.Get("content")))
	}
	return b.String()
}

func typeName(t reflect.Type) string {
	if t.Name() == "" {
		return ""
	}
	return t.PkgPath() + "." + t.Name()
}
