package jfr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// HeaderSize is the size of a chunk header in bytes.
const HeaderSize = 68

// Magic starts every chunk.
var Magic = [4]byte{'F', 'L', 'R', 0}

// Header flag bits (byte 67 of the chunk header).
const (
	FlagCompressedInts = 1 << 0
	FlagFinalChunk     = 1 << 1
)

// Header is the fixed 68-byte header at the start of every chunk. Offsets
// are relative to the start of the chunk.
type Header struct {
	Major, Minor       uint16
	Size               int64 // the whole chunk, header included
	ConstantPoolOffset int64 // the most recent checkpoint; 0 if none
	MetadataOffset     int64
	StartNanos         int64 // wall clock at chunk start, ns since the Unix epoch
	DurationNanos      int64
	StartTicks         int64
	TicksPerSecond     int64
	State              uint8  // 0 finished; 1..254 in progress; 255 header being rewritten
	Flags              uint16 // FlagCompressedInts | FlagFinalChunk
}

// Finished tells whether the chunk was closed by its writer.
func (h *Header) Finished() bool { return h.State == 0 }

// put encodes h into b (HeaderSize bytes), with the magic: what
// parseHeader reads.
func (h *Header) put(b []byte) {
	be := binary.BigEndian
	copy(b, Magic[:])
	be.PutUint16(b[4:], h.Major)
	be.PutUint16(b[6:], h.Minor)
	be.PutUint64(b[8:], uint64(h.Size))
	be.PutUint64(b[16:], uint64(h.ConstantPoolOffset))
	be.PutUint64(b[24:], uint64(h.MetadataOffset))
	be.PutUint64(b[32:], uint64(h.StartNanos))
	be.PutUint64(b[40:], uint64(h.DurationNanos))
	be.PutUint64(b[48:], uint64(h.StartTicks))
	be.PutUint64(b[56:], uint64(h.TicksPerSecond))
	b[64], b[65] = h.State, 0
	be.PutUint16(b[66:], h.Flags)
}

// parseHeader decodes and validates a chunk header.
func parseHeader(b []byte) (Header, error) {
	var h Header
	if [4]byte(b[:4]) != Magic {
		return h, ErrNotJFR
	}
	be := binary.BigEndian
	h.Major, h.Minor = be.Uint16(b[4:]), be.Uint16(b[6:])
	h.Size = int64(be.Uint64(b[8:]))
	h.ConstantPoolOffset = int64(be.Uint64(b[16:]))
	h.MetadataOffset = int64(be.Uint64(b[24:]))
	h.StartNanos = int64(be.Uint64(b[32:]))
	h.DurationNanos = int64(be.Uint64(b[40:]))
	h.StartTicks = int64(be.Uint64(b[48:]))
	h.TicksPerSecond = int64(be.Uint64(b[56:]))
	h.State = b[64]
	h.Flags = be.Uint16(b[66:])
	if h.Major != 1 && h.Major != 2 {
		return h, fmt.Errorf("%w %d.%d: only Flight Recorder files of version 1.x and 2.x are supported", ErrVersion, h.Major, h.Minor)
	}
	if h.Size < HeaderSize {
		return h, fmt.Errorf("chunk size %d is smaller than the header", h.Size)
	}
	for _, off := range []struct {
		name string
		v    int64
	}{{"constant pool", h.ConstantPoolOffset}, {"metadata", h.MetadataOffset}} {
		if off.v != 0 && (off.v < HeaderSize || off.v >= h.Size) {
			return h, fmt.Errorf("%s offset %d outside the chunk (size %d)", off.name, off.v, h.Size)
		}
	}
	if h.MetadataOffset == 0 {
		return h, errors.New("no metadata in chunk (metadata offset 0)")
	}
	if h.TicksPerSecond <= 0 {
		return h, fmt.Errorf("invalid ticks per second %d", h.TicksPerSecond)
	}
	return h, nil
}

// Chunk is one self-contained chunk of a recording: its header, metadata and
// constant pools. It is valid until the reader moves to the next chunk.
type Chunk struct {
	Index    int   // position in the file, from 0
	Offset   int64 // byte offset of the chunk in the file
	Header   Header
	Metadata *Metadata

	data  []byte // the chunk, header included, from byte base
	base  int64  // 0 but for LiveChunk.DispatchFlush's view of a flush
	pools *pools
	clock Clock
}

// Clock converts tick values to wall-clock time and durations.
type Clock struct {
	StartNanos     int64
	StartTicks     int64
	TicksPerSecond int64
}

// ClockOf returns the clock given by a chunk header.
func ClockOf(h *Header) Clock {
	return Clock{StartNanos: h.StartNanos, StartTicks: h.StartTicks, TicksPerSecond: h.TicksPerSecond}
}

