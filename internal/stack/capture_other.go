//go:build !amd64 || purego

package stack

// framePointers is false: Capture uses runtime.Callers here.
const framePointers = false

// Capture stores the return addresses of the calling function's callers,
// skipping skip frames above Capture's caller, and returns how many it
// stored: one PC per physical frame, as on amd64. Without frame-pointer
// unwinding here, it goes through runtime.Callers. It is never inlined,
// so that skip counts from a frame of its own.
//
//go:noinline
func Capture(skip int, pcs *PCs) int { return captureCallers(skip, pcs) }
