package event

import (
	"fmt"
	"reflect"
	"strings"
)

// Generated checks that the Commit method `flightrec gen` wrote for T
// still matches T: the generated file calls it from an init function with
// the schema it was written for. A generated Commit encodes T's fields in
// a fixed order and form, so after a change to T (a field added, moved
// or retyped, a content tag of timestamp added or removed) it would write
// records the type's metadata does not describe; Generated panics
// instead, at program start, naming the type: run go generate again.
func Generated[T any](schema string) {
	t := reflect.TypeFor[T]()
	if got := Schema(t); got != schema {
		panic(fmt.Sprintf("event: the generated Commit of %v is out of date (written for %q, the type is now %q): run go generate", t, schema, got))
	}
}

// Schema describes what a generated Commit of event struct t depends on:
// whether t is instant or timed, and its recorded fields in order, each
// as its Go name, its Go kind (or goroutine, func, time for the types of
// those names) and @timestamp if its content tag says so. `flightrec gen`
// computes the same from source; Generated compares them. It returns ""
// if t is not an event struct.
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
		b.WriteString(" " + sf.Name + ":" + SchemaKind(typeName(sf.Type), sf.Type.Kind().String(), sf.Tag.Get("content")))
	}
	return b.String()
}

// SchemaKind is a field's word in a Schema: named is the field type's
// package path and name (time.Time, say), kind its Go kind, content its
// content tag.
func SchemaKind(named, kind, content string) string {
	switch named {
	case "github.com/flightrec/flightrec/event.Goroutine":
		return "goroutine"
	case "github.com/flightrec/flightrec/event.Func":
		return "func"
	case "time.Time":
		return "time"
	}
	if content == "timestamp" {
		return kind + "@timestamp"
	}
	return kind
}

func typeName(t reflect.Type) string {
	if t.Name() == "" {
		return ""
	}
	return t.PkgPath() + "." + t.Name()
}
