package otlp

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strconv"

	"github.com/flightrec/flightrec/analysis/flow"
	"github.com/flightrec/flightrec/internal/flowspec"
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

// span gathers one flow span of a trace.
type span struct {
	ref         flow.SpanRef
	start, end  int64
	in          int32 // incoming message key, -1 none
	firstSent   int32 // a message of a non-causal span, for its parent
	thread      string
	sent        []string
	tags        []string
	traceTags   []string
	checkpoints []*tracepb.Span_Event
	discarded   bool
	rejected    bool
	unfinished  bool
}

// TraceID returns the OTLP trace ID of a flow trace: a hash of its
// message IDs, or of its first span when it has none.
func TraceID(t *flow.Trace) []byte {
	h := sha256.New()
	for _, k := range t.Messages {
		h.Write([]byte(t.MessageID(k)))
		h.Write([]byte{0})
	}
	if len(t.Messages) == 0 && len(t.Events) > 0 {
		e := &t.Events[0]
		h.Write([]byte(t.NodeName(e)))
		h.Write(binary.BigEndian.AppendUint32(nil, e.Span))
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(e.Wall)))
	}
	return h.Sum(nil)[:16]
}

// SpanID returns the OTLP span ID of a flow span.
func SpanID(traceID []byte, node string, ref flow.SpanRef) []byte {
	h := sha256.New()
	h.Write(traceID)
	h.Write([]byte(node))
	h.Write(binary.BigEndian.AppendUint32(nil, ref.Span))
	return h.Sum(nil)[:8]
}

// Convert returns the OTLP spans of t, one ResourceSpans per node in node
// name order.
func Convert(t *flow.Trace) []*tracepb.ResourceSpans {
	byRef := make(map[flow.SpanRef]*span)
	var order []*span
	sender := make(map[int32]flow.SpanRef) // message -> span of its first causal send
	for i := range t.Events {
		e := &t.Events[i]
		ref := flow.SpanRef{Node: e.Node, Span: e.Span}
		s := byRef[ref]
		if s == nil {
			s = &span{ref: ref, start: e.Wall, end: e.Wall, in: -1, firstSent: -1, thread: t.ThreadName(e)}
			byRef[ref] = s
			order = append(order, s)
		}
		s.start, s.end = min(s.start, e.Wall), max(s.end, e.Wall)
		s.unfinished = s.unfinished || e.Unfinished
		switch e.Kind {
		case flowspec.Received, flowspec.HandleStart:
			if s.in < 0 && e.Msg >= 0 {
				s.in = e.Msg
			}
		case flowspec.Discard:
			if s.in < 0 && e.Msg >= 0 {
				s.in = e.Msg
			}
			s.discarded = true
		case flowspec.HandoffRejected:
			s.rejected = true
		case flowspec.SendStarted, flowspec.NonCausalSend:
			if e.Msg >= 0 {
				id := t.MessageID(e.Msg)
				if !slices.Contains(s.sent, id) {
					s.sent = append(s.sent, id)
				}
				if s.firstSent < 0 {
					s.firstSent = e.Msg
				}
				if _, ok := sender[e.Msg]; !ok && e.Kind == flowspec.SendStarted {
					sender[e.Msg] = ref
				}
			}
		case flowspec.MessageTag:
			s.tags = append(s.tags, e.Text)
		case flowspec.TraceTag:
			s.traceTags = append(s.traceTags, e.Text)
		case flowspec.Checkpoint:
			s.checkpoints = append(s.checkpoints, &tracepb.Span_Event{TimeUnixNano: uint64(e.Wall), Name: e.Text})
		}
	}
	traceID := TraceID(t)
	nodes := make(map[uint16][]*tracepb.Span)
	for _, s := range order {
		node := t.Merger().Nodes[s.ref.Node]
		ps := &tracepb.Span{
			TraceId: traceID, SpanId: SpanID(traceID, node, s.ref),
			StartTimeUnixNano: uint64(s.start), EndTimeUnixNano: uint64(s.end),
			Kind: tracepb.Span_SPAN_KIND_INTERNAL, Events: s.checkpoints,
		}
		parentMsg := s.in
		if s.in >= 0 {
			ps.Kind = tracepb.Span_SPAN_KIND_SERVER
		} else if s.ref.Span != 0 && len(s.sent) > 0 && isNonCausal(t, s.ref) {
			parentMsg = s.firstSent // a retransmission belongs under the original send
		}
		if parentMsg >= 0 {
			if p, ok := sender[parentMsg]; ok && p != s.ref {
				ps.ParentSpanId = SpanID(traceID, t.Merger().Nodes[p.Node], p)
			}
		}
		ps.Name = spanName(t, s)
		ps.Attributes = append(ps.Attributes, str(AttrNode, node), str(AttrGoroutine, s.thread))
		if s.in >= 0 {
			ps.Attributes = append(ps.Attributes, str(AttrMessage, t.MessageID(s.in)))
		}
		if len(s.sent) > 0 {
			ps.Attributes = append(ps.Attributes, strs(AttrSent, s.sent))
		}
		if len(s.tags) > 0 {
			ps.Attributes = append(ps.Attributes, strs(AttrTags, s.tags))
		}
		if len(s.traceTags) > 0 {
			ps.Attributes = append(ps.Attributes, strs(AttrTraceTags, s.traceTags))
		}
		if s.unfinished {
			ps.Attributes = append(ps.Attributes, &commonpb.KeyValue{Key: AttrUnfinish, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}})
		}
		switch {
		case s.discarded:
			ps.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "message discarded"}
		case s.rejected:
			ps.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "hand-off rejected"}
		}
		nodes[s.ref.Node] = append(nodes[s.ref.Node], ps)
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

// isNonCausal tells whether a span of the trace is a non-causal one (its
// events have ordinal 0).
func isNonCausal(t *flow.Trace, ref flow.SpanRef) bool {
	for i := range t.Events {
		if e := &t.Events[i]; e.Node == ref.Node && e.Span == ref.Span {
			return e.Ordinal == 0
		}
	}
	return false
}

// spanName names a span by what it did: its message tag, its trace tag,
// the message it handled, or its node.
func spanName(t *flow.Trace, s *span) string {
	switch {
	case len(s.tags) > 0:
		return s.tags[0]
	case len(s.traceTags) > 0:
		return s.traceTags[0]
	case s.in >= 0:
		return "handle " + t.MessageID(s.in)
	case len(s.sent) > 0:
		return "send " + s.sent[0]
	}
	return t.Merger().Nodes[s.ref.Node] + " span " + strconv.FormatUint(uint64(s.ref.Span), 10)
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
