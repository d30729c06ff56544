package view

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/flightrec/flightrec/export/pprof"
	"github.com/flightrec/flightrec/internal/gzipped"
	"github.com/flightrec/flightrec/internal/jfrstack"
	"github.com/flightrec/flightrec/internal/mmapfile"
	"github.com/flightrec/flightrec/internal/quantity"
	"github.com/flightrec/flightrec/jfr"
)

// File is one opened recording.
type File struct {
	Name       string
	Size       int64
	Start, End int64 // ns since the epoch, from the chunk headers
	data       []byte
	chunks     []jfr.ChunkSpan
	close      func() error
}

// reader reads the file's data for code that reads it on goroutines of
// its own: a fault (a mapped file cut underneath) is an error there too.
func (f *File) reader() *mmapfile.Reader { return mmapfile.NewReader(f.data) }

// Type is an event type across all files.
type Type struct {
	ID       int
	Name     string
	Label    string
	Category []string
	Fields   []FieldInfo
	Count    int64
	Bytes    int64
	PerFile  []int64 // count per file
	Stack    bool    // has a stack trace
	Timed    bool
	Hist     []int64 // events per histogram bucket of the whole time range
	events   []int32 // indices of its events, by start time
}

// FieldInfo describes a field for the event browser and flame weights.
type FieldInfo struct {
	Name    string `json:"name"`
	Label   string `json:"label,omitempty"`
	Type    string `json:"type"`
	Numeric bool   `json:"numeric,omitempty"`
	Unit    string `json:"unit,omitempty"`
}

// Series is a counter: CPU load, heap, thread counts, runtime metrics.
type Series struct {
	Name   string
	File   int
	Points []Point
}

// Point is one counter value.
type Point struct {
	T int64
	V float64
}

// histBuckets is the resolution of the per-type time histograms.
const histBuckets = 256

// Index is what the view knows about the recordings.
type Index struct {
	Files      []*File
	Types      []*Type
	Threads    []string // by id; 0 is "no thread"
	Stacks     *jfrstack.Table
	Series     []*Series
	Start, End int64
	Events     int

	// Columns, one entry per event, in file and chunk order.
	t      []int64
	dur    []int64
	typ    []uint16
	thread []uint32
	stack  []uint32
	chunk  []uint16 // index into chunks
	off    []uint32 // of the record in its chunk
	chunks []chunkRef

	typeByName map[string]*Type
	threadsOf  map[string]uint32
	findings   Findings

	decode decodeCache
	cols   columnCache
	lanes  threadEvents
}

// chunkRef names a chunk: its file and its index there.
type chunkRef struct{ file, chunk int }

// Findings are the Overview's automated observations.
type Findings struct {
	DataLossEvents int64   `json:"dataLossEvents"`
	DataLossBytes  int64   `json:"dataLossBytes"`
	GCPauseNanos   int64   `json:"gcPauseNanos"`
	GCPauseRatio   float64 `json:"gcPauseRatio"`
	HottestMethod  string  `json:"hottestMethod,omitempty"`
	HottestShare   float64 `json:"hottestShare"`
	LockWaitNanos  int64   `json:"lockWaitNanos"`
	LockEvents     int64   `json:"lockEvents"`
	StackEvents    int64   `json:"stackEvents"`
	TruncatedShare float64 `json:"truncatedShare"`
	GoCPUOneThread bool    `json:"goCpuOneThread"`
}

// Open maps (or, when gzip-compressed, reads) the files and indexes them.
func Open(names []string) (*Index, error) {
	ix, err := openFiles(names)
	if err != nil {
		return nil, err
	}
	if err := ix.build(); err != nil {
		ix.Close()
		return nil, err
	}
	return ix, nil
}

// openFiles opens the files and finds their chunks, without indexing.
func openFiles(names []string) (*Index, error) {
	ix := &Index{typeByName: map[string]*Type{}, threadsOf: map[string]uint32{}, Threads: []string{""}, Stacks: jfrstack.New()}
	for _, name := range names {
		f, err := openFile(name)
		if err != nil {
			ix.Close()
			return nil, err
		}
		ix.Files = append(ix.Files, f)
	}
	return ix, nil
}

// Close unmaps the files.
func (ix *Index) Close() error {
	var err error
	for _, f := range ix.Files {
		if f.close != nil {
			err = errors.Join(err, f.close())
		}
	}
	return err
}

