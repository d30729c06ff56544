package flow

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// SpanInfo is one span of a trace: the work of one node for at most one
// incoming message, as the span tree of --json and the OTLP export show it.
type SpanInfo struct {
	Ref SpanRef
	// Parent is the index in Spans of the span that sent In (for a
	// non-causal span, its first message), -1 none.
	Parent      int
	Start, End  int64
	In          int32    // message key handled or discarded, -1 none
	Thread      string   // goroutine of its first event
	Sent        []string // message IDs it sent
	Tags        []string // message tags
	TraceTags   []string
	Checkpoints []Event
	Attrs       [][2]string // SetAttr's key/value pairs, in order
	Error       string      // SetError's message

	Discarded, Rejected, Unfinished, NonCausal bool
}

// Spans returns the trace's spans in the order their first events come,
// each with its parent: the span that sent the message it received.
func (t *Trace) Spans() []SpanInfo {
	var spans []SpanInfo
	index := make(map[SpanRef]int)
	sender := make(map[int32]int) // message -> span of its first causal send
	firstSent := make(map[int]int32)
	for i := range t.Events {
		e := &t.Events[i]
		ref := SpanRef{e.Node, e.Span}
		j, ok := index[ref]
		if !ok {
			j = len(spans)
			index[ref] = j
			spans = append(spans, SpanInfo{Ref: ref, Parent: -1, Start: e.Wall, End: e.Wall, In: -1,
				Thread: t.ThreadName(e), NonCausal: e.Ordinal == 0})
		}
		s := &spans[j]
		s.Start, s.End = min(s.Start, e.Wall), max(s.End, e.Wall)
		s.Unfinished = s.Unfinished || e.Unfinished
		switch e.Kind {
		case flowspec.Received, flowspec.HandleStart, flowspec.Discard:
			if s.In < 0 && e.Msg >= 0 && !s.NonCausal {
				s.In = e.Msg
			}
			s.Discarded = s.Discarded || e.Kind == flowspec.Discard
		case flowspec.HandoffRejected:
			s.Rejected = true
		case flowspec.SendStarted, flowspec.NonCausalSend:
			if e.Msg < 0 {
				break
			}
			if id := t.MessageID(e.Msg); !slices.Contains(s.Sent, id) {
				s.Sent = append(s.Sent, id)
			}
			if _, ok := firstSent[j]; !ok {
				firstSent[j] = e.Msg
			}
			if _, ok := sender[e.Msg]; !ok && e.Kind == flowspec.SendStarted {
				sender[e.Msg] = j
			}
		case flowspec.MessageTag:
			s.Tags = append(s.Tags, e.Text)
		case flowspec.TraceTag:
			s.TraceTags = append(s.TraceTags, e.Text)
		case flowspec.Checkpoint:
			s.Checkpoints = append(s.Checkpoints, *e)
		case flowspec.Attribute:
			k, v, _ := strings.Cut(e.Text, "=")
			s.Attrs = append(s.Attrs, [2]string{k, v})
		case flowspec.Error:
			s.Error = e.Text
		}
	}
	for j := range spans {
		s := &spans[j]
		msg := s.In
		if msg < 0 && s.NonCausal {
			if m, ok := firstSent[j]; ok {
				msg = m // a retransmission belongs under the original send
			}
		}
		if p, ok := sender[msg]; ok && msg >= 0 && p != j {
			s.Parent = p
		}
	}
	return spans
}

// TraceID returns the trace's 16-byte ID, the OTLP trace ID it is
// exported with: a hash of its message IDs, or of its first span when it
// has none. The same recordings give the same ID.
func (t *Trace) TraceID() []byte {
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

// SpanID returns the 8-byte ID of a span of the trace whose TraceID is
// traceID.
func (t *Trace) SpanID(traceID []byte, ref SpanRef) []byte {
	h := sha256.New()
	h.Write(traceID)
	h.Write([]byte(t.m.Nodes[ref.Node]))
	h.Write(binary.BigEndian.AppendUint32(nil, ref.Span))
	return h.Sum(nil)[:8]
}

// JSONSpan is one span of a trace's span tree in --json.
type JSONSpan struct {
	SpanID     string            `json:"spanId"`   // hex, as exported to OTLP
	ParentID   string            `json:"parentId"` // "" for a root
	Node       string            `json:"node"`
	StartNs    int64             `json:"startNs"` // corrected wall time
	EndNs      int64             `json:"endNs"`
	DurationNs int64             `json:"durationNs"`
	Attributes map[string]string `json:"attributes"`
	Error      string            `json:"error,omitempty"`
}

// jsonSpans returns the span tree of t.
func (t *Trace) jsonSpans() []JSONSpan {
	spans := t.Spans()
	tid := t.TraceID()
	ids := make([]string, len(spans))
	for i := range spans {
		ids[i] = hex.EncodeToString(t.SpanID(tid, spans[i].Ref))
	}
	out := make([]JSONSpan, len(spans))
	for i := range spans {
		s := &spans[i]
		js := JSONSpan{SpanID: ids[i], Node: t.m.Nodes[s.Ref.Node], StartNs: s.Start, EndNs: s.End, DurationNs: s.End - s.Start,
			Attributes: map[string]string{"goroutine": s.Thread}}
		if s.Parent >= 0 {
			js.ParentID = ids[s.Parent]
		}
		if s.In >= 0 {
			js.Attributes["message.id"] = t.MessageID(s.In)
		}
		for k, v := range map[string][]string{"message.sent": s.Sent, "message.tags": s.Tags, "trace.tags": s.TraceTags} {
			if len(v) > 0 {
				js.Attributes[k] = joinComma(v)
			}
		}
		if s.Unfinished {
			js.Attributes["unfinished"] = "true"
		}
		for _, kv := range s.Attrs {
			js.Attributes[kv[0]] = kv[1]
		}
		js.Error = s.ErrorText()
		out[i] = js
	}
	return out
}

// ErrorText says why the span failed, or "".
func (s *SpanInfo) ErrorText() string {
	switch {
	case s.Error != "":
		return s.Error
	case s.Discarded:
		return "message discarded"
	case s.Rejected:
		return "hand-off rejected"
	}
	return ""
}

func joinComma(v []string) string {
	out := ""
	for i, s := range v {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}
