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
// Merge reads each input once and merges in two passes. The first pass
// decodes the inputs, writes the spans it reads to a temporary span log
// per input (replay.go), counts, per message, the spans that mention it
// (IDs are interned to dense integer keys), estimates per-node clock
// offsets from the message pairs (per 100 ms bucket, following drift and
// steps: drift.go) and checks the inputs: it refuses inputs without flow
// events, two inputs using one node number and two nodes in one
// recording, and lists node numbers seen in message IDs that no input
// has. The second pass replays the span logs, joins spans into traces and
// releases a trace the moment the last span mentioning any of its
// messages has been read: the reference-counted
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
// Per message the merge keeps a reference count and, during pass 1, the
// first send's time and node, then during pass 2 an open-trace slot, in
// fixed pages that never copy to grow. A compact ID "node:counter" is
// interned as integers (ids.go): a slot in its node's counter-indexed
// table and its 8-byte integer form, 26 bytes per message in pass 1 and
// 20 in pass 2; other IDs are hashed as text. A recording holds compact
// IDs as longs, and they stay integers from its reader to the table (the
// "wire" form of ids.go), never formatted as text to be parsed again. With Options.MemBudget,
// the per-key arrays (all but the counter-indexed slots) keep that many
// bytes of pages in memory and spill the rest to temporary files
// (spill.go): keys are given in reading order and both passes read
// time-aligned, so the pages in use are a window. Open traces are the ones in
// flight around the current time. A recording's reader also holds each
// span from its record until the chunk after the record's has been read
// (a late event may come for it): two chunks of spans, which wait
// encoded in a queue whose blocks past 1 MiB go to a temporary file
// (heldqueue.go); the spans still open are found by number in a window
// ring (openspans.go). Pass 2 replays the span logs, so it holds no
// reader's spans and decodes no recording again.
//
// Each input is decoded on a goroutine of its own, batches of spans ahead
// of the merge (readahead.go), so decoding uses every core. A recording's
// reader appends its spans to those batches itself (batchSource): a held
// span is popped into the batch's bytes and its events decoded there,
// not copied again for the merge. A recording's flow records are
// decoded by the reader itself from their layouts in the chunk's
// metadata, without jfr.Values (jfrfields.go). Pass 1's read-ahead
// goroutines write the span logs with the message keys the merge found, and
// pass 2's inputs' goroutines replay them from blocks straight into the
// spans the merge joins (replaySource: keys as logged, events built with
// corrected times), so that pass 2 looks no ID up and its merging
// goroutine only joins spans into traces.
// The traces pass 2 releases are ordered and handed to fn (the
// statistics) on another goroutine (traceout.go), so the merging pass
// uses two cores too; their events and messages are allocated in
// blocks (traceArena). The README's Scale section has the latest figures,
// docs/perf/flow.md the measurements.
package flow
