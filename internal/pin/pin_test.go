package pin

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestExclusive checks that no two goroutines hold the same slot at once:
// each increments its slot's counter non-atomically while pinned, which
// the race detector and the final count would catch.
func TestExclusive(t *testing.T) {
	counts := make([]int, Shards())
	const workers, iters = 8, 20000
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range iters {
				p := Pin()
				if p < len(counts) {
					counts[p]++
				}
				Unpin(p)
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	if total != workers*iters {
		t.Fatalf("total %d, want %d (linked=%v)", total, workers*iters, Linked)
	}
}

// TestQuiesce checks that Quiesce waits for a goroutine that is pinned.
func TestQuiesce(t *testing.T) {
	var state atomic.Int32 // 1: pinned, 2: unpinned
	go func() {
		p := Pin()
		state.Store(1)
		for i := 0; i < 20_000_000; i++ { // a few ms while pinned
			spin += i
		}
		state.Store(2)
		Unpin(p)
	}()
	for state.Load() == 0 {
		runtime.Gosched()
	}
	Quiesce()
	if s := state.Load(); s != 2 {
		t.Fatalf("Quiesce returned while a goroutine was pinned (state %d)", s)
	}
}

var spin int
