// Package ctlproto is the protocol between `flightrec ctl` and package
// agent: where a process's control socket is, and the messages on it.
//
// A connection carries one request and its response. Every message is a
// frame: one byte of kind, a 4-byte big-endian body length, the body. A
// request and a response are JSON frames (kind 'J') whose objects carry
// the protocol version; a stream's response is followed by segment
// frames (kind 'S', what a flush added to a chunk of the service's
// recording: see Segment) and JSON notes until the client closes the
// connection, or a last JSON frame with the error that ended it. Bodies
// are limited in size (MaxRequest, MaxFrame) and the agent limits the time
// a client takes to send its request.
package ctlproto
