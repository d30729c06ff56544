package jfr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/flightrec/flightrec/internal/leb128"
)

// WriterOptions configures a Writer. The zero value (or nil) gives the
// defaults.
type WriterOptions struct {
	// TicksPerSecond is the frequency of the file's tick clock. Default
	// 1e9: a tick is a nanosecond.
	TicksPerSecond int64
	// StartNanos (ns since the Unix epoch) and StartTicks pin the tick
	// clock: tick StartTicks happened at wall time StartNanos. Every chunk
	// header is derived from this one clock, because the JDK's reader
	// converts the ticks of all chunks with the first chunk's header
	// (jfr-format.md §1.2). If StartNanos is 0 it is the time NewWriter
	// was called.
	StartNanos int64
	StartTicks int64
	// Now returns the current tick. Close uses it to end a chunk still
	// open. Default: StartTicks plus the monotonic time since NewWriter.
	Now func() int64
	// MetadataID is the id of the first metadata, the next ones counting
	// up from it; default 1. Chunks to be appended to another writer's
	// need ids of their own: readers reuse the previous chunk's metadata
	// when the id is the same.
	MetadataID int64
}

// Writer writes a JFR recording, chunk by chunk, to an io.Writer.
//
// A chunk starts with the first event or constant written after NewWriter
// or EndChunk (or with StartChunk), and is finished by EndChunk or Close.
// Each chunk gets the current metadata, a checkpoint holding the constants
// added while it was open and the events, and is written out when the next
// chunk starts or on Close; Close marks the last chunk final. A Writer is
// not safe for concurrent use.
type Writer struct {
	w      io.Writer
	tps    int64
	clock0 Clock // the file's tick clock
	now    func() int64
	err    error // sticky: a failed write leaves the file unusable

	md     *Metadata
	mdID   int64
	mdBody []byte // the metadata record after its id, encoded once

	open       bool
	chunkStart int64 // ticks
	nextStart  int64 // ticks at which the next chunk starts
	events     []byte
	adopted    [][]byte // records written before events (AdoptRecords)
	adoptedLen int
	pools      []*poolBuf // in order of first use
	poolOf     map[*Class]*poolBuf
	poolsMD    *Metadata // the metadata whose classes key poolOf
	nconst     int       // constants added to the current chunk

	// A chunk written out in segments (Flushpoint): its bytes so far and
	// the offset of its last checkpoint.
	streaming bool
	written   int64
	lastCP    int64
	segParts  [][]byte

	// A finished chunk waits here until it is known whether it is the last.
	pending    bool
	wroteChunk bool
	header     [HeaderSize]byte
	cpHead     []byte // checkpoint record up to its first pool
	mdRecord   []byte
	scratch    []byte
	closed     bool
}

// poolBuf holds the encoded constants of one pool for the current chunk.
type poolBuf struct {
	class *Class
	count uint64
	head  []byte // type id and count, set when the chunk ends
	data  []byte // key, value, key, value...
}

// ErrWriterClosed is returned by every method of a closed Writer.
var ErrWriterClosed = errors.New("jfr: writer is closed")

// NewWriter returns a Writer of a recording to w. opts may be nil. Call
// SetMetadata before writing events or constants.
func NewWriter(w io.Writer, opts *WriterOptions) *Writer {
	var o WriterOptions
	if opts != nil {
		o = *opts
	}
	if o.TicksPerSecond <= 0 {
		o.TicksPerSecond = 1e9
	}
	t0 := time.Now()
	if o.StartNanos == 0 {
		o.StartNanos = t0.UnixNano()
	}
	wr := &Writer{
		w:         w,
		tps:       o.TicksPerSecond,
		clock0:    Clock{StartNanos: o.StartNanos, StartTicks: o.StartTicks, TicksPerSecond: o.TicksPerSecond},
		now:       o.Now,
		nextStart: o.StartTicks,
		poolOf:    make(map[*Class]*poolBuf),
		mdID:      max(o.MetadataID, 1) - 1,
	}
	if wr.now == nil {
		wr.now = func() int64 { return o.StartTicks + wr.ticksOf(int64(time.Since(t0))) }
	}
	return wr
}

