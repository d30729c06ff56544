package event_test

import (
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
