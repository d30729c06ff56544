package recorder

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime/trace"
	"testing"

	"github.com/flightrec/flightrec/event"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

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

func emitBench(t *event.Type[benchEvent], i int) {
	ev := t.Begin()
	if ev.ShouldCommit() {
		ev.N, ev.S, ev.K = int64(i), "hello", 42
	}
	ev.Commit()
}

// record runs body under a file recording and reports the file's bytes
// per event.
func record(b *testing.B, events func() int, body func()) {
	path := filepath.Join(b.TempDir(), "bench.jfr")
	rec, err := Start(WithFile(path), WithSettings(Settings{
		"*": {Enabled: Bool(false)}, "bench.Event": {Enabled: Bool(true)}, "bench.StackEvent": {Enabled: Bool(true)},
	}))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	body()
	b.StopTimer()
	dropped := theSession.s.DroppedEvents.Load()
	if err := rec.Stop(); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path)
	b.ReportMetric(float64(st.Size())/float64(uint64(events())-dropped), "B/event")
	b.ReportMetric(float64(dropped)/float64(events()), "dropped/op")
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
		for i := 0; i < b.N; i++ {
			emitBench(benchType, i)
		}
	})
	b.Run("enabled", func(b *testing.B) {
		b.ReportAllocs()
		record(b, func() int { return b.N }, func() {
			for i := 0; i < b.N; i++ {
				emitBench(benchType, i)
			}
		})
	})
	b.Run("stack", func(b *testing.B) {
		b.ReportAllocs()
		record(b, func() int { return b.N }, func() {
			atDepth(38, func() {
				for i := 0; i < b.N; i++ {
					emitBench(benchStackType, i)
				}
			})
		})
	})
}

func BenchmarkEmitParallel(b *testing.B) {
	b.ReportAllocs()
	record(b, func() int { return b.N }, func() {
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				emitBench(benchType, i)
				i++
			}
		})
	})
}

type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

func BenchmarkPeer(b *testing.B) {
	b.Run("runtime-trace-log", func(b *testing.B) {
		b.ReportAllocs()
		if err := trace.Start(io.Discard); err != nil {
			b.Skip("trace already running:", err)
		}
		defer trace.Stop()
		ctx := context.Background()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			trace.Log(ctx, "cat", "hello world")
		}
	})
	b.Run("zerolog", func(b *testing.B) {
		b.ReportAllocs()
		zerolog.TimeFieldFormat = zerolog.TimeFormatUnixNano
		lg := zerolog.New(io.Discard).With().Timestamp().Logger()
		for i := 0; i < b.N; i++ {
			lg.Info().Int64("n", int64(i)).Str("s", "hello").Int("k", 42).Msg("event")
		}
	})
	b.Run("otel-sdk", func(b *testing.B) {
		b.ReportAllocs()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardExporter{}))
		defer tp.Shutdown(context.Background())
		tr := tp.Tracer("bench")
		ctx := context.Background()
		for i := 0; i < b.N; i++ {
			_, sp := tr.Start(ctx, "op", oteltrace.WithAttributes(
				attribute.Int64("n", int64(i)), attribute.String("s", "hello"), attribute.Int("k", 42)))
			sp.End()
		}
	})
}
