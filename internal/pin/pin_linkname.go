//go:build !flightrec_nolinkname && !race

package pin

import (
	"runtime"
	_ "unsafe" // go:linkname
)

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// Linked tells whether this build pins to the current P.
const Linked = true

// Shards returns how many slots Pin may return: P ids are below
// GOMAXPROCS. A later GOMAXPROCS increase gives larger ids; callers check
// the bound.
func Shards() int { return max(runtime.GOMAXPROCS(0), runtime.NumCPU()) }

// Pin disables preemption and returns the current P's id.
//
//go:nosplit
func Pin() int { return procPin() }

// Unpin ends what Pin began.
//
//go:nosplit
func Unpin(int) { procUnpin() }

// Quiesce returns once every goroutine that was pinned when it was called
// has unpinned: it stops the world (through ReadMemStats, about 0.1 ms),
// which waits for pinned goroutines, as they cannot be preempted.
func Quiesce() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
}
