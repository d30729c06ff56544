package gotrace

import "golang.org/x/exp/trace"

// Running is a goroutine on an OS thread for a while: from its switch to
// running (or the generation's start) until it stopped running, left the
// thread's syscall, or the generation ended. A goroutine in a system call
// stays on its thread.
type Running struct {
	// Thread is the runtime's id of the OS thread, its M's procid: the
	// kernel's thread id (gettid) on Linux.
	Thread trace.ThreadID
	G      trace.GoID
	// Start and End are in the system's monotonic clock (ns; on Linux
	// CLOCK_MONOTONIC, which perf events can date samples in), taken from
	// the trace's clock snapshot.
	Start, End int64
}

// ThreadTimeline tells which goroutine ran on which OS thread during a
// generation, so that samples taken outside the trace (perf events, dated
// by thread and time) find their goroutine. A thread without a Running
// covering a time ran no goroutine then: the scheduler, GC workers, idle.
type ThreadTimeline struct {
	// Start and End bound the period the timeline covers, in the
	// monotonic clock; both 0 if the trace has no clock snapshot (before
	// Go 1.25) or Options.ThreadTimeline is off.
	Start, End int64
	Running    []Running
}

// timeline builds a generation's ThreadTimeline from the goroutines'
// transitions to and from running.
type timeline struct {
	monoOff   int64 // monotonic ns minus trace ns
	monoKnown bool
	genStart  trace.Time
	on        map[trace.ThreadID]onThread
	thread    map[trace.GoID]trace.ThreadID // the goroutines in on
}

type onThread struct {
	g     trace.GoID
	since trace.Time
}

func newTimeline() *timeline {
	return &timeline{on: map[trace.ThreadID]onThread{}, thread: map[trace.GoID]trace.ThreadID{}}
}

// reset forgets the goroutines on threads: a new trace starts.
func (tl *timeline) reset() {
	clear(tl.on)
	clear(tl.thread)
	tl.monoKnown = false
}

// sync starts a generation at t with the trace's clock snapshot, if any.
func (tl *timeline) sync(t trace.Time, snap *trace.ClockSnapshot) {
	tl.genStart = t
	if snap != nil {
		tl.monoOff, tl.monoKnown = int64(snap.Mono)-int64(snap.Trace), true
	}
}

// transition follows goroutine g from state from to state to at t, on
// thread m (the thread the event happened on).
func (tl *timeline) transition(out *ThreadTimeline, m trace.ThreadID, g trace.GoID, from, to trace.GoState, t trace.Time) {
	onCPU := func(s trace.GoState) bool { return s == trace.GoRunning || s == trace.GoSyscall }
	switch {
	case to == trace.GoRunning && !onCPU(from):
		if m == trace.NoThread {
			return
		}
		tl.leave(out, g, t)
		if cur, ok := tl.on[m]; ok {
			tl.leave(out, cur.g, t)
		}
		tl.on[m] = onThread{g: g, since: t}
		tl.thread[g] = m
	case onCPU(from) && !onCPU(to):
		tl.leave(out, g, t)
	}
}

// leave ends goroutine g's time on its thread at t.
func (tl *timeline) leave(out *ThreadTimeline, g trace.GoID, t trace.Time) {
	m, ok := tl.thread[g]
	if !ok {
		return
	}
	cur := tl.on[m]
	delete(tl.on, m)
	delete(tl.thread, g)
	tl.add(out, m, cur.g, cur.since, t)
}

func (tl *timeline) add(out *ThreadTimeline, m trace.ThreadID, g trace.GoID, start, end trace.Time) {
	if tl.monoKnown && end > start {
		out.Running = append(out.Running, Running{Thread: m, G: g, Start: int64(start) + tl.monoOff, End: int64(end) + tl.monoOff})
	}
}

// end closes the generation at t: the goroutines still on a thread are
// given up to t, and go on from there in the next generation.
func (tl *timeline) end(out *ThreadTimeline, t trace.Time) {
	for m, cur := range tl.on {
		tl.add(out, m, cur.g, cur.since, t)
		tl.on[m] = onThread{g: cur.g, since: t}
	}
	if tl.monoKnown {
		out.Start, out.End = int64(tl.genStart)+tl.monoOff, int64(t)+tl.monoOff
	}
}
