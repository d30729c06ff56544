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
func (t *Trace) order() {
	m := t.m
	evs := t.Events
	if len(evs) == 0 {
		return
	}
	rank := m.nodeRank()
	// One sort by (node, monotonic clock, span, position) makes each node's
	// queue a run of the slice.
	src := append(m.scratch[:0], evs...)
	defer func() { m.scratch = src[:0] }()
	slices.SortFunc(src, func(a, b Event) int {
		switch {
		case a.Node != b.Node:
			return rank[a.Node] - rank[b.Node]
		case a.Nano != b.Nano:
			return cmp.Compare(a.Nano, b.Nano)
		case a.Span != b.Span:
			return cmp.Compare(int64(a.Span), int64(b.Span))
		}
		return cmp.Compare(int64(a.Seq), int64(b.Seq))
	})
	queues := m.queues[:0]
	defer func() { clear(queues); m.queues = queues[:0] }()
	for i := 0; i < len(src); {
		j := i + 1
		for j < len(src) && src[j].Node == src[i].Node {
			j++
		}
		queues = append(queues, src[i:j])
		i = j
	}
	sends := m.sends[:0]
	defer func() { m.sends = sends[:0] }()
	find := func(msg int32) int {
		for i := range sends {
			if sends[i].msg == msg {
				return i
			}
		}
		return -1
	}
	for i := range src {
		if e := &src[i]; isSend(e.Kind) && e.Msg >= 0 && find(e.Msg) < 0 {
			sends = append(sends, sendState{msg: e.Msg})
		}
	}
	blocked := func(e *Event) bool {
		if !isReceipt(e.Kind) || e.Msg < 0 {
			return false
		}
		i := find(e.Msg)
		return i >= 0 && !sends[i].sent
	}
	out := evs[:0]
	for len(out) < len(src) {
		best, bestAny := -1, -1
		for i, q := range queues {
			if len(q) == 0 {
				continue
			}
			if bestAny < 0 || q[0].Wall < queues[bestAny][0].Wall {
				bestAny = i
			}
			if blocked(&q[0]) {
				continue
			}
			if best < 0 || q[0].Wall < queues[best][0].Wall {
				best = i
			}
		}
		if best < 0 {
			best = bestAny
			t.Inconsistencies++
		}
		e := queues[best][0]
		queues[best] = queues[best][1:]
		if isSend(e.Kind) && e.Msg >= 0 {
			sends[find(e.Msg)].sent = true
		}
		out = append(out, e)
	}
	t.Events = out
}

// sendState tracks, per message with a transmission in a trace, whether
// one has been placed. Traces hold few messages: a slice beats a map.
type sendState struct {
	msg  int32
	sent bool
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
