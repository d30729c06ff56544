// Package gobin reads what dynamic probes need from a Go executable on
// disk: its functions from .gopclntab (present even in binaries built with
// -ldflags=-s -w), the file offsets that uprobes are placed at, the RET
// instructions of a function (return probes go there, never uretprobes),
// the instruction after its stack-bound check (so a call restarted by
// morestack is counted once), the offset of runtime.g.goid, and, where
// DWARF is present, parameter names and types and inlining.
//
// Only linux/amd64 executables are supported.
package gobin
