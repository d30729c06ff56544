package recorder

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestEmitWhilePoolsRebuild emits from many goroutines while garbage
// collections empty every sync.Pool and other goroutines take new pools'
// first values, which hold sync.Pool's global lock. The portable goroutine
// id (purego builds, platforms without the fast one) reads runtime.Stack
// through a sync.Pool: read while pinned, a contended lock there ended the
// process with "schedule: holding locks" (CI, TestConcurrentEmit under
// -tags purego).
func TestEmitWhilePoolsRebuild(t *testing.T) {
	rec, err := Start(WithRing(1<<20, 0), WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				emitCounted(100)
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := sync.Pool{New: func() any { return new(int) }}
				p.Put(p.Get())
			}
		}()
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		runtime.GC()
	}
	close(stop)
	wg.Wait()
}
