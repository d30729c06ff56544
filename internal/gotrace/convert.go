package gotrace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/exp/trace"
)

// Kind is the type of a converted event.
type Kind uint8

// The converted event types.
const (
	MonitorEnter Kind = iota
	MonitorWait
	ThreadPark
	ThreadSleep
	VMOperation
	SafepointBegin
	SafepointEnd
	GarbageCollection
	GCPhasePause
	ExecutionSample
	MarkAssist
	NetworkWait
	NumKinds
)

var kindNames = [NumKinds]string{
	MonitorEnter:      "jdk.JavaMonitorEnter",
	MonitorWait:       "jdk.JavaMonitorWait",
	ThreadPark:        "jdk.ThreadPark",
	ThreadSleep:       "jdk.ThreadSleep",
	VMOperation:       "jdk.ExecuteVMOperation",
	SafepointBegin:    "jdk.SafepointBegin",
	SafepointEnd:      "jdk.SafepointEnd",
	GarbageCollection: "jdk.GarbageCollection",
	GCPhasePause:      "jdk.GCPhasePause",
	ExecutionSample:   "jdk.ExecutionSample",
	MarkAssist:        "go.MarkAssist",
	NetworkWait:       "go.NetworkWait",
}

// String returns the event type's name.
func (k Kind) String() string {
	if k >= NumKinds {
		return fmt.Sprintf("Kind(%d)", k)
	}
	return kindNames[k]
}

// Blocking reports whether events of the kind are waits filtered by a
// threshold.
func (k Kind) Blocking() bool {
	switch k {
	case MonitorEnter, MonitorWait, ThreadPark, ThreadSleep, MarkAssist, NetworkWait:
		return true
	}
	return false
}

// DefaultThreshold is the threshold of the blocking kinds, as the JDK's
// `profile` settings have for monitor, park and sleep events.
const DefaultThreshold = 10 * time.Millisecond

// GC causes, the keys of spec.GCCauses.
const (
	CauseSystemGC = 0   // runtime.GC
	CauseHeapGoal = 100 // the heap reached its goal
	CausePeriodic = 101 // the runtime's forced periodic GC
)

// Event is one converted event. Times are nanoseconds since the Unix epoch.
type Event struct {
	Kind       Kind
	Start, End int64
	// G is the event's goroutine (eventThread, or sampledThread);
	// trace.NoGoroutine if none.
	G trace.GoID
	// Other is previousOwner, notifier or caller: the goroutine that woke
	// G or requested the operation; trace.NoGoroutine if unknown.
	Other trace.GoID
	Stack trace.Stack
	// Class is monitorClass or parkedClass; "" for null.
	Class string
	// Name is the VM operation or the GC phase.
	Name string
	// ID is the safepoint id (VM operations and safepoints) or the GC id.
	ID uint64
	// GCID, Cause, SumOfPauses and LongestPause (ns) describe a GC cycle;
	// GCID also a GC phase.
	GCID                      uint64
	Cause                     uint64
	SumOfPauses, LongestPause int64
	// Threads is GOMAXPROCS at a safepoint.
	Threads int32
}

// Generation is the converted content of one trace generation.
type Generation struct {
	// Start and End bound the generation (ns since the Unix epoch).
	Start, End int64
	Events     []Event
	// Goroutines names the goroutines the events refer to.
	Goroutines map[trace.GoID]string
}

// Options configures a Converter. The zero value converts every kind with
// DefaultThreshold for the blocking ones.
type Options struct {
	// Thresholds overrides the threshold of a blocking kind; a kind set to
	// a negative value is not converted.
	Thresholds map[Kind]time.Duration
	// Anchor is the wall time of trace time 0 for traces older than Go
	// 1.25, which carry no clock snapshot.
	Anchor time.Time
	// FirstGCID is the gcId of the first GC cycle the trace starts (1 if
	// 0): a recorder that traces its own process numbers cycles as
	// runtime.MemStats.NumGC does.
	FirstGCID uint64
	// Timeline, if set, is given which goroutine ran on which OS thread
	// (ThreadTimeline): a recorder that samples its threads itself gives
	// the samples their goroutine. It comes in pieces of at most
	// TimelinePiece runs as the trace is read, a generation's last one
	// before the generation's events, so that what the converter holds
	// does not grow with the rate of goroutine switches (hundreds of
	// thousands a second on a busy server). The piece is reused after
	// Timeline returns.
	Timeline func(*ThreadTimeline)
}

