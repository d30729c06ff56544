// Package flowspec is the single table of the message-flow events: their
// kinds, the names the 2013 message-flow-tracer span logs use for them, and
// the JFR event types (names and fields) that flightrec recordings carry.
//
// It has no dependencies so that both sides can share it: the recorder's
// emit API writes these event types, and analysis/flow reads them back.
package flowspec
