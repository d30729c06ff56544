package recorder

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/gotrace"
	"github.com/flightrec/flightrec/internal/pin"
)

// Buffers of a session: minBuffers (10 MiB of events, JFR's default
// memory size) on small machines, more with more Ps, each of which holds
// one while it fills it, up to maxBuffers; a flusher kept waiting grows
// them up to bufferLimit (growPool). Sized by GOMAXPROCS, not the
// CPU count: a container limited to 2 CPUs on a 64-core host runs 2 Ps.
// One goroutine in a tight loop fills over 300 MB/s, and on 2 cores the
// flusher may wait a scheduler time slice (10 ms) or more.
const (
	minBuffers = 80
	maxBuffers = 512
)

func bufferCount() int { return min(maxBuffers, max(minBuffers, 2*runtime.GOMAXPROCS(0)+64)) }

// bufferLimit is how many buffers a session may grow to when its flusher
// is kept waiting (growPool): three times bufferCount, within maxBuffers
// (240 buffers, 30 MiB of records, on small machines), as the JDK leases
// transient buffers when its global ones run out.
func bufferLimit() int { return max(bufferCount(), min(maxBuffers, 3*bufferCount())) }

// growPool adds half of s's first count of buffers when fewer than a
// quarter were free at some moment since the flusher last looked: the
// flusher was kept from running while the emitters filled them. Woken, it
// waits in a run queue, and behind 10,000 goroutines woken by their
// timers every millisecond, which each push it out of its P's runnext
// slot, that wait was 100-280 ms (the emitters meanwhile filled 3-9 MB);
// with the third of the buffers that a flush being written holds, the
// emitters ran out and dropped events (docs/perf/recorder.md, "Where the
// idle drops came from"). The next such wait then finds buffers free. It runs pinned, in
// steps (st) of 8 buffers: unpinned to allocate, the flusher lost its P
// for 180 ms, and the emitters their buffers. It reports whether the pool
// grew.
func growPool(s *batch.Session, st *steps) bool {
	if s.LowFree() >= s.Buffers()/4 {
		return false
	}
	grew := false
	for n := s.BaseBuffers() / 2; n > 0; n -= 8 {
		if s.Grow(min(n, 8)) == 0 {
			break
		}
		grew = true
		st.point()
	}
	return grew
}

// session is the process-wide state shared by all running recordings.
type session struct {
	// life serializes starting and stopping the session: a recording
	// started while the last one stops waits until the old session is
	// gone, rather than have its teardown deactivate the new one.
	life       sync.Mutex
	mu         sync.Mutex
	recordings []*Recording
	nextID     int64
	s          *batch.Session
	anchor     clock.Anchor
	tps        int64
	stop       chan struct{}
	done       chan struct{}
	flushReq   chan flushReq
	chunkStart int64
	chunkClock clock.Calibration // taken at chunkStart, for its header
	chunk      *chunkBuilder
	runtime    *runtimeEvents
	// settings is merged() as of the last change of settings, recordings
	// or types: the flusher takes it without the locks merged() takes.
	settings map[string]resolved
	// handedOff counts the full buffers the flusher took, and
	// handedOffBytes their records' bytes: how full buffers go, for the
	// load benchmarks (read once the flusher is done).
	handedOff, handedOffBytes int64
}

var theSession session

func (ss *session) add(r *Recording) {
	ss.life.Lock()
	defer ss.life.Unlock()
	ss.mu.Lock()
	ss.nextID++
	r.id = ss.nextID
	ss.recordings = append(ss.recordings, r)
	first := len(ss.recordings) == 1
	if first {
		if ss.tps == 0 {
			ss.tps = clock.TicksPerSecond()
			ss.anchor = clock.Epoch()
		}
		ss.s = batch.NewSession(bufferCount(), bufferLimit())
		ss.handedOff, ss.handedOffBytes = 0, 0
		ss.chunkStart = clock.Now()
		ss.chunkClock = clock.Recalibrate()
		ss.chunk = newChunkBuilder(ss)
		// Built here, not in the chunk writer's first flush, which could
		// take longer than its pinned steps allow for (steps.go); an
		// error is the first flush's to report.
		_ = ss.chunk.metadata()
		ss.settings = ss.merged()
		ss.stop = make(chan struct{})
		ss.done = make(chan struct{})
		ss.flushReq = make(chan flushReq)
		batch.Activate(ss.s)
		batch.OnRegister(func(d *batch.Desc) {
			ss.mu.Lock()
			defer ss.mu.Unlock()
			ss.settings = ss.merged()
			ss.applyTo(d, ss.settings)
		})
		ss.runtime = startRuntimeEvents(ss)
		go ss.flusher(ss.s, ss.chunk, ss.stop, ss.done, ss.flushReq)
	}
	ss.mu.Unlock()
	ss.applySettings()
	if !first {
		// The recording's first chunk starts now.
		ss.cutNow()
	}
}

