package flow

import (
	"slices"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// Filter selects traces; its zero value keeps every trace.
type Filter struct {
	Tag         string // a trace tag or message tag of the trace
	Node        string // a node with a span in the trace
	MinDuration int64  // ns
	// Since and Until bound the trace's start (corrected wall ns since the
	// epoch): Since <= start < Until; 0 is no bound.
	Since, Until int64
}

// Match tells whether t passes the filter.
func (f *Filter) Match(t *Trace) bool {
	if f.MinDuration > 0 && t.Duration() < f.MinDuration {
		return false
	}
	if f.Since != 0 || f.Until != 0 {
		if len(t.Events) == 0 {
			return false
		}
		start := t.Events[0].Wall
		for i := range t.Events {
			start = min(start, t.Events[i].Wall)
		}
		if (f.Since != 0 && start < f.Since) || (f.Until != 0 && start >= f.Until) {
			return false
		}
	}
	if f.Node != "" {
		node := slices.Index(t.m.Nodes, f.Node)
		if node < 0 || !slices.ContainsFunc(t.Events, func(e Event) bool { return int(e.Node) == node }) {
			return false
		}
	}
	if f.Tag != "" && !slices.ContainsFunc(t.Events, func(e Event) bool {
		return (e.Kind == flowspec.TraceTag || e.Kind == flowspec.MessageTag) && e.Text == f.Tag
	}) {
		return false
	}
	return true
}
