package recorder

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/flightrec/flightrec/internal/batch"
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
	if err == nil && slices.Contains(rawTypeNames, d.Name) {
		err = errors.New("the recorder writes a type of this name")
	}
	if err == nil {
		b := jfr.NewMetadataBuilder()
		if _, err = b.AddEvent(eventType(d)); err == nil {
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
