package gotrace

import (
	"bytes"
	"slices"
	"testing"

	"golang.org/x/exp/trace"
)

// TestTimelineRedated: a goroutine's run ends at its thread's last event
// of true time when the event that ends it was re-dated by the reader, or
// when the generation ends; until then the thread's goroutine is not known
// (trace.NoGoroutine), never another goroutine's.
func TestTimelineRedated(t *testing.T) {
	tl := newTimeline(nil)
	var out ThreadTimeline
	tl.sync(&out, 100, &trace.ClockSnapshot{Trace: 0, Mono: 0})
	step := func(g trace.GoID, from, to trace.GoState, at trace.Time, redated bool) {
		tl.transition(&out, 1, g, from, to, at, redated)
		tl.event(1, at, redated)
	}
	step(5, trace.GoRunnable, trace.GoRunning, 100, false)
	tl.event(2, 150, false) // another thread's event
	tl.event(1, 200, false)
	tl.end(&out, 300)
	want := []Running{{1, 5, 100, 200}, {1, trace.NoGoroutine, 200, 300}}
	if !slices.Equal(out.Running, want) {
		t.Fatalf("first generation: %v, want %v", out.Running, want)
	}
	// The next generation's first events on thread 1 happened before 300:
	// the reader re-dated them.
	out = ThreadTimeline{}
	tl.sync(&out, 301, &trace.ClockSnapshot{})
	step(5, trace.GoRunning, trace.GoRunnable, 302, true)
	step(6, trace.GoRunnable, trace.GoRunning, 303, true)
	step(6, trace.GoRunning, trace.GoWaiting, 400, false)
	want = []Running{{1, trace.NoGoroutine, 200, 302}, {1, trace.NoGoroutine, 200, 303}, {1, 6, 303, 400}}
	if !slices.Equal(out.Running, want) {
		t.Fatalf("after re-dated events: %v, want %v", out.Running, want)
	}
}

// TestTimelinePieces: on a scheduler-heavy trace (hundreds of thousands
// of goroutine switches a second), the timeline comes in pieces of at most
// TimelinePiece runs, several a generation, each generation's last with
// its end, and the pieces together never put two goroutines on a thread at
// once.
func TestTimelinePieces(t *testing.T) {
	data := schedulerTrace(t)
	gens, pieces, runs := 0, 0, 0
	last := map[trace.ThreadID]Running{}
	c := NewConverter(Options{Timeline: func(tl *ThreadTimeline) {
		pieces++
		runs += len(tl.Running)
		if len(tl.Running) > TimelinePiece {
			t.Fatalf("a piece of %d runs", len(tl.Running))
		}
		for _, r := range tl.Running {
			if r.G == trace.NoGoroutine {
				continue
			}
			if p, ok := last[r.Thread]; ok && r.Start < p.End && p.Start < r.End {
				t.Fatalf("two goroutines on thread %d at once: %+v, %+v", r.Thread, p, r)
			}
			last[r.Thread] = r
		}
		if tl.End != 0 {
			gens++
		}
	}})
	if err := c.Convert(bytes.NewReader(data), func(*Generation) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if gens == 0 || runs <= TimelinePiece || pieces <= gens {
		t.Fatalf("%d runs in %d pieces of %d generations: want several pieces a generation", runs, pieces, gens)
	}
	t.Logf("%d runs in %d pieces of %d generations", runs, pieces, gens)
}
