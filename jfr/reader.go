package jfr

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// ReaderOptions bounds what a reader accepts. The zero value (or nil) gives
// the defaults.
type ReaderOptions struct {
	// MaxChunkSize is the largest chunk accepted, in bytes. A chunk is held
	// in memory while it is read; memory is allocated as the data arrives,
	// never up front from a size read from the file. Default 16 GiB.
	MaxChunkSize int64
	// MaxCheckpoints bounds the length of a chunk's checkpoint chain.
	// Default 1<<20.
	MaxCheckpoints int
	// PerChunkClock converts each chunk's ticks with its own header. By
	// default the first chunk's clock is used for every chunk, as the JDK's
	// reader (and so `jfr print`) does.
	PerChunkClock bool
	// MetadataCache, if set, shares parsed metadata with other readers,
	// such as readers of the chunks of one recording read in parallel.
	// Each reader has a cache of its own otherwise.
	MetadataCache *MetadataCache
	// Pager, if set, is told which part of an in-memory recording (a
	// memory-mapped file) the reader is about to read and which it is done
	// with, so that the pages of one chunk at a time are resident.
	Pager Pager
	// SkipConstantPools leaves the checkpoint records undecoded, for readers
	// that need only the records' types and sizes (like `summary`): events
	// still decode, but references resolve to null.
	SkipConstantPools bool
}

func (o *ReaderOptions) maxChunkSize() int64 {
	if o == nil || o.MaxChunkSize <= 0 {
		return 16 << 30
	}
	return o.MaxChunkSize
}

func (o *ReaderOptions) maxCheckpoints() int {
	if o == nil || o.MaxCheckpoints <= 0 {
		return 1 << 20
	}
	return o.MaxCheckpoints
}

// Pager manages the pages of a memory-mapped recording for a reader
// (mmapfile.File is one). Offsets are in the recording.
type Pager interface {
	// Populate is called before a chunk is read.
	Populate(off, n int64)
	// Release is called once the reader has moved past a chunk.
	Release(off, n int64)
}

// Reader reads a recording chunk by chunk from an io.Reader. Only the
// current chunk is held in memory.
type Reader struct {
	r    io.Reader
	src  []byte // the whole recording, when reading from memory
	mem  bool   // read from src without copying
	opts ReaderOptions

	buf      []byte
	chunk    *Chunk // current chunk, nil before the first
	next     int64  // file offset of the next chunk
	pos      int64  // offset of the next record within the current chunk
	index    int    // index of the next chunk
	lastMeta *Metadata
	clock    *Clock // first chunk's clock
	err      error  // sticky
	last     bool   // the current chunk is the last one to read
	skip     int64  // start the next chunk's records here (Follow), if > HeaderSize
	pending  *Chunk // the chunk a LiveChunk's reader reads, loaded already
	// All the current chunk's bytes have been read and its header says it
	// is finished: SkipDamagedChunk can go on at next.
	resumable bool
	// The current chunk was still being written: what follows it may be
	// its records written after its last flush.
	afterOpen bool
}

// NewReader returns a reader of the recording in r. opts may be nil.
func NewReader(r io.Reader, opts *ReaderOptions) *Reader {
	rd := &Reader{r: r}
	rd.setOptions(opts)
	return rd
}

func (r *Reader) setOptions(opts *ReaderOptions) {
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.MetadataCache == nil {
		r.opts.MetadataCache = NewMetadataCache()
	}
}

// NewBytesReader returns a reader of the recording held in data, which it
// reads in place without copying (data may be a memory-mapped file). Values
// share memory with data.
func NewBytesReader(data []byte, opts *ReaderOptions) *Reader {
	rd := &Reader{src: data, mem: true}
	rd.setOptions(opts)
	return rd
}

// Reset makes r read a new recording from src, keeping its buffers (as
// gzip.Reader.Reset does), so reading many files does not allocate a chunk
// buffer for each.
func (r *Reader) Reset(src io.Reader) {
	buf := r.buf
	if r.mem {
		buf = nil // it was the caller's memory
	}
	r.releaseChunk()
	*r = Reader{r: src, opts: r.opts, buf: buf}
}

