package gotrace

import (
	"bytes"
	"testing"
)

// BenchmarkConvertThreadTimeline is BenchmarkConvert with the thread
// timeline the recorder asks for while it takes CPU samples: its cost is
// the difference between the two, run side by side.
func BenchmarkConvertThreadTimeline(b *testing.B) {
	data := schedulerTrace(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	runs := 0
	for b.Loop() {
		c := NewConverter(Options{Timeline: func(tl *ThreadTimeline) { runs += len(tl.Running) }})
		err := c.Convert(bytes.NewReader(data), func(g *Generation) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(runs)/float64(b.N), "runs/op")
}
