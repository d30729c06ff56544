//go:build amd64 && !purego

package stack

import (
	"os"
	"unsafe"
)

// framePointers: Capture follows frame pointers unless the environment
// variable FLIGHTREC_STACK is "callers" at start, which selects the
// runtime.Callers path other platforms take.
var framePointers = os.Getenv(EnvStack) != "callers"

// getfp returns its caller's frame pointer.
func getfp() unsafe.Pointer

// Capture stores the return addresses of the calling function's callers,
// skipping skip frames above Capture's caller (skip 0: the first PC is in
// Capture's caller), and returns how many it stored. It follows the frame
// pointers the Go compiler keeps on amd64. It is never inlined, so that
// skip counts from a frame of its own.
//
// A frame pointer is followed only while it lies in the goroutine's stack,
// above the last one: C code (cgo) keeps no frame pointers, or other
// ones, and a Go callback's frames lead into what C left in the register
// (as the runtime's own frame-pointer unwinder knows, which avoids it with
// cgo on the stack). The walk stops there, at the callback's first frame.
//
//go:noinline
//go:nosplit
//go:nocheckptr
func Capture(skip int, pcs *PCs) int {
	if !framePointers {
		return captureCallers(skip, pcs)
	}
	// runtime.g begins with its stack bounds, [lo, hi). Nosplit: the
	// stack does not move during the walk. Frame pointers only rise, so
	// past the first frame only the upper bound needs checking.
	bounds := (*[2]uintptr)(getg())
	lo, limit := bounds[0], bounds[1]-16
	fp := getfp() // Capture's frame
	if uintptr(fp) < lo {
		return 0
	}
	for ; skip > 0; skip-- {
		next := *(*unsafe.Pointer)(fp)
		if uintptr(next) <= uintptr(fp) || uintptr(next) > limit || uintptr(next)&7 != 0 {
			return 0
		}
		fp = next
	}
	n := 0
	for n < MaxDepth && uintptr(fp) <= limit && uintptr(fp)&7 == 0 {
		pc := *(*uintptr)(unsafe.Add(fp, 8))
		if pc == 0 {
			break
		}
		pcs[n] = pc
		n++
		next := *(*unsafe.Pointer)(fp)
		if uintptr(next) <= uintptr(fp) {
			break
		}
		fp = next
	}
	return n
}
