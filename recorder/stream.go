package recorder

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/jfr"
)

// Stream hands the events of the running recordings to functions in the
// process as they are recorded, as the JDK's RecordingStream (JEP 349)
// does: at each flushpoint (once a second) the stream gets the bytes the
// flush added to the chunk being written and reads them with package jfr
// on its own goroutine (jfr.LiveChunk: the new constants join those read
// before, and only the events of types with handlers are decoded, the
// others skipped by their size), so handlers see exactly the values `jfr
// print` shows, within about a second. Chunks are cut by size and age as
// without a stream. A stream is itself a recording (named "stream" unless
// WithName says otherwise), whose settings (WithSettings) turn on the
// events it wants; it holds no data.
//
// Register handlers, then Start. Handlers run one at a time on the
// stream's goroutine, a chunk's events in the order they were written.
// A stream that has caught up reads a flush's events where the recorder
// wrote them, in its buffers, which go back to the emitters once the
// flush's handlers return; so a handler that blocks holds up to a third
// of the recorder's buffers meanwhile (one flush's; the flushes after it
// are copied, as they are for a stream behind), and the recorder grows
// its pool of buffers if the emitters run short.
type Stream struct {
	opts []Option
	rec  *Recording

	mu       sync.Mutex
	handlers map[string][]eventHandler
	version  int // of handlers
	onFlush  []func()
	onError  []func(error)
	onChunk  []func([]byte)
	segments []segmentHandler

	// deliver's state, on the recorder's chunk writer.
	sendMu   sync.Mutex // guards flushes against a late flush after Close
	closed   bool
	cur      []byte // the chunk being written, its bytes so far
	seq      uint64 // chunks begun
	skipping bool   // the chunk's first flush was not sent: nor are the others
	unsent   int64  // flushes in cur since the last one sent
	// lastChunks are the sizes of the last two chunks, for the next
	// one's buffer: at first, chunks cut at the default size.
	lastChunks [2]int
	// scan holds the records run is to read since the last flush sent,
	// in cur or lent: the emitted records of a flush with none of a
	// handled type, and those lent, are left out of cur (not copied).
	scan        []scanSpan
	holes       [][2]int64   // the ranges of cur left out, in order
	adopted     [][]byte     // deliver's scratch
	wholeChunks bool         // OnChunk handlers need every byte
	handled     handledTypes // the emitted types with handlers
	hversion    atomic.Int64 // of handlers, for deliver

	flushes chan streamFlush
	// spare holds the chunk buffers run is done with, for deliver: a new
	// buffer, zeroed by the allocator, costs the chunk writer as much as
	// copying a chunk.
	spare   chan []byte
	dropped atomic.Int64 // flushes whose events the handlers did not get
	copied  atomic.Int64 // bytes copied for the stream
	lent    atomic.Int64 // bytes read in place (lease)
	// noLend is set once a segment handler is added: segments of lent
	// records would hold the recorder's buffers past the flush.
	noLend atomic.Bool
	done   chan struct{}
}

// idleBuffers holds the chunk buffers of streams that are done with them,
// for the next stream: a new buffer, zeroed and faulted in on the
// recorder's chunk writer, costs it about what copying the chunk into it
// does, and streams come and go (ctl stream). A sync.Pool, which held
// them before, is emptied by every two garbage collections, so that a
// stream started a little after another (or the benchmark's, a few
// hundred milliseconds apart) made its two buffers anew.
var idleBuffers = bufferCache{keep: idleBufferTime}

// idleBufferTime is how long idleBuffers keeps the buffers after the last
// one put: memory a closed stream leaves, at most two chunks' worth.
const idleBufferTime = 30 * time.Second

// bufferCache keeps up to two buffers (a stream uses two) for keep after
// the last put; the zero value keeps none.
type bufferCache struct {
	keep  time.Duration
	mu    sync.Mutex
	bufs  [][]byte
	timer *time.Timer
}

// put keeps b, empty, unless the cache has two larger buffers.
func (c *bufferCache) put(b []byte) {
	if c.keep <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bufs) < 2 {
		c.bufs = append(c.bufs, b[:0])
	} else {
		small := 0
		if cap(c.bufs[1]) < cap(c.bufs[0]) {
			small = 1
		}
		if cap(c.bufs[small]) >= cap(b) {
			return
		}
		c.bufs[small] = b[:0]
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(c.keep, c.drop)
	} else {
		c.timer.Reset(c.keep)
	}
}

