// Package perfetto converts JFR recordings into a Perfetto trace: native
// TracePacket protobuf (hand-encoded with protowire; field numbers from
// perfetto's protos/perfetto/trace, subset in testdata/trace_subset.proto)
// or the Chrome JSON trace-event format that Catapult and chrome://tracing
// read.
//
// The mapping: a process per recording, a track per thread or goroutine
// (events without a thread go to a track per event type), timed events as
// slices, other events as instants, fields as debug annotations, a counter
// track per series of jdk.CPULoad, jdk.GCHeapSummary,
// jdk.JavaThreadStatistics and go.RuntimeMetric. Slices on one track must
// nest, so a slice that overlaps another without nesting goes to a child
// track ("name (2)", ...). When the recordings carry flow events, they are
// merged with analysis/flow: every timestamp of a node is corrected by its
// estimated clock offset, and each message becomes a flow arrow from its
// send to its receipt.
//
// The whole trace is built in memory before it is written.
package perfetto
