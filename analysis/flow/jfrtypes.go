package flow

import (
	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/jfr"
)

// JFREventTypes returns the flow event types of flowspec.Events as JFR
// event types for a jfr.MetadataBuilder. Every type has only the implicit
// startTime before its fields: its tick is the node's monotonic clock and,
// through the chunk header, its wall clock.
func JFREventTypes() []jfr.EventType {
	var out []jfr.EventType
	for _, e := range flowspec.Events {
		et := jfr.EventType{Name: e.Name, Label: e.Label, Category: []string{"Flightrec", "Flow"}}
		for _, f := range e.Fields {
			ft := jfr.FieldType{Name: f.Name, Label: f.Label}
			switch f.Kind {
			case flowspec.Long:
				ft.Type = "long"
			case flowspec.String:
				ft.Type = "java.lang.String"
			case flowspec.Boolean:
				ft.Type = "boolean"
			case flowspec.LongArray:
				ft.Type, ft.Array = "long", true
			case flowspec.StringArray:
				ft.Type, ft.Array = "java.lang.String", true
			}
			et.Fields = append(et.Fields, ft)
		}
		out = append(out, et)
	}
	return out
}

// FlowMetadata returns recording metadata holding the flow event types.
func FlowMetadata() (*jfr.Metadata, error) {
	b := jfr.NewMetadataBuilder()
	for _, et := range JFREventTypes() {
		if _, err := b.AddEvent(et); err != nil {
			return nil, err
		}
	}
	return b.Build()
}