func (ss *session) remove(r *Recording) {
	ss.life.Lock()
	defer ss.life.Unlock()
	ss.mu.Lock()
	if rt := ss.runtime; rt != nil && len(ss.recordings) == 1 && ss.recordings[0] == r {
		ss.mu.Unlock()
		rt.finishTracer() // its last generation goes into the last chunk
	} else {
		ss.mu.Unlock()
	}
	ss.cutNow()
	ss.mu.Lock()
	i := slices.Index(ss.recordings, r)
	if i < 0 {
		ss.mu.Unlock()
		return
	}
	ss.recordings = slices.Delete(ss.recordings, i, i+1)
	last := len(ss.recordings) == 0
	var stop, done chan struct{}
	var rt *runtimeEvents
	if last {
		stop, done, rt = ss.stop, ss.done, ss.runtime
		ss.runtime = nil
	}
	ss.mu.Unlock()
	ss.applySettings()
	if last {
		rt.close()
		// No event may land in a buffer after the flusher's last look:
		// new ones find no session, and those being written (pinned) end
		// before Quiesce returns.
		batch.Activate(nil)
		pin.Quiesce()
		close(stop)
		<-done
		batch.OnRegister(nil)
	}
}

// merged returns the settings of every type: on if any recording enables
// it, with the smallest threshold and period among those.
func (ss *session) merged() map[string]resolved {
	types, _ := batch.Types()
	out := make(map[string]resolved, len(types)+8)
	names := make([]string, 0, len(types)+8)
	defs := map[string][2]bool{}
	for _, d := range types {
		names = append(names, d.Name)
		defs[d.Name] = [2]bool{!d.DefaultOff, d.DefaultStack}
	}
	for _, n := range rawTypeNames {
		names = append(names, n)
		defs[n] = [2]bool{!slices.Contains(tracerTypeNames, n), false} // the tracer is opt-in
	}
	for _, r := range ss.recordings {
		st := r.currentSettings()
		for _, n := range names {
			v := st.resolve(n, defs[n][0], defs[n][1])
			if !v.enabled {
				continue
			}
			cur, ok := out[n]
			if !ok {
				out[n] = v
				continue
			}
			cur.stack = cur.stack || v.stack
			cur.threshold = min(cur.threshold, v.threshold)
			if v.period > 0 && (cur.period == 0 || v.period < cur.period) {
				cur.period = v.period
			}
			out[n] = cur
		}
	}
	return out
}

func (ss *session) applySettings() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	m := ss.merged()
	ss.settings = m
	types, _ := batch.Types()
	for _, d := range types {
		ss.applyTo(d, m)
	}
	if ss.runtime != nil {
		ringOnly := true
		for _, r := range ss.recordings {
			ringOnly = ringOnly && r.cfg.ring
		}
		ss.runtime.setRingOnly(ringOnly)
		ss.runtime.setPeriods(m)
	}
}

// flightDump returns the flight recorder's trace as chunks to append to a
// ring's dump (tracer.go), or nil.
func (ss *session) flightDump() ([]byte, error) {
	ss.mu.Lock()
	rt, cal := ss.runtime, ss.chunkClock
	ss.mu.Unlock()
	if rt == nil {
		return nil, nil
	}
	return rt.flightDump(cal)
}

func (ss *session) applyTo(d *batch.Desc, m map[string]resolved) {
	v, ok := m[d.Name]
	if !ok || !v.enabled || declarable(d) != nil {
		// Off first, and the rest kept: an event begun while the type
		// was on ends under the settings it began with (a threshold
		// zeroed here would let it through however short).
		d.On.Store(false)
		return
	}
	d.SetStack(v.stack)
	d.Threshold.Store(int64(float64(v.threshold) * float64(ss.tps) / 1e9))
	d.Period.Store(int64(v.period))
	d.On.Store(true)
}

