package recorder

import (
	"bytes"
	"crypto/sha256"
	"slices"
	"testing"
	"time"

	"github.com/flightrec/flightrec/event"
)

// benchEvent's Commit is generated (benchevent_flightrec_test.go), as a
// program that wants the fastest emit path would have it.
//
//go:generate go run ../cmd/flightrec gen -type benchEvent
type benchEvent struct {
	event.Instant
	N int64  `label:"N"`
	S string `label:"S"`
	K int32  `label:"K"`
}

var (
	benchType      = event.Define[benchEvent](event.Info{Name: "bench.Event", Label: "Bench"})
	benchStackType = event.Define[benchEvent](event.Info{Name: "bench.StackEvent", Label: "Bench with stack", StackTrace: true})
)

// emitLoop emits n events of type t, written out at the call site as a
// program would (a helper function would add a call to each event).
func emitLoop(t *event.Type[benchEvent], n int) {
	for i := 0; i < n; i++ {
		var ev benchEvent
		t.Begin(&ev)
		if ev.ShouldCommit() {
			ev.N, ev.S, ev.K = int64(i), "hello", 42
		}
		ev.Commit()
	}
}

// record runs body under an in-memory (ring) recording and reports the
// bytes per event of the recording it dumps, and the events dropped per
// op. Not a file: this machine's disk, and even tmpfs (fresh pages fault
// in at about 400 MB/s in this VM), absorb less than an emit loop produces
// (over 500 MB/s), so a file recording would measure the disk.
func record(b *testing.B, body func()) {
	rec, err := Start(WithRing(64<<20, 0), WithSettings(Settings{
		"*": {Enabled: Bool(false)}, "bench.Event": {Enabled: Bool(true)}, "bench.StackEvent": {Enabled: Bool(true)},
	}))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	body()
	b.StopTimer()
	dropped := theSession.s.DroppedEvents.Load()
	var dump bytes.Buffer
	if err := rec.Dump(&dump); err != nil {
		b.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		b.Fatal(err)
	}
	counts := readEvents(b, dump.Bytes())
	b.ReportMetric(float64(dump.Len())/float64(counts["bench.Event"]+counts["bench.StackEvent"]), "B/event")
	b.ReportMetric(float64(dropped)/float64(b.N), "dropped/op")
}

//go:noinline
func atDepth(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	atDepth(n-1, f)
}

func BenchmarkEmit(b *testing.B) {
	b.Run("disabled", func(b *testing.B) {
		b.ReportAllocs()
		emitLoop(benchType, b.N)
	})
	b.Run("enabled", func(b *testing.B) {
		b.ReportAllocs()
		record(b, func() { emitLoop(benchType, b.N) })
	})
	// The same event through the generic Commit, which the generated
	// one shadows.
	b.Run("enabled-generic", func(b *testing.B) {
		b.ReportAllocs()
		record(b, func() {
			for i := 0; i < b.N; i++ {
				var ev benchEvent
				benchType.Begin(&ev)
				if ev.ShouldCommit() {
					ev.N, ev.S, ev.K = int64(i), "hello", 42
				}
				ev.Instant.Commit()
			}
		})
	})
	b.Run("stack", func(b *testing.B) {
		b.ReportAllocs()
		record(b, func() {
			atDepth(38, func() { emitLoop(benchStackType, b.N) })
		})
	})
}

func BenchmarkEmitParallel(b *testing.B) {
	b.ReportAllocs()
	record(b, func() {
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				var ev benchEvent
				benchType.Begin(&ev)
				if ev.ShouldCommit() {
					ev.N, ev.S, ev.K = int64(i), "hello", 42
				}
				ev.Commit()
				i++
			}
		})
	})
}

// The seed's success metric: a CPU-bound workload with its instrumentation
// compiled in but disabled runs as fast as without it. Each op is one
// "request": hash a payload, then sort and sum the hash's bytes; the
// instrumented handler wraps it in a timed event with three fields.

type requestEvent struct {
	event.Timed
	Route string `label:"Route"`
	Size  int64  `label:"Size" content:"bytes"`
	Sum   int64  `label:"Checksum"`
}

var (
	requestType = event.Define[requestEvent](event.Info{Name: "bench.Request", Label: "Request"})
	payloads    = func() [][]byte {
		p := make([][]byte, 64)
		for i := range p {
			p[i] = bytes.Repeat([]byte{byte(i), byte(i * 7)}, 256)
		}
		return p
	}()
	workSink uint64
)

//go:noinline
func serve(i int) uint64 {
	sum := sha256.Sum256(payloads[i&63])
	s := sum[:]
	slices.Sort(s)
	var t uint64
	for _, b := range s {
		t = t*31 + uint64(b)
	}
	return t
}

//go:noinline
func handlePlain(i int) uint64 { return serve(i) }

//go:noinline
func handleInstrumented(i int) uint64 {
	var ev requestEvent
	requestType.Begin(&ev)
	t := serve(i)
	if ev.ShouldCommit() {
		ev.Route, ev.Size, ev.Sum = "/checksum", int64(len(payloads[i&63])), int64(t)
	}
	ev.Commit()
	return t
}

func BenchmarkWorkload(b *testing.B) {
	b.Run("plain", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			workSink += handlePlain(i)
		}
	})
	b.Run("instrumented-disabled", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			workSink += handleInstrumented(i)
		}
	})
	// The two handlers alternate in rounds of 256 requests, each first in
	// turn, so that drift in the machine's speed (several percent over a
	// run here) falls on both alike; the overhead is reported as a metric.
	b.Run("interleaved", func(b *testing.B) {
		const round = 256
		var plain, instr time.Duration
		for n := 0; n < b.N; n += 2 * round {
			for k := range 2 {
				t0 := time.Now()
				if k == n/(2*round)%2 {
					for i := range round {
						workSink += handlePlain(n + i)
					}
					plain += time.Since(t0)
				} else {
					for i := range round {
						workSink += handleInstrumented(n + i)
					}
					instr += time.Since(t0)
				}
			}
		}
		b.ReportMetric(100*(float64(instr)/float64(plain)-1), "disabled-overhead-%")
	})
	b.Run("instrumented-enabled", func(b *testing.B) {
		rec, err := Start(WithRing(64<<20, 0), WithSettings(Settings{"bench.Request": {Enabled: Bool(true)}}))
		if err != nil {
			b.Fatal(err)
		}
		defer rec.Stop()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			workSink += handleInstrumented(i)
		}
	})
}
