package stack

import (
	"bytes"
	"runtime"
	"sync"
)

// EnvStack is the environment variable that turns frame-pointer
// unwinding off: "callers" makes Capture use runtime.Callers.
const EnvStack = "FLIGHTREC_STACK"

// FramePointers tells whether Capture follows frame pointers (amd64,
// without -tags purego or FLIGHTREC_STACK=callers).
func FramePointers() bool { return framePointers }

// MaxDepth is the number of frames kept; deeper stacks are truncated.
const MaxDepth = 64

// PCs holds a captured stack: return addresses, innermost first, as
// runtime.Callers gives them (symbolise with runtime.CallersFrames).
type PCs [MaxDepth]uintptr

// Hash returns a 64-bit hash of pcs, never 0: FNV-1a over the words,
// then MurmurHash3's finaliser, so that every bit depends on every bit of
// the input (batch keeps 42 of them, and FNV's low bits depend only on
// the words' low bits; with a one-step finaliser, 2 of 400,000 two-word
// stacks shared their 42 bits).
func Hash(pcs []uintptr) uint64 {
	h := uint64(14695981039346656037)
	for _, pc := range pcs {
		h ^= uint64(pc)
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	if h == 0 {
		h = 1
	}
	return h
}

// goidSlow parses the goroutine id from runtime.Stack's first line,
// "goroutine 123 [running]:".
func goidSlow() uint64 {
	// runtime.Stack keeps its buffer, so one on this stack would move to
	// the heap on every call: the buffers are pooled instead.
	buf := stackBufs.Get().(*[64]byte)
	n := runtime.Stack(buf[:], false)
	var id uint64
	for _, c := range bytes.TrimPrefix(buf[:n], []byte("goroutine ")) {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	stackBufs.Put(buf)
	return id
}

var stackBufs = sync.Pool{New: func() any { return new([64]byte) }}
