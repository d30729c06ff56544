package pin

import (
	"sync"
	"testing"
)

// TestExclusive checks that no two goroutines hold the same slot at once:
// each increments its slot's counter non-atomically while pinned, which
// the race detector and the final count would catch.
func TestExclusive(t *testing.T) {
	if Linked && raceEnabled {
		t.Skip("the race detector does not know that procPin excludes other goroutines on the P")
	}
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