func openFile(name string) (*File, error) {
	f := &File{Name: name}
	cut := false // a compressed file that ends early
	m, err := mmapfile.Open(name)
	switch {
	case err == nil && !gzipped.Is(m.Data):
		f.data, f.close = m.Data, m.Close
	case err == nil || errors.Is(err, mmapfile.ErrNotSupported):
		if m != nil {
			m.Close()
		}
		data, c, err := readAll(name)
		if err != nil {
			return nil, err
		}
		f.data, cut = data, c
	default:
		return nil, err
	}
	f.Size = int64(len(f.data))
	spans, err := jfr.ScanChunksAt(f.reader(), f.Size, nil)
	if err != nil {
		if f.close != nil {
			f.close()
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cut {
		// The chunk scan named the chunk where the data ends, as the
		// other commands do; one cut at a chunk's end is still cut.
		return nil, fmt.Errorf("%s: byte offset %d of the decompressed data: unexpected end of the compressed file (truncated .gz)", name, f.Size)
	}
	f.chunks = spans
	f.Start, f.End = math.MaxInt64, math.MinInt64
	for _, s := range spans {
		f.Start = min(f.Start, s.Header.StartNanos)
		f.End = max(f.End, s.Header.StartNanos+s.Header.DurationNanos)
	}
	return f, nil
}

// readAll reads a file, decompressing it if it is gzip-compressed. Of a
// compressed file that ends early it returns what it held and cut, so
// that the error can name the chunk where the data ends; it said
// "unexpected EOF".
func readAll(name string) (data []byte, cut bool, err error) {
	raw, err := os.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer raw.Close()
	r, compressed, err := gzipped.NewReader(name, bufio.NewReader(raw))
	if err != nil {
		return nil, false, err
	}
	data, err = io.ReadAll(r)
	if errors.Is(err, io.ErrUnexpectedEOF) && compressed {
		return data, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", name, err)
	}
	return data, false, nil
}

// chunkResult is what one chunk's pass found, with chunk-local ids.
type chunkResult struct {
	job         int // index into Index.chunks
	file, chunk int
	t, dur      []int64
	typ         []uint16
	thread      []uint32
	stack       []uint32
	off         []uint32
	types       []*jfr.Class
	typeBytes   []int64
	threads     []string // local thread id -> identity key; 0 unused
	threadNames []string
	stacks      *jfrstack.Table
	series      map[string][]Point
	dataLoss    int64
	gcPause     int64
	lockWait    int64
	lockEvents  int64
	err         error
}

func (ix *Index) build() error {
	var jobs []chunkRef
	for fi, f := range ix.Files {
		for ci, span := range f.chunks {
			if span.Size > math.MaxUint32 {
				return fmt.Errorf("%s: chunk %d: %d bytes, more than the view indexes (4 GiB)", f.Name, ci, span.Size)
			}
			jobs = append(jobs, chunkRef{fi, ci})
		}
	}
	if len(jobs) > math.MaxUint16 {
		return fmt.Errorf("%d chunks: the view indexes at most %d", len(jobs), math.MaxUint16)
	}
	ix.chunks = jobs
	results := make([]*chunkResult, len(jobs))
	cache := jfr.NewMetadataCache()
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = ix.indexChunk(i, jobs[i].file, jobs[i].chunk, cache)
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
	}
	ix.Start, ix.End = math.MaxInt64, math.MinInt64
	for _, f := range ix.Files {
		ix.Start, ix.End = min(ix.Start, f.Start), max(ix.End, f.End)
	}
	total := 0
	for _, r := range results {
		total += len(r.t)
	}
	ix.t = make([]int64, 0, total)
	ix.dur = make([]int64, 0, total)
	ix.off = make([]uint32, 0, total)
	ix.typ = make([]uint16, 0, total)
	ix.thread = make([]uint32, 0, total)
	ix.stack = make([]uint32, 0, total)
	ix.chunk = make([]uint16, 0, total)
	for i, r := range results {
		ix.merge(r)
		results[i] = nil // its columns are copied: let them go
	}
	ix.finish()
	return nil
}

// indexChunk reads one chunk; a memory fault (the file shrank) becomes an
// error.
func (ix *Index) indexChunk(job, fi, ci int, cache *jfr.MetadataCache) (r *chunkResult) {
	f := ix.Files[fi]
	span := f.chunks[ci]
	r = &chunkResult{job: job, file: fi, chunk: ci, stacks: jfrstack.New(), series: map[string][]Point{}, threads: []string{""}, threadNames: []string{""}}
	// Records average 40-80 bytes; start the columns near their final size
	// rather than grow them by copying.
	guess := int(span.Size / 64)
	r.t, r.dur, r.off = make([]int64, 0, guess), make([]int64, 0, guess), make([]uint32, 0, guess)
	r.typ, r.thread, r.stack = make([]uint16, 0, guess), make([]uint32, 0, guess), make([]uint32, 0, guess)
	if err := mmapfile.Protect(func() error { ix.readChunk(r, f, span, cache); return nil }); err != nil {
		r.err = err
	}
	return r
}

// readChunk decodes the chunk at span of f into r (r.err on bad input).
func (ix *Index) readChunk(r *chunkResult, f *File, span jfr.ChunkSpan, cache *jfr.MetadataCache) {
	rd := jfr.NewBytesReader(f.data[span.Offset:span.Offset+span.Size], &jfr.ReaderOptions{PerChunkClock: true, MetadataCache: cache})
	plans := map[*jfr.Class]*chunkPlan{}
	threadKeys := map[uint64]uint32{}
	threadIDs := map[string]uint32{}
	var ev jfr.Event
	for {
		err := rd.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			var fe *jfr.FormatError
			if errors.As(err, &fe) {
				err = &jfr.FormatError{Chunk: span.Index, Offset: fe.Offset + span.Offset, Err: fe.Err}
			}
			r.err = fmt.Errorf("%s: %w", f.Name, err)
			return
		}
		p := plans[ev.Type]
		if p == nil {
			p = newChunkPlan(ev.Type, len(r.types))
			plans[ev.Type] = p
			r.types = append(r.types, ev.Type)
			r.typeBytes = append(r.typeBytes, 0)
		}
		clock := ev.Chunk.Clock()
		start := clock.Nanos(ev.StartTicks())
		var dur int64
		if d := ev.DurationTicks(); d > 0 {
			dur = int64(clock.Duration(d))
		}
		var th uint32
		if p.thread >= 0 {
			v := ev.Fields[p.thread]
			key, isRef := v.Key(), v.Kind() == jfr.KindRef
			if id, ok := threadKeys[key]; ok && isRef {
				th = id
			} else if rv := v.Resolve(); rv.Kind() == jfr.KindStruct {
				name := jfrstack.ThreadName(rv)
				ident := jfrstack.ThreadIdentity(rv)
				id, ok := threadIDs[ident]
				if !ok {
					id = uint32(len(r.threads))
					r.threads = append(r.threads, ident)
					r.threadNames = append(r.threadNames, name)
					threadIDs[ident] = id
				}
				if isRef {
					threadKeys[key] = id
				}
				th = id
			}
		}
		var st uint32
		if p.stack >= 0 {
			st = r.stacks.Stack(&ev, p.stack)
		}
		r.t = append(r.t, start)
		r.dur = append(r.dur, dur)
		r.typ = append(r.typ, p.id)
		r.thread = append(r.thread, th)
		r.stack = append(r.stack, st)
		r.off = append(r.off, uint32(ev.Offset)) // the reader reads the chunk alone
		r.typeBytes[p.id] += ev.Size
		p.extra(r, &ev, start, dur)
	}
}

