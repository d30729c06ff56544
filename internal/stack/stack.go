package stack

import (
	"bytes"
	"runtime"
	"strconv"
)

// MaxDepth is the number of frames kept; deeper stacks are truncated.
const MaxDepth = 64

// PCs holds a captured stack: return addresses, innermost first, as
// runtime.Callers gives them (symbolise with runtime.CallersFrames).
type PCs [MaxDepth]uintptr

// Hash returns a 64-bit FNV-1a-style hash of pcs, never 0.
func Hash(pcs []uintptr) uint64 {
	h := uint64(14695981039346656037)
	for _, pc := range pcs {
		h ^= uint64(pc)
		h *= 1099511628211
	}
	h ^= h >> 29
	if h == 0 {
		h = 1
	}
	return h
}

// goidSlow parses the goroutine id from runtime.Stack's first line.
func goidSlow() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	s := buf[:n]
	s = bytes.TrimPrefix(s, []byte("goroutine "))
	if i := bytes.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, _ := strconv.ParseUint(string(s), 10, 64)
	return id
}