// ticksOf converts nanoseconds to ticks of the file clock.
func (w *Writer) ticksOf(ns int64) int64 {
	if w.tps == 1e9 {
		return ns
	}
	return ns/1e9*w.tps + ns%1e9*w.tps/1e9
}

// nanosOf converts ticks of the file clock to nanoseconds.
func (w *Writer) nanosOf(ticks int64) int64 {
	if w.tps == 1e9 {
		return ticks
	}
	return ticks/w.tps*1e9 + ticks%w.tps*1e9/w.tps
}

// Now returns the current tick of the file clock (WriterOptions.Now).
func (w *Writer) Now() int64 { return w.now() }

// TicksPerSecond returns the frequency of the file clock.
func (w *Writer) TicksPerSecond() int64 { return w.tps }

// SetClock re-anchors the tick clock from the chunk open now, or else the
// next one: its header's start time is derived from c, and its frequency
// is c's. The JDK takes both afresh at every chunk, so that a long
// recording follows the wall clock rather than drifting from one anchor;
// a recorder whose tick source is calibrated again per chunk does the
// same. (Readers, jfr's among them, convert the ticks of every chunk with
// the first chunk's header.)
func (w *Writer) SetClock(c Clock) {
	if c.TicksPerSecond <= 0 {
		c.TicksPerSecond = 1e9
	}
	w.clock0, w.tps = c, c.TicksPerSecond
}

// SetMetadata sets the types of the chunks that follow. It may be a
// Metadata from MetadataBuilder or one read from another file. It takes
// effect at the next chunk: while the current chunk holds events or
// constants, it is an error. Events and constants name classes of this
// Metadata.
func (w *Writer) SetMetadata(md *Metadata) error {
	if err := w.usable(); err != nil {
		return err
	}
	if md == w.md {
		return nil
	}
	if w.open && (len(w.events) > 0 || w.adoptedLen > 0 || w.nconst > 0) {
		return errors.New("jfr: SetMetadata while a chunk holds events or constants; call EndChunk first")
	}
	w.md = md
	// A new id makes readers parse the new metadata instead of reusing the
	// previous chunk's (jfr-format.md §1.2).
	w.mdID++
	w.mdBody = appendElements(w.mdBody[:0], metadataElements(md))
	return nil
}

// Metadata returns the current metadata.
func (w *Writer) Metadata() *Metadata { return w.md }

func (w *Writer) usable() error {
	if w.closed {
		return ErrWriterClosed
	}
	return w.err
}

// StartChunk starts a chunk at the given tick, ending the open chunk there
// if there is one. Without it a chunk starts at the end of the previous one
// (or at WriterOptions.StartTicks).
func (w *Writer) StartChunk(startTicks int64) error {
	if err := w.usable(); err != nil {
		return err
	}
	if w.open {
		if err := w.EndChunk(startTicks); err != nil {
			return err
		}
	}
	w.nextStart = startTicks
	return w.begin()
}

// begin opens a chunk at nextStart, writing out the pending one.
func (w *Writer) begin() error {
	if w.md == nil {
		return errors.New("jfr: no metadata; call SetMetadata first")
	}
	if err := w.flushPending(false); err != nil {
		return err
	}
	w.open = true
	w.streaming, w.written, w.lastCP = false, 0, 0
	w.chunkStart = w.nextStart
	w.events = w.events[:0]
	clear(w.adopted)
	w.adopted, w.adoptedLen = w.adopted[:0], 0
	w.nconst = 0
	if w.poolsMD != w.md {
		// Pools are per class; a pending chunk of the old metadata has
		// been written above, so its buffers can go.
		w.pools = w.pools[:0]
		clear(w.poolOf)
		w.poolsMD = w.md
	}
	for _, p := range w.pools {
		p.count = 0
		// Keep small buffers for the next chunk; let a huge one go.
		if cap(p.data) > 16<<20 {
			p.data = nil
		}
		p.data = p.data[:0]
	}
	return nil
}

