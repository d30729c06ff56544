package flow

import (
	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/flowspec"
)

// The event structs carry the fields of internal/flowspec, by name.
type (
	nodeEvent struct {
		event.Instant
		Name   string `jfr:"name" label:"Name"`
		Number int64  `jfr:"number" label:"Number"`
	}
	msgEvent struct {
		event.Instant
		Span        int64  `jfr:"span" label:"Span"`
		Thread      string `jfr:"thread" label:"Thread"`
		Message     int64  `jfr:"message" label:"Message"`
		MessageText string `jfr:"messageText" label:"Message Text"`
	}
	tokenEvent struct {
		event.Instant
		Span   int64  `jfr:"span" label:"Span"`
		Thread string `jfr:"thread" label:"Thread"`
		Token  int64  `jfr:"token" label:"Token"`
	}
	plainEvent struct {
		event.Instant
		Span   int64  `jfr:"span" label:"Span"`
		Thread string `jfr:"thread" label:"Thread"`
	}
	textEvent struct {
		event.Instant
		Span   int64  `jfr:"span" label:"Span"`
		Thread string `jfr:"thread" label:"Thread"`
		Text   string `jfr:"text" label:"Text"`
	}
	attrEvent struct {
		event.Instant
		Span   int64  `jfr:"span" label:"Span"`
		Thread string `jfr:"thread" label:"Thread"`
		Key    string `jfr:"key" label:"Key"`
		Text   string `jfr:"text" label:"Text"`
	}
	spanEvent struct {
		event.Instant
		Span         int64  `jfr:"span" label:"Span"`
		NonCausal    bool   `jfr:"nonCausal" label:"Non-causal"`
		Incoming     int64  `jfr:"incoming" label:"Incoming Message"`
		IncomingText string `jfr:"incomingText" label:"Incoming Message Text"`
	}
)

var (
	nodeType  *event.Type[nodeEvent]
	spanType  *event.Type[spanEvent]
	msgTypes  [flowspec.NumKinds]*event.Type[msgEvent]
	tokTypes  [flowspec.NumKinds]*event.Type[tokenEvent]
	textTypes [flowspec.NumKinds]*event.Type[textEvent]
	complete  *event.Type[plainEvent]
	attrType  *event.Type[attrEvent]
)

func init() {
	for _, e := range flowspec.Events {
		info := event.Info{Name: e.Name, Label: e.Label, Category: []string{"Flightrec", "Flow"}}
		switch e.Kind {
		case flowspec.Invalid:
			if e.Name == flowspec.NodeEvent {
				nodeType = event.Define[nodeEvent](info)
			} else {
				spanType = event.Define[spanEvent](info)
			}
		case flowspec.HandoffStarted, flowspec.HandoffTaken, flowspec.HandoffRejected:
			tokTypes[e.Kind] = event.Define[tokenEvent](info)
		case flowspec.WorkComplete:
			complete = event.Define[plainEvent](info)
		case flowspec.Attribute:
			attrType = event.Define[attrEvent](info)
		case flowspec.Checkpoint, flowspec.Stackpoint, flowspec.MessageTag, flowspec.TraceTag, flowspec.Error:
			textTypes[e.Kind] = event.Define[textEvent](info)
		default:
			msgTypes[e.Kind] = event.Define[msgEvent](info)
		}
	}
}
