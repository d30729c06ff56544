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
// internal/batch). A flusher goroutine cuts a chunk at least once a second
// (the default maximum chunk age), and sooner when its events fill a third
// of the buffers: it takes the buffers' records, in place, adds the constant
// pools the events refer to (goroutines as java.lang.Thread, stack traces
// symbolised as jdk.types.Method with the Go package path as the class),
// the chunk's metadata, and the recorder's own events (jdk.ActiveRecording,
// jdk.ActiveSetting, jdk.DataLoss for events dropped because no buffer was
// free), and appends the finished chunk to each recording. A process killed
// mid-recording therefore leaves a file whose complete chunks, all but at
// most the last second, any reader accepts.
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