func (w *Writer) ensureOpen() error {
	if err := w.usable(); err != nil {
		return err
	}
	if w.open {
		return nil
	}
	return w.begin()
}

func (w *Writer) checkClass(c *Class) error {
	if c == nil || w.md.Class(c.ID) != c {
		name := "<nil>"
		if c != nil {
			name = c.Name
		}
		return fmt.Errorf("jfr: class %s is not in the writer's metadata", name)
	}
	return nil
}

// AddConstant adds the constant key to the pool of class c in the current
// chunk. v is encoded as a value of c: a struct's fields in order, or for a
// simple type (jdk.types.Symbol, jdk.types.FrameType) the value of its only
// field. Constants are chunk-local: add them again to every chunk whose
// events refer to them. A key should be added once per chunk; readers keep
// the first definition.
func (w *Writer) AddConstant(c *Class, key uint64, v Value) error {
	if err := w.ensureOpen(); err != nil {
		return err
	}
	if err := w.checkClass(c); err != nil {
		return err
	}
	p := w.poolOf[c]
	if p == nil {
		p = &poolBuf{class: c}
		w.poolOf[c] = p
		w.pools = append(w.pools, p)
	}
	n := len(p.data)
	var err error
	p.data, err = appendValue(leb128.AppendUvarint(p.data, key), c, v)
	if err != nil {
		p.data = p.data[:n]
		return fmt.Errorf("jfr: constant %s %d: %w", c.Name, key, err)
	}
	p.count++
	w.nconst++
	return nil
}

// WriteEvent writes an event of type c with the given field values, in the
// order of c.Fields (startTime first). The record gets its minimal size.
func (w *Writer) WriteEvent(c *Class, fields []Value) error {
	if err := w.ensureOpen(); err != nil {
		return err
	}
	if err := w.checkClass(c); err != nil {
		return err
	}
	if len(fields) != len(c.Fields) {
		return fmt.Errorf("jfr: event %s: %d values for %d fields", c.Name, len(fields), len(c.Fields))
	}
	start := len(w.events)
	// Reserve one byte for the size, enough for events under 128 bytes, and
	// move the payload if the size needs more.
	b := leb128.AppendUvarint(append(w.events, 0), uint64(c.ID))
	var err error
	for i := range c.Fields {
		if b, err = appendField(b, &c.Fields[i], fields[i]); err != nil {
			w.events = b[:start]
			return fmt.Errorf("jfr: event %s: %w", c.Name, err)
		}
	}
	w.events = frame(b, start)
	return nil
}

// frame writes the size of the record that starts at b[start] with a
// one-byte placeholder, moving the record if the size needs more bytes.
func frame(b []byte, start int) []byte {
	payload := uint64(len(b) - start - 1)
	size := leb128.SelfSize(payload)
	if l := leb128.Len(size); l > 1 {
		b = append(b, make([]byte, l-1)...)
		copy(b[start+l:], b[start+1:len(b)-(l-1)])
	}
	leb128.AppendUvarint(b[:start], size)
	return b
}

// WriteEventPayload writes an event of the given type whose fields the
// caller encoded (with the Append helpers and leb128), in the order of the
// type's fields. The writer adds the size and type id.
func (w *Writer) WriteEventPayload(typeID int64, payload []byte) error {
	if err := w.ensureOpen(); err != nil {
		return err
	}
	if typeID == 0 || typeID == 1 {
		return fmt.Errorf("jfr: event type id %d is reserved", typeID)
	}
	start := len(w.events)
	b := leb128.AppendUvarint(append(w.events, 0), uint64(typeID))
	w.events = frame(append(b, payload...), start)
	return nil
}

// WriteRecords appends complete event records (size, type id, fields; as a
// recorder's per-thread buffer holds them, sizes minimal or padded). The
// framing is checked: the sizes must cover recs exactly.
func (w *Writer) WriteRecords(recs []byte) error {
	if err := w.ensureOpen(); err != nil {
		return err
	}
	if err := checkRecords(recs); err != nil {
		return err
	}
	w.events = append(w.events, recs...)
	return nil
}