// TimelinePiece is the most runs a piece of the timeline has: 128 KiB.
const TimelinePiece = 4096

// Converter turns trace events into JDK events, generation by generation.
// It keeps state only for live goroutines, the stop-the-world and the GC
// cycle in progress.
type Converter struct {
	// threshold is per kind, in ns; negative turns the kind off. Atomic:
	// SetThreshold may change it while Convert runs.
	threshold [NumKinds]atomic.Int64
	off       int64 // wall ns minus trace ns
	offKnown  bool

	gs        goTable
	stw       stwState
	gc        gcState
	nextGC    uint64
	nextSP    uint64
	procs     int32
	gen       Generation
	tl        *timeline // with Options.Timeline
	runs      ThreadTimeline
	timeline  func(*ThreadTimeline)
	redated   bool // the event being converted was re-dated by the reader
	sawSync   bool
	lastTime  trace.Time
	converted [NumKinds]int
}

type gState struct {
	wait      wait // what the goroutine waits for; waitNone if not a wait to convert
	since     trace.Time
	stack     trace.Stack
	waker     trace.GoID
	assist    trace.Time // start of a mark assist, or 0
	startFunc string
	lastStack trace.Stack // the last stack seen, which names the goroutine
}

// wait is what a goroutine blocked on, told from the reason of its block
// when it blocks, so that its unblock and start cost no string compares.
type wait uint8

const (
	waitNone    wait = iota // not blocked, or not a wait of the program's (GC, system, preemption)
	waitSync                // "sync": a mutex or another semaphore, told apart by the stack
	waitCond                // sync.Cond
	waitChan                // channel send or receive
	waitSelect              // select
	waitSleep               // time.Sleep
	waitNetwork             // the network poller
)

// classify tells what a goroutine waits for from the reason of its block.
func classify(reason string) wait {
	switch reason {
	case "sync":
		return waitSync
	case "sync.(*Cond).Wait":
		return waitCond
	case "chan send", "chan receive":
		return waitChan
	case "select":
		return waitSelect
	case "sleep":
		return waitSleep
	case "network":
		return waitNetwork
	}
	return waitNone
}

// kindOf returns the kind a wait converts to; sync waits are
// MonitorEnter or ThreadPark by their stack.
var kindOf = [...]Kind{waitSync: ThreadPark, waitCond: MonitorWait, waitChan: ThreadPark, waitSelect: ThreadPark,
	waitSleep: ThreadSleep, waitNetwork: NetworkWait}

type stwState struct {
	active bool
	start  trace.Time
	g      trace.GoID
	reason string
	stack  trace.Stack
}

type gcState struct {
	active       bool
	start        trace.Time
	id, cause    uint64
	sum, longest int64
	stack        trace.Stack
	g            trace.GoID
}

// NewConverter returns a Converter with the options o.
func NewConverter(o Options) *Converter {
	c := &Converter{nextGC: max(o.FirstGCID, 1), nextSP: 1}
	for k := Kind(0); k < NumKinds; k++ {
		if k.Blocking() {
			c.threshold[k].Store(int64(DefaultThreshold))
		}
		if t, ok := o.Thresholds[k]; ok {
			c.threshold[k].Store(int64(t))
		}
	}
	if o.Timeline != nil {
		c.tl, c.timeline = newTimeline(o.Timeline), o.Timeline
	}
	if !o.Anchor.IsZero() {
		c.off = o.Anchor.UnixNano()
	}
	return c
}

// Enabled reports whether events of kind k are converted.
func (c *Converter) Enabled(k Kind) bool { return c.threshold[k].Load() >= 0 }