// get returns a kept buffer of at least n bytes, empty, or nil.
func (c *bufferCache) get(n int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, b := range c.bufs {
		if cap(b) >= n {
			c.bufs = slices.Delete(c.bufs, i, i+1)
			return b
		}
	}
	return nil
}

// drop lets the garbage collector have the buffers.
func (c *bufferCache) drop() {
	c.mu.Lock()
	clear(c.bufs)
	c.bufs = c.bufs[:0]
	c.mu.Unlock()
}

// streamFlush tells run that a chunk has grown by a flush.
type streamFlush struct {
	seq    uint64 // the chunk's, from 1
	header [jfr.HeaderSize]byte
	// The chunk's bytes up to the flush (header bytes not up to date):
	// deliver appends the next flushes after them, into the same array
	// while it has room, and never writes below len(data).
	data   []byte
	scan   []scanSpan // the records to read, in order
	closed bool       // the chunk is complete
	lease  *lease     // of the lent spans' buffers, released once read
}

// scanSpan is a range of a chunk's records for a stream to read: in its
// chunk buffer, or, lent, in the recorder's buffer that lent holds.
type scanSpan struct {
	from, to int64
	lent     []byte
}

// streamBacklog is how many flushes (seconds, at the default flush
// interval) a stream's handlers may fall behind before flushes are
// dropped.
const streamBacklog = 8

// ErrStreamBehind is reported to OnError handlers when events were dropped
// because the handlers could not keep up.
var ErrStreamBehind = errors.New("recorder: stream handlers fell behind; flushes dropped")

// NewStream returns a stream that, once started, records with opts
// (WithSettings, WithName, WithMaxChunkAge...).
func NewStream(opts ...Option) *Stream {
	return &Stream{opts: opts, handlers: map[string][]eventHandler{}, lastChunks: [2]int{cutChunkSize(), cutChunkSize()}}
}

// OnEvent calls fn with every event of the type named name (such as
// "app.HTTPRequest"). The event and its values are valid during the call
// only: every call gets the same *jfr.Event, prepared afresh for each
// record (jfr.LiveChunk.Dispatch), so a handler that keeps an event must
// copy what it needs: its values (strings, raw bytes) may point into the
// recorder's own buffers, which the stream reads in place and which record
// other events once the flush's handlers return. Its fields are decoded
// when a handler first asks for one (Field, Values, StartTime, Duration):
// ev.Fields is nil until then. OnEvents, which hands over the events in
// rows, costs less.
func (s *Stream) OnEvent(name string, fn func(*jfr.Event)) {
	s.addHandler(name, eventHandler{each: fn})
}

// OnEvents calls fn with the events of the type named name as they lie in
// each flush, in rows of events of the type, records end to end
// (jfr.EventBatch: the events that the writer wrote one after another, as
// the recorder writes each goroutine's buffer); fn takes them in a range
// loop:
//
//	st.OnEvents("app.HTTPRequest", func(b *jfr.EventBatch) {
//		for ev := range b.Events() {
//			...
//		}
//	})
//
// The events are those OnEvent hands over, in the same order, as the same
// lazily decoded *jfr.Event, valid during its iteration only. A call of fn
// for a row rather than for every event, and the loop inlined in fn's,
// save the stream about half of its own work for an event no handler
// looks into (BenchmarkStreamPerEvent): prefer it to OnEvent for types
// with many events. Events of the row fn does not take are skipped. A type
// with OnEvents handlers hands its OnEvent handlers its rows too, each
// handler a whole row in turn, in the order they were added.
func (s *Stream) OnEvents(name string, fn func(*jfr.EventBatch)) {
	s.addHandler(name, eventHandler{batch: fn})
}

// eventHandler is a handler OnEvent (each) or OnEvents (batch) added.
type eventHandler struct {
	each  func(*jfr.Event)
	batch func(*jfr.EventBatch)
}