// AdoptRecords adds complete event records to the open chunk without
// copying or checking them, for a recorder that encodes and gathers a
// chunk's records itself: the Writer writes the slices as they are when
// the chunk is written out, before the chunk's other events, so the caller
// must leave them unchanged until then (Flush, the next chunk, or Close).
//
// The framing of the records is the caller's to get right. Checking it
// would follow each record's size to the next: a chain of dependent loads
// that runs at memory latency, about 10 ns a record once a chunk outgrows
// the cache, which costs a recorder more than the rest of writing the
// chunk.
func (w *Writer) AdoptRecords(parts ...[]byte) error {
	if err := w.ensureOpen(); err != nil {
		return err
	}
	for _, p := range parts {
		if len(p) > 0 {
			w.adopted = append(w.adopted, p)
			w.adoptedLen += len(p)
		}
	}
	return nil
}

// checkRecords checks that the record sizes cover recs exactly and that no
// record is a metadata or checkpoint record.
func checkRecords(recs []byte) error {
	for off := 0; off < len(recs); {
		// One-byte sizes and one- or two-byte type ids are the common
		// case; a recorder passes hundreds of MB/s through here.
		size, n := uint64(recs[off]), 1
		if size >= 0x80 {
			size, n = leb128.Uvarint(recs[off:])
		}
		if n == 0 || size <= uint64(n) || size > uint64(len(recs)-off) {
			return fmt.Errorf("jfr: record at offset %d: bad size %d", off, size)
		}
		t := recs[off+n : off+int(size)]
		var typ uint64
		switch {
		case t[0] < 0x80:
			typ = uint64(t[0])
		case len(t) > 1 && t[1] < 0x80 && t[1] > 0:
			typ = uint64(t[0]&0x7f) | uint64(t[1])<<7
		default:
			var m int
			if typ, m = leb128.Uvarint(t); m == 0 {
				typ = 0
			}
		}
		if typ == 0 || typ == 1 {
			return fmt.Errorf("jfr: record at offset %d: bad event type id", off)
		}
		off += int(size)
	}
	return nil
}

// EndChunk finishes the current chunk at endTicks (opening an empty one if
// none is open). The next chunk starts at endTicks.
func (w *Writer) EndChunk(endTicks int64) error {
	if err := w.ensureOpen(); err != nil {
		return err
	}
	if endTicks < w.chunkStart {
		return fmt.Errorf("jfr: chunk end %d before its start %d", endTicks, w.chunkStart)
	}
	if w.streaming {
		if len(w.adopted) > 0 || len(w.events) > 0 || w.nconst > 0 {
			if err := w.writeSegment(endTicks, 0); err != nil {
				return err
			}
		} else {
			w.setHeader(w.written, w.lastCP, streamMetadataOffset, endTicks)
		}
		w.open, w.streaming = false, false
		w.wroteChunk = true
		w.nextStart = endTicks
		return nil
	}
	w.finish(endTicks)
	w.open = false
	w.pending = true
	w.nextStart = endTicks
	return nil
}

// Checkpoint type-mask bits (jfr-format.md §5).
const (
	CheckpointFlush = 1 // the checkpoint ends a flush segment
)

// Flushpoint writes out what the open chunk holds so far and keeps it open,
// as the JDK flushes once a second: at the first flushpoint the chunk
// header and the metadata, then the events and a checkpoint (type mask
// CheckpointFlush) with the constants added since the last flushpoint,
// chained to the one before. After it, Header returns the chunk header
// describing everything written so far (state 0, so any reader takes the
// chunk as ending there); a caller writing to a file writes the segment
// first, then that header over the chunk's first 68 bytes. EndChunk then
// writes the rest of the chunk the same way, without the flush bit.
func (w *Writer) Flushpoint(endTicks int64) error {
	if err := w.ensureOpen(); err != nil {
		return err
	}
	if endTicks < w.chunkStart {
		return fmt.Errorf("jfr: flushpoint %d before the chunk's start %d", endTicks, w.chunkStart)
	}
	return w.writeSegment(endTicks, CheckpointFlush)
}

