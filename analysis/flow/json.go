package flow

import (
	"maps"
	"slices"
	"time"
)

// JSONEvent is an event as the --json reports write it.
type JSONEvent struct {
	Time      string `json:"time"`        // corrected wall time, RFC 3339
	WallNs    int64  `json:"wallNs"`      // corrected wall time
	RawWallNs int64  `json:"rawWallNs"`   // as the node recorded it
	Nano      int64  `json:"monotonicNs"` // the node's monotonic clock
	Span      uint32 `json:"span"`        // node-local span number
	// Unfinished: the span never ended (open when recording stopped).
	Unfinished bool   `json:"unfinished,omitempty"`
	Node       string `json:"node"`
	Thread     string `json:"thread"`
	Type       string `json:"type"`
	Payload    string `json:"payload,omitempty"`
}

// JSONTrace is a trace as the --json reports write it.
type JSONTrace struct {
	Index           int           `json:"index"`
	TraceID         string        `json:"traceId"` // hex, as exported to OTLP
	Tag             string        `json:"tag"`
	Incomplete      bool          `json:"incomplete,omitempty"`
	Inconsistencies int           `json:"inconsistencies,omitempty"`
	UnfinishedSpans int           `json:"unfinishedSpans,omitempty"`
	DurationNs      int64         `json:"durationNs"`
	CriticalPath    []string      `json:"criticalPath"` // node names of the spans, first to last
	Messages        []MessageLine `json:"messages"`
	Events          []JSONEvent   `json:"events"`
	Spans           []JSONSpan    `json:"spans"` // the span tree
}

// JSON returns the trace in its JSON form.
func (t *Trace) JSON() JSONTrace {
	jt := JSONTrace{Index: t.Index, Tag: TraceTag(t), Incomplete: t.Incomplete, Inconsistencies: t.Inconsistencies,
		UnfinishedSpans: t.UnfinishedSpans, DurationNs: t.Duration(),
		Messages: t.MessageLines(), Events: make([]JSONEvent, len(t.Events))}
	jt.Spans, jt.TraceID = t.jsonSpans()
	for _, r := range t.CriticalPath() {
		jt.CriticalPath = append(jt.CriticalPath, t.m.Nodes[r.Node])
	}
	for i := range t.Events {
		e := &t.Events[i]
		jt.Events[i] = JSONEvent{
			Time: time.Unix(0, e.Wall).UTC().Format(time.RFC3339Nano), WallNs: e.Wall, RawWallNs: e.RawWall,
			Nano: e.Nano, Span: e.Span, Unfinished: e.Unfinished, Node: t.NodeName(e), Thread: t.ThreadName(e), Type: KindName(e.Kind), Payload: t.Payload(e),
		}
	}
	return jt
}

// Range is an average with its extremes; nil pointers mean no values.
type Range struct {
	Count int      `json:"count"`
	Avg   *float64 `json:"avg"`
	Min   *float64 `json:"min"`
	Max   *float64 `json:"max"`
}

func (a *acc) rangeScaled(scale float64) Range {
	r := Range{Count: a.n}
	if a.n > 0 {
		avg, lo, hi := a.avg()/scale, a.min/scale, a.max/scale
		r.Avg, r.Min, r.Max = &avg, &lo, &hi
	}
	return r
}

// TraceTagJSON is the traces report of one trace tag.
type TraceTagJSON struct {
	Tag          string         `json:"tag"`
	Traces       int            `json:"traces"`
	Messages     Range          `json:"messages"`
	MessageTags  map[string]int `json:"messageTags"` // tag combination -> messages
	Nodes        Range          `json:"nodes"`
	Threads      Range          `json:"threads"`
	ProcessingUs Range          `json:"processingUs"`
	WallDeltaMs  Range          `json:"wallDeltaMs"`
	Duration     *DistJSON      `json:"durationNs"`
}