// Threshold returns the threshold of kind k.
func (c *Converter) Threshold(k Kind) time.Duration {
	return time.Duration(max(c.threshold[k].Load(), 0))
}

// SetThreshold sets the threshold of kind k; negative turns it off. It may
// be called while Convert runs.
func (c *Converter) SetThreshold(k Kind, d time.Duration) { c.threshold[k].Store(int64(d)) }

// Converted returns how many events of each kind were converted so far.
func (c *Converter) Converted() [NumKinds]int { return c.converted }

// ErrDamaged is in the error of a trace whose damage made the trace
// reader fail with a panic where it returns no error (Converter.Convert).
var ErrDamaged = errors.New("damaged trace: the trace reader failed on it")

// Convert reads the trace from r and calls emit with each generation's
// events, in order; the Generation is reused after emit returns. It stops
// at the first error of r, of the trace or of emit. An error in the trace
// names the generation it was found in.
//
// A trace whose damage the trace reader does not catch can make its
// accessors panic (a stack ID missing from the generation's table:
// "expected id 91 in trace.stack table"); Convert returns that as an
// error too, naming the generation and the offset, rather than ending
// the program that reads the trace, which may be the service recording it.
func (c *Converter) Convert(r io.Reader, emit func(*Generation) error) (err error) {
	cr := &countingReader{r: r}
	tr, err := trace.NewReader(bufio.NewReaderSize(cr, readBuffer))
	if err != nil {
		if !strings.Contains(err.Error(), "not a Go execution trace") {
			err = fmt.Errorf("not a Go execution trace: %w", err)
		}
		return err
	}
	gens, sawEvent := 0, false
	defer func() {
		if p := recover(); p != nil {
			msg, _, _ := strings.Cut(fmt.Sprint(p), "\n")
			err = fmt.Errorf("trace generation %d, byte offset %d: %w: %s", gens, cr.n, ErrDamaged, msg)
		}
	}()
	if c.tl != nil {
		c.tl.reset()
		c.runs = ThreadTimeline{Running: c.runs.Running[:0]} // a trace that failed left its last runs
	}
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			if cr.eof || errors.Is(err, io.ErrUnexpectedEOF) {
				err = fmt.Errorf("truncated trace: %w", err)
			}
			// The reader reads a generation ahead: the offset is where
			// reading stopped, at or after the damage.
			return fmt.Errorf("trace generation %d, byte offset %d: %w", gens+1, cr.n, oneLine{err})
		}
		if ev.Kind() == trace.EventSync {
			if c.sawSync {
				if err := c.flush(emit); err != nil {
					return err
				}
			}
			c.sawSync = true
			gens++
			c.gen.Start = c.wall(ev.Time())
			if snap := ev.Sync().ClockSnapshot; snap != nil {
				c.off = snap.Wall.UnixNano() - int64(snap.Trace)
				c.offKnown = true
				c.gen.Start = c.wall(ev.Time())
			}
			if c.tl != nil {
				c.tl.sync(&c.runs, ev.Time(), ev.Sync().ClockSnapshot)
				// The reader may re-date the sync too: the next event's
				// re-dating is 1 ns after it.
				c.lastTime = max(c.lastTime, ev.Time())
			}
			continue
		}
		sawEvent = true
		c.Event(&ev)
	}
	if !sawEvent {
		return errors.New("not a Go execution trace: no events")
	}
	return c.flush(emit)
}

func (c *Converter) flush(emit func(*Generation) error) error {
	if c.tl != nil {
		c.tl.end(&c.runs, c.lastTime)
		if c.runs.End != 0 || len(c.runs.Running) > 0 {
			c.timeline(&c.runs)
		}
		c.runs = ThreadTimeline{Running: c.runs.Running[:0]}
	}
	if len(c.gen.Events) == 0 {
		return nil // the trace's last sync, or a generation with nothing to convert
	}
	c.gen.End = c.wall(c.lastTime)
	if c.gen.End < c.gen.Start {
		c.gen.End = c.gen.Start
	}
	for g, name := range c.gen.Goroutines {
		if name == "" {
			c.gen.Goroutines[g] = c.nameOf(g)
		}
	}
	err := emit(&c.gen)
	c.gen.Events = c.gen.Events[:0]
	clear(c.gen.Goroutines)
	return err
}

