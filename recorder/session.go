package recorder

import (
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/pin"
	"github.com/flightrec/flightrec/jfr"
)

// Buffers of a session: minBuffers (10 MiB of events, JFR's default
// memory size) on small machines, more with more Ps, each of which holds
// one while it fills it, up to maxBuffers. Sized by GOMAXPROCS, not the
// CPU count: a container limited to 2 CPUs on a 64-core host runs 2 Ps.
// One goroutine in a tight loop fills over 300 MB/s, and on 2 cores the
// flusher may wait a scheduler time slice (10 ms) or more.
const (
	minBuffers = 80
	maxBuffers = 512
)

func bufferCount() int { return min(maxBuffers, max(minBuffers, 2*runtime.GOMAXPROCS(0)+64)) }

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
	flushReq   chan chan struct{}
	chunkStart int64
	chunk      *chunkBuilder
	runtime    *runtimeEvents
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
		ss.s = batch.NewSession(bufferCount())
		ss.chunkStart = clock.Now()
		ss.chunk = newChunkBuilder(ss)
		ss.stop = make(chan struct{})
		ss.done = make(chan struct{})
		ss.flushReq = make(chan chan struct{})
		batch.Activate(ss.s)
		batch.OnRegister(func(d *batch.Desc) {
			ss.mu.Lock()
			defer ss.mu.Unlock()
			ss.applyTo(d, ss.merged())
		})
		ss.runtime = startRuntimeEvents(ss)
		go ss.flusher(ss.s, ss.chunk, ss.stop, ss.done, ss.flushReq)
	}
	ss.mu.Unlock()
	ss.applySettings()
	if !first {
		// The recording's first chunk starts now.
		ss.flushNow()
	}
}

func (ss *session) remove(r *Recording) {
	ss.life.Lock()
	defer ss.life.Unlock()
	ss.flushNow()
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
		defs[n] = [2]bool{true, false}
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
	types, _ := batch.Types()
	for _, d := range types {
		ss.applyTo(d, m)
	}
	if ss.runtime != nil {
		ss.runtime.setPeriods(m)
	}
}

func (ss *session) applyTo(d *batch.Desc, m map[string]resolved) {
	v, ok := m[d.Name]
	d.Stack.Store(v.stack)
	d.Threshold.Store(int64(float64(v.threshold) * float64(ss.tps) / 1e9))
	d.Period.Store(int64(v.period))
	d.On.Store(ok && v.enabled)
}

// flushNow cuts a chunk and waits until the recordings have it.
func (ss *session) flushNow() {
	ss.mu.Lock()
	req := ss.flushReq
	done := ss.done
	ss.mu.Unlock()
	if req == nil {
		return
	}
	ack := make(chan struct{})
	select {
	case req <- ack:
		<-ack
	case <-done:
	}
}