// chunkPlan is how one event type is indexed.
type chunkPlan struct {
	id       uint16
	thread   int
	stack    int
	counters []int
	series   []string // the counters' series names
	metric   [2]int
	dataLoss quantity.Field
	isLoss   bool
	gcPause  quantity.Field
	isGC     bool
	lock     bool
}

func newChunkPlan(c *jfr.Class, id int) *chunkPlan {
	p := &chunkPlan{id: uint16(id), thread: jfrstack.ThreadField(c), stack: jfrstack.StackField(c), metric: [2]int{-1, -1}}
	for _, f := range quantity.Counters[c.Name] {
		if i := c.FieldIndex(f); i >= 0 {
			p.counters = append(p.counters, i)
			p.series = append(p.series, c.Name+"."+f)
		}
	}
	switch c.Name {
	case "go.RuntimeMetric":
		p.metric = [2]int{c.FieldIndex("name"), c.FieldIndex("value")}
	case "jdk.DataLoss":
		p.dataLoss, p.isLoss = quantity.Of(c, "amount")
	case "jdk.GarbageCollection":
		p.gcPause, p.isGC = quantity.Of(c, "sumOfPauses")
	}
	p.lock = pprof.KindOf(c.Name) == pprof.KindLock
	return p
}

// extra gathers counters and findings from an event.
func (p *chunkPlan) extra(r *chunkResult, ev *jfr.Event, start, dur int64) {
	for j, i := range p.counters {
		name := p.series[j]
		r.series[name] = append(r.series[name], Point{start, ev.Fields[i].Float()})
	}
	if p.metric[0] >= 0 && p.metric[1] >= 0 {
		name := jfrstack.Text(ev.Fields[p.metric[0]])
		r.series[name] = append(r.series[name], Point{start, ev.Fields[p.metric[1]].Float()})
	}
	switch {
	case p.isLoss:
		r.dataLoss += p.dataLoss.Value(ev)
	case p.isGC:
		r.gcPause += p.gcPause.Value(ev)
	case p.lock:
		r.lockWait += dur
		r.lockEvents++
	}
}