// Nanos converts a tick timestamp to nanoseconds since the Unix epoch,
// rounding toward zero as the JDK does.
func (c Clock) Nanos(ticks int64) int64 {
	if c.TicksPerSecond == 1e9 {
		return c.StartNanos + (ticks - c.StartTicks)
	}
	return c.StartNanos + int64(float64(ticks-c.StartTicks)/(float64(c.TicksPerSecond)/1e9))
}

// Time converts a tick timestamp to a time.Time.
func (c Clock) Time(ticks int64) time.Time { return time.Unix(0, c.Nanos(ticks)).UTC() }

// Duration converts a tick timespan to a duration, rounding toward zero.
func (c Clock) Duration(ticks int64) time.Duration {
	if c.TicksPerSecond == 1e9 {
		return time.Duration(ticks)
	}
	return time.Duration(float64(ticks) / (float64(c.TicksPerSecond) / 1e9))
}

// Clock returns the clock used to convert this chunk's ticks. Like the JDK's
// reader, it is the first chunk's clock unless the reader was told to use
// each chunk's own header (ReaderOptions.PerChunkClock).
func (c *Chunk) Clock() Clock { return c.clock }

// StartTime returns the chunk's start from its header.
func (c *Chunk) StartTime() time.Time { return time.Unix(0, c.Header.StartNanos).UTC() }

// Constant returns the constant with the given key from the pool of class t.
func (c *Chunk) Constant(t *Class, key uint64) (Value, bool) {
	return c.pools.lookup(t, key)
}

// AppendPooledString appends the text of the java.lang.String constant
// key (a string value with encoding 2 refers to one); ok is false when
// the pool has no such string.
func (c *Chunk) AppendPooledString(dst []byte, key uint64) (out []byte, ok bool) {
	v, ok := c.pools.lookup(c.pools.stringClass, key)
	if !ok || v.kind != KindString || v.enc == encPool {
		return dst, false
	}
	return v.AppendText(dst), true
}

// PoolKeys calls fn for every constant of class t, in no particular order.
func (c *Chunk) PoolKeys(t *Class, fn func(key uint64, v Value)) {
	p := c.pools.byClass[t]
	if p == nil {
		return
	}
	for k, i := range p.index {
		fn(k, p.vals[i])
	}
}

// PoolClasses returns the classes that have a constant pool in this chunk.
func (c *Chunk) PoolClasses() []*Class {
	var out []*Class
	for _, cl := range c.Metadata.Classes {
		if c.pools.byClass[cl] != nil {
			out = append(out, cl)
		}
	}
	return out
}

// pools holds a chunk's constant pools, keyed by class.
type pools struct {
	byClass     map[*Class]*pool
	stringClass *Class
}

type pool struct {
	index map[uint64]int32
	vals  []Value
}

func (p *pools) lookup(c *Class, key uint64) (Value, bool) {
	if p == nil {
		return Value{}, false
	}
	pl := p.byClass[c]
	if pl == nil {
		return Value{}, false
	}
	i, ok := pl.index[key]
	if !ok {
		return Value{}, false
	}
	return pl.vals[i], true
}

// CheckpointInfo describes one checkpoint record.
type checkpointHeader struct {
	startTicks, durationTicks int64
	delta                     int64
	typeMask                  byte
}

// readPools decodes every constant pool of the chunk's checkpoint chain.
// Where a key is defined twice, the later checkpoint wins.
func (c *Chunk) readPools(opts *ReaderOptions) error {
	c.pools = newPools(c.Metadata)
	var count int
	_, err := c.loadCheckpoints(0, &count, opts, &arena{keep: true})
	return err
}

func newPools(md *Metadata) *pools {
	return &pools{byClass: make(map[*Class]*pool), stringClass: md.ClassByName(TypeString)}
}