func (s *Stream) addHandler(name string, h eventHandler) {
	s.mu.Lock()
	s.handlers[name] = append(s.handlers[name], h)
	s.version++
	s.hversion.Store(int64(s.version))
	s.mu.Unlock()
}

// OnFlush calls fn after the events of each flush have been handled.
func (s *Stream) OnFlush(fn func()) {
	s.mu.Lock()
	s.onFlush = append(s.onFlush, fn)
	s.mu.Unlock()
}

// OnError calls fn with each error the stream meets: a chunk it cannot
// read, or ErrStreamBehind.
func (s *Stream) OnError(fn func(error)) {
	s.mu.Lock()
	s.onError = append(s.onError, fn)
	s.mu.Unlock()
}

// Segment is what a flush added to a chunk being written, as OnSegment
// hands it over: the chunk's header as of the flush and the records kept,
// at their offsets in the chunk, which jfr.LiveChunk reads (Extend with
// the header and the chunk's bytes up to Size, the parts in place, then
// a Reader of each part).
type Segment struct {
	Chunk  uint64 // the chunk's number in the stream, from 1: a new number begins a chunk
	Header []byte // the chunk's header as of the flush
	Size   int64  // the chunk's bytes up to the flush
	Parts  []SegmentPart
}

// SegmentPart is records of a chunk, end to end, from its byte Offset.
type SegmentPart struct {
	Offset int64
	Data   []byte
}

type segmentHandler struct {
	keep func(eventType string) bool
	fn   func(*Segment)
}

// OnSegment calls fn at each flush with what the flush added to the
// chunk being written, for a reader elsewhere (ctl stream): its metadata,
// its checkpoints and the events of the types whose names keep accepts;
// the others are left out, and when no handler takes a flush's emitted
// events their bytes are not even copied. The segment and its bytes are
// valid during the call. A segment may cover several flushes (the
// handlers fell behind), a chunk's last flushes may be dropped, and a
// chunk whose first flush was dropped is left out whole, so that the
// segments of a chunk always hold what it has kept from its start.
func (s *Stream) OnSegment(keep func(eventType string) bool, fn func(*Segment)) {
	s.mu.Lock()
	s.segments = append(s.segments, segmentHandler{keep, fn})
	s.noLend.Store(true)
	s.version++
	s.hversion.Store(int64(s.version))
	s.mu.Unlock()
}

// wants tells whether a handler takes events of the named type; s.mu is
// held.
func (s *Stream) wants(name string) bool {
	if len(s.handlers[name]) > 0 {
		return true
	}
	for _, h := range s.segments {
		if h.keep(name) {
			return true
		}
	}
	return false
}

// OnChunk calls fn with the bytes of each chunk once it is complete, a
// .jfr file of one chunk, which fn may keep. A stream with OnChunk
// handlers at Start has the recorder cut a chunk at least once a second
// (unless WithMaxChunkAge, after it, says otherwise), as whole chunks are
// otherwise cut by size only.
func (s *Stream) OnChunk(fn func([]byte)) {
	s.mu.Lock()
	s.onChunk = append(s.onChunk, fn)
	s.mu.Unlock()
}

// Start starts the stream's recording.
func (s *Stream) Start() error {
	if s.rec != nil {
		return errors.New("recorder: stream already started")
	}
	s.flushes = make(chan streamFlush, streamBacklog)
	s.spare = make(chan []byte, 2)
	s.done = make(chan struct{})
	s.mu.Lock()
	s.wholeChunks = len(s.onChunk) > 0
	s.mu.Unlock()
	opts := []Option{WithName("stream"), optionFunc(func(c *config) {
		c.sink = s.deliver
		if s.wholeChunks {
			capChunkAge(c)
		}
	})}
	rec, err := Start(append(opts, s.opts...)...)
	if err != nil {
		return err
	}
	s.rec = rec
	go s.run()
	return nil
}

// Recording returns the stream's recording, nil before Start.
func (s *Stream) Recording() *Recording { return s.rec }

// Close stops the stream's recording after handing its last flush to the
// handlers.
func (s *Stream) Close() error {
	if s.rec == nil {
		return nil
	}
	err := s.rec.Stop()
	s.sendMu.Lock()
	if !s.closed {
		s.closed = true
		close(s.flushes)
	}
	s.sendMu.Unlock()
	<-s.done
	return err
}