// merge adds a chunk's events with global type, thread and stack ids.
func (ix *Index) merge(r *chunkResult) {
	typeIDs := make([]uint16, len(r.types))
	for i, c := range r.types {
		t := ix.typeByName[c.Name]
		if t == nil {
			t = newType(c, len(ix.Types), len(ix.Files))
			ix.typeByName[c.Name] = t
			ix.Types = append(ix.Types, t)
		}
		typeIDs[i] = uint16(t.ID)
		t.Bytes += r.typeBytes[i]
	}
	threadIDs := make([]uint32, len(r.threads))
	for i := 1; i < len(r.threads); i++ {
		id, ok := ix.threadsOf[r.threads[i]]
		if !ok {
			id = uint32(len(ix.Threads))
			ix.Threads = append(ix.Threads, r.threadNames[i])
			ix.threadsOf[r.threads[i]] = id
		}
		threadIDs[i] = id
	}
	stackIDs := remapStacks(ix.Stacks, r.stacks)
	base := len(ix.t)
	ix.t = append(ix.t, r.t...)
	ix.dur = append(ix.dur, r.dur...)
	ix.off = append(ix.off, r.off...)
	for i := range r.t {
		t := ix.Types[typeIDs[r.typ[i]]]
		ix.typ = append(ix.typ, uint16(t.ID))
		ix.thread = append(ix.thread, threadIDs[r.thread[i]])
		ix.stack = append(ix.stack, stackIDs[r.stack[i]])
		ix.chunk = append(ix.chunk, uint16(r.job))
		t.events = append(t.events, int32(base+i))
		t.Count++
		t.PerFile[r.file]++
	}
	for name, pts := range r.series {
		s := ix.series(r.file, name)
		s.Points = append(s.Points, pts...)
	}
	ix.findings.DataLossBytes += r.dataLoss
	ix.findings.GCPauseNanos += r.gcPause
	ix.findings.LockWaitNanos += r.lockWait
	ix.findings.LockEvents += r.lockEvents
}

// remapStacks interns a chunk's stacks into the global table and returns
// the global id of each local one.
func remapStacks(dst, src *jfrstack.Table) []uint32 {
	funcs := make([]uint32, len(src.Funcs))
	for i, name := range src.Funcs {
		funcs[i] = dst.FuncID(name)
	}
	frames := make([]uint32, src.NumFrames())
	for i := range frames {
		f := src.Frame(uint32(i))
		frames[i] = dst.FrameID(jfrstack.Frame{Func: funcs[f.Func], Line: f.Line})
	}
	ids := make([]uint32, src.Len())
	var buf []uint32
	for s := 1; s < src.Len(); s++ {
		buf = buf[:0]
		for _, f := range src.Frames(uint32(s)) {
			buf = append(buf, frames[f])
		}
		ids[s] = dst.StackOf(buf, src.Truncated(uint32(s)))
	}
	return ids
}

func (ix *Index) series(file int, name string) *Series {
	for _, s := range ix.Series {
		if s.File == file && s.Name == name {
			return s
		}
	}
	s := &Series{Name: name, File: file}
	ix.Series = append(ix.Series, s)
	return s
}

func newType(c *jfr.Class, id, files int) *Type {
	t := &Type{ID: id, Name: c.Name, Label: c.Label(), PerFile: make([]int64, files), Stack: jfrstack.StackField(c) >= 0, Hist: make([]int64, histBuckets)}
	if a, ok := c.Annotation("jdk.jfr.Category"); ok {
		for _, kv := range a.Values {
			t.Category = append(t.Category, kv.Value)
		}
	}
	t.Timed = c.FieldIndex("duration") == 1
	for _, f := range c.Fields {
		fi := FieldInfo{Name: f.Name, Label: f.Label(), Type: f.Type.Name}
		if f.Array {
			fi.Type += "[]"
		}
		if q, ok := quantity.Of(c, f.Name); ok && f.Name != "startTime" {
			fi.Numeric, fi.Unit = true, string(q.Unit)
		}
		t.Fields = append(t.Fields, fi)
	}
	return t
}

