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

// TraceIDs are the IDs a trace's spans are exported with.
type TraceIDs struct {
	Trace []byte   // 16 bytes
	Spans [][]byte // 8 bytes each, by index in Spans
	// Parents are the spans' parents: the span that sent their message,
	// else a caller outside flightrec (W3C traceparent), else nil.
	Parents [][]byte
}

// IDs returns the IDs of the trace and of its spans (from Spans): those
// W3C Trace Context gave them where recorded (flow/flowhttp), else
// TraceID and SpanID.
func (t *Trace) IDs(spans []SpanInfo) TraceIDs {
	attr := func(s *SpanInfo, key string, n int) []byte {
		for _, kv := range s.Attrs {
			if kv[0] == key {
				if b, err := hex.DecodeString(kv[1]); err == nil && len(b) == n {
					return b
				}
			}
		}
		return nil
	}
	ids := TraceIDs{Spans: make([][]byte, len(spans)), Parents: make([][]byte, len(spans))}
	for i := range spans {
		if ids.Trace = attr(&spans[i], flowspec.AttrW3CTraceID, 16); ids.Trace != nil {
			break
		}
	}
	if ids.Trace == nil {
		ids.Trace = t.TraceID()
	}
	for i := range spans {
		if ids.Spans[i] = attr(&spans[i], flowspec.AttrW3CSpanID, 8); ids.Spans[i] == nil {
			ids.Spans[i] = t.SpanID(ids.Trace, spans[i].Ref)
		}
	}
	for i := range spans {
		if p := spans[i].Parent; p >= 0 {
			ids.Parents[i] = ids.Spans[p]
		} else {
			ids.Parents[i] = attr(&spans[i], flowspec.AttrW3CParentID, 8)
		}
	}
	return ids
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

// jsonSpans returns the span tree of t and its trace ID, in hex.
func (t *Trace) jsonSpans() ([]JSONSpan, string) {
	spans := t.Spans()
	ids := t.IDs(spans)
	out := make([]JSONSpan, len(spans))
	for i := range spans {
		s := &spans[i]
		js := JSONSpan{SpanID: hex.EncodeToString(ids.Spans[i]), Node: t.m.Nodes[s.Ref.Node], StartNs: s.Start, EndNs: s.End,
			DurationNs: s.End - s.Start, Attributes: map[string]string{"goroutine": s.Thread}}
		if ids.Parents[i] != nil {
			js.ParentID = hex.EncodeToString(ids.Parents[i])
		}
		if s.In >= 0 {
			js.Attributes["message.id"] = t.MessageID(s.In)
		}
		for k, v := range map[string][]string{"message.sent": s.Sent, "message.tags": s.Tags, "trace.tags": s.TraceTags} {
			if len(v) > 0 {
				js.Attributes[k] = strings.Join(v, ",")
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
	return out, hex.EncodeToString(ids.Trace)
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
