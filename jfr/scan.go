package jfr

import (
	"errors"
	"fmt"
	"io"

	"github.com/flightrec/flightrec/internal/leb128"
)

// ChunkSpan locates one chunk of a recording.
type ChunkSpan struct {
	Index  int
	Offset int64
	Size   int64
	Header Header
}

// ScanChunksAt finds the chunks of the recording of the given size in ra by
// reading only their headers, so that they can be read independently (in
// parallel) with ChunkMetadataAt and RecordScanner. It
// returns the complete chunks and, if the data ends inside a chunk or a
// header is bad, a *FormatError for the first bad one, as a Reader would.
// After a chunk still being written, bytes that start no chunk end the
// scan, as they do for a Reader.
func ScanChunksAt(ra io.ReaderAt, size int64, opts *ReaderOptions) ([]ChunkSpan, error) {
	var o ReaderOptions
	if opts != nil {
		o = *opts
	}
	var spans []ChunkSpan
	var hdr [HeaderSize]byte
	afterOpen := false // the chunk before was still being written
	for off := int64(0); ; {
		idx := len(spans)
		if off >= size {
			if idx == 0 {
				return nil, &FormatError{Chunk: 0, Offset: 0, Err: errors.New("empty file: no chunk")}
			}
			return spans, nil
		}
		n, _ := ra.ReadAt(hdr[:], off)
		var h Header
		var err error
		if n == HeaderSize {
			h, err = parseHeader(hdr[:])
		}
		if afterOpen && (n < HeaderSize || err != nil) {
			return spans, nil // the records of the open chunk after its last flush
		}
		if n < HeaderSize || err != nil || h.Size > o.maxChunkSize() {
			// A Reader stops at the header: it is all there is to read.
			return spans, chunkError(ra, ChunkSpan{Index: idx, Offset: off, Size: int64(n)}, opts)
		}
		if h.Size > size-off {
			return spans, chunkError(ra, ChunkSpan{Index: idx, Offset: off, Size: size - off}, opts)
		}
		spans = append(spans, ChunkSpan{Index: idx, Offset: off, Size: h.Size, Header: h})
		off += h.Size
		afterOpen = !h.Finished()
	}
}

// chunkError returns the error a Reader gives for the chunk span locates:
// the bytes the Reader would read of it before it fails, read into memory,
// which holds no more than the data there, whatever size the header
// claims (a Reader grows its buffer by 64 MiB steps).
func chunkError(ra io.ReaderAt, span ChunkSpan, opts *ReaderOptions) error {
	rest := make([]byte, span.Size)
	if n, err := ra.ReadAt(rest, span.Offset); n < len(rest) {
		return &FormatError{Chunk: span.Index, Offset: span.Offset + int64(n), Err: err}
	}
	r := NewBytesReader(rest, opts)
	r.index = span.Index
	_, err := r.NextChunk()
	if fe := (*FormatError)(nil); errors.As(err, &fe) {
		fe.Offset += span.Offset // in rest
		return fe
	}
	return &FormatError{Chunk: span.Index, Offset: span.Offset, Err: errors.New("bad chunk header")}
}

// shortRead is the error of a ReadAt that returned fewer bytes than asked
// for, with err: the data ends there, or reading failed (a mapped file
// cut underneath), which is not the same.
func shortRead(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %v", ErrTruncated, err)
	}
	return err
}

// ChunkMetadataAt reads and returns the metadata of the chunk span locates,
// reading only its metadata record. prev is the previous chunk's metadata
// (or nil): as the JDK (and a Reader) does, a record with prev's id is taken
// to mean prev without being parsed. With a cache, chunks that repeat the
// same metadata under other ids share one parse.
func ChunkMetadataAt(ra io.ReaderAt, span ChunkSpan, prev *Metadata, cache *MetadataCache) (*Metadata, error) {
	off := span.Offset + span.Header.MetadataOffset
	end := span.Offset + span.Size
	fail := func(at int64, err error) error { return &FormatError{Chunk: span.Index, Offset: at, Err: err} }
	// The record starts with its size, type, start, duration and id: if
	// the id is prev's, that is all there is to read.
	var head [5 * leb128.MaxLen]byte
	n, _ := ra.ReadAt(head[:min(int64(len(head)), end-off)], off)
	size, k := leb128.Uvarint(head[:n])
	if err := checkRecordSize(size, k > 0, end-off); err != nil {
		return nil, fail(off, err)
	}
	if prev != nil {
		h := &decoder{b: head[:min(uint64(n), size)], pos: k}
		typ := h.uvarint()
		h.uvarint()
		h.uvarint()
		if id := int64(h.uvarint()); h.err == nil && typ == 0 && id == prev.ID {
			return prev, nil
		}
	}
	rec := make([]byte, size)
	if m, err := ra.ReadAt(rec, off); int64(m) < int64(size) {
		return nil, fail(off+int64(m), shortRead(err))
	}
	_, typ, hdr, err := recordHeader(rec, 0)
	if err != nil {
		return nil, fail(off, err)
	}
	if typ != 0 {
		return nil, fail(off, fmt.Errorf("expected the metadata record (type 0), found type %d", typ))
	}
	d := &decoder{b: rec, pos: hdr}
	md, err := metadataRecord(d, cache, prev)
	if err != nil {
		return nil, fail(off+int64(d.pos), fmt.Errorf("metadata: %w", err))
	}
	return md, nil
}