// Chunk returns the current chunk, or nil before the first read.
func (r *Reader) Chunk() *Chunk { return r.chunk }

// Record locates one record of a chunk: an event, the metadata (type 0) or
// a checkpoint (type 1).
type Record struct {
	TypeID int64
	Offset int64 // byte offset in the file
	Size   int64 // bytes, including the size field
}

// NextChunk skips what is left of the current chunk and loads the next one:
// its header, metadata and constant pools. It returns io.EOF after the last
// chunk.
func (r *Reader) NextChunk() (*Chunk, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.last {
		r.releaseChunk()
		r.err = io.EOF
		return nil, r.err
	}
	c, err := r.loadChunk()
	if err != nil {
		r.err = err
		return nil, err
	}
	return c, nil
}

func (r *Reader) loadChunk() (*Chunk, error) {
	if c := r.pending; c != nil {
		r.pending = nil
		r.chunk, r.pos, r.last = c, max(HeaderSize, min(r.skip, int64(len(c.data)))), true
		r.next, r.index, r.skip = c.Offset+int64(len(c.data)), c.Index+1, 0
		return c, nil
	}
	r.releaseChunk()
	r.resumable = false
	off := r.next
	idx := r.index
	fail := func(at int64, err error) error {
		return &FormatError{Chunk: idx, Offset: at, Err: err}
	}
	n, err := r.readHeader(off)
	if r.afterOpen {
		// The bytes after a chunk still being written are its records
		// after its last flush, unless a chunk starts there (chunks of
		// several files joined, or a state byte flipped): then reading
		// goes on, as the JDK's does.
		r.afterOpen = false
		if err != nil || [4]byte(r.buf[:4]) != Magic {
			return nil, io.EOF
		}
		if _, err := parseHeader(r.buf); err != nil {
			return nil, io.EOF
		}
	}
	if err != nil {
		if n == 0 && err == io.EOF {
			if idx == 0 {
				return nil, fail(off, errors.New("empty file: no chunk"))
			}
			return nil, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			if n < 4 || [4]byte(r.buf[:4]) != Magic {
				if idx > 0 {
					return nil, fail(off, fmt.Errorf("%w: %d bytes after the last chunk are not a chunk", ErrNotJFR, n))
				}
				return nil, fail(off, ErrNotJFR)
			}
			return nil, fail(off+int64(n), fmt.Errorf("%w: chunk header has %d of %d bytes", ErrTruncated, n, HeaderSize))
		}
		return nil, fail(off, err)
	}
	h, err := parseHeader(r.buf)
	if err != nil {
		if idx > 0 && errors.Is(err, ErrNotJFR) {
			err = fmt.Errorf("%w: the bytes after chunk %d are not a chunk", ErrNotJFR, idx-1)
		}
		return nil, fail(off, err)
	}
	if h.Size > r.opts.maxChunkSize() {
		return nil, fail(off+8, fmt.Errorf("%w: chunk size %d exceeds the maximum %d", ErrLimit, h.Size, r.opts.maxChunkSize()))
	}
	if r.mem && r.opts.Pager != nil {
		r.opts.Pager.Populate(off, min(h.Size, int64(len(r.src))-off))
	}
	if err := r.readBody(h.Size); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			// A truncated file or a corrupt size: either way the size
			// field is what cannot be right, so the error is at it. (The
			// message gives no file offset: a caller reading a chunk
			// alone rebases only FormatError.Offset.)
			return nil, fail(off+8, fmt.Errorf("%w: the chunk size field says %d bytes, and the file ends %d bytes into the chunk", ErrTruncated, h.Size, len(r.buf)))
		}
		return nil, fail(off+int64(len(r.buf)), err)
	}
	c := &Chunk{Index: idx, Offset: off, Header: h, data: r.buf}
	r.next, r.index, r.resumable = off+h.Size, idx+1, h.Finished()
	if err := r.readMetadata(c); err != nil {
		return nil, err
	}
	if r.clock == nil || r.opts.PerChunkClock {
		ck := ClockOf(&h)
		r.clock = &ck
	}
	c.clock = *r.clock
	if r.opts.SkipConstantPools {
		c.pools = &pools{}
	} else if err := c.readPools(&r.opts); err != nil {
		return nil, err
	}
	r.chunk = c
	r.pos = HeaderSize
	if r.skip > HeaderSize {
		r.pos = min(r.skip, h.Size)
		r.skip = 0
	}
	// A chunk still being written (state 1..255) is valid only up to its
	// last flush, which its header's size gives: what follows is not a
	// chunk unless it starts like one. A file read once cannot wait for a
	// header being rewritten (state 255) as the JDK's live reader does; it
	// reads what is there.
	r.afterOpen = !h.Finished()
	return c, nil
}

