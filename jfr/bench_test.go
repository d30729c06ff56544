package jfr

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/spec"
)

// BenchmarkDecode decodes every field of every event (and every constant of
// every pool) of a JDK 17 recording held in memory. "bytes" reads it in
// place with NewBytesReader (as the CLI reads a mapped file); "stream" reads
// it through an io.Reader with a new Reader each pass; "reset" reuses one
// Reader through Reset, as a program reading many streams does.
func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"jdk17-sample.jfr.gz", "jdk17-sample-multichunk.jfr.gz"} {
		data := openTestdata(b, name)
		for _, mode := range []string{"bytes", "stream", "reset"} {
			b.Run(name[:len(name)-len(".jfr.gz")]+"/"+mode, func(b *testing.B) {
				benchmarkDecode(b, data, mode)
			})
		}
	}
}

func benchmarkDecode(b *testing.B, data []byte, mode string) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var ev Event
	events := 0
	r := NewReader(nil, nil)
	for b.Loop() {
		switch mode {
		case "bytes":
			r = NewBytesReader(data, nil)
		case "stream":
			r = NewReader(bytesReader(data), nil)
		case "reset":
			r.Reset(bytesReader(data))
		}
		for {
			err := r.ReadEvent(&ev)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			events++
		}
	}
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

// BenchmarkRecords walks the record headers only, as `summary` does.
func BenchmarkRecords(b *testing.B) {
	data := openTestdata(b, "jdk17-sample-multichunk.jfr.gz")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytesReader(data), nil)
		for {
			_, err := r.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDispatchBatch walks a flush of one row of go.A events (one-byte
// headers) with a batch handler that takes every event, as a recorder's
// stream does with OnEvents: "fixed" records all of one size (fields of
// fixed width), "jitter" records of two sizes in random order (a varint
// that often crosses a byte), "varied" sizes spread over 40 bytes at
// random (strings of any length). The walk's cost an event depends on how
// often a record's size differs from the one before.
func BenchmarkDispatchBatch(b *testing.B) {
	for _, sizes := range []struct {
		name   string
		spread int
	}{{"fixed", 1}, {"jitter", 2}, {"varied", 40}} {
		b.Run(sizes.name, func(b *testing.B) { benchDispatchBatch(b, sizes.spread) })
	}
}

func benchDispatchBatch(b *testing.B, spread int) {
	const events = 1 << 16
	md, data, header := batchRowChunk(b, events, spread)
	live := NewLiveChunk(nil)
	live.Start(0, 0)
	if _, err := live.Extend(header, data); err != nil {
		b.Fatal(err)
	}
	var h EventHandlers
	handled := 0
	h.SetBatch(md.ClassByName("go.A").ID, []func(*EventBatch){func(b *EventBatch) {
		for range b.Events() {
			handled++
		}
	}})
	var ev Event
	for b.Loop() {
		if err := live.Dispatch(HeaderSize, int64(len(data)), &h, &ev); err != nil {
			b.Fatal(err)
		}
	}
	if handled != b.N*events {
		b.Fatalf("handled %d events, want %d", handled, b.N*events)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(handled), "ns/event")
}

// batchRowChunk returns a chunk of n go.A events (a long and a string of
// 1 to spread bytes, chosen at random) written in one flush, its metadata
// and its header.
func batchRowChunk(b *testing.B, n, spread int) (*Metadata, []byte, []byte) {
	mb := NewMetadataBuilder()
	if _, err := mb.AddEvent(EventType{Name: "go.A", Fields: []FieldType{{Name: "n", Type: spec.Long}, {Name: "s", Type: spec.String}}}); err != nil {
		b.Fatal(err)
	}
	md, err := mb.Build()
	if err != nil {
		b.Fatal(err)
	}
	a := md.ClassByName("go.A")
	buf := new(bytes.Buffer)
	w := NewWriter(buf, &WriterOptions{StartNanos: testStartNanos, StartTicks: testStartTicks})
	if err := w.SetMetadata(md); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	long := strings.Repeat("x", spread)
	for i := range n {
		payload := AppendString(leb128.AppendUvarint(leb128.AppendUvarint(nil, testStartTicks+uint64(i)), 100), long[:1+rng.IntN(spread)])
		if err := w.WriteRecords(AppendRecord(nil, a.ID, payload)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flushpoint(int64(testStartTicks) + int64(n)); err != nil {
		b.Fatal(err)
	}
	return md, buf.Bytes(), w.Header()
}
