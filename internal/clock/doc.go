// Package clock is the recorder's tick source: a cheap, monotonic counter
// read on every emitted event, and its calibrated frequency for chunk
// headers.
//
// On amd64 a tick is the time-stamp counter (RDTSC, invariant on every CPU
// Go supports there) divided by 4, measured from the first read in the
// process: RDTSC costs about 10 ns here against 25-30 ns for
// runtime.nanotime (shared/bench results), and small tick values keep the
// startTime varint of an event short (5 bytes for the first minute of a
// recording at 2.5 GHz, 6 bytes for the next two hours). Elsewhere a tick
// is a nanosecond of runtime.nanotime.
package clock