// loadCheckpoints adds to c.pools the checkpoints of the chain that ends
// at the header's constant-pool offset and lie after the checkpoint at
// loaded (0: none was loaded), in the order they were written, so a later
// checkpoint's value of a key replaces an earlier one. It returns the
// offset of the latest checkpoint loaded; count is how many checkpoints
// of the chunk were loaded, for opts' limit.
func (c *Chunk) loadCheckpoints(loaded int64, count *int, opts *ReaderOptions, ar *arena) (int64, error) {
	// The chain runs backwards: collect the new checkpoints, then decode
	// them oldest first.
	var offs []int64
	for off := c.Header.ConstantPoolOffset; off > loaded; {
		*count++
		if *count > opts.maxCheckpoints() {
			return loaded, c.errorAt(off, fmt.Errorf("%w: more than %d checkpoints in the chain", ErrLimit, opts.maxCheckpoints()))
		}
		d, typ, err := c.record(off)
		if err != nil {
			return loaded, err
		}
		if typ != 1 {
			return loaded, c.errorAt(off, fmt.Errorf("expected a checkpoint record (type 1), found type %d", typ))
		}
		d.uvarint() // start ticks
		d.uvarint() // duration ticks
		delta := int64(d.uvarint())
		if d.err != nil {
			return loaded, c.errorAt(off+int64(d.pos), fmt.Errorf("checkpoint: %w", d.err))
		}
		offs = append(offs, off)
		if delta == 0 {
			break
		}
		next := off + delta
		if delta > 0 || next < HeaderSize {
			return loaded, c.errorAt(off, fmt.Errorf("checkpoint delta %d does not point to an earlier checkpoint", delta))
		}
		off = next
	}
	for i := len(offs) - 1; i >= 0; i-- {
		if err := c.loadCheckpoint(offs[i], ar); err != nil {
			return loaded, err
		}
	}
	if len(offs) > 0 {
		loaded = offs[0]
	}
	return loaded, nil
}

// loadCheckpoint decodes the constants of the checkpoint at off into
// c.pools.
func (c *Chunk) loadCheckpoint(off int64, ar *arena) error {
	md := c.Metadata
	d, _, err := c.record(off)
	if err != nil {
		return err
	}
	var h checkpointHeader
	h.startTicks = int64(d.uvarint())
	h.durationTicks = int64(d.uvarint())
	h.delta = int64(d.uvarint())
	h.typeMask = d.byte1()
	n := d.count(2)
	for i := 0; i < n && d.err == nil; i++ {
		start := d.pos
		id := int64(d.uvarint())
		cl := md.Class(id)
		if cl == nil {
			if d.err == nil {
				return c.errorAt(off+int64(start), fmt.Errorf("constant pool of type %d: type is not defined", id))
			}
			break
		}
		cnt := d.count(1)
		p := c.pools.byClass[cl]
		if p == nil {
			p = &pool{index: make(map[uint64]int32, cnt)}
			c.pools.byClass[cl] = p
		}
		for j := 0; j < cnt && d.err == nil; j++ {
			key := d.uvarint()
			var v Value
			d.value(cl, &v, ar)
			if at, dup := p.index[key]; dup {
				p.vals[at] = v
				continue
			}
			p.index[key] = int32(len(p.vals))
			p.vals = append(p.vals, v)
		}
	}
	if d.err != nil {
		return c.errorAt(off+int64(d.pos), fmt.Errorf("checkpoint: %w", d.err))
	}
	if d.pos != len(d.b) {
		return c.errorAt(off+int64(d.pos), fmt.Errorf("checkpoint content ends at %d of %d bytes", d.pos, len(d.b)))
	}
	return nil
}

// record returns a decoder over the record at chunk offset off, positioned
// after its type id (so that d.pos is an offset in the record), and the
// type id.
func (c *Chunk) record(off int64) (*decoder, int64, error) {
	if off < c.base {
		return nil, 0, c.errorAt(off, fmt.Errorf("record at %d is before the %d bytes held from %d", off, len(c.data), c.base))
	}
	size, typ, hdr, err := recordHeader(c.data, off-c.base)
	if err != nil {
		return nil, 0, c.errorAt(off, err)
	}
	d := &decoder{b: c.data[off-c.base : off-c.base+size], pos: hdr, pools: c.pools}
	return d, typ, nil
}

// recordHeader reads the size and type id of the record at off in data.
// hdr is the number of bytes the two varints take.
func recordHeader(data []byte, off int64) (size, typ int64, hdr int, err error) {
	d := decoder{b: data, pos: int(off)}
	usize := d.uvarint()
	if err := checkRecordSize(usize, d.err == nil, int64(len(data))-off); err != nil {
		return 0, 0, 0, err
	}
	d.b = data[:off+int64(usize)]
	typ = int64(d.uvarint())
	if d.err != nil {
		return 0, 0, 0, fmt.Errorf("record of %d bytes too small for its type id", usize)
	}
	return int64(usize), typ, d.pos - int(off), nil
}

// checkRecordSize checks a record's size as read (ok: its varint was
// whole) against the left bytes of the chunk from the record on.
func checkRecordSize(size uint64, ok bool, left int64) error {
	switch {
	case !ok:
		return fmt.Errorf("record size: %w", ErrTruncated)
	case size == 0:
		return errors.New("record has zero size")
	case size > uint64(left):
		return fmt.Errorf("record size %d exceeds the %d bytes left in the chunk", size, left)
	}
	return nil
}

func (c *Chunk) errorAt(chunkOff int64, err error) error {
	return &FormatError{Chunk: c.Index, Offset: c.Offset + chunkOff, Err: err}
}
