package jfr

import (
	"errors"
	"io"
	"testing"
)

// BenchmarkDecode decodes every field of every event (and every constant of
// every pool) of a JDK 17 recording held in memory. "fresh" reads each pass
// with a new Reader; "reset" reuses one through Reset, as a program reading
// many recordings does.
func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"jdk17-sample.jfr.gz", "jdk17-sample-multichunk.jfr.gz"} {
		data := openTestdata(b, name)
		for _, reuse := range []bool{false, true} {
			mode := "fresh"
			if reuse {
				mode = "reset"
			}
			b.Run(name[:len(name)-len(".jfr.gz")]+"/"+mode, func(b *testing.B) {
				benchmarkDecode(b, data, reuse)
			})
		}
	}
}

func benchmarkDecode(b *testing.B, data []byte, reuse bool) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var ev Event
	events := 0
	r := NewReader(nil, nil)
	for b.Loop() {
		if reuse {
			r.Reset(bytesReader(data))
		} else {
			r = NewReader(bytesReader(data), nil)
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
