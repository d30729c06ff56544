// Package gobin reads what dynamic probes need from a Go executable on
// disk: its functions from .gopclntab (present even in binaries built with
// -ldflags=-s -w), the file offsets that uprobes are placed at, the RET
// instructions of a function (return probes go there, never uretprobes),
// the instruction after its stack-bound check (so a call restarted by
// morestack is counted once), the offset of runtime.g.goid, and, where
// DWARF is present, parameter names and types and inlining.
//
// Linux executables for amd64 and arm64 are read (on arm64: functions, RETs
// and the stack check, found with golang.org/x/arch's arm64 decoder); the
// probe package places probes on amd64 ones only.
package gobin
