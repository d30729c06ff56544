//go:build flightrec_nolinkname || race

package pin

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Linked tells whether this build pins to the current P.
const Linked = false

type shard struct {
	busy atomic.Uint32
	_    [60]byte // own cache line
}

var shards = make([]shard, nextPow2(4*runtime.NumCPU()))

func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// Shards returns how many slots Pin may return.
func Shards() int { return len(shards) }

// Pin takes a free slot, starting from one chosen by the goroutine's stack
// address (stable for a goroutine, spread across goroutines), and returns
// its index.
func Pin() int {
	var x byte
	mask := uintptr(len(shards) - 1)
	i := (uintptr(unsafe.Pointer(&x)) >> 13) * 0x9E3779B97F4A7C15 >> 40 & mask
	for {
		for n := uintptr(0); n <= mask; n++ {
			j := (i + n) & mask
			if shards[j].busy.CompareAndSwap(0, 1) {
				return int(j)
			}
		}
		runtime.Gosched()
	}
}

// Unpin releases slot i.
func Unpin(i int) { shards[i].busy.Store(0) }

// Quiesce returns once every goroutine that was pinned when it was called
// has unpinned: it takes each slot in turn.
func Quiesce() {
	for i := range shards {
		for !shards[i].busy.CompareAndSwap(0, 1) {
			runtime.Gosched()
		}
		shards[i].busy.Store(0)
	}
}