// flushInterval is how often the flusher writes what the buffers hold
// into the chunk being written (a flushpoint), as the JDK does.
const flushInterval = time.Second

// stallGrace is how late a flushpoint may be before the emitters wake the
// flusher and yield to it (batch.StallAt): a flushpoint every 1-2 s leaves
// time for the run queues to bring the flusher's turn.
const stallGrace = 250 * time.Millisecond

// flushReq asks the flusher for a flushpoint, closing the chunk after it
// if cut is set; ack is closed once the recordings have it.
type flushReq struct {
	cut bool
	ack chan struct{}
}

// flushNow writes a flushpoint and waits until the recordings have it.
func (ss *session) flushNow() { ss.request(false) }

// cutNow ends the chunk being written and waits until the recordings have
// it: a recording that starts or stops needs a chunk boundary.
func (ss *session) cutNow() { ss.request(true) }

func (ss *session) request(cut bool) {
	ss.mu.Lock()
	req := ss.flushReq
	done := ss.done
	ss.mu.Unlock()
	if req == nil {
		return
	}
	ack := make(chan struct{})
	select {
	case req <- flushReq{cut: cut, ack: ack}:
		<-ack
	case <-done:
	}
}

// flusher gathers the full buffers, which the chunk being written takes in
// place, when the emitters signal a batch of them (batch.Session.Wake),
// and writes them as a flushpoint every flushInterval, when they reach
// maxChunkSize or hold a third of the buffers, on request, and when
// stopped; at each it copies what the buffers still being filled hold.
// chunkWriter encodes and delivers each flush, cutting the chunk once it
// reaches maxChunkSize or maxChunkAge, and then recycles the buffers, so
// the flusher goes on gathering meanwhile; a periodic flush waits until
// the writer is done, and short of free buffers meanwhile the flusher
// copies the records of full ones and frees them.
func (ss *session) flusher(s *batch.Session, cb *chunkBuilder, stop, done chan struct{}, requests chan flushReq) {
	defer close(done)
	age, size := ss.chunkLimits()
	// The flusher waits only on channels that no timer feeds (steps.go:
	// parking on a timer's channel may end in the global run queue); a
	// goroutine of its own forwards the ticks.
	var interval, flushedAt atomic.Int64
	// setDue notes that a flush ended now and sets when the next is due,
	// for the ticks, and when it is late, for the emitters
	// (batch.StallAt): either wakes the flusher.
	setDue := func() {
		d := min(age, flushInterval)
		interval.Store(int64(d))
		flushedAt.Store(time.Now().UnixNano())
		batch.SetStallAt(clock.Now() + int64(float64(d+stallGrace)*float64(ss.tps)/1e9))
	}
	setDue()
	// due tells whether a flush is due, however the flusher was woken.
	due := func() bool { return time.Now().UnixNano()-flushedAt.Load() >= interval.Load() }
	ticks := make(chan struct{}, 1)
	tickerDone := make(chan struct{})
	go forwardTicks(&interval, &flushedAt, ticks, tickerDone)
	defer close(tickerDone)
	// Two gatherings alternate: one filling here, one being written. Each
	// holds at most a third of the buffers, so the emitters have a third.
	holdLimit := s.BaseBuffers() / 3
	// While the chunk writer is busy (spare is empty), the flusher does
	// not wait for it: it goes on gathering, and once fewer than half the
	// buffers are free it copies the records of the full ones and frees
	// them at once, up to copyLimit bytes of copies. A flush holds its
	// buffers until it is written, and a flush can take 40-270 ms behind
	// the run queues of 10,000 goroutines (docs/perf/recorder.md, "Many
	// goroutines"): the flusher, waiting for it, held the next third, and
	// the emitters ran out of buffers.
	copyLimit := s.BaseBuffers() * batch.BufferSize
	spare := make(chan *gathered, 1)
	// leaseOut tells whether streams still read a flush's buffers (lend).
	var leaseOut atomic.Bool
	spare <- newGathered(s, &leaseOut)
	writerBusy := func() bool { return len(spare) == 0 }
	jobs := make(chan chunkJob, 1)
	written := make(chan struct{})
	go ss.chunkWriter(cb, jobs, spare, written)
	cur := newGathered(s, &leaseOut)
	// The flusher runs pinned, in steps, but while it waits (steps.go).
	st := newSteps()
	st.begin()
	defer st.end()
	drain := func() {
		defer phaseSince(phaseDrain, phaseStart())
		for {
			select {
			case b := <-s.Full:
				ss.handedOff++
				ss.handedOffBytes += int64(b.Len())
				if s.Behind() && writerBusy() && len(cur.copied) < copyLimit {
					cur.copyLive(b)
					s.Recycle(b)
				} else {
					cur.hold(b)
				}
				st.point()
				continue
			default:
			}
			return
		}
	}
	flush := func(req flushReq) {
		drain()
		t := phaseStart()
		s.Live(func(b *batch.Buffer) {
			cur.copyLive(b)
			st.point()
		})
		phaseSince(phaseLive, t)
		t = phaseStart()
		job := ss.prepareChunk(s, cur, req, st)
		phaseSince(phasePrepare, t)
		t = phaseStart()
		send(st, jobs, job)
		phaseSince(phaseJobSend, t)
		// Take the other gathering back: this waits only while the
		// previous flush is still being written.
		t = phaseStart()
		cur, _ = receive(st, spare)
		phaseSince(phaseSpareWait, t)
		age, size = job.maxAge, job.maxSize
		setDue()
	}
	defer func() {
		close(jobs)
		st.end()
		<-written
	}()
	const (
		wake = iota
		tick
		request
		stopped
	)
	for {
		st.point()
		// Pinned, what is ready is taken without waiting; else the
		// flusher unpins to park, and pins again once woken.
		var what int
		var req flushReq
		select {
		case <-s.Wake:
			what = wake
		case <-ticks:
			what = tick
		case req = <-requests:
			what = request
		case <-stop:
			what = stopped
		default:
			st.end()
			select {
			case <-s.Wake:
				what = wake
			case <-ticks:
				what = tick
			case req = <-requests:
				what = request
			case <-stop:
				what = stopped
			}
			st.begin()
		}
		switch what {
		case wake, tick:
			if wokenHook != nil {
				st.end()
				wokenHook()
				st.begin()
			}
			growPool(s, st)
		}
		switch what {
		case wake:
			drain()
			// A busy writer wakes the flusher when it is done.
			if (cur.size >= size || len(cur.held) >= holdLimit || due()) && !writerBusy() {
				late := time.Unix(0, flushedAt.Load()+interval.Load())
				flush(flushReq{})
				phaseSince(phaseDueLate, late)
			}
		case tick:
			if writerBusy() {
				// Its wake-up when done finds the flush due.
				continue
			}
			late := time.Unix(0, flushedAt.Load()+interval.Load())
			flush(flushReq{})
			phaseSince(phaseTickLate, time.Unix(0, tickedAt.Load()))
			phaseSince(phaseDueLate, late)
		case request:
			flush(req)
		case stopped:
			flush(flushReq{cut: true})
			s.Release()
			return
		}
	}
}

