// Package pprof converts the stack-carrying events of JFR recordings into a
// pprof profile (github.com/google/pprof/profile), which `go tool pprof`,
// speedscope and most profilers read.
//
// Each selected event type contributes two values to a sample, by its kind:
//
//	CPU samples (jdk.ExecutionSample, jdk.NativeMethodSample): samples/count, cpu/nanoseconds
//	allocations (jdk.ObjectAllocationSample, ...InNewTLAB, ...OutsideTLAB): alloc_samples/count, alloc_space/bytes
//	locks and parks (jdk.JavaMonitorEnter, jdk.JavaMonitorWait, jdk.ThreadPark, or any type named *Lock*):
//	        contentions/count, delay/nanoseconds
//	any other type: events/count, and duration/nanoseconds if it is timed
//
// A profile of several kinds has the union of their sample types, each
// sample setting only its own. A CPU sample weighs the sampling period
// given by the recording's jdk.ActiveSetting events for its type. Frames
// keep JFR's order (leaf first, as pprof's); Java frames are named
// package.Class.method, Go frames as recorded; an allocation's class is
// its leaf frame; a truncated stack ends in a "[truncated]" root frame.
package pprof
