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
	// G is trace.NoGoroutine where the trace does not say which goroutine
	// ran: the reader re-dated the events that would (see redated).
	G trace.GoID
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
	// Start and End bound the generation the timeline covers, in the
	// monotonic clock; both 0 if the trace has no clock snapshot (before
	// Go 1.25). End is 0 in every piece of a generation but its last.
	Start, End int64
	Running    []Running
}

// timeline builds a generation's ThreadTimeline from the goroutines'
// transitions to and from running.
//
// x/exp/trace gives events in time order: one it cannot order by its own
// time (a thread that began the next generation while others still wrote
// the last one) it re-dates to 1 ns after the previous event. Its true
// time lies between its thread's last event of true time and the re-dated
// one: the timeline says no goroutine for that span, and ends a
// generation's runs at their thread's last event of true time.
type timeline struct {
	monoOff   int64 // monotonic ns minus trace ns
	monoKnown bool
	genStart  trace.Time
	on        map[trace.ThreadID]onThread
	thread    map[trace.GoID]trace.ThreadID // the goroutines in on
	exact     map[trace.ThreadID]trace.Time // each thread's last event of true time
	lastM     trace.ThreadID                // the thread of the previous event, whose exact entry
	lastT     trace.Time                    // ... is lastT, not yet stored
	// piece takes a full piece of runs (Options.Timeline); nil keeps them.
	piece func(*ThreadTimeline)
}

type onThread struct {
	g     trace.GoID
	since trace.Time
	tail  trace.Time // the end of the unknown span end gave it
}

func newTimeline(piece func(*ThreadTimeline)) *timeline {
	return &timeline{on: map[trace.ThreadID]onThread{}, thread: map[trace.GoID]trace.ThreadID{},
		exact: map[trace.ThreadID]trace.Time{}, lastM: trace.NoThread, piece: piece}
}

// reset forgets the goroutines on threads: a new trace starts.
func (tl *timeline) reset() {
	clear(tl.on)
	clear(tl.thread)
	clear(tl.exact)
	tl.lastM = trace.NoThread
	tl.monoKnown = false
}

// event notes an event on thread m at t, re-dated or not. Consecutive
// events are mostly of one thread: its time is kept aside until another
// thread's event comes.
func (tl *timeline) event(m trace.ThreadID, t trace.Time, redated bool) {
	if redated || m == trace.NoThread {
		return
	}
	if m != tl.lastM {
		if tl.lastM != trace.NoThread {
			tl.exact[tl.lastM] = tl.lastT
		}
		tl.lastM = m
	}
	tl.lastT = t
}

// exactTime returns thread m's last event of true time, or 0.
func (tl *timeline) exactTime(m trace.ThreadID) trace.Time {
	if m == tl.lastM {
		return tl.lastT
	}
	return tl.exact[m]
}

// sync starts a generation at t with the trace's clock snapshot, if any.
func (tl *timeline) sync(out *ThreadTimeline, t trace.Time, snap *trace.ClockSnapshot) {
	tl.genStart = t
	if snap != nil {
		tl.monoOff, tl.monoKnown = int64(snap.Mono)-int64(snap.Trace), true
	}
	if tl.monoKnown {
		out.Start = int64(t) + tl.monoOff
	}
}

// transition follows goroutine g from state from to state to at t, on
// thread m (the thread the event happened on); redated tells that the
// reader re-dated the event. It comes before event(m, t, redated).
func (tl *timeline) transition(out *ThreadTimeline, m trace.ThreadID, g trace.GoID, from, to trace.GoState, t trace.Time, redated bool) {
	onCPU := func(s trace.GoState) bool { return s == trace.GoRunning || s == trace.GoSyscall }
	switch {
	case to == trace.GoRunning && !onCPU(from):
		if m == trace.NoThread {
			return
		}
		tl.leave(out, g, t, redated)
		if cur, ok := tl.on[m]; ok {
			tl.leave(out, cur.g, t, redated)
		} else if redated {
			// It began to run at some time since the thread's last
			// event of true time.
			tl.add(out, m, trace.NoGoroutine, tl.exactTime(m), t)
		}
		tl.on[m] = onThread{g: g, since: t}
		tl.thread[g] = m
	case onCPU(from) && !onCPU(to):
		tl.leave(out, g, t, redated)
	}
}

// leave ends goroutine g's time on its thread at t: if t was re-dated, it
// ended at some time since its thread's last event of true time.
func (tl *timeline) leave(out *ThreadTimeline, g trace.GoID, t trace.Time, redated bool) {
	m, ok := tl.thread[g]
	if !ok {
		return
	}
	cur := tl.on[m]
	delete(tl.on, m)
	delete(tl.thread, g)
	end := t
	if redated {
		end = max(cur.since, tl.exactTime(m))
		tl.add(out, m, trace.NoGoroutine, end, t)
	}
	tl.add(out, m, cur.g, cur.since, end)
}

func (tl *timeline) add(out *ThreadTimeline, m trace.ThreadID, g trace.GoID, start, end trace.Time) {
	if tl.monoKnown && end > start {
		out.Running = append(out.Running, Running{Thread: m, G: g, Start: int64(start) + tl.monoOff, End: int64(end) + tl.monoOff})
		if len(out.Running) == TimelinePiece && tl.piece != nil {
			tl.piece(out)
			out.Running = out.Running[:0]
		}
	}
}

// end closes the generation at t: the goroutines still on a thread are
// given up to their thread's last event of true time, and go on from there
// in the next generation, which may re-date the thread's first events to
// before t: until t, the thread's goroutine is not known yet.
func (tl *timeline) end(out *ThreadTimeline, t trace.Time) {
	if t < tl.genStart {
		return // the trace's last sync: no events
	}
	for m, cur := range tl.on {
		seen := max(cur.since, tl.exactTime(m))
		tl.add(out, m, cur.g, cur.since, seen)
		tl.add(out, m, trace.NoGoroutine, max(seen, cur.tail), t)
		tl.on[m] = onThread{g: cur.g, since: seen, tail: t}
	}
	if tl.monoKnown {
		out.End = int64(t) + tl.monoOff
	}
}
