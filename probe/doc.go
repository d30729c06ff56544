// Package probe places eBPF uprobes on the functions of a running,
// unmodified Go program and reports its calls: counts per goroutine,
// durations, arguments and results, stacks, as a summary, a trace or a
// JFR recording.
//
// Probes only read the target. Entry probes go after the stack-bound check
// and return probes on every RET instruction (never uretprobes, which
// crash Go programs when goroutine stacks move); each is restricted to the
// target process. See internal/bpf for how calls are counted and paired.
//
// It needs Linux on amd64, a kernel with uprobes and BPF ring buffers
// (5.8+), and root or CAP_BPF and CAP_PERFMON.
package probe
