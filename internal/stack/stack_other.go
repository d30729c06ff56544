//go:build !amd64 || purego

package stack

import "runtime"

// Goid returns the calling goroutine's id.
func Goid() uint64 { return goidSlow() }

// GoidFast is false: there is no GoidAt on this platform.
const GoidFast = false

// GoidAt is Goid.
func GoidAt() uint64 { return goidSlow() }

// Capture stores the return addresses of the calling function's callers
// (skip as on amd64) and returns how many it stored.
func Capture(skip int, pcs *PCs) int {
	return runtime.Callers(skip+2, pcs[:])
}

// GoidOffset is 0: GoidFast is false.
func GoidOffset() uintptr { return 0 }
