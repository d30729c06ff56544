package recorder

import (
	"bytes"
	"slices"
	"sync"
	"time"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/pin"
	"github.com/flightrec/flightrec/jfr"
)

// buffersPerSlot is how many buffers beyond its current one each P may
// fill before the flusher catches up; past that, events are dropped.
const buffersPerSlot = 8

// session is the process-wide state shared by all running recordings.
type session struct {
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
	ss.mu.Lock()
	ss.nextID++
	r.id = ss.nextID
	ss.recordings = append(ss.recordings, r)
	first := len(ss.recordings) == 1
	if first {
		if ss.tps == 0 {
			ss.tps = clock.TicksPerSecond()
			ss.anchor = clock.NewAnchor()
		}
		ss.s = batch.NewSession(pin.Shards(), buffersPerSlot)
		ss.chunkStart = clock.Now()
		ss.chunk = newChunkBuilder(ss)
		ss.stop = make(chan struct{})
		ss.done = make(chan struct{})
		ss.flushReq = make(chan chan struct{})
		batch.Activate(ss.s)
		batch.OnRegister(func(d *batch.Desc) { ss.applyTo(d, ss.merged()) })
		ss.runtime = startRuntimeEvents(ss)
		go ss.flusher(ss.s, ss.stop, ss.done)
	}
	ss.mu.Unlock()
	ss.applySettings()
	if !first {
		// The recording's first chunk starts now.
		ss.flushNow()
	}
}

func (ss *session) remove(r *Recording) {
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
		close(stop)
		<-done
		batch.OnRegister(nil)
		batch.Activate(nil)
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

// flusher collects full buffers and cuts a chunk every maxChunkAge, when
// the buffered events reach maxChunkSize, on request, and when stopped.
func (ss *session) flusher(s *batch.Session, stop, done chan struct{}) {
	defer close(done)
	age, size := ss.chunkLimits()
	tick := time.NewTicker(age)
	defer tick.Stop()
	var held []*batch.Buffer
	var heldBytes int64
	cut := func() {
		s.Collect()
		for {
			select {
			case b := <-s.Full:
				held = append(held, b)
				continue
			default:
			}
			break
		}
		ss.writeChunk(held)
		for _, b := range held {
			s.Recycle(b)
		}
		held, heldBytes = held[:0], 0
		age, size = ss.chunkLimits()
		tick.Reset(age)
	}
	for {
		select {
		case b := <-s.Full:
			held = append(held, b)
			heldBytes += int64(len(b.Data))
			// Cut early when the chunk is big or half the buffers wait
			// here, so emitters keep finding empty ones.
			if heldBytes >= size || len(held) >= len(s.Slots)*buffersPerSlot/2 {
				cut()
			}
		case <-tick.C:
			cut()
		case ack := <-ss.flushReq:
			cut()
			close(ack)
		case <-stop:
			cut()
			return
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

// writeChunk writes the held buffers and the recorder's own events as one
// chunk and delivers it to every recording.
func (ss *session) writeChunk(bufs []*batch.Buffer) {
	end := clock.Now()
	ss.mu.Lock()
	recs := slices.Clone(ss.recordings)
	start := ss.chunkStart
	ss.chunkStart = end
	merged := ss.merged()
	ss.mu.Unlock()
	var samples []cpuSample
	if ss.runtime != nil {
		samples = ss.runtime.takeSamples()
	}
	var out bytes.Buffer
	err := ss.chunk.build(&out, chunkInput{
		start: start, end: end, bufs: bufs, recordings: recs, settings: merged,
		samples: samples, dropped: ss.s,
	})
	if err != nil {
		for _, r := range recs {
			r.mu.Lock()
			if r.err == nil {
				r.err = err
			}
			r.mu.Unlock()
		}
		return
	}
	wall := time.Unix(0, ss.anchor.UnixNanos+int64(float64(end-ss.anchor.Ticks)*1e9/float64(ss.tps)))
	for _, r := range recs {
		r.deliver(out.Bytes(), wall)
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
