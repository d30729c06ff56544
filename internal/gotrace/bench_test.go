package gotrace

import (
	"bytes"
	"io"
	"os"
	"runtime/trace"
	"sync"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"
)

var (
	benchOnce  sync.Once
	benchTrace []byte
)

// benchTraceEnv names a trace file the benchmarks read instead of tracing
// the workload: each test binary's own trace differs, and comparing two
// builds side by side needs the same input.
const benchTraceEnv = "GOTRACE_BENCH_TRACE"

// schedulerTrace traces a scheduler-heavy workload for 500 ms: goroutines
// handing requests to workers over channels, a contended mutex and a
// sync.Cond, as a server does; a trace like the design note's HTTP one.
// With $GOTRACE_BENCH_TRACE set, it is that file's trace instead.
func schedulerTrace(b testing.TB) []byte {
	benchOnce.Do(func() {
		if name := os.Getenv(benchTraceEnv); name != "" {
			data, err := os.ReadFile(name)
			if err != nil {
				b.Fatal(err)
			}
			benchTrace = data
			return
		}
		var buf bytes.Buffer
		if err := trace.Start(&buf); err != nil {
			b.Fatal(err)
		}
		stop := time.Now().Add(500 * time.Millisecond)
		reqs := make(chan chan int)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range reqs {
					mu.Lock()
					sink++
					mu.Unlock()
					r <- 1
				}
			}()
		}
		var cwg sync.WaitGroup
		for range 16 {
			cwg.Add(1)
			go func() {
				defer cwg.Done()
				r := make(chan int)
				for time.Now().Before(stop) {
					reqs <- r
					<-r
				}
			}()
		}
		cwg.Wait()
		close(reqs)
		wg.Wait()
		trace.Stop()
		benchTrace = buf.Bytes()
	})
	return benchTrace
}

// reportCPU reports the trace bytes read per second of the process's CPU
// time (cpu-MB/s) when the returned func runs: with GOMAXPROCS=1 this is
// the throughput on one core, which wall time on a shared machine is not.
func reportCPU(b *testing.B, size int) func() {
	start := cpuTime()
	return func() {
		if d := cpuTime() - start; d > 0 {
			b.ReportMetric(float64(size)*float64(b.N)/d.Seconds()/1e6, "cpu-MB/s")
		}
	}
}

// BenchmarkReadTrace is the peer: x/exp/trace reading every event and
// nothing else, the floor under any converter built on it.
func BenchmarkReadTrace(b *testing.B) {
	data := schedulerTrace(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer reportCPU(b, len(data))()
	for b.Loop() {
		r, err := xtrace.NewReader(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := r.ReadEvent()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReadTransitions is the floor under this converter: reading, and
// decoding every state transition (nearly every event of a scheduler
// trace), which the converter must do to know which goroutine blocked,
// woke or ran.
func BenchmarkReadTransitions(b *testing.B) {
	data := schedulerTrace(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer reportCPU(b, len(data))()
	n := 0
	for b.Loop() {
		r, err := xtrace.NewReader(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		for {
			ev, err := r.ReadEvent()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if ev.Kind() == xtrace.EventStateTransition {
				if st := ev.StateTransition(); st.Resource.Kind == xtrace.ResourceGoroutine {
					n++
				}
			}
		}
	}
	if n == 0 {
		b.Fatal("no goroutine transitions")
	}
}

// BenchmarkConvert converts the trace into events, without writing them.
func BenchmarkConvert(b *testing.B) {
	data := schedulerTrace(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer reportCPU(b, len(data))()
	for b.Loop() {
		if err := NewConverter(Options{}).Convert(bytes.NewReader(data), func(*Generation) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConvertJFR converts the trace into a recording, as `flightrec
// import` does (the goal: 30 MB/s of trace on one core).
func BenchmarkConvertJFR(b *testing.B) {
	data := schedulerTrace(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer reportCPU(b, len(data))()
	for b.Loop() {
		if err := Convert(bytes.NewReader(data), io.Discard, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
