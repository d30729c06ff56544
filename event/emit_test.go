package event_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/emit"
	"github.com/flightrec/flightrec/internal/leb128"
)

// TestSlowClockPath: where the goroutine id is read on its own (arm64:
// GoidFast without the combined clock call), an instant event is stamped
// with the time of its Commit and a timed event ends at it.
func TestSlowClockPath(t *testing.T) {
	for _, force := range []bool{false, true} {
		name := "platform"
		if force {
			name = "forced slow clock"
			defer emit.ForceSlowClock()()
		}
		s := session(t, "test.GenAll", "test.GenTimed")
		before := clock.Now()
		var ev genAll
		genAllType.Begin(&ev)
		ev.Commit()
		var tv genTimed
		genTimedType.Begin(&tv)
		time.Sleep(time.Millisecond)
		tv.Commit()
		after := clock.Now()
		recs := records(t, s)
		if len(recs) != 2 {
			t.Fatalf("%s: %d records, want 2 (the timed event was dropped?)", name, len(recs))
		}
		for i, rec := range recs {
			var v [4]uint64
			rest := rec
			for j := range v {
				u, n := leb128.Uvarint(rest)
				if n <= 0 {
					t.Fatalf("%s: truncated record % x", name, rec)
				}
				v[j], rest = u, rest[n:]
			}
			start := int64(v[2])
			if start < before || start > after {
				t.Errorf("%s: event %d starts at tick %d, outside its emission [%d, %d]", name, i, start, before, after)
			}
			if i == 1 {
				if dur := int64(v[3]); dur <= 0 || start+dur > after {
					t.Errorf("%s: timed event lasts %d ticks from %d, want it to end by %d", name, dur, start, after)
				}
			}
		}
	}
}

// TestDropYields: an emitter that finds no buffer free yields its P, so
// that the flusher, which frees buffers, gets to run. On one P, with no
// flusher, a goroutine made runnable once events are being dropped runs
// at the next drop; an emitter that did not yield would drop events until
// the scheduler preempted it (10 ms: thousands of events), and two
// goroutines emitting flat out on two Ps kept the flusher from both.
func TestDropYields(t *testing.T) {
	s := session(t, "test.GenAll")
	emitOne := func() {
		var ev genAll
		genAllType.Begin(&ev)
		ev.Commit()
	}
	for i := 0; s.DroppedEvents.Load() == 0; i++ {
		if i > 1e6 {
			t.Fatal("no event dropped with every buffer full")
		}
		emitOne()
	}
	var ran atomic.Bool
	go ran.Store(true)
	dropped := s.DroppedEvents.Load()
	for !ran.Load() {
		emitOne()
	}
	if n := s.DroppedEvents.Load() - dropped; n > 3 {
		t.Fatalf("%d events dropped before a runnable goroutine ran on the emitter's P", n)
	}
}
