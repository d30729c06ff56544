// Package gotrace converts a Go execution trace (runtime/trace, `go test
// -trace`, /debug/pprof/trace) into JDK events: goroutines blocked on
// sync.Mutex and sync.RWMutex as jdk.JavaMonitorEnter, on sync.Cond as
// jdk.JavaMonitorWait, on channels, select, sync.WaitGroup and semaphores
// as jdk.ThreadPark, time.Sleep as jdk.ThreadSleep, stop-the-world pauses
// as jdk.ExecuteVMOperation with jdk.SafepointBegin/End, GC cycles as
// jdk.GarbageCollection and jdk.GCPhasePause, and the trace's CPU samples
// as jdk.ExecutionSample on their goroutine. What has no JDK twin becomes a
// go.* event (go.MarkAssist, go.NetworkWait).
//
// The mapping says only what the trace says: lock addresses are 0 (the
// tracer does not record which lock), no event per goroutine start and end,
// no GC sub-phases. See shared docs/go-runtime-events.md.
//
// Conversion streams one trace generation (about a second) at a time:
// Converter hands each generation's events to a callback, and JFRWriter
// writes each as one chunk, so memory is bounded by a generation, not by
// the trace.
package gotrace
