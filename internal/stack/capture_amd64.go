//go:build amd64 && !purego

package stack

import "unsafe"

// getfp returns its caller's frame pointer.
func getfp() unsafe.Pointer

// Capture stores the return addresses of the calling function's callers,
// skipping skip frames above Capture's caller (skip 0: the first PC is in
// Capture's caller), and returns how many it stored. It follows the frame
// pointers the Go compiler keeps on amd64. It is never inlined, so that
// skip counts from a frame of its own.
//
//go:noinline
//go:nosplit
//go:nocheckptr
func Capture(skip int, pcs *PCs) int {
	fp := getfp() // Capture's caller's frame
	for ; skip > 0 && fp != nil; skip-- {
		fp = *(*unsafe.Pointer)(fp)
	}
	n := 0
	for n < MaxDepth && fp != nil {
		pc := *(*uintptr)(unsafe.Add(fp, 8))
		if pc == 0 {
			break
		}
		pcs[n] = pc
		fp = *(*unsafe.Pointer)(fp)
		n++
	}
	return n
}
