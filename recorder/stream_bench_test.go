package recorder

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightrec/flightrec/jfr"
)

// BenchmarkStream measures what a stream adds to the emitting program:
// "enabled" is BenchmarkEmit/enabled (an in-memory recording of the
// event), run beside "enabled+stream", the same with a stream whose
// handler takes every event. The stream reads the chunks back on its own
// goroutine; chunks it cannot keep up with are dropped and reported
// (stream-dropped-chunks).
func BenchmarkStream(b *testing.B) {
	b.Run("enabled", func(b *testing.B) {
		b.ReportAllocs()
		record(b, func() { emitLoop(benchType, b.N) })
	})
	// A stream whose handler takes another event type: the chunks are
	// copied and their records walked, none decoded.
	b.Run("enabled+stream-other", func(b *testing.B) { benchStream(b, "test.Counted") })
	b.Run("enabled+stream", func(b *testing.B) { benchStream(b, "bench.Event") })
}

func benchStream(b *testing.B, handledType string) {
	b.ReportAllocs()
	st := NewStream(WithSettings(Settings{"*": {Enabled: Bool(false)}, "bench.Event": {Enabled: Bool(true)}}))
	var handled atomic.Int64
	st.OnEvent(handledType, func(*jfr.Event) { handled.Add(1) })
	if err := st.Start(); err != nil {
		b.Fatal(err)
	}
	record(b, func() { emitLoop(benchType, b.N) })
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(handled.Load())/float64(b.N), "handled/op")
	b.ReportMetric(float64(st.dropped.Load()), "stream-dropped-chunks")
}

// BenchmarkStreamLatency measures the time from Commit to the handler at
// the default chunk age (1 s): one event every 5 ms, the handler noting
// how long after its start time it runs.
func BenchmarkStreamLatency(b *testing.B) {
	st := NewStream(WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	var sum, maxNs, n atomic.Int64
	st.OnEvent("test.Counted", func(ev *jfr.Event) {
		d := time.Since(ev.StartTime()).Nanoseconds()
		sum.Add(d)
		n.Add(1)
		for {
			m := maxNs.Load()
			if d <= m || maxNs.CompareAndSwap(m, d) {
				break
			}
		}
	})
	if err := st.Start(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		emitCounted(1, i)
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	if n.Load() > 0 {
		b.ReportMetric(float64(sum.Load())/float64(n.Load())/1e6, "mean-ms")
		b.ReportMetric(float64(maxNs.Load())/1e6, "max-ms")
	}
	b.ReportMetric(float64(n.Load())/float64(b.N), "handled/op")
}
