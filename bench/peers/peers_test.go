package peers

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime/trace"
	"testing"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/jfr"
	"github.com/flightrec/flightrec/recorder"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// benchEvent is the event every benchmark here records: an int64, a
// string and an int32. Its Commit is generated, as a program that wants
// the fastest emit path would have it.
//
//go:generate sh -c "cd ../.. && go run ./cmd/flightrec gen -type benchEvent bench/peers"
type benchEvent struct {
	event.Instant
	N int64  `label:"N"`
	S string `label:"S"`
	K int32  `label:"K"`
}

var benchType = event.Define[benchEvent](event.Info{Name: "bench.Event", Label: "Bench"})

// BenchmarkFlightrec is the emit path, disabled and recording to an
// in-memory ring (a file would measure the disk), with the event written
// out at the call site as a program would.
func BenchmarkFlightrec(b *testing.B) {
	emit := func(n int) {
		for i := 0; i < n; i++ {
			var ev benchEvent
			benchType.Begin(&ev)
			if ev.ShouldCommit() {
				ev.N, ev.S, ev.K = int64(i), "hello", 42
			}
			ev.Commit()
		}
	}
	b.Run("disabled", func(b *testing.B) {
		b.ReportAllocs()
		emit(b.N)
	})
	// enabled records to a fresh ring, so its B/op is the ring's first
	// fill (the chunks' memory, allocated as the ring grows to its size)
	// spread over b.N, and the flusher faults that memory in beside the
	// emitter. enabled-full-ring fills the ring first, then measures, as a
	// flight recorder runs from its first ringSize of events on: the ring
	// takes each new chunk's memory from the chunk it drops.
	b.Run("enabled", func(b *testing.B) { recordRing(b, emit, 0) })
	b.Run("enabled-full-ring", func(b *testing.B) { recordRing(b, emit, 2*ringSize/16) })
}

// ringSize is the size of the ring the enabled benchmarks record to.
const ringSize = 64 << 20

// recordRing runs emit(b.N) while recording to a ring, after fill events
// (the benchmark's event takes 16 bytes), and reports the bytes per event
// of the recording it dumps.
func recordRing(b *testing.B, emit func(n int), fill int) {
	b.ReportAllocs()
	rec, err := recorder.Start(recorder.WithRing(ringSize, 0), recorder.WithSettings(recorder.Settings{
		"*": {Enabled: recorder.Bool(false)}, "bench.Event": {Enabled: recorder.Bool(true)},
	}))
	if err != nil {
		b.Fatal(err)
	}
	emit(fill)
	b.ResetTimer()
	emit(b.N)
	b.StopTimer()
	var dump bytes.Buffer
	if err := rec.Dump(&dump); err != nil {
		b.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		b.Fatal(err)
	}
	n := countEvents(b, dump.Bytes(), "bench.Event")
	if n == 0 {
		b.Fatal("no bench.Event recorded")
	}
	b.ReportMetric(float64(dump.Len())/float64(n), "B/event")
}

// countEvents counts the events named name in a recording.
func countEvents(b *testing.B, data []byte, name string) int {
	r := jfr.NewBytesReader(data, nil)
	var ev jfr.Event
	n := 0
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			b.Fatalf("read the recording: %v", err)
		}
		if ev.Type.Name == name {
			n++
		}
	}
}

type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkPeer records the same three values with each peer.
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
