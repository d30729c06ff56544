package flow

import (
	"slices"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// statsScratch is what Add finds in one pass over a trace's events, in
// tables reused from trace to trace: the trace's spans and what each
// statistic needs of them, its messages' events grouped by message, its
// nodes and threads. Before, each of the five statistics walked the
// events again, and the message statistics walked all of them once per
// message, finding spans, nodes and threads in maps of their own.
type statsScratch struct {
	// The trace's spans in the order of their first events; spanIndex
	// numbers them (its keys are in the same order), spanOf is each
	// event's.
	spanIndex smallMap[spanKey, struct{}]
	spans     []spanFacts
	spanOf    []int32
	// msgIndex numbers the trace's message keys (t.Messages); message i
	// has the events byMsg[msgStart[i]:msgStart[i+1]] (indices into
	// t.Events, in order); msgOf is each event's message, -1 for none.
	msgIndex smallMap[int32, struct{}]
	msgOf    []int32
	msgStart []int32
	byMsg    []int32
	// Nodes and their threads by number, marked with the trace's
	// generation: no table is cleared per trace.
	gen       uint32
	nodeSeen  []uint32
	threads   [][]threadSegment
	touched   []threadKey
	nodes     int
	segments  int
	processed int64    // the threads' segments' lengths so far
	traceTags []string // distinct, in order
	checks    []int32  // the Checkpoint events
	serving   []int32  // spans that started with a receipt, in order
	lo, hi    int64    // the events' earliest and latest Wall

	// Per message.
	sends    []*Event
	recs     []reception
	tagSet   smallMap[string, struct{}]
	combo    []string
	comboBuf []byte
	matched  []bool
	tags     []string
	lat      []latencySample
	tagBuf   []byte // the trace tag being looked up
}

// spanFacts is what the statistics need of one span of the trace.
type spanFacts struct {
	node     uint16
	incoming int32    // its first Received event, -1
	tags     []string // its MessageTag texts, in order
	// From its first receipt (if the span is causal) to its last event,
	// on the node's monotonic clock: its handling time.
	serving     bool
	first, last int64
}

// threadSegment is one node's thread in a trace: the part of its work up
// to its WorkComplete (or its last event).
type threadSegment struct {
	gen         uint32
	open        bool
	start, last int64
}

// index walks the trace's events once and fills the scratch tables.
func (sc *statsScratch) index(t *Trace) {
	evs := t.Events
	sc.gen++
	if sc.gen == 0 { // wrapped: forget every mark
		clear(sc.nodeSeen)
		for _, ts := range sc.threads {
			clear(ts)
		}
		sc.gen = 1
	}
	if n := len(t.m.Nodes); len(sc.nodeSeen) < n {
		sc.nodeSeen = append(sc.nodeSeen, make([]uint32, n-len(sc.nodeSeen))...)
		sc.threads = append(sc.threads, make([][]threadSegment, n-len(sc.threads))...)
	}
	sc.spanIndex.reset()
	if cap(sc.spans) > 1024 {
		sc.spans = nil
	}
	sc.spans = sc.spans[:0]
	sc.spanOf = slices.Grow(sc.spanOf[:0], len(evs))[:len(evs)]
	sc.msgOf = slices.Grow(sc.msgOf[:0], len(evs))[:len(evs)]
	sc.msgIndex.reset()
	for _, k := range t.Messages {
		sc.msgIndex.at(k)
	}
	sc.msgStart = slices.Grow(sc.msgStart[:0], len(t.Messages)+1)[:len(t.Messages)+1]
	clear(sc.msgStart)
	sc.touched, sc.traceTags, sc.checks, sc.serving = sc.touched[:0], sc.traceTags[:0], sc.checks[:0], sc.serving[:0]
	sc.nodes, sc.segments, sc.processed = 0, 0, 0
	lastSpan, lastSpanIndex := spanKey{}, int32(-1)
	lastMsg, lastMsgIndex := int32(-1), int32(-1)
	for i := range evs {
		e := &evs[i]
		// Its span: most events follow one of their own span's.
		sk := spanKey{e.Node, e.Span}
		si := lastSpanIndex
		if si < 0 || sk != lastSpan {
			j, added := sc.spanIndex.slot(sk)
			if added {
				sc.addSpan(e.Node)
			}
			si, lastSpan, lastSpanIndex = int32(j), sk, int32(j)
		}
		sc.spanOf[i] = si
		sp := &sc.spans[si]
		switch e.Kind {
		case flowspec.Received:
			if sp.incoming < 0 {
				sp.incoming = int32(i)
			}
		case flowspec.MessageTag:
			sp.tags = append(sp.tags, e.Text)
		case flowspec.TraceTag:
			if !slices.Contains(sc.traceTags, e.Text) {
				sc.traceTags = append(sc.traceTags, e.Text)
			}
		case flowspec.Checkpoint:
			sc.checks = append(sc.checks, int32(i))
		}
		if sp.serving {
			sp.first, sp.last = min(sp.first, e.Nano), max(sp.last, e.Nano)
		} else if isReceipt(e.Kind) && e.Ordinal != 0 {
			sp.serving, sp.first, sp.last = true, e.Nano, e.Nano
			sc.serving = append(sc.serving, si)
		}
		if sc.nodeSeen[e.Node] != sc.gen {
			sc.nodeSeen[e.Node] = sc.gen
			sc.nodes++
		}
		sc.thread(e)
		// Its message.
		mi := int32(-1)
		if e.Msg >= 0 {
			if e.Msg == lastMsg {
				mi = lastMsgIndex
			} else if j := sc.msgIndex.find(e.Msg); j >= 0 {
				mi, lastMsg, lastMsgIndex = int32(j), e.Msg, int32(j)
			}
		}
		sc.msgOf[i] = mi
		if mi >= 0 {
			sc.msgStart[mi+1]++
		}
		if i == 0 {
			sc.lo, sc.hi = e.Wall, e.Wall
		}
		sc.lo, sc.hi = min(sc.lo, e.Wall), max(sc.hi, e.Wall)
	}
	for _, k := range sc.touched {
		if seg := &sc.threads[k.node][k.thread]; seg.open {
			sc.processed += seg.last - seg.start
		}
	}
	// The messages' events: a counting sort of the events by message.
	for i := 1; i < len(sc.msgStart); i++ {
		sc.msgStart[i] += sc.msgStart[i-1]
	}
	n := sc.msgStart[len(sc.msgStart)-1]
	sc.byMsg = slices.Grow(sc.byMsg[:0], int(n))[:n]
	for i, mi := range sc.msgOf {
		if mi >= 0 {
			sc.byMsg[sc.msgStart[mi]] = int32(i)
			sc.msgStart[mi]++
		}
	}
	// msgStart[i] is now where message i+1 starts: shift back.
	copy(sc.msgStart[1:], sc.msgStart[:len(sc.msgStart)-1])
	sc.msgStart[0] = 0
}

// addSpan appends the facts of a span new to the trace, reusing the tag
// list an earlier trace's span left in that place.
func (sc *statsScratch) addSpan(node uint16) {
	n := len(sc.spans)
	var tags []string
	if n < cap(sc.spans) {
		tags = sc.spans[:n+1][n].tags[:0]
	}
	sc.spans = append(sc.spans, spanFacts{node: node, incoming: -1, tags: tags})
}

// thread adds e to its thread's segment: a segment of one node's thread
// ends with WorkComplete (or the thread's last event in the trace).
func (sc *statsScratch) thread(e *Event) {
	ts := sc.threads[e.Node]
	if int(e.Thread) >= len(ts) {
		ts = append(ts, make([]threadSegment, int(e.Thread)+1-len(ts))...)
		sc.threads[e.Node] = ts
	}
	seg := &ts[e.Thread]
	if seg.gen != sc.gen {
		*seg = threadSegment{gen: sc.gen}
		sc.touched = append(sc.touched, threadKey{e.Node, e.Thread})
	}
	if !seg.open {
		seg.start, seg.open = e.Nano, true
		sc.segments++
	}
	seg.last = e.Nano
	if e.Kind == flowspec.WorkComplete {
		sc.processed += e.Nano - seg.start
		seg.open = false
	}
}

// messageEvents returns the indices of message i's events, in order.
func (sc *statsScratch) messageEvents(i int) []int32 {
	return sc.byMsg[sc.msgStart[i]:sc.msgStart[i+1]]
}
