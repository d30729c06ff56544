package recorder

import (
	"bytes"
	"sync"
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
	// The handler waits at the middle of the first round: in the flush
	// of the whole round, or, if a tick of the flusher cut the round in
	// two, in the part after the tick, or in the part before it if that
	// has the middle, each lent.
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	resume := func() { once.Do(func() { close(release) }) }
	defer resume()
	waited := false
	st.OnEvent("bench.Event", func(ev *jfr.Event) {
		n, _ := ev.Field("n")
		if !waited && n.Int() >= round/2 {
			waited = true
			close(held)
			<-release
		}
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
	if lent < round*12/4 {
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
	resume()
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
// records (the bytes of the events its event handler got, in order),
// which the stream then writes at their place in its chunk buffer.
func TestStreamSegmentOfLentFlush(t *testing.T) {
	only := Settings{"*": {Enabled: Bool(false)}, "bench.Event": {Enabled: Bool(true)}}
	st := NewStream(WithSettings(only))
	const n = 100_000
	// On the stream's goroutine: raw is the records of the flush's events
	// once the first n are handled, in order (each a size and a type id
	// of a byte, then Raw's bytes), which the segment of the flush must
	// hold; the first segment's verdict goes to got.
	var raw []byte
	events := 0
	st.OnEvent("bench.Event", func(ev *jfr.Event) {
		if r := ev.Raw(); events >= n && len(r)+2 < 0x80 && ev.Type.ID < 0x80 {
			raw = append(append(raw, byte(len(r)+2), byte(ev.Type.ID)), r...)
		}
		events++
	})
	// The stream waits after the flush that completes the first n events
	// (a tick of the flusher may have cut them in two), its lease back
	// and none waiting.
	inFlush, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	resume := func() { once.Do(func() { close(proceed) }) }
	waited := false
	st.OnFlush(func() {
		if events >= n && !waited {
			waited = true
			close(inFlush)
			<-proceed
		}
	})
	st.OnError(func(err error) { t.Errorf("stream error: %v", err) })
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		resume()
		st.Close()
	}()
	emitBench(0, n)
	theSession.flushNow()
	<-inFlush
	lent := st.lent.Load()
	emitBench(n, n)
	theSession.flushNow()
	if st.lent.Load() == lent {
		t.Fatal("the flushes of the next events were not lent")
	}
	type verdict struct {
		ok        bool
		seg, recs int
	}
	got := make(chan verdict, 1)
	st.OnSegment(func(name string) bool { return name == "bench.Event" }, func(seg *Segment) {
		var b []byte
		for _, p := range seg.Parts {
			b = append(b, p.Data...)
		}
		select {
		case got <- verdict{len(raw) > 0 && bytes.Contains(b, raw), len(b), len(raw)}:
		default:
		}
		raw = raw[:0]
	})
	resume()
	select {
	case v := <-got:
		if !v.ok {
			t.Errorf("the segment of a lent flush (%d bytes) does not hold the %d bytes of its events", v.seg, v.recs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no segment within 5 s of the lent flush")
	}
}
