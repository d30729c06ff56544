package batch

import (
	"sync/atomic"

	"github.com/flightrec/flightrec/internal/stack"
)

// Sizes of a buffer. 128 KiB holds a few thousand small events; the sets
// hold the distinct goroutines and stacks one buffer may refer to before it
// is handed off early.
const (
	BufferSize = 128 << 10
	setSize    = 256 // power of two
	setLimit   = setSize * 3 / 4
	stackWords = 8 << 10
)

// Buffer is a per-P buffer of encoded event records.
type Buffer struct {
	Data []byte
	// Threads lists the goroutine ids the events refer to, each once.
	Threads []uint64
	// Stacks holds the stack traces the events refer to, each once, as
	// key, depth, pcs..., key, depth, pcs...
	Stacks []uintptr

	lastG     uint64
	threadSet [setSize]uint64
	stackSet  [setSize]uint64
	nstacks   int
}

// NewBuffer allocates an empty buffer.
func NewBuffer() *Buffer {
	return &Buffer{
		Data:    make([]byte, 0, BufferSize),
		Threads: make([]uint64, 0, setLimit),
		Stacks:  make([]uintptr, 0, stackWords),
	}
}

// Reset empties b for reuse.
func (b *Buffer) Reset() {
	b.Data = b.Data[:0]
	b.Threads = b.Threads[:0]
	b.Stacks = b.Stacks[:0]
	b.lastG = 0
	b.threadSet = [setSize]uint64{}
	b.stackSet = [setSize]uint64{}
	b.nstacks = 0
}

// Fits tells whether n more bytes fit.
func (b *Buffer) Fits(n int) bool { return len(b.Data)+n <= cap(b.Data) }

// AddThread notes that an event refers to goroutine g (g > 0). It returns
// false if the buffer's thread set is full.
func (b *Buffer) AddThread(g uint64) bool {
	if g == b.lastG {
		return true
	}
	for i := g * 0x9E3779B97F4A7C15 >> 56 & (setSize - 1); ; i = (i + 1) & (setSize - 1) {
		switch b.threadSet[i] {
		case g:
			b.lastG = g
			return true
		case 0:
			if len(b.Threads) >= setLimit {
				return false
			}
			b.threadSet[i] = g
			b.Threads = append(b.Threads, g)
			b.lastG = g
			return true
		}
	}
}

// AddStack notes that an event refers to the stack pcs with the given key
// (non-zero). It returns false if the buffer has no room for it.
func (b *Buffer) AddStack(key uint64, pcs []uintptr) bool {
	for i := key & (setSize - 1); ; i = (i + 1) & (setSize - 1) {
		switch b.stackSet[i] {
		case key:
			return true
		case 0:
			if b.nstacks >= setLimit || len(b.Stacks)+2+len(pcs) > cap(b.Stacks) {
				return false
			}
			b.stackSet[i] = key
			b.nstacks++
			b.Stacks = append(b.Stacks, uintptr(key), uintptr(len(pcs)))
			b.Stacks = append(b.Stacks, pcs...)
			return true
		}
	}
}

// StackKey is the pool key of a stack: 42 bits of its hash (6-byte
// varints; a collision among 10,000 distinct stacks in a chunk has odds of
// about 1 in 100,000), never 0.
func StackKey(pcs []uintptr) uint64 { return stack.Hash(pcs)&(1<<42-1) | 1 }

// Slot is one P's buffer and the word that guards it.
type Slot struct {
	lock atomic.Uint32
	Buf  *Buffer
	_    [48]byte // keep slots on separate cache lines
}

// TryLock takes the slot; it fails only while the flusher holds it.
func (s *Slot) TryLock() bool { return s.lock.CompareAndSwap(0, 1) }

// Unlock releases the slot.
func (s *Slot) Unlock() { s.lock.Store(0) }
