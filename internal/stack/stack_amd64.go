//go:build amd64 && !purego

package stack

import "unsafe"

func getfp() unsafe.Pointer
func getg() unsafe.Pointer

// goidOffset is the offset of goid in runtime.g, found by findGoidOffset;
// -1 if it was not found (then Goid parses runtime.Stack).
var goidOffset = findGoidOffset()

// findGoidOffset looks for the word of the current g that equals the
// goroutine id runtime.Stack prints, and confirms the offset on a second
// goroutine with a different id. It reads only the first 512 bytes of g,
// all of which lie inside the struct.
//
// g is not a Go allocation checkptr knows, hence nocheckptr.
//
//go:nocheckptr
func findGoidOffset() int {
	first := goidCandidates()
	ch := make(chan []int)
	go func() { ch <- goidCandidates() }()
	second := <-ch
	for _, a := range first {
		for _, b := range second {
			if a == b {
				return a
			}
		}
	}
	return -1
}

// Goid returns the calling goroutine's id.
func Goid() uint64 {
	if GoidFast {
		return GoidAt()
	}
	return goidSlow()
}

// GoidFast tells whether GoidAt and GoidOffset work: whether the offset
// of the id in runtime.g was found.
var GoidFast = goidOffset >= 0

// GoidOffset returns the offset of the goroutine id in runtime.g, if
// GoidFast.
func GoidOffset() uintptr { return uintptr(goidOffset) }

// GoidAt returns the calling goroutine's id, if GoidFast, in one call:
// getg and a load in Go would be two, and Goid, with its fallback, is too
// big to inline. Hot paths call it directly.
func GoidAt() uint64

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

// goidCandidates returns the offsets in the current g holding its id.
//
//go:nocheckptr
func goidCandidates() []int {
	id := goidSlow()
	g := getg()
	var offs []int
	for off := 0; off < 512; off += 8 {
		if *(*uint64)(unsafe.Add(g, off)) == id {
			offs = append(offs, off)
		}
	}
	return offs
}
