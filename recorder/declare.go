package recorder

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/jfr"
)

// A type that cannot be declared in a chunk's metadata (event.Define
// rejects such definitions, so this is defence in depth: a type
// registered some other way, or a declaration the JFR table later takes)
// must not cost the other types their events: it is never enabled
// (session.applyTo), a placeholder keeps its id in the metadata, and Stop
// reports it.

// eventType is the metadata declaration of event type d.
func eventType(d *batch.Desc) jfr.EventType {
	et := jfr.EventType{Name: d.Name, Label: d.Label, Description: d.Description, Category: d.Category,
		Timed: d.Timed, Thread: true, StackTrace: true}
	for _, f := range d.Fields {
		et.Fields = append(et.Fields, jfr.FieldType{Name: f.Name, Type: kindTypes[f.Kind], Label: f.Label, Description: f.Description,
			ContentType: contentType(f.Content), ConstantPool: f.Kind == batch.Thread || f.Kind == batch.Func,
			Unsigned: unsignedKinds[f.Kind]})
	}
	return et
}

// placeholder stands in the metadata for an undeclarable type d.
func placeholder(d *batch.Desc) jfr.EventType {
	return jfr.EventType{Name: fmt.Sprintf("flightrec.UndeclarableType%d", d.ID), Label: "Undeclarable event type",
		Description: "An event type that could not be declared: " + d.Name}
}

// declare adds the declaration of event type d to b: a placeholder if d
// cannot be declared; the JDK's layout if d has a JDK name (package
// jdkio's events, written through the event API, whose struct tags cannot
// say all the JDK's annotations); else the one its definition gives.
func declare(b *jfr.MetadataBuilder, d *batch.Desc) (int64, error) {
	switch {
	case declarable(d) != nil:
		return b.AddEvent(placeholder(d))
	case spec.JDKEvent(d.Name) != nil:
		return b.AddJDKEvent(d.Name)
	}
	return b.AddEvent(eventType(d))
}

// checkJDKLayout returns an error unless event type d, named as a JDK event
// type, has that type's layout: timed as it is, and the same fields, by
// name and type, in the same order.
func checkJDKLayout(d *batch.Desc, jdk *spec.Type) error {
	implicit := spec.EventFields(d.Timed, true, true)
	if len(jdk.Fields) < len(implicit) || (jdk.Fields[1].Name == spec.FieldDuration) != d.Timed {
		return fmt.Errorf("the JDK type has not the implicit fields of a timed=%t event", d.Timed)
	}
	for i, f := range implicit {
		if jdk.Fields[i].Name != f.Name {
			return fmt.Errorf("the JDK type has no %s field", f.Name)
		}
	}
	want := jdk.Fields[len(implicit):]
	if len(want) != len(d.Fields) {
		return fmt.Errorf("%d fields, the JDK type has %d after the implicit ones", len(d.Fields), len(want))
	}
	for i, f := range d.Fields {
		if f.Name != want[i].Name || kindTypes[f.Kind] != want[i].Type {
			return fmt.Errorf("field %d is %s %s, the JDK type has %s %s", i, kindTypes[f.Kind], f.Name, want[i].Type, want[i].Name)
		}
	}
	return nil
}

var declared sync.Map // *batch.Desc -> error (nil for a declarable type)

// declarable returns why d cannot be declared, or nil. It checks each
// type once, on its own beside the built-in declarations and the types
// the recorder writes.
func declarable(d *batch.Desc) error {
	if v, ok := declared.Load(d); ok {
		err, _ := v.(error)
		return err
	}
	err := batch.CheckName(d.Name)
	for _, f := range d.Fields {
		if err == nil && !batch.JavaIdentifier(f.Name) {
			err = fmt.Errorf("field name %q is not a Java identifier", f.Name)
		}
	}
	if err == nil && (slices.Contains(rawTypeNames, d.Name) || slices.Contains(declaredTypes, d.Name)) {
		err = errors.New("the recorder writes a type of this name")
	}
	jdk := spec.JDKEvent(d.Name)
	if err == nil && jdk != nil {
		err = checkJDKLayout(d, jdk)
	}
	if err == nil {
		b := jfr.NewMetadataBuilder()
		if jdk != nil {
			_, err = b.AddJDKEvent(d.Name)
		} else {
			_, err = b.AddEvent(eventType(d))
		}
		if err == nil {
			_, err = b.Build()
		}
	}
	if err != nil {
		err = fmt.Errorf("recorder: event type %q cannot be declared, so none of its events are recorded: %w", d.Name, err)
	}
	declared.Store(d, err)
	return err
}

// undeclarable returns the errors of the registered types that cannot be
// declared, joined, or nil.
func undeclarable() error {
	types, _ := batch.Types()
	var errs []error
	for _, d := range types {
		if err := declarable(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