// wokenHook, set by tests before a recording starts, runs unpinned each
// time the flusher is woken or ticked, before it looks at the buffers: a
// test that blocks in it stands for the scheduler keeping the flusher
// waiting.
var wokenHook func()

// tickedAt is when forwardTicks last sent a tick (for phaseTickLate).
var tickedAt atomic.Int64

// forwardTicks sends on ticks once interval has passed since the last
// flush (flushedAt, in Unix nanoseconds), until done is closed.
func forwardTicks(interval, flushedAt *atomic.Int64, ticks chan<- struct{}, done <-chan struct{}) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-done:
			return
		case <-timer.C:
		}
		d := time.Duration(interval.Load())
		due := time.Unix(0, flushedAt.Load()).Add(d)
		if wait := time.Until(due); wait > 0 {
			d = wait
		} else {
			select {
			case ticks <- struct{}{}:
				tickedAt.Store(time.Now().UnixNano())
				phaseSince(phaseTickDue, due)
			default:
			}
		}
		timer.Reset(d)
	}
}

// gathered holds the records of one chunk, and the goroutines, stack
// traces and pooled strings they refer to, each once.
type gathered struct {
	held   []*batch.Buffer // full buffers, written in place
	parts  [][]byte        // their records
	copied []byte          // records copied from buffers being filled
	size   int64           // bytes of records
	// stacks is key, depth, pcs..., key, depth, pcs...
	threads   []uint64
	stacks    []uintptr
	strs      []uint64  // keys of pooled strings
	funcs     []uintptr // ids of Func fields (batch.FuncID)
	seenGs    map[uint64]struct{}
	seenStack map[uint64]struct{}
	seenStr   map[uint64]struct{}
	seenFunc  map[uintptr]struct{}
	// session gets the held buffers back (reset); lease, when streams
	// borrowed them (lend), once they are done. leaseOut is the
	// session's: one lease out at a time.
	session  *batch.Session
	lease    *lease
	leaseOut *atomic.Bool
}