// SkipDamagedChunk lets reading go on after a FormatError in a chunk whose
// bytes were all there (a corrupt record, metadata or constant pool, not a
// truncated file or a broken chunk header): the chunk's remaining records
// cannot be found, but the chunks after it are independent, so the next
// read starts at the following chunk. It reports whether reading can go
// on; it returns false after io.EOF, without an error, or when the damage
// leaves no way to find the next chunk.
func (r *Reader) SkipDamagedChunk() bool {
	if r.err == nil || r.err == io.EOF || !r.resumable {
		return false
	}
	r.releaseChunk()
	r.err, r.chunk, r.resumable, r.last = nil, nil, false, false
	return true
}

// releaseChunk tells the pager that the current chunk is done with.
func (r *Reader) releaseChunk() {
	if c := r.chunk; c != nil && r.mem && r.opts.Pager != nil {
		r.opts.Pager.Release(c.Offset, int64(len(c.data)))
	}
}

// readHeader makes r.buf hold the chunk header at file offset off and
// returns how many of its bytes there are.
func (r *Reader) readHeader(off int64) (int, error) {
	if r.mem {
		if off >= int64(len(r.src)) {
			r.buf = nil
			return 0, io.EOF
		}
		r.buf = r.src[off:min(int64(len(r.src)), off+HeaderSize)]
		if len(r.buf) < HeaderSize {
			return len(r.buf), io.ErrUnexpectedEOF
		}
		return HeaderSize, nil
	}
	if cap(r.buf) < HeaderSize {
		// readBody gives the buffer its size, once the header says it.
		r.buf = make([]byte, HeaderSize)
	}
	r.buf = r.buf[:HeaderSize]
	return io.ReadFull(r.r, r.buf)
}

const (
	// initialChunkBuffer is how much memory a chunk header alone can make
	// the reader allocate.
	initialChunkBuffer = 64 << 20
	// minChunkBuffer is the least a chunk buffer is given, so that a
	// recording of small chunks growing in size allocates once.
	minChunkBuffer = 1 << 20
)

