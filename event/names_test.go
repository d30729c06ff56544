package event_test

import (
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/flightrec/flightrec/event"
)

// TestNamesBounded runs 10 M short-lived goroutines that name themselves
// and exit without forgetting their names (1 M with -short), with no
// recording running: the names' memory stays bounded. Under the race
// detector it runs 500,000 (that many took 20 s there).
func TestNamesBounded(t *testing.T) {
	total := 10_000_000
	switch {
	case raceEnabled:
		total = 500_000
	case testing.Short():
		total = 1_000_000
	}
	const wave = 1000
	run := func(from, to int) {
		var wg sync.WaitGroup
		for i := from; i < to; i += wave {
			for j := i; j < min(i+wave, to); j++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					event.SetGoroutineName("worker-"+strconv.Itoa(j), "job", strconv.Itoa(j))
				}()
			}
			wg.Wait()
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	// Past the registry's bound first, so that what follows is steady.
	warm := 200_000
	run(0, warm)
	before := heap()
	run(warm, total)
	after := heap()
	t.Logf("heap %d MB after %d goroutines, %d MB after %d", before>>20, warm, after>>20, total)
	// Unbounded, the names of the goroutines after the warm-up took about
	// 140 bytes each.
	if limit := before + 4<<20; after > limit {
		t.Errorf("heap grew from %d to %d bytes over %d named goroutines", before, after, total-warm)
	}
}
