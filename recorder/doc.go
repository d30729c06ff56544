// Package recorder records the events of package event, and built-in Go
// runtime events, into JDK Flight Recorder files that `jfr` and JDK
// Mission Control open.
//
// Start begins a recording: to a file (WithFile), whose chunks rotate at a
// maximum size and age, or in memory as a flight recorder (WithRing) that
// keeps the last maxAge/maxSize of chunks and can Dump them at any time.
// Several recordings may run at once; they share the event buffers, and
// every event type is on when any of them enables it.
//
// Events are encoded on the emit path into per-P buffers (package
// internal/batch). A flusher goroutine writes a flushpoint into the chunk
// being written once a second, and sooner when the events fill a third of
// the buffers: it takes the buffers' records, in place, adds the constants
// new to the chunk that the events refer to (goroutines as
// java.lang.Thread, stack traces symbolised as jdk.types.Method with the Go
// package path as the class) in a flush checkpoint, and the recorder's own
// events (jdk.ActiveRecording, jdk.ActiveSetting, jdk.DataLoss for events
// dropped because no buffer was free), and hands the segment to each
// recording, which appends it and rewrites the chunk's header. Chunks are
// cut at a maximum size (12 MB by default) and age. A file is laid out so
// that a process killed at any moment leaves it readable up to the last
// flushpoint (fileSink); a write error is reported when it happens (Err,
// WithErrorHandler) and what is lost after it is counted (Lost).
//
// Go runtime events (GC cycles, heap, CPU load, goroutine counts, CPU
// samples) are written under the JDK's names in OpenJDK 17's layouts.
// CPU samples come from Linux perf events, never from the Go runtime's CPU
// profiler, which stays the program's (cpusampler_linux.go).
//
// Settings per event type (enabled, threshold, stackTrace, period) come
// from the presets "default" and "profile", from code (Settings), or from
// a JFR .jfc file (ParseJFC), and can change while a recording runs.
package recorder