// deliver runs on the recorder's chunk writer, with each segment of the
// stream recording's chunks: it must not wait. It copies the segment after
// the chunk's bytes so far, but for the emitted records that no handler
// reads or that the recorder lends (they stay in its buffers, lease.go),
// and tells run; when run is streamBacklog
// flushes behind, the next message covers the bytes too, unless the chunk
// ends (its last flushes are dropped) or begins (the whole chunk is).
func (s *Stream) deliver(seg segment) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.closed {
		return
	}
	// Only deliver sends, so a channel with room now has room below.
	full := len(s.flushes) == cap(s.flushes)
	if seg.first {
		s.seq++
		s.unsent = 0
		s.skipping = full
		if len(s.cur) > 0 {
			s.lastChunks = [2]int{s.lastChunks[1], len(s.cur)}
		}
		s.cur = nil
		if !full {
			s.cur = s.chunkBuffer(int(seg.size()))
		}
	}
	if s.skipping {
		s.dropped.Add(1)
		return
	}
	if seg.first {
		s.scan, s.holes = nil, s.holes[:0]
	}
	if n := len(s.cur) + int(seg.size()); n > cap(s.cur) {
		// A new array: run may be reading the old one. The holes, bytes
		// no one reads, are not copied.
		grown := make([]byte, len(s.cur), max(n, 2*cap(s.cur), 64<<10))
		from := int64(0)
		for _, h := range s.holes {
			copy(grown[from:h[0]], s.cur[from:h[0]])
			from = h[1]
		}
		copy(grown[from:], s.cur[from:])
		s.cur = grown
	}
	start := max(int64(len(s.cur)), jfr.HeaderSize)
	// The emitted records that seg.parts has where recs has them are
	// adopted: left out of cur, unread, when none is of a handled type;
	// read in place from the recorder's buffers (lent) when run has read
	// the flushes sent before, the buffers then recycled once it has read
	// this one too (lease): a stream behind its flushes copies them.
	var adopted [][]byte
	var ls *lease
	if recs := seg.recs; recs != nil && !s.wholeChunks {
		if !s.handled.anyIn(s, recs) {
			s.adopted = append(append(s.adopted[:0], recs.parts...), recs.copied)
			adopted = s.adopted
		} else if len(s.flushes) == 0 && !s.noLend.Load() {
			if ls = recs.lend(); ls != nil {
				adopted = recs.parts
			}
		}
	}
	from := start // of the span of cur's bytes being added
	for _, p := range seg.parts {
		for len(adopted) > 0 && len(adopted[0]) == 0 {
			adopted = adopted[1:]
		}
		if len(p) == 0 || len(adopted) == 0 || &p[0] != &adopted[0][0] || len(p) != len(adopted[0]) {
			s.cur = append(s.cur, p...)
			s.copied.Add(int64(len(p)))
			continue
		}
		adopted = adopted[1:]
		at := int64(len(s.cur))
		if at > from {
			s.scan = append(s.scan, scanSpan{from: from, to: at})
		}
		s.cur = s.cur[:at+int64(len(p))]
		from = int64(len(s.cur))
		if ls != nil {
			s.scan = append(s.scan, scanSpan{from: at, to: from, lent: p})
			s.lent.Add(int64(len(p)))
		}
		if n := len(s.holes); n > 0 && s.holes[n-1][1] == at {
			s.holes[n-1][1] = from
		} else {
			s.holes = append(s.holes, [2]int64{at, from})
		}
	}
	if end := int64(len(s.cur)); end > from {
		s.scan = append(s.scan, scanSpan{from: from, to: end})
	}
	s.unsent++
	if full {
		if seg.closed {
			s.dropped.Add(s.unsent)
		}
		return
	}
	f := streamFlush{seq: s.seq, data: s.cur, scan: s.scan, closed: seg.closed, lease: ls}
	copy(f.header[:], seg.header)
	s.flushes <- f
	s.unsent, s.scan = 0, nil
}

