package flowspec

// Kind is the kind of one flow event.
type Kind uint8

// The flow event kinds. The order is part of no format: recordings name
// their event types, span logs spell the kind out.
const (
	Invalid         Kind = iota
	Received             // bytes read from the network; one read may carry several messages
	HandoffStarted       // this goroutine hands work (a token) to another one
	HandoffTaken         // another goroutine started the work of the token
	HandoffRejected      // the hand-off was refused: the work will not run
	WorkComplete         // the goroutine finished the work it took over
	HandleStart          // handling of one message started
	HandleEnd            // handling of one message ended
	Discard              // a received message was dropped
	SendStarted          // sending a message started
	SendWritten          // the message was written (the send returned)
	Checkpoint           // free text
	Stackpoint           // free text, usually a stack
	MessageTag           // business meaning of the message being handled
	TraceTag             // business meaning of the whole trace
	NonCausalSend        // a send not caused by the span's message (retransmission, heartbeat)
	Attribute            // a key/value attribute of the span
	Error                // the span's work failed: the text says why
	NumKinds
)

// LogName is the name of each kind in a message-flow-tracer 2013 span log and
// in the trace log. A non-causal send is written as ODStarted inside an NC
// span; the merger prints it as Retransmission, as the reference tool does.
var LogName = [NumKinds]string{
	Received:        "Incoming",
	HandoffStarted:  "THStarted",
	HandoffTaken:    "THSuccess",
	HandoffRejected: "THFailure",
	WorkComplete:    "TPComplete",
	HandleStart:     "Handling",
	HandleEnd:       "MsgProcEnd",
	Discard:         "Discard",
	SendStarted:     "ODStarted",
	SendWritten:     "ODFinished",
	Checkpoint:      "Checkpoint",
	Stackpoint:      "Stackpoint",
	MessageTag:      "MsgTag",
	TraceTag:        "FlowTag",
	NonCausalSend:   "Retransmission",
	Attribute:       "Attribute",
	Error:           "Error",
}

// KindOfLogName returns the kind a span log names, or Invalid. MsgProcStart
// (the 2016 name of Handling) is accepted too.
func KindOfLogName(name string) Kind {
	switch name {
	case "MsgProcStart":
		return HandleStart
	case "TraceTag":
		return TraceTag
	}
	for k, n := range LogName {
		if n == name && k != int(Invalid) {
			return Kind(k)
		}
	}
	return Invalid
}

// Field names of the flow JFR events. Every flow event has startTime (its
// tick, also the node's monotonic clock), then Span and Thread; the others
// only where Events says so.
const (
	// FieldSpan is a long: the node-local number of the span the event
	// belongs to. A span is closed by a SpanEvent record with the same number.
	FieldSpan = "span"
	// FieldThread is a String naming the goroutine (or thread) that raised
	// the event; goroutines have no names, so the emit API chooses one.
	FieldThread = "thread"
	// FieldMessage is a long holding a compact message ID:
	// node<<48 | counter, printed as "node:counter". 0 means none.
	FieldMessage = "message"
	// FieldMessageText is a String holding a free-form message ID for
	// legacy protocols; it wins over FieldMessage when not null.
	FieldMessageText = "messageText"
	// FieldToken is a long identifying the hand-off token.
	FieldToken = "token"
	// FieldText is a String: checkpoint text, stack, tag, attribute
	// value, error message.
	FieldText = "text"
	// FieldKey is the String key of an Attribute event. A span log
	// writes an attribute's payload as key=value.
	FieldKey = "key"

	// Fields of the span record.
	FieldNonCausal    = "nonCausal"    // boolean
	FieldIncoming     = "incoming"     // long, compact ID or 0
	FieldIncomingText = "incomingText" // String or null
	FieldOutgoing     = "outgoing"     // long[], compact IDs
	FieldOutgoingText = "outgoingText" // String[], free-form IDs

	// FieldNodeName is the String field of NodeEvent.
	FieldNodeName = "name"
	// FieldNodeNumber is the long field of NodeEvent: the node part of the
	// compact message IDs the node makes.
	FieldNodeNumber = "number"
)

// Names of the JFR event types that are not flow events of one kind.
const (
	// SpanEvent closes a span: it lists the span's incoming message and the
	// messages it sent, like a SPAN (or NC) header of a span log. It is
	// written when the span's reference count drops to zero, after all of
	// the span's events.
	SpanEvent = "flightrec.flow.Span"
	// NodeEvent names the node that wrote the recording and gives its
	// number. A recording holds one node.
	NodeEvent = "flightrec.flow.Node"
)