// finishType sorts t's events by time (ties by index) and computes its
// histogram.
func (ix *Index) finishType(t *Type, span int64) {
	// A type with a stackTrace field whose stacks are all empty (the
	// setting was off) is not offered for flame graphs.
	if t.Stack {
		t.Stack = slices.ContainsFunc(t.events, func(e int32) bool { return ix.stack[e] != 0 })
	}
	sortByTime(t.events, ix.t)
	for _, e := range t.events {
		b := int((ix.t[e] - ix.Start) * histBuckets / span)
		t.Hist[min(max(b, 0), histBuckets-1)]++
	}
}

// sortByTime sorts events (indexes into ts) by ts, then by index. Chunks
// come in time order and events nearly so within one: often there is
// nothing to sort. The sort runs on (time, index) pairs, which compare
// without reaching into ts.
func sortByTime(events []int32, ts []int64) {
	sorted := true
	for i := 1; i < len(events) && sorted; i++ {
		a, b := events[i-1], events[i]
		sorted = ts[a] < ts[b] || (ts[a] == ts[b] && a < b)
	}
	if sorted {
		return
	}
	type pair struct {
		t int64
		e int32
	}
	pairs := make([]pair, len(events))
	for i, e := range events {
		pairs[i] = pair{ts[e], e}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		return cmp.Compare(a.e, b.e)
	})
	for i, p := range pairs {
		events[i] = p.e
	}
}

// finish sorts each type's events by time and computes histograms and
// findings.
func (ix *Index) finish() {
	ix.Events = len(ix.t)
	span := max(ix.End-ix.Start, 1)
	// Types are independent: sort them on every core (the sort was a
	// third of the index's time, and ran on one).
	types := make(chan *Type)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(len(ix.Types), 1)) {
		wg.Go(func() {
			for t := range types {
				ix.finishType(t, span)
			}
		})
	}
	for _, t := range ix.Types {
		types <- t
	}
	close(types)
	wg.Wait()
	for _, s := range ix.Series {
		slices.SortStableFunc(s.Points, func(a, b Point) int { return cmp.Compare(a.T, b.T) })
	}
	slices.SortFunc(ix.Series, func(a, b *Series) int { return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Name, b.Name)) })
	f := &ix.findings
	if t := ix.typeByName["jdk.DataLoss"]; t != nil {
		f.DataLossEvents = t.Count
	}
	var recorded int64 // the files' durations: several files may be far apart
	for _, fl := range ix.Files {
		recorded += max(fl.End-fl.Start, 0)
	}
	f.GCPauseRatio = float64(f.GCPauseNanos) / float64(max(recorded, 1))
	var truncated int64
	leaf := map[uint32]int64{}
	var samples, pseudo int64 // CPU samples, those on goCPUThread
	for _, t := range ix.Types {
		if !t.Stack {
			continue
		}
		cpu := pprof.KindOf(t.Name) == pprof.KindCPU
		for _, e := range t.events {
			s := ix.stack[e]
			f.StackEvents++
			if ix.Stacks.Truncated(s) {
				truncated++
			}
			if cpu {
				samples++
				if ix.Threads[ix.thread[e]] == goCPUThread {
					pseudo++
				}
				if fr := ix.Stacks.Frames(s); len(fr) > 0 {
					leaf[ix.Stacks.Frame(fr[0]).Func]++
				}
			}
		}
	}
	// Go's CPU profiler does not say which goroutine ran: without the
	// execution tracer, the recorder puts its samples on one synthetic
	// thread; with it, only those outside the trace's time.
	f.GoCPUOneThread = samples > 0 && pseudo == samples
	if f.StackEvents > 0 {
		f.TruncatedShare = float64(truncated) / float64(f.StackEvents)
	}
	var best uint32
	var bestN int64 = -1
	for fn, n := range leaf {
		if n > bestN || (n == bestN && ix.Stacks.Funcs[fn] < ix.Stacks.Funcs[best]) {
			best, bestN = fn, n
		}
	}
	if bestN > 0 {
		f.HottestMethod = ix.Stacks.Funcs[best]
		f.HottestShare = float64(bestN) / float64(samples)
	}
}

// goCPUThread is the Java name of the thread the recorder gives Go CPU
// samples (recorder/chunk.go).
const goCPUThread = "goroutines (CPU profile)"

// Findings returns the Overview's observations.
func (ix *Index) Findings() Findings { return ix.findings }

// Type returns the named event type, or nil.
func (ix *Index) Type(name string) *Type { return ix.typeByName[name] }

// MemoryBytes estimates the index's own memory: the event columns and the
// per-type event lists (the large part), not the mapped files.
func (ix *Index) MemoryBytes() int64 {
	n := int64(len(ix.t)) * (8 + 8 + 2 + 4 + 4 + 2 + 4 + 4)
	for _, s := range ix.Series {
		n += int64(len(s.Points)) * 16
	}
	return n
}
