package flow

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/flowspec"
)

// Node is one process of the distributed system: it numbers the messages
// it sends and the spans it records. Its methods are safe for concurrent
// use.
type Node struct {
	id      uint16
	name    string
	counter atomic.Uint64
	spans   atomic.Int64
	tokens  atomic.Int64
}

// NewNode returns the node numbered id (the node part of the IDs it makes)
// and named name in recordings. Call Announce once a recording has started.
func NewNode(id uint16, name string) *Node { return &Node{id: id, name: name} }

// Announce records the node's name and number (the flowspec.NodeEvent) in
// the running recordings. A recording holds one node: flightrec flow
// refuses a recording in which two nodes announce themselves.
func (n *Node) Announce() {
	var ev nodeEvent
	nodeType.Begin(&ev)
	if ev.ShouldCommit() {
		ev.Name, ev.Number = n.name, int64(n.id)
	}
	ev.Commit()
}

// NextID returns a new message ID of the node, to put on the wire.
func (n *Node) NextID() ID { return MakeID(n.id, n.counter.Add(1)) }

// Packet is one read from the network, which may carry several messages.
type Packet struct {
	n  *Node
	at time.Time
}

// Received notes that bytes were read from the network now. Nothing is
// recorded until a message of the read is picked out with Message.
func (n *Node) Received() Packet {
	if !spanType.Enabled() {
		return Packet{n: n}
	}
	return Packet{n: n, at: time.Now()}
}

// Message begins the span of one message of the read: it holds a Received
// event at the time of the read. The caller holds the span until End.
func (p Packet) Message(id ID) *Span { return p.message(id, "") }

// MessageText is Message for a free-form message ID.
func (p Packet) MessageText(id string) *Span { return p.message(0, id) }

func (p Packet) message(id ID, text string) *Span {
	if !spanType.Enabled() || p.n == nil {
		return nil
	}
	s := p.n.newSpan(false)
	s.in, s.inText = id, text
	var ev msgEvent
	msgTypes[flowspec.Received].Begin(&ev)
	if ev.ShouldCommit() {
		if !p.at.IsZero() {
			ev.SetTime(p.at)
		}
		ev.Span, ev.Thread, ev.Message, ev.MessageText = s.num, threadName(), int64(id), text
	}
	ev.Commit()
	return s
}

// Begin begins a span of work that handles no message: a user operation or
// a timer. The caller holds it until End.
func (n *Node) Begin() *Span {
	if !spanType.Enabled() {
		return nil
	}
	return n.newSpan(false)
}

// BeginNonCausal begins a non-causal span, for sends that the span's work
// did not cause (retransmissions, heartbeats): its NonCausalSend events join
// the traces of their messages and nothing else of it is kept.
func (n *Node) BeginNonCausal() *Span {
	if !spanType.Enabled() {
		return nil
	}
	return n.newSpan(true)
}

func (n *Node) newSpan(nonCausal bool) *Span {
	s := &Span{n: n, num: n.spans.Add(1), nonCausal: nonCausal}
	s.refs.Store(1)
	return s
}

// Span is the work done on one node for at most one incoming message. A nil
// Span records nothing.
type Span struct {
	n         *Node
	num       int64
	refs      atomic.Int32
	in        ID
	inText    string
	nonCausal bool
}

// End drops the caller's hold on the span; the last holder writes the
// span's record, after which its events are final.
func (s *Span) End() {
	if s == nil || s.refs.Add(-1) != 0 {
		return
	}
	var ev spanEvent
	spanType.Begin(&ev)
	if ev.ShouldCommit() {
		ev.Span, ev.NonCausal, ev.Incoming, ev.IncomingText = s.num, s.nonCausal, int64(s.in), s.inText
	}
	ev.Commit()
}

// Incoming returns the message ID the span handles, or 0.
func (s *Span) Incoming() ID {
	if s == nil {
		return 0
	}
	return s.in
}

func (s *Span) msg(k flowspec.Kind, id ID, text string) {
	if s == nil {
		return
	}
	var ev msgEvent
	msgTypes[k].Begin(&ev)
	if ev.ShouldCommit() {
		ev.Span, ev.Thread, ev.Message, ev.MessageText = s.num, threadName(), int64(id), text
	}
	ev.Commit()
}

func (s *Span) text(k flowspec.Kind, text string) {
	if s == nil {
		return
	}
	var ev textEvent
	textTypes[k].Begin(&ev)
	if ev.ShouldCommit() {
		ev.Span, ev.Thread, ev.Text = s.num, threadName(), text
	}
	ev.Commit()
}

// HandleStart records that handling of the span's message starts.
func (s *Span) HandleStart() {
	if s != nil {
		s.msg(flowspec.HandleStart, s.in, s.inText)
	}
}

// HandleEnd records that handling of the span's message ended.
func (s *Span) HandleEnd() {
	if s != nil {
		s.msg(flowspec.HandleEnd, s.in, s.inText)
	}
}

// Discard records that the span's message was dropped.
func (s *Span) Discard() {
	if s != nil {
		s.msg(flowspec.Discard, s.in, s.inText)
	}
}