// readBody reads the rest of a chunk of the given size into r.buf, growing
// the buffer as data arrives so that a corrupt size cannot make the reader
// allocate memory for data that is not there.
func (r *Reader) readBody(size int64) error {
	if r.mem {
		off := r.next
		r.buf = r.src[off:min(int64(len(r.src)), off+size)]
		if int64(len(r.buf)) < size {
			return io.ErrUnexpectedEOF
		}
		return nil
	}
	for int64(len(r.buf)) < size {
		have := int64(len(r.buf))
		// Trust the header up to initialChunkBuffer; beyond that, grow as
		// the data arrives.
		want := min(size, max(2*have, initialChunkBuffer))
		if int64(cap(r.buf)) < want {
			nb := make([]byte, have, max(want, minChunkBuffer))
			copy(nb, r.buf)
			r.buf = nb
		}
		r.buf = r.buf[:want]
		n, err := io.ReadFull(r.r, r.buf[have:want])
		r.buf = r.buf[:have+int64(n)]
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *Reader) readMetadata(c *Chunk) error {
	off := c.Header.MetadataOffset
	d, typ, err := c.record(off)
	if err != nil {
		return err
	}
	if typ != 0 {
		return c.errorAt(off, fmt.Errorf("expected the metadata record (type 0), found type %d", typ))
	}
	md, err := metadataRecord(d, r.opts.MetadataCache, r.lastMeta)
	if err != nil {
		return c.errorAt(off+int64(d.pos), fmt.Errorf("metadata: %w", err))
	}
	c.Metadata, r.lastMeta = md, md
	return nil
}

// metadataRecord returns the metadata of a metadata record's payload (d is
// positioned after the type id): last if the record has last's id (the
// JDK's rule: an id equal to the previous chunk's means the same metadata,
// not read again), else the cache's parse of the same declarations, else a
// new parse, which it adds to the cache.
func metadataRecord(d *decoder, cache *MetadataCache, last *Metadata) (*Metadata, error) {
	start := d.pos
	d.uvarint()
	d.uvarint()
	declStart := d.pos
	id := int64(d.uvarint())
	decl := d.b[declStart:]
	if d.err == nil && last != nil && last.ID == id {
		return last, nil
	}
	if md := cache.get(decl); d.err == nil && md != nil {
		return md, nil
	}
	d.pos = start
	md, err := parseMetadata(d)
	if err != nil {
		return nil, err
	}
	cache.put(decl, md)
	return md, nil
}

// ChunkDone tells whether every record of the current chunk has been read,
// so the next ReadRecord or ReadEvent moves to the next chunk.
func (r *Reader) ChunkDone() bool {
	return r.chunk == nil || r.pos >= int64(len(r.chunk.data))
}

// ReadRecord returns the next record of the recording, moving to the next
// chunk when the current one is done. It returns io.EOF at the end.
func (r *Reader) ReadRecord() (Record, error) {
	for {
		if r.err != nil {
			return Record{}, r.err
		}
		if r.chunk == nil || r.pos >= int64(len(r.chunk.data)) {
			if _, err := r.NextChunk(); err != nil {
				return Record{}, err
			}
			continue
		}
		c := r.chunk
		var one [1]Record
		if k, p := scanRecords(c.data, int(r.pos), len(c.data), c.Offset, one[:]); k == 1 {
			r.pos = int64(p)
			return one[0], nil
		}
		size, typ, _, err := recordHeader(c.data, r.pos)
		if err != nil {
			r.err = c.errorAt(r.pos, err)
			return Record{}, r.err
		}
		rec := Record{TypeID: typ, Offset: c.Offset + r.pos, Size: size}
		r.pos += size
		return rec, nil
	}
}

// ReadRecords fills dst with the next records of the current chunk (moving
// to the next chunk first if the current one is done) and returns how many
// it read: fewer than len(dst) at the end of a chunk, never records of two
// chunks. It is ReadRecord for callers that walk many records, such as
// summary: a batch in a tight loop is about twice as fast as a call per
// record. It returns io.EOF at the end of the recording.
func (r *Reader) ReadRecords(dst []Record) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	if r.err == nil && r.ChunkDone() {
		if _, err := r.NextChunk(); err != nil {
			return 0, err
		}
	}
	if r.err != nil {
		return 0, r.err
	}
	c := r.chunk
	n, pos := scanRecords(c.data, int(r.pos), len(c.data), c.Offset, dst)
	r.pos = int64(pos)
	for n < len(dst) && !r.ChunkDone() {
		// A record the fast path does not take, then the fast path again.
		rec, err := r.ReadRecord()
		if err != nil {
			return n, err
		}
		dst[n] = rec
		n++
		k, pos := scanRecords(c.data, int(r.pos), len(c.data), c.Offset, dst[n:])
		n += k
		r.pos = int64(pos)
	}
	return n, nil
}

// Event is one decoded event. Reuse an Event across ReadEvent calls to read
// without allocating.
type Event struct {
	Type   *Class
	Fields []Value // in the order of Type.Fields; nil, until Values or Field is called, for an event DecodeEventLazy prepared
	Chunk  *Chunk
	Offset int64 // byte offset of the record in the file
	Size   int64 // bytes, including the size field

	arena arena
	// pending is set by DecodeEventLazy until the fields are decoded.
	pending bool
	err     error // of the lazy decoding
}

