package recorder

import (
	"io"
	"runtime/pprof"
	"testing"
	"time"
)

// BenchmarkCPUSamples measures what CPU sampling costs the workload of
// BenchmarkWorkload: without samples, with the recorder's perf-event
// sampler (one sample per 10 ms of CPU time) and, as the peer, with the
// Go CPU profiler at its 100 Hz, which the recorder used before.
func BenchmarkCPUSamples(b *testing.B) {
	b.Run("off", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			workSink += handlePlain(i)
		}
	})
	b.Run("perf-events", func(b *testing.B) {
		rec, err := Start(WithRing(64<<20, 0), WithSettings(Settings{
			"jdk.ExecutionSample": {Enabled: Bool(true), Period: Duration(10 * time.Millisecond)}}))
		if err != nil {
			b.Fatal(err)
		}
		defer rec.Stop()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			workSink += handlePlain(i)
		}
	})
	b.Run("go-cpu-profiler", func(b *testing.B) {
		if err := pprof.StartCPUProfile(io.Discard); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			workSink += handlePlain(i)
		}
	})
}