func newGathered(s *batch.Session, leaseOut *atomic.Bool) *gathered {
	return &gathered{seenGs: map[uint64]struct{}{}, seenStack: map[uint64]struct{}{}, seenStr: map[uint64]struct{}{},
		seenFunc: map[uintptr]struct{}{}, session: s, leaseOut: leaseOut}
}

// hold keeps a full buffer for the chunk, its records not yet taken
// written in place.
func (g *gathered) hold(b *batch.Buffer) {
	t := b.Take()
	g.held = append(g.held, b)
	g.parts = append(g.parts, t.Records)
	g.size += int64(len(t.Records))
	g.refs(t)
}

// copyLive copies the published records of a buffer still being filled.
func (g *gathered) copyLive(b *batch.Buffer) {
	t := b.Take()
	g.copied = append(g.copied, t.Records...)
	g.size += int64(len(t.Records))
	g.refs(t)
}

func (g *gathered) refs(t batch.Taken) {
	addNew(g.seenGs, &g.threads, t.Threads)
	addNew(g.seenStr, &g.strs, t.Strings)
	addNew(g.seenFunc, &g.funcs, t.Funcs)
	for i := 0; i < len(t.Stacks); {
		key, n := uint64(t.Stacks[i]), int(t.Stacks[i+1])
		if _, ok := g.seenStack[key]; !ok {
			g.seenStack[key] = struct{}{}
			g.stacks = append(g.stacks, t.Stacks[i:i+2+n]...)
		}
		i += 2 + n
	}
}

// addNew appends to list each of vals not yet in seen.
func addNew[T comparable](seen map[T]struct{}, list *[]T, vals []T) {
	for _, v := range vals {
		if _, ok := seen[v]; !ok {
			seen[v] = struct{}{}
			*list = append(*list, v)
		}
	}
}

// maxKeptCopy caps the copy buffer kept from one chunk to the next.
const maxKeptCopy = 4 << 20

// reset recycles the held buffers, or leaves them to their lease, and
// empties g.
func (g *gathered) reset() {
	if g.lease != nil {
		g.lease.release()
		g.lease = nil
	} else {
		for _, b := range g.held {
			g.session.Recycle(b)
		}
	}
	clear(g.held)
	clear(g.parts)
	g.held, g.parts = g.held[:0], g.parts[:0]
	if cap(g.copied) > maxKeptCopy {
		g.copied = nil
	}
	g.copied = g.copied[:0]
	g.size = 0
	g.threads = g.threads[:0]
	g.stacks = g.stacks[:0]
	g.strs = g.strs[:0]
	g.funcs = g.funcs[:0]
	clear(g.seenFunc)
	clear(g.seenGs)
	clear(g.seenStack)
	clear(g.seenStr)
}

// chunkJob is a flush waiting to be encoded and delivered.
type chunkJob struct {
	in      chunkInput
	req     flushReq
	maxAge  time.Duration
	maxSize int64
}