// SendStarted records that sending message id starts.
func (s *Span) SendStarted(id ID) { s.msg(flowspec.SendStarted, id, "") }

// SendWritten records that message id was written (the send returned).
func (s *Span) SendWritten(id ID) { s.msg(flowspec.SendWritten, id, "") }

// SendStartedText is SendStarted for a free-form ID.
func (s *Span) SendStartedText(id string) { s.msg(flowspec.SendStarted, 0, id) }

// SendWrittenText is SendWritten for a free-form ID.
func (s *Span) SendWrittenText(id string) { s.msg(flowspec.SendWritten, 0, id) }

// NonCausalSend records a send that the span's work did not cause, such as
// a retransmission of message id or a heartbeat; use it in a span of
// BeginNonCausal.
func (s *Span) NonCausalSend(id ID) { s.msg(flowspec.NonCausalSend, id, "") }

// NonCausalSendText is NonCausalSend for a free-form ID.
func (s *Span) NonCausalSendText(id string) { s.msg(flowspec.NonCausalSend, 0, id) }

// Checkpoint records free text.
func (s *Span) Checkpoint(text string) { s.text(flowspec.Checkpoint, text) }

// MessageTag records the business meaning of the message being handled.
func (s *Span) MessageTag(tag string) { s.text(flowspec.MessageTag, tag) }

// TraceTag records the business meaning of the whole trace.
func (s *Span) TraceTag(tag string) { s.text(flowspec.TraceTag, tag) }

// SetAttr records a key/value attribute of the span, shown in the trace
// log and the span tree and exported to OTLP as a span attribute.
func (s *Span) SetAttr(key, value string) {
	if s == nil {
		return
	}
	var ev attrEvent
	attrType.Begin(&ev)
	if ev.ShouldCommit() {
		ev.Span, ev.Thread, ev.Key, ev.Text = s.num, threadName(), key, value
	}
	ev.Commit()
}

// SetError records that the span's work failed, and why: the exported
// span gets an error status with this message.
func (s *Span) SetError(msg string) { s.text(flowspec.Error, msg) }

// Stackpoint records the calling goroutine's stack. It is costly: for
// debugging.
func (s *Span) Stackpoint() {
	if s == nil || !textTypes[flowspec.Stackpoint].Enabled() {
		return
	}
	buf := make([]byte, 4096)
	buf = buf[:runtime.Stack(buf, false)]
	s.text(flowspec.Stackpoint, string(buf))
}

// Token is a hand-off of a span's work to another goroutine. The zero
// Token records nothing.
type Token struct {
	s  *Span
	id int64
}

// Handoff records that this goroutine hands work to another one, and
// returns the token to give it; the span stays open until the token is
// Completed or Rejected.
func (s *Span) Handoff() Token {
	if s == nil {
		return Token{}
	}
	s.refs.Add(1)
	t := Token{s: s, id: s.n.tokens.Add(1)}
	t.record(flowspec.HandoffStarted)
	return t
}

func (t Token) record(k flowspec.Kind) {
	var ev tokenEvent
	tokTypes[k].Begin(&ev)
	if ev.ShouldCommit() {
		ev.Span, ev.Thread, ev.Token = t.s.num, threadName(), t.id
	}
	ev.Commit()
}

// Take records that the calling goroutine starts the handed-off work, and
// returns the span it works in.
func (t Token) Take() *Span {
	if t.s == nil {
		return nil
	}
	t.record(flowspec.HandoffTaken)
	return t.s
}

// Reject records that the hand-off was refused: the work will not run.
func (t Token) Reject() {
	if t.s == nil {
		return
	}
	t.record(flowspec.HandoffRejected)
	t.s.End()
}

// Complete records that the goroutine that took the token finished its
// work.
func (t Token) Complete() {
	if t.s == nil {
		return
	}
	var ev plainEvent
	complete.Begin(&ev)
	if ev.ShouldCommit() {
		ev.Span, ev.Thread = t.s.num, threadName()
	}
	ev.Commit()
	t.s.End()
}

type spanKey struct{}
type tokenKey struct{}

// NewContext returns ctx carrying s, for code that works in the span on
// the same goroutine.
func NewContext(ctx context.Context, s *Span) context.Context {
	return context.WithValue(ctx, spanKey{}, s)
}

// FromContext returns the span of ctx, or nil.
func FromContext(ctx context.Context) *Span {
	s, _ := ctx.Value(spanKey{}).(*Span)
	return s
}

// ContextWithToken returns ctx carrying a hand-off token, for work given
// to another goroutine with its context.
func ContextWithToken(ctx context.Context, t Token) context.Context {
	return context.WithValue(ctx, tokenKey{}, t)
}

// TokenFromContext returns the token of ctx, or the zero Token.
func TokenFromContext(ctx context.Context) Token {
	t, _ := ctx.Value(tokenKey{}).(Token)
	return t
}

// threadName names the calling goroutine: its event.SetGoroutineName name,
// or "goroutine N".
func threadName() string {
	g := event.CurrentGoroutine()
	if info, ok := event.LookupGoroutine(uint64(g)); ok && info.Name != "" {
		return info.Name
	}
	return "goroutine " + strconv.FormatUint(uint64(g), 10)
}
