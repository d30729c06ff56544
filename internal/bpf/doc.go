// Package bpf builds the eBPF programs and maps of dynamic probes on Go
// functions, in Go with cilium/ebpf's asm package (no C compiler needed).
//
// An entry program runs at a function's first instruction after its
// stack-bound check; a return program runs at each of its RET
// instructions. Both find the goroutine from R14 (runtime.g on amd64): its
// id at offsetof(g, goid), cached per g while the goroutine lives (see
// Session.Goids), and its stack top g.stack.hi. Calls are counted
// per (probe, goroutine) in a hash map, exactly, whether or not their
// records fit in the ring buffer. A call probe pairs an entry with its
// return by (probe, goroutine, g.stack.hi - SP): the distance from the
// stack top survives stack copies and tells recursive activations apart.
// Records (one per entry-only hit, or one per completed call) go through a
// ring buffer; a record that does not fit is counted as dropped per probe.
//
// The layout of a record is in record.go; the user-space side decodes it
// with the same constants.
package bpf
