//go:build !amd64 || purego

package stack

import "runtime"

// Capture stores the return addresses of the calling function's callers
// (skip as on amd64) and returns how many it stored. Without frame-pointer
// unwinding here, it is runtime.Callers.
func Capture(skip int, pcs *PCs) int {
	return runtime.Callers(skip+2, pcs[:])
}