// RecordScanner walks the record headers of a chunk through an
// io.ReaderAt, a window at a time, for tools that need only each record's
// type and size (like summary): the chunk is never held in memory, the
// window it reads stays in the CPU's cache, and a large record is skipped
// without being read. The zero value is ready to use; reuse it across
// chunks.
type RecordScanner struct {
	buf  []byte
	recs []Record
}

// scanWindow is how much a RecordScanner reads at a time.
const scanWindow = 256 << 10

// Scan calls fn with the records of the chunk span locates, in file order,
// in batches (the slice is reused after fn returns).
func (s *RecordScanner) Scan(ra io.ReaderAt, span ChunkSpan, fn func([]Record)) error {
	if s.buf == nil {
		s.buf = make([]byte, scanWindow)
		s.recs = make([]Record, 0, 512)
	}
	fail := func(at int64, err error) error { return &FormatError{Chunk: span.Index, Offset: at, Err: err} }
	end := span.Offset + span.Size
	pos := span.Offset + HeaderSize
	var wstart, wend int64 // the file range s.buf holds
	for pos < end {
		if pos+2*leb128.MaxLen > wend && wend < end || pos < wstart {
			n := min(int64(len(s.buf)), end-pos)
			m, err := ra.ReadAt(s.buf[:n], pos)
			if int64(m) < n {
				return fail(pos+int64(m), shortRead(err))
			}
			wstart, wend = pos, pos+n
		}
		k, np := scanRecords(s.buf[:wend-wstart], int(pos-wstart), int(end-wstart), wstart, s.recs[len(s.recs):cap(s.recs)])
		s.recs = s.recs[:len(s.recs)+k]
		pos = wstart + int64(np)
		if len(s.recs) == cap(s.recs) {
			fn(s.recs)
			s.recs = s.recs[:0]
		}
		if k > 0 || pos >= end || pos+2*leb128.MaxLen > wend && wend < end {
			continue // progress, the end, or a header cut by the window
		}
		// A record the fast path does not take: decode it the slow way.
		b := s.buf[pos-wstart : wend-wstart]
		var size, typ uint64
		var m int
		size, k = leb128.Uvarint(b)
		if k > 0 && size > uint64(k) {
			typ, m = leb128.Uvarint(b[k:min(uint64(len(b)), size)])
		}
		if err := checkRecordSize(size, k > 0, end-pos); err != nil {
			return fail(pos, err)
		}
		if m == 0 {
			return fail(pos, fmt.Errorf("record of %d bytes too small for its type id", size))
		}
		s.recs = append(s.recs, Record{TypeID: int64(typ), Offset: pos, Size: int64(size)})
		if len(s.recs) == cap(s.recs) {
			fn(s.recs)
			s.recs = s.recs[:0]
		}
		pos += int64(size)
	}
	if len(s.recs) > 0 {
		fn(s.recs)
		s.recs = s.recs[:0]
	}
	return nil
}

// scanRecords fills dst with the headers of the records at b[pos:] as long
// as they take the fast path: a size of up to four bytes (the JVM pads
// large events' sizes to four), a type id of one or two bytes, and the
// record ending by limit, which may lie beyond b (a window scanner needs
// only the headers). It returns how many it read and where it stopped: at a
// record that needs the slow path, or at the end. base is the file offset
// of b[0]. One call walks many records, which is what makes walking them
// fast.
func scanRecords(b []byte, pos, limit int, base int64, dst []Record) (int, int) {
	n := 0
	for n < len(dst) && pos < limit && len(b)-pos >= 6 {
		h := b[pos : pos+6 : pos+6]
		size, k := int(h[0]&0x7f), 1
		for k < 4 && h[k-1] >= 0x80 {
			size |= int(h[k]&0x7f) << (7 * k)
			k++
		}
		typ, m := int64(h[k]), 1
		if h[k] >= 0x80 {
			typ, m = typ&0x7f|int64(h[k+1])<<7, 2
		}
		if h[k-1] >= 0x80 || h[k+m-1] >= 0x80 || size < k+m || size > limit-pos {
			break
		}
		dst[n] = Record{TypeID: typ, Offset: base + int64(pos), Size: int64(size)}
		n++
		pos += size
	}
	return n, pos
}