// flusher gathers the full buffers into the chunk being built, which
// writes their records in place, when the emitters signal a batch of them
// (batch.Session.Wake), and cuts a chunk every maxChunkAge, when
// the gathered records reach maxChunkSize or hold a third of the buffers,
// on request, and when stopped. At a cut it copies what the buffers still
// being filled hold. A cut chunk is encoded and delivered by chunkWriter,
// which then recycles its buffers, so the flusher goes on gathering
// meanwhile.
func (ss *session) flusher(s *batch.Session, cb *chunkBuilder, stop, done chan struct{}, flushReq chan chan struct{}) {
	defer close(done)
	age, size := ss.chunkLimits()
	tick := time.NewTicker(age)
	defer tick.Stop()
	// Two gatherings alternate: one filling here, one being written. Each
	// holds at most a third of the buffers, so the emitters have a third.
	holdLimit := s.Buffers() / 3
	spare := make(chan *gathered, 1)
	spare <- newGathered()
	jobs := make(chan chunkJob, 1)
	written := make(chan struct{})
	go ss.chunkWriter(cb, jobs, spare, written)
	cur := newGathered()
	drain := func() {
		for {
			select {
			case b := <-s.Full:
				cur.hold(b)
				continue
			default:
			}
			return
		}
	}
	cut := func(ack chan struct{}) {
		drain()
		s.Live(cur.copyLive)
		jobs <- ss.prepareChunk(s, cur, ack)
		// Take the other gathering back: this waits only while the
		// previous chunk is still being written.
		cur = <-spare
		age, size = ss.chunkLimits()
		tick.Reset(age)
	}
	defer func() {
		close(jobs)
		<-written
	}()
	for {
		select {
		case <-s.Wake:
			drain()
			if cur.size >= size || len(cur.held) >= holdLimit {
				cut(nil)
			}
		case <-tick.C:
			cut(nil)
		case ack := <-flushReq:
			cut(ack)
		case <-stop:
			cut(nil)
			s.Release()
			return
		}
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
	funcs     []uintptr // entry PCs of Func fields
	seenGs    map[uint64]struct{}
	seenStack map[uint64]struct{}
	seenStr   map[uint64]struct{}
	seenFunc  map[uintptr]struct{}
}

func newGathered() *gathered {
	return &gathered{seenGs: map[uint64]struct{}{}, seenStack: map[uint64]struct{}{}, seenStr: map[uint64]struct{}{},
		seenFunc: map[uintptr]struct{}{}}
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

// reset recycles the held buffers and empties g.
func (g *gathered) reset(s *batch.Session) {
	for _, b := range g.held {
		s.Recycle(b)
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

// chunkJob is a cut chunk waiting to be encoded and delivered.
type chunkJob struct {
	in  chunkInput
	ack chan struct{} // closed once delivered, if not nil
}

// chunkWriter encodes and delivers cut chunks in order, handing each
// gathering back through spare once written.
func (ss *session) chunkWriter(cb *chunkBuilder, jobs <-chan chunkJob, spare chan<- *gathered, written chan<- struct{}) {
	defer close(written)
	for j := range jobs {
		ss.writeChunk(cb, j.in)
		batch.SweepNames()
		j.in.recs.reset(j.in.dropped)
		spare <- j.in.recs
		if j.ack != nil {
			close(j.ack)
		}
	}
}

func (ss *session) chunkLimits() (time.Duration, int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	age, size := time.Second, int64(12<<20)
	for _, r := range ss.recordings {
		age = min(age, r.cfg.maxChunkAge)
		size = min(size, r.cfg.maxChunkSize)
	}
	return age, size
}

// prepareChunk ends the current chunk now: it takes what the chunk holds
// besides the gathered records (recordings, settings, CPU samples).
func (ss *session) prepareChunk(s *batch.Session, recs *gathered, ack chan struct{}) chunkJob {
	end := clock.Now()
	ss.mu.Lock()
	recordings := slices.Clone(ss.recordings)
	start := ss.chunkStart
	ss.chunkStart = end
	merged := ss.merged()
	ss.mu.Unlock()
	var samples []cpuSample
	var runtimeRecs []jdkRecord
	var sampler string
	if ss.runtime != nil {
		samples, runtimeRecs, sampler = ss.runtime.take()
	}
	return chunkJob{in: chunkInput{
		start: start, end: end, recs: recs, recordings: recordings, settings: merged,
		samples: samples, runtime: runtimeRecs, sampler: sampler, dropped: s,
	}, ack: ack}
}

// writeChunk writes the gathered records and the recorder's own events as
// one chunk and delivers it to every recording.
func (ss *session) writeChunk(cb *chunkBuilder, in chunkInput) {
	parts, err := cb.build(in)
	if err != nil {
		for _, r := range in.recordings {
			r.mu.Lock()
			if r.err == nil {
				r.err = err
			}
			r.mu.Unlock()
		}
		return
	}
	end := in.end
	wall := time.Unix(0, ss.anchor.UnixNanos+int64(float64(end-ss.anchor.Ticks)*1e9/float64(ss.tps)))
	for _, r := range in.recordings {
		r.deliver(parts, wall)
	}
}

// goroutineThread returns the java.lang.Thread fields of goroutine g.
func goroutineThread(g uint64) (name, group string) {
	if info, ok := event.LookupGoroutine(g); ok {
		return info.Name, info.Labels
	}
	return "", ""
}

var _ = jfr.HeaderSize