// Header returns the header of the chunk being written in segments, as of
// its last Flushpoint or EndChunk; it is valid until the next call.
func (w *Writer) Header() []byte { return w.header[:] }

// ChunkSize returns how many bytes of the open chunk Flushpoint has
// written.
func (w *Writer) ChunkSize() int64 { return w.written }

// writeSegment writes the records and constants added since the last
// segment, ending in a checkpoint with the given type mask.
func (w *Writer) writeSegment(endTicks int64, mask byte) error {
	parts := w.segParts[:0]
	if !w.streaming {
		w.streaming = true
		w.setMetadataRecord()
		parts = append(parts, w.header[:], streamPad[:], w.mdRecord)
		w.written = streamMetadataOffset + int64(len(w.mdRecord))
	}
	parts = append(parts, w.adopted...)
	parts = append(parts, w.events)
	cpOff := w.written + int64(w.adoptedLen+len(w.events))
	var delta int64
	if w.lastCP != 0 {
		delta = w.lastCP - cpOff
	}
	cpSize := w.checkpointHead(endTicks, delta, mask)
	parts = append(parts, w.cpHead)
	for _, p := range w.pools {
		if p.count > 0 {
			parts = append(parts, p.head, p.data)
		}
	}
	w.written = cpOff + int64(cpSize)
	w.lastCP = cpOff
	w.setHeader(w.written, cpOff, streamMetadataOffset, endTicks)
	w.segParts = parts
	for _, b := range parts {
		if _, err := w.w.Write(b); err != nil {
			w.err = fmt.Errorf("jfr: write: %w", err)
			return w.err
		}
	}
	clear(parts)
	w.events = w.events[:0]
	clear(w.adopted)
	w.adopted, w.adoptedLen = w.adopted[:0], 0
	w.nconst = 0
	for _, p := range w.pools {
		p.count = 0
		p.data = p.data[:0]
	}
	return nil
}

// checkpointHead sets cpHead to the head of a checkpoint of the pools'
// constants (up to its first pool) and the pools' heads, and returns the
// checkpoint's size.
func (w *Writer) checkpointHead(endTicks, delta int64, mask byte) uint64 {
	cp := leb128.AppendUvarint(w.scratch[:0], 1)
	cp = leb128.AppendUvarint(cp, uint64(w.chunkStart))
	cp = leb128.AppendUvarint(cp, uint64(endTicks-w.chunkStart))
	cp = leb128.AppendUvarint(cp, uint64(delta))
	cp = append(cp, mask)
	npools := 0
	for _, p := range w.pools {
		if p.count > 0 {
			npools++
		}
	}
	cp = leb128.AppendUvarint(cp, uint64(npools))
	body := uint64(len(cp))
	for _, p := range w.pools {
		if p.count == 0 {
			continue // a pool must hold at least one constant
		}
		p.head = leb128.AppendUvarint(p.head[:0], uint64(p.class.ID))
		p.head = leb128.AppendUvarint(p.head, p.count)
		body += uint64(len(p.head) + len(p.data))
	}
	cpSize := leb128.SelfSize(body)
	w.cpHead = append(leb128.AppendUvarint(w.cpHead[:0], cpSize), cp...)
	w.scratch = cp
	return cpSize
}

// setMetadataRecord sets mdRecord to the metadata record of the open chunk.
func (w *Writer) setMetadataRecord() {
	md := leb128.AppendUvarint(w.scratch[:0], uint64(w.chunkStart))
	md = leb128.AppendUvarint(md, 0)
	md = leb128.AppendUvarint(md, uint64(w.mdID))
	md = append(md, w.mdBody...)
	w.mdRecord = AppendRecord(w.mdRecord[:0], 0, md)
	w.scratch = md
}