// chunkBuffer returns an empty buffer for a chunk's bytes, with room for
// a chunk like the larger of the last two, or one cut at the default size:
// a buffer that must grow copies the chunk so far on the recorder's chunk
// writer (each time it doubles), and a new one is zeroed and faulted in
// there, about what a copy of the chunk costs. So one chunk cut short (as
// a recording's start or stop cuts one) does not shrink the next one's
// buffer, and a spare or idle buffer (idleBuffers) is taken when it has
// room for such a chunk and a sixteenth, though new ones get an eighth:
// chunks of about the same size then reuse the same buffers, rather than
// each asking a little more than the last buffer has. A smaller spare (the
// last of a stream, cut short by its Close) is left to the garbage
// collector.
func (s *Stream) chunkBuffer(first int) []byte {
	like := max(first, s.lastChunks[0], s.lastChunks[1])
	room := like + like/16
	select {
	case b := <-s.spare:
		if cap(b) >= room {
			return b[:0]
		}
	default:
	}
	if b := idleBuffers.get(room); b != nil {
		return b
	}
	return make([]byte, 0, like+like/8)
}

// cutChunkSize is the size of a chunk cut at the default size: the
// flush that reaches it adds up to a third of the buffers.
func cutChunkSize() int { return defaultMaxChunkSize + bufferCount()/3*batch.BufferSize }

// handledTypes tells which emitted event types (by id) have handlers.
type handledTypes struct {
	version int64  // of the handlers
	types   uint64 // batch.Types version
	built   bool
	byID    []bool
	any     bool
}

// anyIn tells whether any of the records gathered in recs is of a type
// with handlers, walking their sizes and type ids; called by deliver.
func (h *handledTypes) anyIn(s *Stream, recs *gathered) bool {
	types, tv := batch.Types()
	if v := s.hversion.Load(); !h.built || v != h.version || tv != h.types {
		s.mu.Lock()
		h.version, h.types, h.built, h.any = int64(s.version), tv, true, false
		clear(h.byID)
		for _, d := range types {
			if d.ID < 2 || !s.wants(d.Name) {
				continue
			}
			if int(d.ID) >= len(h.byID) {
				h.byID = append(h.byID, make([]bool, int(d.ID)+1-len(h.byID))...)
			}
			h.byID[d.ID], h.any = true, true
		}
		s.mu.Unlock()
	}
	if !h.any {
		return false
	}
	for _, p := range recs.parts {
		if h.in(p) {
			return true
		}
	}
	return h.in(recs.copied)
}

// in tells whether a record in b, records end to end, has a handled type;
// true too if b cannot be walked, so that it is copied and read.
//
// Records with the header (size and type id, a byte each) of the one
// before are of a type found without handlers, and are skipped on their
// two bytes: the walk then does not wait for each record's size to be
// loaded before it reads the next (as jfr.EventBatch.Events does), which
// for the rows of one record size the recorder's buffers hold takes less
// than half the time (BenchmarkHandledTypesIn). Records of sizes in
// random order would make that guess's branch wrong about half of the
// time, each miss costing more than the walk saves: past 8 misses and
// about one in 16 records, it stops guessing.
func (h *handledTypes) in(b []byte) bool {
	byID := h.byID
	// like is the header guessed, -1 for none; misses counts the records
	// read otherwise, -1 once the guessing stopped.
	like, misses := -1, 0
	for off := 0; off < len(b); {
		if like >= 0 {
			for off+1 < len(b) && int(b[off])|int(b[off+1])<<8 == like && off+like&0xff <= len(b) {
				off += like & 0xff
			}
			if off >= len(b) {
				break
			}
		}
		// One-byte sizes and type ids are the common case; any other
		// header is read by handledRecord.
		if off+1 < len(b) && b[off]|b[off+1] < 0x80 && b[off] >= 2 {
			size, typ := int(b[off]), int(b[off+1])
			if size > len(b)-off || typ < len(byID) && byID[typ] {
				return true
			}
			if misses >= 0 {
				like = size | typ<<8
				if misses++; misses<<8 > off+2048 {
					like, misses = -1, -1
				}
			}
			off += size
			continue
		}
		size, found := h.handledRecord(b[off:])
		if found {
			return true
		}
		off += size
	}
	return false
}