// LocksJSON is the locks report.
type LocksJSON struct {
	LockingTraces    int   `json:"lockingTraces"`
	NonLockingTraces int   `json:"nonLockingTraces"`
	LocksPerTrace    Range `json:"locksPerTrace"`
	Successful       int   `json:"successful"`
	Failed           int   `json:"failed"`
	AcquireUs        Range `json:"acquireUs"`
	FailUs           Range `json:"failUs"`
	HeldUs           Range `json:"heldUs"`
}

// InterceptorJSON is one interceptor's records under one trace tag.
type InterceptorJSON struct {
	Tag         string `json:"tag"`
	Interceptor string `json:"interceptor"` // Command@Interceptor
	SelfUs      Range  `json:"selfUs"`
}

// MessagesJSON is the messages report.
type MessagesJSON struct {
	Tags        []TagMessages `json:"tags"`
	NotSent     int           `json:"transmissionNotDetected"`
	NotReceived int           `json:"notReceived"`
	// Messages of nodes without input (Merger.MissingNodes), counted apart
	// from the two above: sent by them, and not received in traces that
	// involve them.
	FromMissing int `json:"fromMissingNodes"`
	ToMissing   int `json:"probablyToMissingNodes"`
}

// StatsJSON is the --json form of the chosen reports.
type StatsJSON struct {
	Messages     *MessagesJSON        `json:"messages,omitempty"`
	Services     map[string]*DistJSON `json:"services,omitempty"` // node -> handling time of its spans
	Traces       []TraceTagJSON       `json:"traces,omitempty"`
	Locks        *LocksJSON           `json:"locks,omitempty"`
	Interceptors []InterceptorJSON    `json:"interceptors,omitempty"`
	Inputs       *InputsJSON          `json:"inputs,omitempty"`
}

// JSON returns the chosen reports in their JSON form.
func (s *Stats) JSON(r Reports) StatsJSON {
	var out StatsJSON
	if r.Messages {
		out.Messages = &MessagesJSON{Tags: s.MessageReport(), NotSent: s.notSent, NotReceived: s.notReceived,
			FromMissing: s.fromMissing, ToMissing: s.toMissing}
		out.Services = make(map[string]*DistJSON)
		for node, d := range s.services {
			out.Services[node] = d.json()
		}
	}
	if r.Traces {
		out.Traces = []TraceTagJSON{}
		for _, name := range s.traceTagNames() {
			ts := s.traceTags[name]
			out.Traces = append(out.Traces, TraceTagJSON{
				Tag: name, Traces: ts.n, Messages: ts.msgs.rangeScaled(1), MessageTags: ts.comboCounts(),
				Nodes: ts.nodes.rangeScaled(1), Threads: ts.threads.rangeScaled(1),
				ProcessingUs: ts.processing.rangeScaled(1e3), WallDeltaMs: ts.wall.rangeScaled(1), Duration: ts.duration.json(),
			})
		}
	}
	if r.Locks {
		out.Locks = &LocksJSON{
			LockingTraces: s.lockTraces, NonLockingTraces: s.nonLockTraces, LocksPerTrace: s.locksPerTrace.rangeScaled(1),
			Successful: s.lockOK, Failed: s.lockFail,
			AcquireUs: s.acquire.rangeScaled(1e3), FailUs: s.fail.rangeScaled(1e3), HeldUs: s.held.rangeScaled(1e3),
		}
	}
	if r.Interceptors {
		out.Interceptors = []InterceptorJSON{}
		tags := make([]string, 0, len(s.interceptors))
		for t := range s.interceptors {
			tags = append(tags, t)
		}
		slices.Sort(tags)
		for _, tag := range tags {
			m := s.interceptors[tag]
			keys := slices.Sorted(maps.Keys(m))
			for _, k := range keys {
				out.Interceptors = append(out.Interceptors, InterceptorJSON{Tag: tag, Interceptor: k, SelfUs: m[k].rangeScaled(1e3)})
			}
		}
	}
	return out
}
