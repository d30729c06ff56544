package recorder

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightrec/flightrec/jfr"
)

// TestStreamReadsLentBuffers: a stream reads a flush's full buffers in
// place (lent, not copied), and they go back to the pool only once its
// handlers are done with them: while a handler holds the first flush,
// the emitter goes round the rest of the pool, and every event
// still reaches the handler once, with its value. One flush is lent at a
// time: those flushed meanwhile are copied, and once the lease is back
// the next flush is lent again.
func TestStreamReadsLentBuffers(t *testing.T) {
	only := Settings{"*": {Enabled: Bool(false)}, "bench.Event": {Enabled: Bool(true)}}
	st := NewStream(WithSettings(only))
	// Rounds of 2.1 MB of records (about 17 buffers) each flushed, 6
	// while the first is held (12.6 MB, 100 buffers, where the pool has
	// 68 on 2 Ps), fewer than the stream's backlog of flushes.
	const round = 150_000
	const rounds = 8
	seen := make([]uint8, round*rounds)
	var bad, handled atomic.Int64
	held, release := make(chan struct{}), make(chan struct{})
	first := true
	st.OnEvent("bench.Event", func(ev *jfr.Event) {
		if first {
			first = false
			close(held)
			<-release
		}
		n, _ := ev.Field("n")
		if i := n.Int(); i < 0 || i >= int64(len(seen)) {
			bad.Add(1)
		} else {
			seen[i]++
		}
		handled.Add(1)
	})
	st.OnError(func(err error) { t.Errorf("stream error: %v", err) })
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	dropped0 := theSession.s.DroppedEvents.Load()
	emitBench(0, round)
	theSession.flushNow()
	<-held
	lent, copied := st.lent.Load(), st.copied.Load()
	if lent < round*12/2 {
		t.Errorf("%d bytes lent to the stream for a flush of %d records of 12 bytes or more, most in full buffers", lent, round)
	}
	for r := 1; r < rounds-1; r++ {
		emitBench(r*round, round)
		theSession.flushNow()
	}
	if st.lent.Load() != lent {
		t.Errorf("%d more bytes lent while the first flush's buffers were out", st.lent.Load()-lent)
	}
	if c := st.copied.Load() - copied; c < (rounds-2)*round*12 {
		t.Errorf("%d bytes copied for %d flushes of %d records (12 bytes or more) while the first was lent", c, rounds-2, round)
	}
	close(release)
	// The lease back once the handler is done with the first flush,
	// which the stream reads before the others: the last is lent.
	for deadline := time.Now().Add(20 * time.Second); handled.Load() < (rounds-1)*round; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("handled %d of %d events within 20 s", handled.Load(), (rounds-1)*round)
		}
	}
	lent = st.lent.Load()
	emitBench((rounds-1)*round, round)
	theSession.flushNow()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st.lent.Load() == lent {
		t.Error("the flush after the lease was back was not lent")
	}
	if d := theSession.s.DroppedEvents.Load() - dropped0; d != 0 {
		t.Fatalf("the recorder dropped %d events", d)
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("event %d handled %d times (%d out of range); its buffer was reused while lent", i, c, bad.Load())
		}
	}
}

// emitBench emits n bench.Events numbered from base.
func emitBench(base, n int) {
	for i := range n {
		var ev benchEvent
		benchType.Begin(&ev)
		if ev.ShouldCommit() {
			ev.N, ev.S, ev.K = int64(base+i), "hello", 42
		}
		ev.Commit()
	}
}

// TestStreamSegmentOfLentFlush: a segment handler added after a flush was
// lent to the stream, before the stream reads it, gets the flush's
// records, which the stream then writes at their place in its chunk
// buffer (the bytes of the events its event handler got, in order).
func TestStreamSegmentOfLentFlush(t *testing.T) {
	only := Settings{"*": {Enabled: Bool(false)}, "bench.Event": {Enabled: Bool(true)}}
	st := NewStream(WithSettings(only))
	// raw is the records of the events after the first flush of some,
	// in order: each a size and a type id of a byte, then Raw's bytes.
	var raw []byte
	events, after := 0, false
	st.OnEvent("bench.Event", func(ev *jfr.Event) {
		events++
		if r := ev.Raw(); after && len(r)+2 < 0x80 && ev.Type.ID < 0x80 {
			raw = append(append(raw, byte(len(r)+2), byte(ev.Type.ID)), r...)
		}
	})
	inFlush, proceed := make(chan struct{}), make(chan struct{})
	st.OnFlush(func() {
		if events > 0 && !after {
			after = true
			close(inFlush)
			<-proceed
		}
	})
	st.OnError(func(err error) { t.Errorf("stream error: %v", err) })
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	emitBench(0, 100_000)
	theSession.flushNow()
	<-inFlush // the first flush read, its lease back
	lent := st.lent.Load()
	emitBench(100_000, 100_000)
	theSession.flushNow()
	if st.lent.Load() == lent {
		t.Fatal("the second flush was not lent")
	}
	got := make(chan []byte, 1)
	st.OnSegment(func(name string) bool { return name == "bench.Event" }, func(seg *Segment) {
		var b []byte
		for _, p := range seg.Parts {
			b = append(b, p.Data...)
		}
		select {
		case got <- b:
		default:
		}
	})
	close(proceed)
	var seg []byte
	select {
	case seg = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no segment within 5 s of the lent flush")
	}
	if len(raw) < 100_000*12 {
		t.Fatalf("the event handler got %d bytes of the second flush's events", len(raw))
	}
	if !bytes.Contains(seg, raw) {
		t.Errorf("the segment of the lent flush (%d bytes) does not hold the %d bytes of its events", len(seg), len(raw))
	}
}
