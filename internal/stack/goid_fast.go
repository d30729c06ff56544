//go:build (amd64 || arm64) && !purego

package stack

import "unsafe"

// getg returns the current goroutine's runtime.g.
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
