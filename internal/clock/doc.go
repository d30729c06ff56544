// Package clock is the recorder's tick source: a cheap, monotonic counter
// read on every emitted event, and its calibration against the wall clock
// for chunk headers.
//
// On amd64 a tick is the time-stamp counter (RDTSC) divided by 4, measured
// from the first read in the process: RDTSC costs about 10 ns here against
// 25-30 ns for runtime.nanotime (shared/bench results), and small tick
// values keep the startTime varint of an event short (5 bytes for the
// first minute of a recording at 2.5 GHz, 6 bytes for the next two hours).
// The TSC is used only where the CPU reports it invariant (CPUID leaf
// 0x80000007, EDX bit 8: a constant rate in every power state), and not
// when the environment variable FLIGHTREC_CLOCK is "mono". Otherwise, and
// on every other platform or with -tags purego, a tick is a nanosecond of
// runtime.nanotime. Source says which; the choice is made once, at start.
//
// The tick rate is measured against runtime.nanotime, and the anchor
// (a tick read together with the wall clock) taken again by Recalibrate
// at every chunk start, so that chunk headers follow the wall clock in a
// long-running process.
package clock
