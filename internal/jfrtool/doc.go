// Package jfrtool produces what OpenJDK's `jfr` tool prints for a
// recording (summary, print in JSON and in its human format, metadata)
// with the same layout and the same values, so scripts and people used to
// `jfr` read flightrec's output unchanged. It reads with package jfr and
// streams: memory does not grow with the size of the recording.
package jfrtool