// handledRecord reads the header of the record b begins with, and
// returns its size and whether it has a handled type (true too if it
// cannot be walked).
func (h *handledTypes) handledRecord(b []byte) (int, bool) {
	size, n := leb128.Uvarint(b)
	if n <= 0 || size <= uint64(n) || size > uint64(len(b)) {
		return 0, true
	}
	typ, m := leb128.Uvarint(b[n:size])
	if m <= 0 {
		return 0, true
	}
	return int(size), typ < uint64(len(h.byID)) && h.byID[typ]
}

func (s *Stream) run() {
	defer close(s.done)
	live := jfr.NewLiveChunk(&jfr.ReaderOptions{PerChunkClock: true})
	var ev jfr.Event
	var byID handlerTable
	var segs segmentBuilder
	var reported int64
	var seq uint64  // the chunk being read
	var data []byte // its bytes so far
	var failed bool // it could not be read
	var kept bool   // OnChunk handlers have it
	recycle := func() {
		if data != nil && !kept {
			select {
			case s.spare <- data[:0]:
			default:
				idleBuffers.put(data)
			}
		}
	}
	defer s.releaseSpares()
	for f := range s.flushes {
		s.mu.Lock()
		onChunk, onFlush, onError, segments := s.onChunk, s.onFlush, s.onError, s.segments
		handlers := maps.Clone(s.handlers)
		version := s.version
		s.mu.Unlock()
		if d := s.dropped.Load(); d != reported {
			for _, fn := range onError {
				fn(fmt.Errorf("%w: %d flushes", ErrStreamBehind, d-reported))
			}
			reported = d
		}
		if f.seq != seq {
			recycle()
			seq, failed, kept = f.seq, false, false
			live.Start(int(f.seq-1), 0)
		}
		data = f.data
		if (len(handlers) > 0 || len(segments) > 0) && !failed {
			if err := dispatch(live, &f, handlers, segments, version, &ev, &byID, &segs); err != nil {
				failed = true
				for _, fn := range onError {
					fn(err)
				}
			}
		}
		if f.lease != nil {
			f.lease.release()
		}
		for _, fn := range onFlush {
			fn()
		}
		if f.closed && len(onChunk) > 0 {
			// deliver writes no more into a complete chunk's array.
			copy(data, f.header[:])
			kept = true
			for _, fn := range onChunk {
				fn(data)
			}
		}
	}
	recycle()
}

// releaseSpares hands the stream's spare buffers to the next stream, once
// deliver sends no more.
func (s *Stream) releaseSpares() {
	for {
		select {
		case b := <-s.spare:
			idleBuffers.put(b)
		default:
			return
		}
	}
}

// dispatch decodes the events of the flush f (in its scan ranges) that
// have handlers (at version) and calls them, the others skipped by their
// size; then it hands the segment handlers their records of f.
func dispatch(live *jfr.LiveChunk, f *streamFlush, handlers map[string][]eventHandler, segments []segmentHandler, version int, ev *jfr.Event, byID *handlerTable, segs *segmentBuilder) error {
	c, err := live.Extend(f.header[:], f.data)
	if err != nil {
		return fmt.Errorf("recorder: stream: %w", err)
	}
	if len(handlers) > 0 && byID.update(c.Metadata, handlers, version) {
		for _, span := range f.scan {
			var err error
			if span.lent != nil {
				err = live.DispatchFlush(span.from, span.lent, span.from, span.to, &byID.byID, ev)
			} else {
				err = live.Dispatch(span.from, span.to, &byID.byID, ev)
			}
			if err != nil {
				return fmt.Errorf("recorder: stream: %w", err)
			}
		}
	}
	if len(segments) > 0 {
		// A segment handler added after deliver lent f's records: they
		// go where they belong in the chunk, which segments are cut
		// from (deliver writes no hole's bytes).
		for _, span := range f.scan {
			copy(f.data[span.from:span.to], span.lent)
		}
	}
	for i, h := range segments {
		seg, err := segs.build(live, c, f, i, h.keep, version)
		if err != nil {
			return err
		}
		h.fn(seg)
	}
	return nil
}

// segmentBuilder builds the segments OnSegment handlers get.
type segmentBuilder struct {
	md      *jfr.Metadata
	version int       // of the handlers the sets were built for
	kept    []typeSet // by handler: the event types it keeps
	seg     Segment
	recs    [256]jfr.Record
}