func (c *Converter) wall(t trace.Time) int64 { return c.off + int64(t) }

// Event converts one trace event, adding what it completes to the
// current generation.
func (c *Converter) Event(ev *trace.Event) {
	t := ev.Time()
	prev := c.lastTime
	if t > c.lastTime {
		c.lastTime = t
	}
	if c.tl != nil {
		// The reader re-dates an event it cannot order by its own time
		// to 1 ns after the previous one (timeline.go).
		c.redated = t == prev+1
	}
	switch ev.Kind() {
	case trace.EventStateTransition:
		st := ev.StateTransition()
		if st.Resource.Kind == trace.ResourceGoroutine {
			c.goTransition(ev, &st)
		}
	case trace.EventRangeBegin:
		r := ev.Range()
		c.rangeBegin(ev, r.Name, r.Scope)
	case trace.EventRangeEnd:
		r := ev.Range()
		c.rangeEnd(ev, r.Name, r.Scope)
	case trace.EventStackSample:
		if c.Enabled(ExecutionSample) {
			c.seen(ev.Goroutine(), ev.Stack())
			c.add(Event{Kind: ExecutionSample, Start: c.wall(t), End: c.wall(t), G: ev.Goroutine(), Other: trace.NoGoroutine, Stack: ev.Stack()})
		}
	case trace.EventMetric:
		if m := ev.Metric(); m.Name == "/sched/gomaxprocs:threads" {
			c.procs = int32(m.Value.Uint64())
		}
	}
	if c.tl != nil {
		c.tl.event(ev.Thread(), t, c.redated) // after the transition, which looks at the thread's previous events
	}
}

func (c *Converter) goTransition(ev *trace.Event, st *trace.StateTransition) {
	g := st.Resource.Goroutine()
	from, to := st.Goroutine()
	if c.tl != nil {
		c.tl.transition(&c.runs, ev.Thread(), g, from, to, ev.Time(), c.redated)
	}
	switch {
	case from == trace.GoNotExist && to != trace.GoNotExist:
		*c.gs.put(g) = gState{startFunc: startFunc(st.Stack)}
	case to == trace.GoNotExist:
		if _, ok := c.gen.Goroutines[g]; ok {
			c.gen.Goroutines[g] = c.nameOf(g)
		}
		c.gs.del(g)
	case from == trace.GoRunning && to == trace.GoWaiting:
		s := c.gs.put(g)
		s.wait, s.since, s.stack, s.waker = c.waitOf(st.Reason), ev.Time(), st.Stack, trace.NoGoroutine
		if st.Stack != trace.NoStack {
			s.lastStack = st.Stack
		}
	case from == trace.GoWaiting && to == trace.GoRunnable:
		if s := c.gs.get(g); s != nil && s.wait != waitNone {
			s.waker = ev.Goroutine()
		}
	case to == trace.GoRunning:
		if s := c.gs.get(g); s != nil && s.wait != waitNone {
			c.unblocked(g, s, ev.Time())
			s.wait = waitNone
		}
	}
}

// waitOf classifies a block's reason, waitNone if no kind it may convert
// to is on: the wait is then forgotten at once.
func (c *Converter) waitOf(reason string) wait {
	w := classify(reason)
	if w == waitNone {
		return w
	}
	on := c.Enabled(kindOf[w])
	if w == waitSync {
		on = on || c.Enabled(MonitorEnter)
	}
	if !on {
		return waitNone
	}
	return w
}

