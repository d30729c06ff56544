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
	if goidOffset >= 0 {
		return goidAt()
	}
	return goidSlow()
}

// goidAt loads the word at goidOffset in the current g: one call on the
// emit path, where getg and a load in Go would be two.
func goidAt() uint64

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
