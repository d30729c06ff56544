package stack

import (
	"runtime"
	"sync/atomic"
)

// captureCallers is Capture through runtime.Callers, for the Capture that
// calls it (skip counts from Capture's caller): one PC per physical frame,
// as the frame-pointer unwinder gives them, so that
// runtime.CallersFrames([]uintptr{pc, 0}) expands each into the frames
// inlined there. runtime.Callers' list also has a PC for each frame
// inlined into a physical one, after that frame's first PC; those are
// dropped.
//
//go:noinline
func captureCallers(skip int, pcs *PCs) int {
	// Room for every frame to hold two inlined calls.
	var logical [3 * MaxDepth]uintptr
	m := runtime.Callers(3, logical[:]) // from Capture's caller
	n := 0
	for i := 0; i < m && n < MaxDepth; i += inlineDepth(logical[i]) {
		if skip > 0 {
			skip--
			continue
		}
		pcs[n] = logical[i]
		n++
	}
	return n
}

// depthCache maps a return PC to the number of frames runtime.Callers
// lists for the physical frame it returns into, packed as pc<<8 | depth
// in one word so that readers never see half an entry. Direct-mapped:
// a collision costs a lookup, not an error.
var depthCache [4096]atomic.Uint64

// inlineDepth returns how many frames the physical frame returned into at
// pc holds: 1 plus the calls inlined at pc. The first lookup of a PC
// symbolises it (and allocates); later ones read depthCache.
func inlineDepth(pc uintptr) int {
	slot := &depthCache[(pc^pc>>12)%uintptr(len(depthCache))]
	if v := slot.Load(); v>>8 == uint64(pc) && v&0xff != 0 {
		return int(v & 0xff)
	}
	// The 0 after pc makes CallersFrames expand the frames inlined at pc.
	frames := runtime.CallersFrames([]uintptr{pc, 0})
	d := 0
	for {
		f, more := frames.Next()
		if f.PC != 0 {
			d++
		}
		if !more {
			break
		}
	}
	d = max(1, min(d, 255))
	if uint64(pc)>>56 == 0 {
		slot.Store(uint64(pc)<<8 | uint64(d))
	}
	return d
}