// build returns the segment of flush f for the i-th segment handler,
// whose keep tells the event types it takes: f's records in its scan
// ranges, but for the events of other types.
func (b *segmentBuilder) build(live *jfr.LiveChunk, c *jfr.Chunk, f *streamFlush, i int, keep func(string) bool, version int) (*Segment, error) {
	if c.Metadata != b.md || version != b.version {
		b.md, b.version = c.Metadata, version
		clear(b.kept)
		b.kept = b.kept[:0]
	}
	for len(b.kept) <= i {
		b.kept = append(b.kept, typeSet{})
	}
	set := &b.kept[i]
	if !set.built {
		for _, cl := range c.Metadata.EventTypes() {
			if cl.ID >= 2 && keep(cl.Name) {
				set.add(cl.ID)
			}
		}
		set.built = true
	}
	seg := &b.seg
	seg.Chunk, seg.Header, seg.Size = f.seq, f.header[:], int64(len(f.data))
	clear(seg.Parts)
	seg.Parts = seg.Parts[:0]
	end := int64(-1) // of the last part
	for _, span := range f.scan {
		r := live.Reader(span.from, span.to)
		for {
			n, err := r.ReadRecords(b.recs[:])
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("recorder: stream: %w", err)
			}
			for _, rec := range b.recs[:n] {
				if rec.TypeID >= 2 && !set.has(rec.TypeID) {
					continue
				}
				if rec.Offset == end {
					p := &seg.Parts[len(seg.Parts)-1]
					p.Data = f.data[p.Offset : end+rec.Size]
				} else {
					seg.Parts = append(seg.Parts, SegmentPart{Offset: rec.Offset, Data: f.data[rec.Offset : rec.Offset+rec.Size]})
				}
				end = rec.Offset + rec.Size
			}
		}
	}
	return seg, nil
}

// typeSet is a set of type ids.
type typeSet struct {
	built bool
	small []bool // ids below maxSmallID
	large map[int64]bool
}

func (t *typeSet) add(id int64) {
	if id >= maxSmallID {
		if t.large == nil {
			t.large = map[int64]bool{}
		}
		t.large[id] = true
		return
	}
	if int(id) >= len(t.small) {
		t.small = append(t.small, make([]bool, int(id)+1-len(t.small))...)
	}
	t.small[id] = true
}

func (t *typeSet) has(id int64) bool {
	if id >= 0 && id < int64(len(t.small)) {
		return t.small[id]
	}
	return id >= maxSmallID && t.large[id]
}

// handlerTable holds the handlers of a chunk's metadata by type id, so
// that a record's handlers are found without hashing its type's name.
type handlerTable struct {
	md    *jfr.Metadata
	built int // version of the handlers the table was built for
	byID  jfr.EventHandlers
}

const maxSmallID = 1 << 12

// update builds the table for md, if it was not, and tells whether any of
// md's types has handlers.
func (t *handlerTable) update(md *jfr.Metadata, handlers map[string][]eventHandler, version int) bool {
	if md == t.md && t.built == version {
		return t.byID.Any()
	}
	t.md, t.built = md, version
	t.byID.Reset()
	for _, cl := range md.EventTypes() {
		if hs := handlers[cl.Name]; len(hs) > 0 && cl.ID >= 2 {
			setHandlers(&t.byID, cl.ID, hs)
		}
	}
	return t.byID.Any()
}

// setHandlers gives type id the handlers hs in h: event handlers, or
// batch handlers if any is one, the event handlers among them then called
// for each event of a batch, in the order they were added.
func setHandlers(h *jfr.EventHandlers, id int64, hs []eventHandler) {
	batches := false
	for _, eh := range hs {
		batches = batches || eh.batch != nil
	}
	if !batches {
		fns := make([]func(*jfr.Event), len(hs))
		for i, eh := range hs {
			fns[i] = eh.each
		}
		h.Set(id, fns)
		return
	}
	fns := make([]func(*jfr.EventBatch), len(hs))
	for i, eh := range hs {
		fns[i] = eh.batch
		if eh.each != nil {
			fns[i] = jfr.EachEvent(eh.each)
		}
	}
	h.SetBatch(id, fns)
}
