package recorder

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/flightrec/flightrec/jfr"
)

// BenchmarkStreamPerEvent measures a stream's own work for each event a
// handler takes, without the emitting program, its recordings and the
// chunk cuts of a stream's Start and Close: the chunk writer's deliver
// (the copy of the flush) and the stream goroutine's dispatch (the walk,
// the event, the handler call), one flush of a chunk of bench.Events at a
// time. cpu-ns/event counts the process's CPU time, which other processes
// inflate less than the elapsed time; BenchmarkStream measures the whole.
// "each" has an event handler (OnEvent), "batch" a batch handler
// (OnEvents) that takes each event in its loop.
func BenchmarkStreamPerEvent(b *testing.B) {
	chunk := benchChunk(b, 1<<18)
	b.Run("each", func(b *testing.B) { benchStreamPerEvent(b, chunk, false) })
	b.Run("batch", func(b *testing.B) { benchStreamPerEvent(b, chunk, true) })
}

func benchStreamPerEvent(b *testing.B, chunk []byte, batch bool) {
	st := NewStream()
	var handled int64
	if batch {
		st.OnEvents("bench.Event", func(b *jfr.EventBatch) {
			for range b.Events() {
				handled++
			}
		})
	} else {
		st.OnEvent("bench.Event", func(*jfr.Event) { handled++ })
	}
	flushed := make(chan struct{})
	st.OnFlush(func() { flushed <- struct{}{} })
	st.flushes = make(chan streamFlush, streamBacklog)
	st.spare = make(chan []byte, 2)
	st.done = make(chan struct{})
	go st.run()
	seg := segment{first: true, parts: [][]byte{chunk}, header: chunk[:jfr.HeaderSize], closed: true}
	cpu := func() time.Duration { u, s := processCPU(); return u + s }
	b.ResetTimer()
	c0 := cpu()
	for range b.N {
		st.deliver(seg)
		<-flushed
	}
	used := cpu() - c0
	b.StopTimer()
	close(st.flushes)
	<-st.done
	b.ReportMetric(float64(used.Nanoseconds())/float64(handled), "cpu-ns/event")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(handled), "ns/event")
	b.ReportMetric(float64(handled)/float64(b.N), "events/op")
}

// benchChunk returns the largest chunk of a ring recording of n bench.Events.
func benchChunk(b *testing.B, n int) []byte {
	rec, err := Start(WithRing(64<<20, 0), WithSettings(Settings{"*": {Enabled: Bool(false)}, "bench.Event": {Enabled: Bool(true)}}))
	if err != nil {
		b.Fatal(err)
	}
	emitLoop(benchType, n)
	var buf bytes.Buffer
	if err := rec.Dump(&buf); err != nil {
		b.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		b.Fatal(err)
	}
	var best []byte
	for data := buf.Bytes(); len(data) >= jfr.HeaderSize; {
		size := int(binary.BigEndian.Uint64(data[8:]))
		if size > len(best) {
			best = data[:size]
		}
		data = data[size:]
	}
	return best
}