// unblocked converts a wait that ended at t.
func (c *Converter) unblocked(g trace.GoID, s *gState, t trace.Time) {
	d := int64(t - s.since)
	k, class := kindOf[s.wait], ""
	switch s.wait {
	case waitSync:
		// Most waits are short: look at the stack only for one that
		// either kind would keep.
		lo := int64(math.MaxInt64)
		for _, k := range [...]Kind{MonitorEnter, ThreadPark} {
			if th := c.threshold[k].Load(); th >= 0 {
				lo = min(lo, th)
			}
		}
		if d < lo {
			return
		}
		class = syncClass(s.stack)
		if class == "sync.Mutex" || class == "sync.RWMutex" {
			k = MonitorEnter
		}
	case waitCond:
		class = "sync.Cond"
	case waitChan:
		class = "chan"
	case waitSelect:
		class = "select"
	}
	if th := c.threshold[k].Load(); th >= 0 && d >= th {
		c.add(Event{Kind: k, Start: c.wall(s.since), End: c.wall(t), G: g, Other: s.waker, Stack: s.stack, Class: class})
	}
}

// syncClass tells which sync type a goroutine blocked in with reason
// "sync" from its stack: the outermost sync frame before the program's
// code (RWMutex.Lock calls Mutex.Lock).
func syncClass(st trace.Stack) string {
	class := ""
	for f := range st.Frames() {
		fn := f.Func
		switch {
		case strings.HasPrefix(fn, "sync.(*RWMutex)."):
			class = "sync.RWMutex"
		case strings.HasPrefix(fn, "sync.(*Mutex)."):
			class = "sync.Mutex"
		case strings.HasPrefix(fn, "sync.(*WaitGroup)."):
			class = "sync.WaitGroup"
		case strings.HasPrefix(fn, "sync.") || strings.HasPrefix(fn, "internal/sync.") || strings.HasPrefix(fn, "runtime."):
		default:
			return class
		}
	}
	return class
}

const stwPrefix = "stop-the-world ("

func (c *Converter) rangeBegin(ev *trace.Event, name string, scope trace.ResourceID) {
	t := ev.Time()
	switch {
	case strings.HasPrefix(name, stwPrefix):
		reason := strings.TrimSuffix(strings.TrimPrefix(name, stwPrefix), ")")
		c.stw = stwState{active: true, start: t, g: ev.Goroutine(), reason: reason, stack: ev.Stack()}
		c.seen(ev.Goroutine(), ev.Stack())
		if reason == "GC sweep termination" {
			c.gc = gcState{active: true, start: t, id: c.nextGC, cause: gcCause(ev.Stack()), stack: ev.Stack(), g: ev.Goroutine()}
			c.nextGC++
		}
	case name == "GC mark assist" && scope.Kind == trace.ResourceGoroutine:
		c.gs.put(scope.Goroutine()).assist = t
	}
}

func (c *Converter) rangeEnd(ev *trace.Event, name string, scope trace.ResourceID) {
	t := ev.Time()
	switch {
	case strings.HasPrefix(name, stwPrefix):
		if !c.stw.active {
			return // began before the trace
		}
		s := c.stw
		c.stw.active = false
		start, end := c.wall(s.start), c.wall(t)
		id := c.nextSP
		c.nextSP++
		if c.Enabled(VMOperation) {
			c.add(Event{Kind: VMOperation, Start: start, End: end, G: s.g, Other: s.g, Name: s.reason, ID: id})
		}
		if c.Enabled(SafepointBegin) {
			c.add(Event{Kind: SafepointBegin, Start: start, End: end, G: s.g, Other: trace.NoGoroutine, ID: id, Threads: c.procs})
		}
		if c.Enabled(SafepointEnd) {
			c.add(Event{Kind: SafepointEnd, Start: end, End: end, G: s.g, Other: trace.NoGoroutine, ID: id})
		}
		c.gcPause(s, t)
	case name == "GC mark assist" && scope.Kind == trace.ResourceGoroutine:
		g := scope.Goroutine()
		s := c.gs.get(g)
		if s == nil || s.assist == 0 {
			return
		}
		if th := c.threshold[MarkAssist].Load(); th >= 0 && int64(t-s.assist) >= th {
			c.add(Event{Kind: MarkAssist, Start: c.wall(s.assist), End: c.wall(t), G: g, Other: trace.NoGoroutine, Stack: ev.Stack()})
		}
		s.assist = 0
	}
}

