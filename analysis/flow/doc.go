// Package flow merges the message-flow records of several nodes into
// traces and computes the statistics of the reference tool
// message-flow-tracer (MFT), with its defects corrected.
//
// Each input is one node: a flightrec recording carrying the flow events of
// internal/flowspec, or an MFT 2013 text span log. A span is the set of
// events raised causally on one node for at most one incoming message; a
// trace is the union of the spans connected by message IDs (a span that
// sends a message and every span that receives it).
//
// Merge reads the inputs twice. The first pass counts, per message, the
// spans that mention it (IDs are interned to dense integer keys),
// estimates per-node clock offsets from the message pairs (per 100 ms
// bucket, following drift and steps: drift.go) and checks the inputs: it
// refuses inputs without flow events, two inputs using one node number
// and two nodes in one recording, and lists node numbers seen in message
// IDs that no input has. The second pass
// joins spans into traces and releases a trace the moment the last span
// mentioning any of its messages has been read: the reference-counted
// completion rule of MFT, exact and without timeouts. One goroutine reads
// all inputs, always the one whose next span ends earliest, so no reader
// ever waits while holding a trace and no input can hold back another; an
// input that fails counts as finished. A damaged recording is read up to
// the damage and from its next intact chunk on (jfr.Reader.SkipDamagedChunk);
// spans that never ended (open when recording stopped) are kept, marked
// unfinished.
//
// Within a trace, events are ordered by causality (a receipt after a
// transmission of its message), the node's monotonic clock, corrected wall
// time and then node name. Stats computes MFT's four reports (messages,
// traces, locks, interceptors) with the corrected figures listed on
// Stats.Add's helpers; WriteTrace prints MFT's trace-log layout and Cut
// writes the span logs of one trace.
//
// Differences from MFT, on purpose: clock offsets are applied (MFT's were
// lost to a regex bug); cross-node order uses nanoseconds, not whole
// milliseconds; message lines are sorted by ID and destinations by name;
// latency is one-way, per direction and tag, with percentiles;
// network duplicates are counted once and totals are not double counted;
// locks are per node; interceptor time includes the part before the inner
// call; an NC span releases each ID once; handling without Incoming (local
// delivery) is a reception at the handling; traces left open when all
// inputs end are still reported, marked incomplete.
//
// # Memory and speed
//
// Per message the merge keeps its ID text in a paged arena, a 4-byte
// index slot, offset, length and hash, a reference count and an open-trace
// slot (plus the first send's time and node during pass 1), in fixed pages
// that never copy to grow. Open traces are the ones in flight around the
// current time. Measured on the generated 5-node input of BenchmarkMerge
// (7 events and 2 messages per request; the generator's own cost is
// included), on a 2-core VM shared with other builds (load 12-31):
//
//	go test ./analysis/flow -run '^$' -bench Merge -benchtime 1x -flow.requests 5000000
//	  35 M events (10 M messages): 212 s wall, 59.8 s CPU (0.57 M events
//	  per CPU second), peak live heap 682 MiB, max RSS 705 MiB
//
// On a quiet machine the merge with one offset per node did 1.19-1.40 M
// events/s; the per-bucket clocks cost no measurable CPU beside it.
//
// Throughput counts input events per second of the whole merge, both
// passes included; at most 5 traces (22 events) were open at once.
package flow
