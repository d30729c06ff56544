package gotrace

import (
	"slices"
	"testing"

	"golang.org/x/exp/trace"
)

// TestTimelineRedated: a goroutine's run ends at its thread's last event
// of true time when the event that ends it was re-dated by the reader, or
// when the generation ends; until then the thread's goroutine is not known
// (trace.NoGoroutine), never another goroutine's.
func TestTimelineRedated(t *testing.T) {
	tl := newTimeline()
	tl.sync(100, &trace.ClockSnapshot{Trace: 0, Mono: 0})
	var out ThreadTimeline
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
	tl.sync(301, &trace.ClockSnapshot{})
	step(5, trace.GoRunning, trace.GoRunnable, 302, true)
	step(6, trace.GoRunnable, trace.GoRunning, 303, true)
	step(6, trace.GoRunning, trace.GoWaiting, 400, false)
	want = []Running{{1, trace.NoGoroutine, 200, 302}, {1, trace.NoGoroutine, 200, 303}, {1, 6, 303, 400}}
	if !slices.Equal(out.Running, want) {
		t.Fatalf("after re-dated events: %v, want %v", out.Running, want)
	}
}