// gcPause adds a GC stop-the-world s that ended at t to the cycle in
// progress, and ends the cycle at mark termination.
func (c *Converter) gcPause(s stwState, t trace.Time) {
	if !c.gc.active || (s.reason != "GC sweep termination" && s.reason != "GC mark termination") {
		return
	}
	d := int64(t - s.start)
	c.gc.sum += d
	c.gc.longest = max(c.gc.longest, d)
	if c.Enabled(GCPhasePause) {
		c.add(Event{Kind: GCPhasePause, Start: c.wall(s.start), End: c.wall(t), G: s.g, Other: trace.NoGoroutine, Name: s.reason, GCID: c.gc.id})
	}
	if s.reason == "GC mark termination" {
		if c.Enabled(GarbageCollection) {
			c.add(Event{Kind: GarbageCollection, Start: c.wall(c.gc.start), End: c.wall(t), G: trace.NoGoroutine, Other: trace.NoGoroutine,
				GCID: c.gc.id, Cause: c.gc.cause, SumOfPauses: c.gc.sum, LongestPause: c.gc.longest})
		}
		c.gc.active = false
	}
}

// gcCause infers why a GC cycle started from the stack that stopped the
// world for it.
func gcCause(st trace.Stack) uint64 {
	for f := range st.Frames() {
		switch f.Func {
		case "runtime.GC":
			return CauseSystemGC
		case "runtime.forcegchelper":
			return CausePeriodic
		}
	}
	return CauseHeapGoal
}

// startFunc returns the function a goroutine started in, from the stack
// of its creation.
func startFunc(st trace.Stack) string {
	for f := range st.Frames() {
		return f.Func
	}
	return ""
}

func (c *Converter) add(e Event) {
	c.converted[e.Kind]++
	c.refer(e.G)
	c.refer(e.Other)
	c.gen.Events = append(c.gen.Events, e)
}

// refer notes that the generation's events refer to goroutine g; it is
// named when the generation ends, or when g ends if that is sooner.
func (c *Converter) refer(g trace.GoID) {
	if g == trace.NoGoroutine {
		return
	}
	if c.gen.Goroutines == nil {
		c.gen.Goroutines = make(map[trace.GoID]string)
	}
	if _, ok := c.gen.Goroutines[g]; !ok {
		c.gen.Goroutines[g] = ""
	}
}

// seen remembers a stack of goroutine g, which names it when its creation
// is older than the trace.
func (c *Converter) seen(g trace.GoID, st trace.Stack) {
	if g != trace.NoGoroutine && st != trace.NoStack {
		c.gs.put(g).lastStack = st
	}
}

// nameOf names goroutine g by its start function (from its creation, else
// the outermost frame of a stack of its) and id.
func (c *Converter) nameOf(g trace.GoID) string {
	fn := ""
	if s := c.gs.get(g); s != nil {
		fn = s.startFunc
		if fn == "" && s.lastStack != trace.NoStack {
			for f := range s.lastStack.Frames() {
				if f.Func != "runtime.goexit" {
					fn = f.Func
				}
			}
		}
	}
	if fn == "" {
		return fmt.Sprintf("goroutine %d", g)
	}
	return fmt.Sprintf("%s #%d", fn, g)
}

// readBuffer is the size of the buffer between r and the trace reader,
// which reads through a 4 KiB one of its own otherwise: the runtime writes
// its trace in buffers of up to 64 KiB, and read through a pipe, as the
// recorder's tracer does, each small read is a hand-off between the
// runtime's writer and the converter.
const readBuffer = 256 << 10

// countingReader counts the bytes read, for errors.
type countingReader struct {
	r   io.Reader
	n   int64
	eof bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.eof = c.eof || err == io.EOF
	return n, err
}

// oneLine is an error of the trace reader shown as its first line: the
// reader adds a dump of its state (30 lines and more) to some errors.
type oneLine struct{ err error }

func (e oneLine) Error() string {
	msg, _, _ := strings.Cut(e.err.Error(), "\n")
	return strings.TrimSuffix(msg, ":")
}

func (e oneLine) Unwrap() error { return e.err }
