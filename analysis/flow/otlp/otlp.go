package otlp

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/flightrec/flightrec/analysis/flow"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Attribute keys of the exported spans.
const (
	AttrNode      = "flightrec.node"
	AttrGoroutine = "flightrec.goroutine"
	AttrMessage   = "flightrec.message.id"   // the message the span handled
	AttrSent      = "flightrec.message.sent" // the messages it sent
	AttrTags      = "flightrec.message.tags"
	AttrTraceTags = "flightrec.trace.tags"
	AttrUnfinish  = "flightrec.unfinished" // the span was open when recording stopped
)

// scope names the instrumentation in every export.
var scope = &commonpb.InstrumentationScope{Name: "github.com/flightrec/flightrec/analysis/flow"}

// Convert returns the OTLP spans of t (flow.Trace.Spans, with the IDs of
// flow.Trace.TraceID and SpanID), one ResourceSpans per node in node name
// order.
func Convert(t *flow.Trace) []*tracepb.ResourceSpans {
	spans := t.Spans()
	all := t.IDs(spans)
	traceID, ids := all.Trace, all.Spans
	nodes := make(map[uint16][]*tracepb.Span)
	for i := range spans {
		s := &spans[i]
		node := t.Merger().Nodes[s.Ref.Node]
		ps := &tracepb.Span{
			TraceId: traceID, SpanId: ids[i], Name: spanName(t, s),
			StartTimeUnixNano: uint64(s.Start), EndTimeUnixNano: uint64(s.End),
			Kind: tracepb.Span_SPAN_KIND_INTERNAL,
		}
		if s.In >= 0 {
			ps.Kind = tracepb.Span_SPAN_KIND_SERVER
		}
		ps.ParentSpanId = all.Parents[i]
		for _, c := range s.Checkpoints {
			ps.Events = append(ps.Events, &tracepb.Span_Event{TimeUnixNano: uint64(c.Wall), Name: c.Text})
		}
		ps.Attributes = append(ps.Attributes, str(AttrNode, node), str(AttrGoroutine, s.Thread))
		if s.In >= 0 {
			ps.Attributes = append(ps.Attributes, str(AttrMessage, t.MessageID(s.In)))
		}
		if len(s.Sent) > 0 {
			ps.Attributes = append(ps.Attributes, strs(AttrSent, s.Sent))
		}
		if len(s.Tags) > 0 {
			ps.Attributes = append(ps.Attributes, strs(AttrTags, s.Tags))
		}
		if len(s.TraceTags) > 0 {
			ps.Attributes = append(ps.Attributes, strs(AttrTraceTags, s.TraceTags))
		}
		for _, kv := range s.Attrs {
			if !strings.HasPrefix(kv[0], "w3c.") { // they became the IDs
				ps.Attributes = append(ps.Attributes, str(kv[0], kv[1]))
			}
		}
		if s.Unfinished {
			ps.Attributes = append(ps.Attributes, &commonpb.KeyValue{Key: AttrUnfinish, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}})
		}
		if msg := s.ErrorText(); msg != "" {
			ps.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: msg}
		}
		nodes[s.Ref.Node] = append(nodes[s.Ref.Node], ps)
	}
	keys := make([]uint16, 0, len(nodes))
	for n := range nodes {
		keys = append(keys, n)
	}
	slices.SortFunc(keys, func(a, b uint16) int { return cmp.Compare(t.Merger().Nodes[a], t.Merger().Nodes[b]) })
	out := make([]*tracepb.ResourceSpans, 0, len(keys))
	for _, n := range keys {
		out = append(out, &tracepb.ResourceSpans{
			Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", t.Merger().Nodes[n])}},
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: scope, Spans: nodes[n]}},
		})
	}
	return out
}

// spanName names a span by what it did: its message tag, its trace tag,
// the message it handled, the message it sent, or its node.
func spanName(t *flow.Trace, s *flow.SpanInfo) string {
	switch {
	case len(s.Tags) > 0:
		return s.Tags[0]
	case len(s.TraceTags) > 0:
		return s.TraceTags[0]
	case s.In >= 0:
		return "handle " + t.MessageID(s.In)
	case len(s.Sent) > 0:
		return "send " + s.Sent[0]
	}
	return t.Merger().Nodes[s.Ref.Node] + " span " + strconv.FormatUint(uint64(s.Ref.Span), 10)
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func strs(k string, vs []string) *commonpb.KeyValue {
	arr := &commonpb.ArrayValue{}
	for _, v := range vs {
		arr.Values = append(arr.Values, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}})
	}
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}}
}
