package flow

import (
	"cmp"
	"slices"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// isSend tells whether an event transmits its message.
func isSend(k flowspec.Kind) bool { return k == flowspec.SendStarted || k == flowspec.NonCausalSend }

// isReceipt tells whether an event shows its message arrived.
func isReceipt(k flowspec.Kind) bool {
	return k == flowspec.Received || k == flowspec.HandleStart || k == flowspec.Discard
}

// order sorts the trace's events:
//
//  1. causality: an event that shows a message arrived (Incoming,
//     Handling, Discard) comes after a transmission of that message, if
//     the trace has one;
//  2. events of one node keep the order of the node's monotonic clock
//     (ties: span, then position in the span);
//  3. across nodes, corrected wall time, at nanosecond resolution;
//  4. ties: node name.
//
// It is a merge of the nodes' event queues that always takes the earliest
// head that is not waiting for a send. When every head waits (a node
// received a message before, by its own clock, it sent it; or two
// messages share an ID) the earliest head goes anyway and the trace
// counts an inconsistency.
//
// The events are copied once and put in the nodes' queues as small keys
// (orderKey), not sorted as events: a sort of all the events moved each a
// few times. Each send and receipt knows its message's slot in the table
// of sent messages, so that a receipt's wait is one look-up, not a search
// of the messages.
func (t *Trace) order() {
	m := t.m
	evs := t.Events
	if len(evs) == 0 {
		return
	}
	rank := m.nodeRank()
	o := &m.order
	src := append(o.events[:0], evs...)
	o.events = src[:0]
	// Each node's queue is a run of the keys, sorted by (monotonic clock,
	// span, position), the runs in the nodes' rank order. The runs are
	// made by counting the nodes' events; pass 2 hands the events over
	// span by span, so a node's come in order as a rule and its run is
	// only checked. Events that tie on all three (only a damaged input
	// repeats a span's position) keep the order they came in.
	count := o.count
	if len(count) < len(rank) {
		count = make([]int32, len(rank))
		o.count = count
	}
	ranks := o.ranks[:0]
	for i := range src {
		r := rank[src[i].Node]
		if count[r] == 0 {
			ranks = append(ranks, int32(r))
		}
		count[r]++
	}
	slices.Sort(ranks)
	o.ranks = ranks[:0]
	start := int32(0)
	for _, r := range ranks {
		n := count[r]
		count[r] = start
		start += n
	}
	keys := slices.Grow(o.keys[:0], len(src))[:len(src)]
	o.keys = keys[:0]
	for i := range src {
		e := &src[i]
		r := rank[e.Node]
		keys[count[r]] = orderKey{nano: e.Nano, span: e.Span, seq: e.Seq, idx: int32(i)}
		count[r]++
	}
	queues := o.queues[:0]
	start = 0
	for _, r := range ranks {
		q := keys[start:count[r]]
		start, count[r] = count[r], 0
		for i := 1; i < len(q); i++ {
			if compareOrderKeys(q[i-1], q[i]) > 0 {
				slices.SortStableFunc(q, compareOrderKeys)
				break
			}
		}
		queues = append(queues, q)
	}
	defer func() { clear(queues); o.queues = queues[:0] }()
	// The messages sent in the trace, and each send's and receipt's slot
	// among them (-1: none).
	o.sendSlots.reset()
	slot := slices.Grow(o.slot[:0], len(src))[:len(src)]
	o.slot = slot
	for i := range src {
		slot[i] = -1
		if e := &src[i]; isSend(e.Kind) && e.Msg >= 0 {
			j, _ := o.sendSlots.slot(e.Msg)
			slot[i] = int32(j)
		}
	}
	if o.sendSlots.len() > 0 {
		for i := range src {
			if e := &src[i]; isReceipt(e.Kind) && e.Msg >= 0 {
				slot[i] = int32(o.sendSlots.find(e.Msg))
			}
		}
	}
	sent := slices.Grow(o.sent[:0], o.sendSlots.len())[:o.sendSlots.len()]
	clear(sent)
	o.sent = sent
	out := evs[:0]
	for len(out) < len(src) {
		best, bestAny := -1, -1
		var bestWall, bestAnyWall int64
		for qi, q := range queues {
			if len(q) == 0 {
				continue
			}
			i := q[0].idx
			e := &src[i]
			if bestAny < 0 || e.Wall < bestAnyWall {
				bestAny, bestAnyWall = qi, e.Wall
			}
			if isReceipt(e.Kind) && slot[i] >= 0 && !sent[slot[i]] {
				continue // waits for its send
			}
			if best < 0 || e.Wall < bestWall {
				best, bestWall = qi, e.Wall
			}
		}
		if best < 0 {
			best = bestAny
			t.Inconsistencies++
		}
		i := queues[best][0].idx
		queues[best] = queues[best][1:]
		e := &src[i]
		if isSend(e.Kind) && e.Msg >= 0 {
			sent[slot[i]] = true
		}
		out = append(out, *e)
	}
	t.Events = out
}

// orderScratch is Trace.order's memory, reused from trace to trace: the
// copy of the events, their keys, the nodes' queues (runs of the keys),
// the sent messages and each event's slot among them; count and ranks
// are the nodes' events by rank and the ranks present.
type orderScratch struct {
	events    []Event
	count     []int32
	ranks     []int32
	keys      []orderKey
	queues    [][]orderKey
	sendSlots smallMap[int32, struct{}]
	slot      []int32
	sent      []bool
}

// orderKey is what the order sorts a node's events by, and the event's
// index.
type orderKey struct {
	nano      int64
	span, seq uint32
	idx       int32
}

func compareOrderKeys(a, b orderKey) int {
	switch {
	case a.nano != b.nano:
		return cmp.Compare(a.nano, b.nano)
	case a.span != b.span:
		return cmp.Compare(a.span, b.span)
	}
	return cmp.Compare(a.seq, b.seq)
}

// nodeRank returns each node's position in name order.
func (m *Merger) nodeRank() []int {
	if m.rank == nil {
		order := make([]int, len(m.Nodes))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(m.Nodes[a], m.Nodes[b]) })
		m.rank = make([]int, len(m.Nodes))
		for r, i := range order {
			m.rank[i] = r
		}
	}
	return m.rank
}
