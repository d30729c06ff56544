package jfr

import (
	"errors"
	"fmt"
	"io"
)

// LiveChunk reads a chunk while it is being written, one flush at a time,
// as Follow and the recorder's streams do. It keeps what it has read of
// the chunk, its metadata and constant pools, and at each flush reads only
// what the flush added: the new checkpoints, whose constants join the
// pools (a later value of a key replaces an earlier one, as in a whole
// chunk), and the metadata when the header points to a new one. Reading a
// chunk of n flushes so costs its size once, not n times.
type LiveChunk struct {
	opts     ReaderOptions
	c        *Chunk
	clock    *Clock    // the first chunk's, unless PerChunkClock
	lastMeta *Metadata // the previous chunk's, for the JDK's metadata-id rule
	mdOff    int64     // offset of the metadata loaded, 0 if none
	cpOff    int64     // offset of the latest checkpoint loaded, 0 if none
	cpCount  int
	ar       *arena     // holds the constants' fields
	batch    EventBatch // Dispatch's, for batch handlers
	view     Chunk      // DispatchFlush's
}

// NewLiveChunk returns a LiveChunk; opts may be nil. Call Start before
// the first chunk.
func NewLiveChunk(opts *ReaderOptions) *LiveChunk {
	l := &LiveChunk{}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.MetadataCache == nil {
		l.opts.MetadataCache = NewMetadataCache()
	}
	return l
}

// Start begins reading a new chunk, the idx-th of the recording, at byte
// offset off of the file. What was read of the previous chunk is dropped.
func (l *LiveChunk) Start(idx int, off int64) {
	if l.c != nil && l.c.Metadata != nil {
		l.lastMeta = l.c.Metadata
	}
	l.c = &Chunk{Index: idx, Offset: off}
	l.mdOff, l.cpOff, l.cpCount = 0, 0, 0
	l.ar = &arena{keep: true}
}

// Extend takes the chunk's bytes written so far, data, and its header as
// of their end (data's first HeaderSize bytes are not read: a writer may
// be rewriting them). data begins with the bytes given before (a chunk
// only grows) and ends at a flush: the end of the latest checkpoint or
// metadata, or of the chunk; it may be shorter than the header's size,
// whose bytes past the flush are not final. Extend loads the metadata the
// header names if it is new; LoadConstants loads the new constants. The
// chunk returned is valid until Start.
func (l *LiveChunk) Extend(header, data []byte) (*Chunk, error) {
	c := l.c
	if c == nil {
		return nil, errors.New("jfr: LiveChunk.Extend before Start")
	}
	fail := func(at int64, err error) error { return &FormatError{Chunk: c.Index, Offset: c.Offset + at, Err: err} }
	if len(header) < HeaderSize {
		return nil, fail(int64(len(header)), fmt.Errorf("%w: chunk header has %d of %d bytes", ErrTruncated, len(header), HeaderSize))
	}
	h, err := parseHeader(header)
	if err != nil {
		return nil, fail(0, err)
	}
	if h.Size > l.opts.maxChunkSize() {
		return nil, fail(8, fmt.Errorf("%w: chunk size %d exceeds the maximum %d", ErrLimit, h.Size, l.opts.maxChunkSize()))
	}
	end := int64(len(data))
	switch {
	case end < HeaderSize || end > h.Size:
		return nil, fail(8, fmt.Errorf("%d bytes of a chunk of %d: not a flush of it", end, h.Size))
	case end < int64(len(c.data)):
		return nil, fail(end, fmt.Errorf("%w: the chunk had %d bytes and now has %d", ErrTruncated, len(c.data), end))
	case h.MetadataOffset >= end || h.ConstantPoolOffset >= end:
		return nil, fail(end, fmt.Errorf("%w: the header names a checkpoint or metadata past the %d bytes flushed", ErrTruncated, end))
	}
	h.Size = end
	c.Header, c.data = h, data
	if h.MetadataOffset != l.mdOff {
		d, typ, err := c.record(h.MetadataOffset)
		if err != nil {
			return nil, err
		}
		if typ != 0 {
			return nil, fail(h.MetadataOffset, fmt.Errorf("expected the metadata record (type 0), found type %d", typ))
		}
		last := c.Metadata
		if last == nil {
			last = l.lastMeta
		}
		md, err := metadataRecord(d, l.opts.MetadataCache, last)
		if err != nil {
			return nil, fail(h.MetadataOffset+int64(d.pos), fmt.Errorf("metadata: %w", err))
		}
		if md != c.Metadata {
			// New types: constants read under the old ones are read again.
			c.Metadata, c.pools = md, newPools(md)
			l.cpOff, l.cpCount, l.ar = 0, 0, &arena{keep: true}
		}
		l.mdOff = h.MetadataOffset
	}
	if l.clock == nil || l.opts.PerChunkClock {
		ck := ClockOf(&h)
		l.clock = &ck
	}
	c.clock = *l.clock
	return c, nil
}

// LoadConstants adds to the chunk's pools the constants of the
// checkpoints the last Extend's header names that are not loaded yet.
// Events decoded before it resolve references to the constants loaded
// then. It does nothing with ReaderOptions.SkipConstantPools.
func (l *LiveChunk) LoadConstants() error {
	c := l.c
	if c == nil || c.Metadata == nil || l.opts.SkipConstantPools || c.Header.ConstantPoolOffset == l.cpOff {
		return nil
	}
	off, err := c.loadCheckpoints(l.cpOff, &l.cpCount, &l.opts, l.ar)
	l.cpOff = off
	return err
}

// Reader returns a Reader of the chunk's records from byte offset from of
// the chunk up to offset to (at most the end of the data the last Extend
// was given); it reads no other chunk. Its first NextChunk returns the
// chunk as it reads it: the records before to.
func (l *LiveChunk) Reader(from, to int64) *Reader {
	if l.c == nil {
		return &Reader{err: io.EOF}
	}
	c := l.c
	if to < int64(len(c.data)) {
		part := *c
		part.data = c.data[:max(to, HeaderSize)]
		c = &part
	}
	return &Reader{mem: true, opts: l.opts, pending: c, skip: from}
}
