package recorder

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
)

// loadRecording records to a file on tmpfs (/dev/shm when there is one,
// so the disk is not the limit) while body runs, and reports the share of
// events dropped, the share of the file that constant pools take, and how
// full the emitters handed their buffers off (handoff-fill-%: the pool
// holds that share of the events it has room for).
func loadRecording(b *testing.B, body func() int64) {
	dir := "/dev/shm"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = b.TempDir()
	}
	if d := os.Getenv("FLIGHTREC_BENCH_DIR"); d != "" {
		dir = d // a disk rather than tmpfs
	}
	// A name of its own: other runs of the benchmark may share the machine.
	f, err := os.CreateTemp(dir, "flightrec-bench-*.jfr")
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	path := f.Name()
	defer os.Remove(path)
	rec, err := Start(WithFile(path), WithSettings(Settings{
		"*": {Enabled: Bool(false)}, "bench.Event": {Enabled: Bool(true)},
	}))
	if err != nil {
		b.Fatal(err)
	}
	dropped0 := theSession.s.DroppedEvents.Load()
	for i := range phaseMax {
		phaseMax[i].Store(0)
	}
	phaseLog.Store(true)
	defer phaseLog.Store(false)
	// The gaps between flushpoints count from here.
	last := clock.Now()
	b.ResetTimer()
	emitted := body()
	b.StopTimer()
	dropped := theSession.s.DroppedEvents.Load() - dropped0
	buffers := theSession.s.Buffers()
	if err := rec.Stop(); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var pools, maxGap int64
	chunks := layout(b, data)
	for _, c := range chunks {
		pools += c.poolBytes
		for _, end := range c.flushEnds {
			maxGap = max(maxGap, end-last)
			last = end
		}
	}
	b.ReportMetric(float64(maxGap)/float64(theSession.tps)*1e3, "max-flush-gap-ms")
	if testing.Verbose() {
		// Where the longest gap went: the longest of each part of a flush.
		for i, name := range phaseNames {
			b.Logf("longest %s: %v", name, time.Duration(phaseMax[i].Load()))
		}
	}
	b.ReportMetric(100*float64(dropped)/float64(emitted), "drop-%")
	b.ReportMetric(100*float64(pools)/float64(len(data)), "pool-%")
	b.ReportMetric(float64(len(chunks)), "chunks")
	// How far the pool grew (growPool), from bufferCount.
	b.ReportMetric(float64(buffers), "buffers")
	if n := theSession.handedOff; n > 0 {
		b.ReportMetric(100*float64(theSession.handedOffBytes)/float64(n*batch.BufferSize), "handoff-fill-%")
	}
	b.ReportMetric(float64(emitted)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkManyGoroutines: 10,000 goroutines each emit an event every
// millisecond, for 5 s per op, into a file.
func BenchmarkManyGoroutines(b *testing.B) {
	const goroutines = 10000
	loadRecording(b, func() int64 {
		var emitted atomic.Int64
		for range b.N {
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := int64(0)
					for {
						select {
						case <-stop:
							emitted.Add(n)
							return
						default:
						}
						emitLoop(benchType, 1)
						n++
						time.Sleep(time.Millisecond)
					}
				}()
			}
			time.Sleep(5 * time.Second)
			close(stop)
			wg.Wait()
		}
		return emitted.Load()
	})
}

// BenchmarkCPUBoundGoroutines: 10,000 goroutines that never block, each
// emitting an event every 20,000 iterations of arithmetic, for 30 s per op
// (in 5 s the buffers absorb what a starved flusher does not write), into
// a file: max-flush-gap-ms shows whether the flushes keep their pace.
func BenchmarkCPUBoundGoroutines(b *testing.B) { cpuBound(b, 10000, 30*time.Second) }

// cpuBound runs n goroutines that never block, for d per op. Each stops
// itself once d has passed: a goroutine that sleeps, as the benchmark's
// own did, waits behind all of them for minutes once woken, and so did
// the run (557 s for 5 s).
func cpuBound(b *testing.B, n int, d time.Duration) {
	loadRecording(b, func() int64 {
		var emitted atomic.Int64
		for range b.N {
			end := time.Now().Add(d)
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n, x := int64(0), 0
					for time.Now().Before(end) {
						for i := range 20000 {
							x += i * i
						}
						emitLoop(benchType, 1)
						n++
					}
					spinSink += x
					emitted.Add(n)
				}()
			}
			wg.Wait()
		}
		return emitted.Load()
	})
}

// BenchmarkTightLoopFile: one goroutine emits flat out into a file on
// tmpfs.
func BenchmarkTightLoopFile(b *testing.B) {
	loadRecording(b, func() int64 {
		emitLoop(benchType, b.N)
		return int64(b.N)
	})
}

// BenchmarkTightLoopFileParallel: two goroutines emit flat out into a file
// on tmpfs (b.N events each).
func BenchmarkTightLoopFileParallel(b *testing.B) {
	loadRecording(b, func() int64 {
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				emitLoop(benchType, b.N)
			}()
		}
		wg.Wait()
		return 2 * int64(b.N)
	})
}
