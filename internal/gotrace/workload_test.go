package gotrace

import (
	"bytes"
	"runtime"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hold is how long the workload keeps each goroutine waiting: well above
// DefaultThreshold.
const hold = 30 * time.Millisecond

// workloadCounts is what the workload does, per kind of wait.
const (
	mutexWaits  = 3
	rwWaits     = 2
	condWaits   = 2
	chanWaits   = 2
	wgWaits     = 1
	sleeps      = 2
	explicitGCs = 2
	shortLocks  = 200 // contended only for microseconds: below the threshold
)

var (
	traceOnce sync.Once
	traceData []byte
	traceErr  error
)

// workloadTrace returns a Go execution trace, taken once per test binary,
// of a workload with each kind of wait the converter maps, explicit GCs
// and the CPU profiler on.
func workloadTrace(t testing.TB) []byte {
	t.Helper()
	traceOnce.Do(func() {
		var buf bytes.Buffer
		// The CPU profiler at 1 kHz, without pprof's reader: the tracer
		// takes its samples. On a loaded machine, 100 Hz gives too few.
		runtime.SetCPUProfileRate(1000)
		defer runtime.SetCPUProfileRate(0)
		if err := trace.Start(&buf); err != nil {
			traceErr = err
			return
		}
		runWorkload()
		trace.Stop()
		traceData = buf.Bytes()
	})
	if traceErr != nil {
		t.Fatal(traceErr)
	}
	return traceData
}

//go:noinline
func lockMutex(mu *sync.Mutex) { mu.Lock() }

//go:noinline
func rlock(rw *sync.RWMutex) { rw.RLock() }

// workloadG is the id of the goroutine that ran the workload: the one
// that unlocks, signals and sends.
var workloadG int64

func runWorkload() {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	workloadG, _ = strconv.ParseInt(strings.Fields(string(buf))[1], 10, 64)
	// First: the profiler's samples reach the trace with a delay.
	burn(200 * time.Millisecond)
	var mu sync.Mutex
	for range mutexWaits {
		mu.Lock()
		done := make(chan struct{})
		go func() { lockMutex(&mu); mu.Unlock(); close(done) }()
		time.Sleep(hold) // the goroutine blocks in Lock meanwhile
		mu.Unlock()
		<-done
	}
	var rw sync.RWMutex
	for range rwWaits {
		rw.Lock()
		done := make(chan struct{})
		go func() { rlock(&rw); rw.RUnlock(); close(done) }()
		time.Sleep(hold)
		rw.Unlock()
		<-done
	}
	var cmu sync.Mutex
	cond := sync.NewCond(&cmu)
	for range condWaits {
		ready := false
		done := make(chan struct{})
		go func() {
			cmu.Lock()
			for !ready {
				cond.Wait()
			}
			cmu.Unlock()
			close(done)
		}()
		time.Sleep(hold)
		cmu.Lock()
		ready = true
		cond.Signal()
		cmu.Unlock()
		<-done
	}
	for range chanWaits {
		ch := make(chan int)
		go func() { time.Sleep(hold); ch <- 1 }()
		<-ch
	}
	for range wgWaits {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { time.Sleep(hold); wg.Done() }()
		wg.Wait()
	}
	for range sleeps {
		time.Sleep(hold)
	}
	for range explicitGCs {
		runtime.GC()
	}
	var short sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range shortLocks / 4 {
				short.Lock()
				sink++
				short.Unlock()
			}
		}()
	}
	wg.Wait()
}

var sink uint64

// burn keeps the CPU busy for d, for the CPU profiler's samples.
func burn(d time.Duration) {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}
