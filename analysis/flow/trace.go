package flow

import (
	"slices"
	"strings"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// SpanRef names one span of a trace: its node and node-local number.
type SpanRef struct {
	Node uint16
	Span uint32
}

// Duration returns the trace's end-to-end duration in ns: from its first
// event to its last, in corrected wall time.
func (t *Trace) Duration() int64 {
	if len(t.Events) == 0 {
		return 0
	}
	lo, hi := t.Events[0].Wall, t.Events[0].Wall
	for i := range t.Events {
		lo, hi = min(lo, t.Events[i].Wall), max(hi, t.Events[i].Wall)
	}
	return hi - lo
}

// CriticalPath returns the chain of spans, linked by messages, that led to
// the trace's latest receipt (the last message to arrive sets when the
// work could finish): the span that received it, preceded by the span
// that sent it, and so on back to a span that received nothing (or whose
// sender is not in the trace); first to last. A trace without receipts
// has the span of its last event as its path.
func (t *Trace) CriticalPath() []SpanRef {
	if len(t.Events) == 0 {
		return nil
	}
	last, lastReceipt := 0, -1
	incoming := make(map[SpanRef]int32)
	sender := make(map[int32]SpanRef)
	for i := range t.Events {
		e := &t.Events[i]
		if e.Wall >= t.Events[last].Wall {
			last = i
		}
		ref := SpanRef{e.Node, e.Span}
		switch {
		case e.Msg < 0:
		case isReceipt(e.Kind):
			if _, ok := incoming[ref]; !ok {
				incoming[ref] = e.Msg
			}
			if lastReceipt < 0 || e.Wall >= t.Events[lastReceipt].Wall {
				lastReceipt = i
			}
		case e.Kind == flowspec.SendStarted:
			if _, ok := sender[e.Msg]; !ok {
				sender[e.Msg] = ref
			}
		}
	}
	if lastReceipt >= 0 {
		last = lastReceipt
	}
	cur := SpanRef{t.Events[last].Node, t.Events[last].Span}
	path := []SpanRef{cur}
	for {
		msg, ok := incoming[cur]
		if !ok {
			break
		}
		prev, ok := sender[msg]
		if !ok || slices.Contains(path, prev) {
			break
		}
		path = append(path, prev)
		cur = prev
	}
	slices.Reverse(path)
	return path
}

// criticalPathText prints the critical path as node names.
func (t *Trace) criticalPathText() string {
	path := t.CriticalPath()
	names := make([]string, len(path))
	for i, r := range path {
		names[i] = t.m.Nodes[r.Node]
	}
	return strings.Join(names, " -> ")
}
