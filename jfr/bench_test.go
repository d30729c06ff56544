package jfr

import (
	"errors"
	"io"
	"testing"
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
