package recorder

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightrec/flightrec/jfr"
)

// BenchmarkStream measures what a stream adds to the cost of an enabled
// event for the emitting program. The machine's speed drifts (other
// processes), so rounds alternate: a round of roundEvents events under an
// in-memory recording alone, then one with a stream running too; each op
// is one such pair. stream-added-% is the median of the pairs' added cost
// over the cost alone in elapsed time, up to the last event emitted;
// stream-cpu-added-% is the same for the process's CPU time (every
// goroutine's), which contention from other processes does not inflate as
// it does the elapsed time, up to a flushpoint after the round that the
// stream has handled: each round's events are written, and a stream's
// handled, inside its window. The stream is started, and its first flush
// handled, before its round, and closed after it: what a stream costs
// once (its Start and Close each cut the recordings' chunk, and it reads
// the chunk's metadata) is stream-start-close-cpu-ms, not spread over the
// events. "decode-all" has a handler take every event (the stream hands
// each over); "decode-all-batch" the same with a batch handler
// (OnEvents), which takes each event of a row in a loop of its own;
// "other-type" handles another type (each flush's records walked, none
// handed over).
func BenchmarkStream(b *testing.B) {
	b.Run("decode-all", func(b *testing.B) { benchStream(b, "bench.Event", false) })
	b.Run("decode-all-batch", func(b *testing.B) { benchStream(b, "bench.Event", true) })
	b.Run("other-type", func(b *testing.B) { benchStream(b, "test.Counted", false) })
}

const roundEvents = 1 << 21

func benchStream(b *testing.B, handledType string, batch bool) {
	only := Settings{"*": {Enabled: Bool(false)}, "bench.Event": {Enabled: Bool(true)}}
	rec, err := Start(WithRing(64<<20, 0), WithSettings(only))
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Stop()
	var alone, with []float64
	// Handlers run one at a time on the stream's goroutine, which Close
	// waits for: a plain counter, so that the benchmark measures the
	// stream rather than an atomic add in its handler, published at each
	// flush for the rounds to wait on.
	var handled int64
	var published, flushes atomic.Int64
	flushed := make(chan struct{}, 1)
	var dropped, copied, lent int64
	// The process's CPU time per event too: what the stream's goroutine
	// and the recorder take, whatever other processes the cores run.
	var cpuAlone, cpuWith, startClose []float64
	cpu := func() time.Duration { u, s := processCPU(); return u + s }
	// waitFor waits until st has handled n events and f flushes, or, if
	// it dropped a flush (it fell behind), until it has handled what it
	// kept: its backlog empty and no flush handled for 100 ms.
	waitFor := func(st *Stream, n, f int64) {
		timeout := time.After(10 * time.Second)
		for published.Load() < n || flushes.Load() < f {
			select {
			case <-flushed:
			case <-time.After(100 * time.Millisecond):
				if st.dropped.Load() > 0 && len(st.flushes) == 0 {
					return
				}
			case <-timeout:
				b.Fatalf("the stream handled %d events in %d flushes, not %d in %d", published.Load(), flushes.Load(), n, f)
			}
		}
	}
	// lost counts the events the recorder dropped (no buffer free when
	// emitted): the stream cannot handle them, so a round with a stream
	// waits for the others only.
	var lost uint64
	round := func(cpuTimes *[]float64, st *Stream) float64 {
		start, c0 := time.Now(), cpu()
		want := published.Load()
		d0 := theSession.s.DroppedEvents.Load()
		emitLoop(benchType, roundEvents)
		elapsed := time.Since(start)
		d := theSession.s.DroppedEvents.Load() - d0
		lost += d
		if handledType == "bench.Event" {
			want += roundEvents - int64(d)
		}
		f := flushes.Load()
		theSession.flushNow()
		if st != nil {
			// The round's events handled, and a flush since the
			// flushpoint (with nothing queued, the flushpoint's).
			waitFor(st, want, f+1)
		}
		*cpuTimes = append(*cpuTimes, float64((cpu()-c0).Nanoseconds())/roundEvents)
		return float64(elapsed.Nanoseconds()) / roundEvents
	}
	for range b.N {
		alone = append(alone, round(&cpuAlone, nil))
		c0 := cpu()
		st := NewStream(WithSettings(only))
		if batch {
			st.OnEvents(handledType, func(b *jfr.EventBatch) {
				for range b.Events() {
					handled++
				}
			})
		} else {
			st.OnEvent(handledType, func(*jfr.Event) { handled++ })
		}
		st.OnFlush(func() {
			published.Store(handled)
			flushes.Add(1)
			select {
			case flushed <- struct{}{}:
			default:
			}
		})
		flushes.Store(0)
		if err := st.Start(); err != nil {
			b.Fatal(err)
		}
		theSession.flushNow()
		waitFor(st, 0, 1)
		c1 := cpu()
		with = append(with, round(&cpuWith, st))
		c2 := cpu()
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		startClose = append(startClose, float64((c1-c0+cpu()-c2).Microseconds())/1000)
		dropped += st.dropped.Load()
		copied += st.copied.Load()
		lent += st.lent.Load()
	}
	added := make([]float64, len(alone))
	for i := range alone {
		added[i] = 100 * (with[i] - alone[i]) / alone[i]
	}
	b.ReportMetric(median(alone), "alone-ns/event")
	b.ReportMetric(median(with), "stream-ns/event")
	b.ReportMetric(median(added), "stream-added-%")
	for i := range cpuAlone {
		cpuWith[i] = 100 * (cpuWith[i] - cpuAlone[i]) / cpuAlone[i]
	}
	b.ReportMetric(median(cpuWith), "stream-cpu-added-%")
	b.ReportMetric(median(startClose), "stream-start-close-cpu-ms")
	b.ReportMetric(float64(handled)/float64(b.N*roundEvents), "handled/event")
	b.ReportMetric(float64(dropped)/float64(b.N), "stream-dropped-flushes/op")
	b.ReportMetric(float64(lost)/float64(b.N), "recorder-dropped-events/op")
	b.ReportMetric(float64(copied)/float64(b.N*roundEvents), "stream-copied-B/event")
	b.ReportMetric(float64(lent)/float64(b.N*roundEvents), "stream-lent-B/event")
}

func median(v []float64) float64 { return quantile(v, 0.5) }

// quantile is v's q-quantile, interpolated between the nearest ranks.
func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	x := q * float64(len(s)-1)
	i := int(x)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (x-float64(i))*(s[i+1]-s[i])
}

// BenchmarkStreamLatency measures the time from Commit to the handler at
// the default flush interval (1 s): one event every 5 ms, the handler noting
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