// ReadEvent decodes the next event into ev. Metadata and checkpoint records
// and events of types missing from the metadata are skipped. It returns
// io.EOF at the end of the recording. ev's values are valid until the next
// call.
func (r *Reader) ReadEvent(ev *Event) error {
	rec, cl, err := r.nextEvent()
	if err != nil {
		return err
	}
	if err := r.chunk.decodeEvent(rec, cl, ev); err != nil {
		r.err = err
		return err
	}
	return nil
}

// nextEvent reads up to the next record of an event type the metadata
// declares.
func (r *Reader) nextEvent() (Record, *Class, error) {
	for {
		rec, err := r.ReadRecord()
		if err != nil {
			return rec, nil, err
		}
		if rec.TypeID == 0 || rec.TypeID == 1 {
			continue
		}
		if cl := r.chunk.Metadata.Class(rec.TypeID); cl != nil {
			return rec, cl, nil
		}
	}
}

// ReadEventLazy is ReadEvent, but for the fields, which it leaves as
// DecodeEventLazy does: a reader that knows the layout of the events it
// wants decodes their Raw bytes itself, and calls LoadEvent for the
// others or when its own decoding fails.
func (r *Reader) ReadEventLazy(ev *Event) error {
	rec, cl, err := r.nextEvent()
	if err != nil {
		return err
	}
	ev.prepareLazy(r.chunk, cl, rec.Offset, rec.Size)
	return nil
}

// LoadEvent decodes the fields of the event ReadEventLazy read last, as
// ReadEvent would have: a malformed record is the reader's error from
// then on (SkipDamagedChunk can go on after it).
func (r *Reader) LoadEvent(ev *Event) error {
	ev.load()
	if ev.err != nil {
		r.err = ev.err
	}
	return ev.err
}

// Raw returns the bytes of the event's fields as recorded, after the
// record's size and type id; they share memory with the chunk. A malformed
// record may end early.
func (e *Event) Raw() []byte {
	start := e.Offset - e.Chunk.Offset - e.Chunk.base
	if start < 0 {
		return nil
	}
	if hdr, ok := shortRecordHeader(e.Chunk.data, start); ok {
		if hdr == 0 {
			return nil
		}
		return e.Chunk.data[start+int64(hdr) : start+e.Size]
	}
	_, _, hdr, err := recordHeader(e.Chunk.data, start)
	if err != nil {
		return nil
	}
	return e.Chunk.data[start+int64(hdr) : start+e.Size]
}

// shortRecordHeader is recordHeader's header length for a record whose
// size and type ID take four bytes or fewer each, as good as all of them
// (0 where recordHeader fails), without a decoder: a reader that decodes
// raw records calls Raw for each. ok is false for a longer header, which
// recordHeader decodes.
func shortRecordHeader(data []byte, off int64) (hdr int, ok bool) {
	if off < 0 || off >= int64(len(data)) {
		return 0, false
	}
	b := data[off:]
	if len(b) > 8 {
		b = b[:8]
	}
	size, k := 0, 0
	for ; k < 4; k++ {
		if k == len(b) {
			return 0, false
		}
		size |= int(b[k]&0x7f) << (7 * k)
		if b[k] < 0x80 {
			break
		}
	}
	if k == 4 {
		return 0, false
	}
	k++
	if size == 0 || int64(size) > int64(len(data))-off {
		return 0, true
	}
	for m := 0; m < 4; m++ {
		if k+m >= size {
			return 0, true // the type ID runs past the record
		}
		if k+m == len(b) {
			return 0, false
		}
		if b[k+m] < 0x80 {
			return k + m + 1, true
		}
	}
	return 0, false
}

// DecodeEvent decodes the event record rec of this chunk (as returned by
// ReadRecord while the chunk was current) into ev. It lets a caller visit a
// chunk's events in another order, as `jfr print` does when it sorts them by
// end time. It fails for metadata and checkpoint records and for records of
// types missing from the metadata.
func (c *Chunk) DecodeEvent(rec Record, ev *Event) error {
	cl, err := c.eventClass(rec)
	if err != nil {
		return err
	}
	return c.decodeEvent(rec, cl, ev)
}