// setHeader fills in the header of a finished (state 0) chunk of size bytes
// whose last checkpoint is at cpOff and whose metadata is at mdOff.
func (w *Writer) setHeader(size, cpOff, mdOff, endTicks int64) {
	h := Header{Major: 2, Minor: 1, Size: size, ConstantPoolOffset: cpOff, MetadataOffset: mdOff,
		StartNanos:    w.clock0.StartNanos + w.nanosOf(w.chunkStart-w.clock0.StartTicks),
		DurationNanos: w.nanosOf(endTicks - w.chunkStart), StartTicks: w.chunkStart, TicksPerSecond: w.tps,
		Flags: FlagCompressedInts}
	h.put(w.header[:])
}

// A chunk written in segments has a 2-byte empty checkpoint record, which
// readers skip (they reach checkpoints through the header's offset and the
// deltas), between its header and its metadata. Read as a record, the
// header's magic "FLR\x00" is one of 70 bytes ('F') and type 76 ('L');
// with the padding that record ends where this chunk's records begin, so a
// recorder can write a new chunk into space the chunk before it still
// covers (with a FillerType record readers skip) and then shrink that
// chunk, leaving a readable file at every step (see the recorder's file
// sink).
var streamPad = [2]byte{2, 1}

const streamMetadataOffset = HeaderSize + int64(len(streamPad))

// FillerType is the type id of the records that pad streamed chunks: no
// metadata declares it, so readers skip such records by size.
const FillerType = 2

// finish lays out the chunk: header, events, one checkpoint with every
// pool, metadata. The checkpoint's size is an exact minimal varint of 64-bit
// width, so a checkpoint may exceed the 1<<28 bytes a 4-byte padded size
// holds (JDK-8298129).
func (w *Writer) finish(endTicks int64) {
	cpSize := w.checkpointHead(endTicks, 0, 0) // the only checkpoint
	w.setMetadataRecord()
	cpOff := int64(HeaderSize + w.adoptedLen + len(w.events))
	mdOff := cpOff + int64(cpSize)
	w.setHeader(mdOff+int64(len(w.mdRecord)), cpOff, mdOff, endTicks)
}

// Flush writes out the chunk EndChunk finished, without waiting for the
// next chunk to start or for Close, so a caller can deliver each chunk as
// it ends while reusing one Writer (and its buffers) for all of them. The
// chunk is written without the final-chunk flag: Close sets it only on a
// chunk it writes itself.
func (w *Writer) Flush() error {
	if err := w.usable(); err != nil {
		return err
	}
	return w.flushPending(false)
}

// flushPending writes out the finished chunk, marking it final if asked.
func (w *Writer) flushPending(final bool) error {
	if !w.pending {
		return nil
	}
	w.pending = false
	if final {
		binary.BigEndian.PutUint16(w.header[66:], FlagCompressedInts|FlagFinalChunk)
	}
	parts := append([][]byte{w.header[:]}, w.adopted...)
	parts = append(parts, w.events, w.cpHead)
	for _, p := range w.pools {
		if p.count > 0 {
			parts = append(parts, p.head, p.data)
		}
	}
	parts = append(parts, w.mdRecord)
	for _, b := range parts {
		if _, err := w.w.Write(b); err != nil {
			w.err = fmt.Errorf("jfr: write: %w", err)
			return w.err
		}
	}
	w.wroteChunk = true
	return nil
}

// Close finishes the open chunk at the current tick (Now), or writes an
// empty chunk if nothing was written, and writes the last chunk with the
// final-chunk flag. It does not close the underlying io.Writer.
func (w *Writer) Close() error {
	if err := w.usable(); err != nil {
		return err
	}
	if w.open || (!w.pending && !w.wroteChunk) {
		end := w.now()
		if w.open {
			end = max(end, w.chunkStart)
		} else {
			end = max(end, w.nextStart)
		}
		if err := w.EndChunk(end); err != nil {
			return err
		}
	}
	err := w.flushPending(true)
	w.closed = true
	return err
}