// chunkWriter encodes and delivers flushes in order, handing each
// gathering back through spare once written.
//
// A flush is written pinned, in steps, but for what may block (steps.go).
func (ss *session) chunkWriter(cb *chunkBuilder, jobs <-chan chunkJob, spare chan<- *gathered, written chan<- struct{}) {
	defer close(written)
	st := cb.steps
	st.begin()
	defer st.end()
	for {
		j, ok := receive(st, jobs)
		if !ok {
			return
		}
		t := phaseStart()
		ss.writeFlush(cb, j)
		phaseSince(phaseWriteFlush, t)
		j.in.recs.reset()
		// Names retired long enough ago are forgotten; when the names
		// are locked, at the next flush.
		batch.TrySweepNames()
		if j.req.ack != nil {
			close(j.req.ack)
		}
		send(st, spare, j.in.recs)
		// A flush the flusher left for when this one is written may be
		// waiting (flusher).
		j.in.dropped.WakeFlusher()
		st.point()
	}
}

// chunkLimits returns the smallest maximum chunk age and size of the
// recordings.
func (ss *session) chunkLimits() (time.Duration, int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.chunkLimitsLocked()
}

// chunkLimitsLocked is chunkLimits with ss.mu held.
func (ss *session) chunkLimitsLocked() (time.Duration, int64) {
	age, size := time.Duration(math.MaxInt64), int64(defaultMaxChunkSize)
	for _, r := range ss.recordings {
		age = min(age, r.cfg.maxChunkAge)
		size = min(size, r.cfg.maxChunkSize)
	}
	return age, size
}

// prepareChunk takes what a flush holds besides the gathered records
// (recordings, settings, CPU samples).
// Pinned (st), it stays pinned.
func (ss *session) prepareChunk(s *batch.Session, recs *gathered, req flushReq, st *steps) chunkJob {
	end := clock.Now()
	st.lock(&ss.mu)
	recordings := slices.Clone(ss.recordings)
	start, startClock := ss.chunkStart, ss.chunkClock
	ss.chunkStart = end
	ss.chunkClock = clock.Recalibrate()
	merged := ss.settings
	// remove clears runtime under mu while this goroutine flushes.
	rt := ss.runtime
	age, size := ss.chunkLimitsLocked()
	ss.mu.Unlock()
	var samples []cpuSample
	var runtimeRecs []jdkRecord
	var sampler string
	var traced []gotrace.Event
	var tracerStatus string
	skipped := rt != nil
	// The runtime events' goroutine holds their lock briefly, but when
	// it is preempted holding it, for as long as the run queues take
	// (seconds behind goroutines that never block): a periodic flush
	// leaves them to the next one rather than wait.
	if rt != nil && (req.cut || req.ack != nil || rt.mu.TryLock()) {
		if req.cut || req.ack != nil {
			st.lock(&rt.mu)
		}
		skipped = false
		samples, runtimeRecs, sampler = rt.take(st)
		var lost []jdkRecord
		traced, lost, tracerStatus = rt.takeTraced(st)
		runtimeRecs = append(runtimeRecs, lost...)
		rt.mu.Unlock()
	}
	return chunkJob{in: chunkInput{
		start: start, end: end, clock: startClock, recs: recs, recordings: recordings, settings: merged,
		samples: samples, runtime: runtimeRecs, sampler: sampler, dropped: s, traced: traced, tracer: tracerStatus,
		runtimeSkipped: skipped,
	}, req: req, maxAge: age, maxSize: size}
}

// writeFlush writes a flush into the chunk being written and delivers it
// to every recording, cutting the chunk after it when asked or when the
// chunk reaches its maximum size or age.
func (ss *session) writeFlush(cb *chunkBuilder, j chunkJob) {
	in := j.in
	// The chunk's age and size after this flush: it opens with it unless
	// one is open.
	start, size := in.start, in.recs.size
	if cb.chunk.open {
		start, size = cb.chunk.start, size+cb.w.ChunkSize()
	}
	age := time.Duration(float64(in.end-start) * 1e9 / float64(ss.tps))
	cut := j.req.cut || age >= j.maxAge || size >= j.maxSize
	wall := time.Unix(0, ss.anchor.UnixNanos+int64(float64(in.end-ss.anchor.Ticks)*1e9/float64(ss.tps)))
	t := phaseStart()
	err := cb.flush(in, cut, func(seg segment) {
		phaseSince(phaseEncode, t)
		for _, r := range in.recordings {
			r.deliver(seg, wall, cb.steps)
		}
	})
	if err != nil {
		pinned := cb.steps.pinned
		cb.steps.settle()
		for _, r := range in.recordings {
			r.fail(err)
		}
		if pinned {
			cb.steps.begin()
		}
	}
}