// eventClass returns the class of event record rec, or why rec is not an
// event record of this chunk.
func (c *Chunk) eventClass(rec Record) (*Class, error) {
	start := rec.Offset - c.Offset
	if start < max(HeaderSize, c.base) || rec.Size <= 0 || start+rec.Size > c.base+int64(len(c.data)) {
		return nil, c.errorAt(start, fmt.Errorf("record at %d (%d bytes) is not in this chunk", rec.Offset, rec.Size))
	}
	cl := c.Metadata.Class(rec.TypeID)
	if cl == nil || rec.TypeID == 0 || rec.TypeID == 1 {
		return nil, c.errorAt(start, fmt.Errorf("record of type %d is not an event", rec.TypeID))
	}
	return cl, nil
}

// DecodeEventLazy is DecodeEvent, but for the fields: they are decoded
// when first asked for (Values, Field, StartTicks, StartTime...), so code
// that hands events to functions which look at few of them, or at none of
// their fields (a recorder stream's handlers), skips most decoding.
// ev.Fields is nil until then; Err reports a failure of that decoding.
// The chunk's data and constants must stay as they are until then.
func (c *Chunk) DecodeEventLazy(rec Record, ev *Event) error {
	cl, err := c.eventClass(rec)
	if err != nil {
		return err
	}
	ev.prepareLazy(c, cl, rec.Offset, rec.Size)
	return nil
}

// load decodes the fields of an event DecodeEventLazy prepared.
func (e *Event) load() {
	if e.pending {
		e.pending = false
		e.err = e.Chunk.decodeEvent(Record{TypeID: e.Type.ID, Offset: e.Offset, Size: e.Size}, e.Type, e)
	}
}

// Values returns the event's field values, in the order of Type.Fields:
// Fields, decoded first if DecodeEventLazy left them for later.
func (e *Event) Values() []Value {
	e.load()
	return e.Fields
}

// Err returns the error of decoding the fields DecodeEventLazy left for
// later, once they are decoded; nil otherwise.
func (e *Event) Err() error { return e.err }

// decodeEvent decodes the fields of the record into ev.
func (c *Chunk) decodeEvent(rec Record, cl *Class, ev *Event) error {
	start := rec.Offset - c.Offset - c.base
	b := c.data[start : start+rec.Size]
	d := decoder{b: b, pools: c.pools}
	d.uvarint() // size
	d.uvarint() // type id
	ev.arena.reset()
	ev.Type, ev.Chunk, ev.Offset, ev.Size, ev.pending, ev.err = cl, c, rec.Offset, rec.Size, false, nil
	fields := ev.arena.alloc(len(cl.Fields))
	d.fields(cl.Fields, fields, &ev.arena)
	ev.Fields = fields
	if d.err != nil {
		return c.errorAt(c.base+start+int64(d.pos), fmt.Errorf("event %s: %w", cl.Name, d.err))
	}
	return nil
}

// Field returns the named field's value; ok is false if the type has no
// such field.
func (e *Event) Field(name string) (Value, bool) {
	i := e.Type.FieldIndex(name)
	if i < 0 {
		return Value{}, false
	}
	e.load()
	if i >= len(e.Fields) {
		return Value{}, true // not decoded: see Err
	}
	return e.Fields[i], true
}

// StartTicks returns the event's start in ticks. Like the JDK, it takes the
// first field, whatever its name.
func (e *Event) StartTicks() int64 {
	e.load()
	if len(e.Fields) == 0 {
		return 0
	}
	return e.Fields[0].Int()
}

// DurationTicks returns the event's duration in ticks: the second field when
// the type has a field named "duration" (the JDK's rule), else 0.
func (e *Event) DurationTicks() int64 {
	e.load()
	if len(e.Fields) < 2 || !e.Type.timed {
		return 0
	}
	return e.Fields[1].Int()
}

// StartTime returns the event's start as wall-clock time.
func (e *Event) StartTime() time.Time { return e.Chunk.clock.Time(e.StartTicks()) }

// Duration returns the event's duration.
func (e *Event) Duration() time.Duration { return e.Chunk.clock.Duration(e.DurationTicks()) }