// FieldKind is the JFR type of a field.
type FieldKind uint8

// Field types used by the flow events.
const (
	Long FieldKind = iota
	String
	Boolean
	LongArray
	StringArray
)

// Field is one user field of an event type.
type Field struct {
	Name  string
	Kind  FieldKind
	Label string
}

// EventType is one flow JFR event type.
type EventType struct {
	Name   string // JFR type name
	Label  string
	Kind   Kind // Invalid for SpanEvent and NodeEvent
	Fields []Field
}

var (
	spanF    = Field{FieldSpan, Long, "Span"}
	threadF  = Field{FieldThread, String, "Thread"}
	msgF     = Field{FieldMessage, Long, "Message"}
	msgTextF = Field{FieldMessageText, String, "Message Text"}
	tokenF   = Field{FieldToken, Long, "Token"}
	textF    = Field{FieldText, String, "Text"}
)

func ev(name, label string, k Kind, extra ...Field) EventType {
	return EventType{Name: name, Label: label, Kind: k, Fields: append([]Field{spanF, threadF}, extra...)}
}

// Events is the table of flow JFR event types, in the order a recorder
// should register them.
var Events = []EventType{
	{Name: NodeEvent, Label: "Flow Node", Fields: []Field{{FieldNodeName, String, "Name"}, {FieldNodeNumber, Long, "Number"}}},
	ev("flightrec.flow.Received", "Bytes Received", Received, msgF, msgTextF),
	ev("flightrec.flow.HandoffStarted", "Hand-off Started", HandoffStarted, tokenF),
	ev("flightrec.flow.HandoffTaken", "Hand-off Taken", HandoffTaken, tokenF),
	ev("flightrec.flow.HandoffRejected", "Hand-off Rejected", HandoffRejected, tokenF),
	ev("flightrec.flow.WorkComplete", "Work Complete", WorkComplete),
	ev("flightrec.flow.HandleStart", "Message Handling Start", HandleStart, msgF, msgTextF),
	ev("flightrec.flow.HandleEnd", "Message Handling End", HandleEnd, msgF, msgTextF),
	ev("flightrec.flow.Discard", "Message Discarded", Discard, msgF, msgTextF),
	ev("flightrec.flow.SendStarted", "Send Started", SendStarted, msgF, msgTextF),
	ev("flightrec.flow.SendWritten", "Send Written", SendWritten, msgF, msgTextF),
	ev("flightrec.flow.Checkpoint", "Checkpoint", Checkpoint, textF),
	ev("flightrec.flow.Stackpoint", "Stackpoint", Stackpoint, textF),
	ev("flightrec.flow.MessageTag", "Message Tag", MessageTag, textF),
	ev("flightrec.flow.TraceTag", "Trace Tag", TraceTag, textF),
	ev("flightrec.flow.NonCausalSend", "Non-causal Send", NonCausalSend, msgF, msgTextF),
	ev("flightrec.flow.Attribute", "Span Attribute", Attribute, Field{FieldKey, String, "Key"}, textF),
	ev("flightrec.flow.Error", "Span Error", Error, textF),
	{Name: SpanEvent, Label: "Flow Span", Fields: []Field{
		spanF,
		{FieldNonCausal, Boolean, "Non-causal"},
		{FieldIncoming, Long, "Incoming Message"},
		{FieldIncomingText, String, "Incoming Message Text"},
		{FieldOutgoing, LongArray, "Outgoing Messages"},
		{FieldOutgoingText, StringArray, "Outgoing Message Texts"},
	}},
}

// MessageID packs a compact message ID.
func MessageID(node uint16, counter uint64) int64 {
	return int64(uint64(node)<<48 | counter&(1<<48-1))
}

// SplitMessageID unpacks a compact message ID.
func SplitMessageID(id int64) (node uint16, counter uint64) {
	return uint16(uint64(id) >> 48), uint64(id) & (1<<48 - 1)
}

// Span attributes that carry W3C Trace Context identities (recorded by
// flow/flowhttp, used by the OTLP export so that flightrec spans join
// traces of OpenTelemetry-instrumented services): hex trace and span IDs,
// and the span's parent outside flightrec.
const (
	AttrW3CTraceID  = "w3c.trace_id"
	AttrW3CSpanID   = "w3c.span_id"
	AttrW3CParentID = "w3c.parent_id"
)
