// Package flow records the message flow of a Go service, one node of a
// distributed system, as the flow events of internal/flowspec, so that
// `flightrec flow` can merge the recordings of all nodes into causal
// traces and statistics.
//
// A Node names the process in its recordings and numbers the messages it
// sends (one node per recording: flightrec flow refuses a recording in
// which two nodes announce themselves): an ID is a compact (node, counter) pair that the application
// carries on the wire (WriteFrame/ReadFrame for a length-framed net.Conn
// protocol, SetHeader/HeaderID for HTTP headers, SetMetadata/MetadataID for
// gRPC-style string maps). Legacy protocols may use free-form string IDs
// (the *Text methods).
//
// Packages flow/flowhttp and flow/flowgrpc instrument net/http and gRPC
// services in one line, with W3C traceparent.
//
// A Span is the work done on one node for at most one incoming message,
// possibly in several goroutines. It begins when a message received from
// the network is picked out of a read (Packet.Message: one read may carry
// several messages, each gets its own span), or when the node starts work
// of its own (Node.Begin, Node.BeginNonCausal for retransmissions and
// heartbeats). Causality between goroutines is explicit, never guessed:
// Span.Handoff returns a Token that the other goroutine Takes (or the
// hand-off is Rejected) and Completes; a Token or Span may also travel in a
// context.Context. A span is written (its flowspec.SpanEvent record) when
// its last holder lets go: End for the creator, Complete or Reject for each
// token; a span still held when the recording stops is kept by the merge,
// marked unfinished. SetAttr and SetError add key/value attributes and an
// error status, which the OTLP export carries.
//
// # Cost
//
// Until a recorder enables the flow event types, Packet.Message and the
// Begin methods return a nil *Span after one atomic load and branch, and
// every method of a nil Span or zero Token is a no-op: nothing allocates.
// When enabled, each event is one event.Type commit (no locks, no
// syscalls); a span costs one allocation.
//
// # Schema
//
// The events are those of internal/flowspec, field for field, except the
// span record's outgoing arrays (flowspec.FieldOutgoing,
// flowspec.FieldOutgoingText): package event has no array field type, so
// the record omits them and analysis/flow takes a span's outgoing messages
// from its send events. Unset string IDs are written as empty strings,
// which analysis/flow reads as no ID.
package flow
