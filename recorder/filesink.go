package recorder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/jfr"
)

// A recording's file is readable at every moment, whatever moment the
// process is killed: the JDK's reader rejects a file whose last chunk
// header claims bytes that are not there, and also one with bytes after
// its last chunk. So the file never holds bytes that no chunk covers, and
// no header claims bytes not written:
//
//   - The chunk being written covers, past its data, a reservation: one
//     filler record (type jfr.FillerType, which no metadata declares, so
//     readers skip it) up to the end of the file.
//   - A flushpoint's segment is written inside the filler: first all of it
//     but its first 6 bytes, followed by the header of a filler for what
//     is left; then the first 6 bytes, one small write that turns the old
//     filler's header into the segment's first record; then the chunk
//     header, whose new checkpoint offset makes readers see the segment's
//     constants. A kill between the last two writes leaves the segment's
//     events readable with the constants of the flushpoint before.
//   - A new chunk is written the same way into the rest of the previous
//     chunk's filler, which is built so that its bytes 4 and 5 are those
//     of a chunk header (version 2): the last write but one puts the magic
//     "FLR\0" there, which readers of the previous chunk take as a record
//     of 70 bytes they skip (jfr.FillerType's comment), followed by the new
//     chunk's records; the last shrinks the previous chunk to its data.
//   - The file grows only by writing reservation pages after its end
//     (jfr.AppendReservation): page-aligned chunks, each complete and
//     empty, so that a write the kill cuts short (Linux cuts one only at
//     page boundaries) leaves whole chunks after the current one. Then the
//     chunk header is extended over them (read as its records, readers
//     skip them), then the filler's header, so the pages become filler.
//   - Close drops the reservation the same way: it becomes a small empty
//     chunk (jfr.AppendReserved) and pages, written inside the filler and
//     switched in by writing the small chunk's magic; then the header
//     shrinks the chunk to its data, and the file is truncated there.
//
// A chunk header lies within one page, so that rewriting it never tears
// (Linux copies a write page by page): a chunk that would start in the
// last 67 bytes of a page starts at the next one, after a small empty
// checkpoint record (readers skip it) that ends the chunk before it
// (padFor). The 6-byte writes that switch a filler header, all at the end
// of the data, lie within one page too: a segment whose data would end in
// the last 5 bytes of a page is followed, in the same write, by such a
// record (tailFor) that moves the end into the next page. That record
// sits inside the chunk, between two of its writer's segments, so the
// sink shifts what points past it: the chunk header's checkpoint offset,
// and the delta from the next segment's first checkpoint to the one
// before (patchDelta). Other consumers of the segments get them as the
// writer made them.
type fileSink struct {
	f      sinkFile
	start  int64 // offset of the chunk being written (or last written)
	end    int64 // end of its data
	resEnd int64 // end of its reservation, and of the file
	opened bool  // a chunk has been written
	// shift is how many bytes of padding the sink laid out in the chunk
	// between its writer's segments, tail those after the last segment.
	shift, tail int64
	hdr         [jfr.HeaderSize]byte
	// A write is a list of pieces written one after the other (vec):
	// a segment is written from where its writer made it (the buffers'
	// records in place, the writer's encoded constants), not gathered
	// into one buffer first. head is a segment's chunk header, its size
	// set; small holds the padding and filler headers a write adds, and
	// the 6 bytes that switch a filler header.
	vec      [][]byte
	head     [jfr.HeaderSize]byte
	small    []byte // in smallBuf, which it never outgrows
	smallBuf [128]byte
	one      [1][]byte // writeAt's write
	// buf gathers a write for WriteAt when it is not written raw (and
	// the small chunk Close writes), patched a segment whose delta
	// patchDelta lengthens.
	buf, patched []byte
	iov          iovecs    // the raw write's pieces
	page         []byte    // one reservation page, written as often as needed,
	pclock       jfr.Clock // stamped with this clock
	// steps are the chunk writer's while it writes a segment: pinned,
	// writes go through writeAt.
	steps   *steps
	slowRaw bool // rawSlowWrites raw writes in a row took over rawWriteSlow
	slowRun int  // raw writes in a row that took over rawWriteSlow
}

// sinkFile is what fileSink needs of an *os.File.
type sinkFile interface {
	WriteAt(b []byte, off int64) (int, error)
	Truncate(size int64) error
	Close() error
}

const (
	fillerHeaderSize = jfr.FillerHeaderSize
	maxFiller        = 1<<28 - 1 // its size is a 4-byte varint and a zero byte
)

// zeroPage is the body of the first chunk's filler (at most two pages).
var zeroPage [jfr.ReservePage]byte

// growth is how much the reservation grows by beyond what a segment needs
// (tests lower it). Growing writes it (as reservation pages) where a
// sparse extension would not, and Close writes what is left of it again.
var growth int64 = 1 << 20

// createFile opens a recording's file; tests replace it to inject faults.
var createFile = func(path string) (sinkFile, error) { return os.Create(path) }

func createFileSink(path string) (*fileSink, error) {
	f, err := createFile(path)
	if err != nil {
		return nil, err
	}
	return &fileSink{f: f}, nil
}

// padFor returns the size of the record that goes between a chunk's data
// ending at e and the next chunk, so that the next chunk's header lies
// within one page: 0, or 2 to 67 bytes.
func padFor(e int64) int64 { return padWithin(e, jfr.HeaderSize) }

// padWithin returns the size of a padding record at e after which n
// bytes lie within one page: 0, or 2 to n-1 bytes (a record takes 2 at
// least, so at a page's last byte it ends 1 byte into the next).
func padWithin(e, n int64) int64 {
	r := jfr.ReservePage - e%jfr.ReservePage
	switch {
	case r >= n:
		return 0
	case r == 1:
		return 2
	}
	return r
}

// tailFor returns the size of the padding record that goes after data
// ending at e so that a 6-byte write at the end lies within one page: 0,
// or an empty checkpoint whole enough (tailSize bytes) that readers
// which parse a checkpoint they meet among the records (jfr print) find
// all its fields before the end of the file; the end then lies 2 to 6
// bytes into the next page.
func tailFor(e int64) int64 {
	if padWithin(e, fillerHeaderSize) == 0 {
		return 0
	}
	return tailSize
}

// tailSize is the size of an empty checkpoint: size, type, start,
// duration, delta, type mask and pool count, a byte each.
const tailSize = 7

// appendPad appends an empty checkpoint record of n bytes (2 to 127), as
// after a streamed chunk's header: readers skip it, and jfr summary counts
// it as a checkpoint rather than as a record of an unknown type.
func appendPad(b []byte, n int64) []byte {
	b = append(b, byte(n), 1)
	return append(b, make([]byte, n-2)...)
}

// alignUp rounds n up to a multiple of the reservation page.
func alignUp(n int64) int64 {
	return (n + jfr.ReservePage - 1) / jfr.ReservePage * jfr.ReservePage
}

// layout lays out in s.vec the write of a segment at off: a padding
// record of pad bytes (if pad > 0), seg's bytes (its chunk header h, if
// given, in place of seg's first HeaderSize bytes), one of tail bytes (if
// tail > 0), and the header of a filler up to resEnd if room is left.
func (s *fileSink) layout(parts [][]byte, h []byte, off, pad, tail int64) [][]byte {
	v := s.vec[:0]
	// A padding record of up to 67 bytes, a tail, a filler header and
	// the switch fit in smallBuf: the pieces of v that point into it
	// stay valid.
	s.small = s.smallBuf[:0]
	if pad > 0 {
		v = s.appendSmall(v, appendPad(s.small, pad))
	}
	if h != nil {
		v = append(v, h)
	}
	v = appendFrom(v, parts, int64(len(h)))
	if tail > 0 {
		v = s.appendSmall(v, appendPad(s.small, tail))
	}
	if rest := s.resEnd - off - vecSize(v); rest > 0 {
		var fh [fillerHeaderSize]byte
		jfr.PutFillerHeader(fh[:], rest)
		v = s.appendSmall(v, append(s.small, fh[:]...))
	}
	s.vec = v
	return v
}

// appendSmall appends to v the bytes b added to s.small.
func (s *fileSink) appendSmall(v [][]byte, b []byte) [][]byte {
	v = append(v, b[len(s.small):])
	s.small = b
	return v
}

// appendFrom appends to v the pieces of parts from byte k on.
func appendFrom(v, parts [][]byte, k int64) [][]byte {
	for _, p := range parts {
		if k >= int64(len(p)) {
			k -= int64(len(p))
			continue
		}
		v = append(v, p[k:])
		k = 0
	}
	return v
}

// copyFrom copies to dst the bytes of v from byte k on, and returns how
// many it copied.
func copyFrom(dst []byte, v [][]byte, k int64) int {
	n := 0
	for _, p := range v {
		if n == len(dst) {
			break
		}
		if k >= int64(len(p)) {
			k -= int64(len(p))
			continue
		}
		n += copy(dst[n:], p[k:])
		k = 0
	}
	return n
}

// vecSize returns the bytes of v.
func vecSize(v [][]byte) int64 {
	var n int64
	for _, p := range v {
		n += int64(len(p))
	}
	return n
}

// fits tells whether n bytes fit at the end of the data, leaving either
// nothing or room for a filler.
func (s *fileSink) fits(n int64) bool {
	rest := s.resEnd - s.end
	return rest == n || (rest >= n+fillerHeaderSize && rest-n <= maxFiller)
}

// grow extends the reservation so that n bytes fit: it writes reservation
// pages after the file's end, extends the chunk over them, then its
// filler.
func (s *fileSink) grow(n int64) error {
	newEnd := alignUp(s.end + n + fillerHeaderSize + growth)
	if newEnd-s.end > maxFiller {
		return fmt.Errorf("internal error: a segment of %d bytes is larger than a filler can reserve", n)
	}
	if err := s.writePages(s.resEnd, newEnd); err != nil {
		return err
	}
	if err := s.writeHeader(newEnd - s.start); err != nil {
		return err
	}
	var fh [fillerHeaderSize]byte
	jfr.PutFillerHeader(fh[:], newEnd-s.end)
	if err := s.writeAt(fh[:], s.end); err != nil {
		return err
	}
	s.resEnd = newEnd
	return nil
}

// writePages writes reservation pages from off to end, both multiples of
// jfr.ReservePage, stamped with the current chunk's clock.
func (s *fileSink) writePages(off, end int64) error {
	if off >= end {
		return nil
	}
	// One page, built once per chunk (it carries the chunk's clock), is
	// every piece of the write.
	if c := s.clock(); c != s.pclock || len(s.page) == 0 {
		s.page = jfr.AppendReservation(s.page[:0], c, 1)
		s.pclock = c
	}
	v := s.vec[:0]
	for range (end - off) / jfr.ReservePage {
		v = append(v, s.page)
	}
	s.vec = v
	return s.writeVec(v, 0, off)
}

// clock returns the current chunk's clock, which the reservation's
// chunks take.
func (s *fileSink) clock() jfr.Clock {
	be := binary.BigEndian
	return jfr.Clock{
		StartNanos:     int64(be.Uint64(s.hdr[32:])),
		StartTicks:     int64(be.Uint64(s.hdr[48:])),
		TicksPerSecond: int64(be.Uint64(s.hdr[56:])),
	}
}

// setSize sets the size in chunk header h, and marks the chunk as the
// file's last or not.
func setSize(h []byte, size int64, last bool) {
	binary.BigEndian.PutUint64(h[8:], uint64(size))
	h[67] = jfr.FlagCompressedInts
	if last {
		h[67] |= jfr.FlagFinalChunk
	}
}

// writeHeader writes the current chunk's header, its size set to size and
// marked as the file's last chunk.
func (s *fileSink) writeHeader(size int64) error {
	setSize(s.hdr[:], size, true)
	return s.writeAt(s.hdr[:], s.start)
}

// write adds a segment to the file.
func (s *fileSink) write(seg segment) error {
	n := seg.size()
	switch {
	case !s.opened:
		// The file's first chunk: nothing to keep readable yet.
		if !seg.first {
			return errors.New("internal error: a chunk's first segment is missing")
		}
		tail := tailFor(n)
		e := n + tail
		s.resEnd = alignUp(e)
		if rest := s.resEnd - e; rest > 0 && rest < fillerHeaderSize {
			s.resEnd += jfr.ReservePage
		}
		if copyFrom(s.head[:], seg.parts, 0) < jfr.HeaderSize {
			return errors.New("internal error: a chunk's first segment is shorter than its header")
		}
		setSize(s.head[:], s.resEnd, true)
		v := s.layout(seg.parts, s.head[:], 0, 0, tail)
		for z := s.resEnd - vecSize(v); z > 0; z -= jfr.ReservePage {
			v = append(v, zeroPage[:min(z, jfr.ReservePage)]) // the filler's body: the file ends at resEnd
		}
		s.vec = v
		if err := s.writeVec(v, 0, 0); err != nil {
			return err
		}
		s.opened, s.start, s.end = true, 0, e
		s.shift, s.tail = tail, tail
		s.hdr = s.head
		return nil
	case n == 0:
		s.takeHeader(seg.header)
		return s.writeHeader(s.resEnd - s.start)
	}
	var pad int64
	if seg.first {
		pad = padFor(s.end)
	}
	tail := tailFor(s.end + pad + n)
	if !s.fits(pad + n + tail) {
		if err := s.grow(pad + n + tail); err != nil {
			return err
		}
	}
	at := s.end
	parts := seg.parts
	var h []byte
	if seg.first {
		h = s.head[:]
		if copyFrom(h, parts, 0) < jfr.HeaderSize {
			return errors.New("internal error: a chunk's first segment is shorter than its header")
		}
		if pad == 0 && (h[4] != 0 || h[5] != jfr.FillerType) {
			return errors.New("internal error: a chunk header does not match the filler")
		}
		setSize(h, s.resEnd-at-pad, true)
	} else if s.tail > 0 {
		// Rare (the data ended in a page's last 5 bytes): the segment is
		// gathered to be patched.
		s.patched = gather(s.patched[:0], parts, 0, n)
		if err := s.patchDelta(s.patched, seg.header, at-s.start-s.shift); err != nil {
			return err
		}
		parts = [][]byte{s.patched}
	}
	v := s.layout(parts, h, at, pad, tail)
	if err := s.writeVec(v, fillerHeaderSize, at+fillerHeaderSize); err != nil {
		return err
	}
	// The switch: the segment's first 6 bytes over the filler's header.
	sw := s.small[len(s.small) : len(s.small)+fillerHeaderSize]
	copyFrom(sw, v, 0)
	if err := s.writeAt(sw, at); err != nil {
		return err
	}
	s.end = at + pad + n + tail
	if seg.first {
		// The previous chunk ends where this one starts, and is no longer
		// the last.
		setSize(s.hdr[:], at+pad-s.start, false)
		if err := s.writeAt(s.hdr[:], s.start); err != nil {
			return err
		}
		s.start = at + pad
		s.shift, s.tail = tail, tail
		s.hdr = s.head
		return nil
	}
	s.takeHeader(seg.header)
	s.shift += tail
	s.tail = tail
	return s.writeHeader(s.resEnd - s.start)
}

// takeHeader takes h, the chunk's header as its writer made it, as the
// current chunk's, its checkpoint offset shifted past the sink's padding
// before it.
func (s *fileSink) takeHeader(h []byte) {
	copy(s.hdr[:], h)
	be := binary.BigEndian
	be.PutUint64(s.hdr[16:], be.Uint64(s.hdr[16:])+uint64(s.shift))
}

// patchDelta lengthens by s.tail the delta from the first checkpoint in
// seg, a segment of the chunk that follows s.tail bytes of padding, to
// the last checkpoint before the padding. rel is the offset of seg in the
// chunk as its writer made it; h is the chunk's header after seg, which
// points to seg's last checkpoint. A checkpoint after the first has a
// negative delta, a 9-byte varint, so the patched one takes as many
// bytes.
func (s *fileSink) patchDelta(seg, h []byte, rel int64) error {
	bad := func(what string) error {
		return fmt.Errorf("internal error: a segment at chunk offset %d: %s", rel, what)
	}
	off := int64(binary.BigEndian.Uint64(h[16:])) - rel
	for {
		if off < 0 || off >= int64(len(seg)) {
			return bad("its checkpoint is not in it")
		}
		b := seg[off:]
		var at [5]int // offsets of size, type, start, duration, delta
		var v [5]uint64
		k := 0
		for i := range at {
			x, m := leb128.Uvarint(b[k:])
			if m <= 0 {
				return bad("a checkpoint ends early")
			}
			at[i], v[i] = k, x
			k += m
		}
		if v[1] != 1 {
			return bad("no checkpoint where its header points")
		}
		delta := int64(v[4])
		if delta >= 0 || k-at[4] != leb128.Len(uint64(delta-s.tail)) {
			return bad("a checkpoint's delta is not a 9-byte varint")
		}
		if off+delta >= 0 {
			off += delta // one before it in the segment
			continue
		}
		var d [leb128.MaxLen]byte
		copy(b[at[4]:k], leb128.AppendUvarint(d[:0], uint64(delta-s.tail)))
		return nil
	}
}

// close shrinks the last chunk to its data and closes the file. The
// reservation past the data becomes a chunk (jfr.AppendReserved) and
// pages, switched in by a 6-byte write as a new chunk is; then the
// header shrinks the last chunk to its data, and the file is truncated
// there.
func (s *fileSink) close() error {
	var err error
	if s.opened && s.resEnd > s.end {
		err = s.dropReservation()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *fileSink) dropReservation() error {
	cut := alignUp(s.end + jfr.ReservedMinSize)
	if cut > s.resEnd {
		// The data ends less than a small chunk before the file: make
		// room for one.
		if err := s.grow(jfr.ReservedMinSize); err != nil {
			return err
		}
		cut = alignUp(s.end + jfr.ReservedMinSize)
	}
	if err := s.writePages(cut, s.resEnd); err != nil {
		return err
	}
	b := jfr.AppendReserved(s.buf[:0], s.clock(), int(cut-s.end))
	s.buf = b
	if b[4] != 0 || b[5] != jfr.FillerType {
		return errors.New("internal error: a chunk header does not match the filler")
	}
	if err := s.writeAt(b[fillerHeaderSize:], s.end+fillerHeaderSize); err != nil {
		return err
	}
	if err := s.writeAt(b[:fillerHeaderSize], s.end); err != nil {
		return err
	}
	if err := s.writeHeader(s.end - s.start); err != nil {
		return err
	}
	return s.truncate(s.end)
}

// Pinned file writes (steps.go): the chunk writer keeps its P through a
// flush, so that goroutines that never block do not queue it behind them.
// A write through the scheduler would let it retake the P once the write
// lasts a sysmon tick (20 us or more), and the writer would come back
// from it in the global run queue. Pinned, writes are raw pwritev calls
// of at most rawWriteMax bytes, a step each (to tmpfs, 1 MiB of new pages
// takes about 0.6 ms, the step budget; over pages written before, half
// that). A raw write holds the P and delays a stop-the-world (GC) until
// it returns: a file on a device slow enough that rawSlowWrites writes in
// a row take over rawWriteSlow each (writeback throttling, a network file
// system) is written through the scheduler from then on. One slow write
// proves little on a loaded machine, where the thread itself waits for a
// CPU.
//
// Writes through the scheduler are cut into the same pieces, so that the
// states a kill may leave between them are those the tests check (a file
// whose writes are logged is written that way).
const (
	rawWriteMax   = 1 << 20
	rawWriteSlow  = 20 * time.Millisecond
	rawSlowWrites = 3
)

// rawFile returns the file to write with raw syscalls, or nil.
func (s *fileSink) rawFile() *os.File {
	f, isFile := s.f.(*os.File)
	if st := s.steps; st == nil || !st.pinned || !isFile || !rawWriteLinked || s.slowRaw {
		return nil
	}
	return f
}

// truncate sets the file's size.
func (s *fileSink) truncate(size int64) error {
	batch.BeginWrite()
	defer batch.EndWrite()
	f := s.rawFile()
	if f == nil {
		return s.unpinned(func() error { return s.f.Truncate(size) })
	}
	t := time.Now()
	err := rawFtruncate(f, size)
	s.timed(t)
	return err
}

// writeAt writes b at off.
func (s *fileSink) writeAt(b []byte, off int64) error {
	s.one[0] = b
	err := s.writeVec(s.one[:], 0, off)
	s.one[0] = nil
	return err
}

// writeVec writes the bytes of v from byte skip on at off, in pieces of
// at most rawWriteMax bytes.
func (s *fileSink) writeVec(v [][]byte, skip, off int64) error {
	for left := vecSize(v) - skip; left > 0; {
		n, err := s.writePiece(v, skip, min(left, rawWriteMax), off)
		if err != nil {
			return err
		}
		if n == 0 {
			return &os.PathError{Op: "write", Path: s.name(), Err: io.ErrShortWrite}
		}
		skip, off, left = skip+n, off+n, left-n
		s.steps.point()
	}
	return nil
}

// writePiece writes n bytes of v from byte k on at off, raw when pinned,
// and returns how many it wrote.
func (s *fileSink) writePiece(v [][]byte, k, n, off int64) (int64, error) {
	batch.BeginWrite()
	defer batch.EndWrite()
	if f := s.rawFile(); f != nil {
		t := time.Now()
		w, err := rawPwritev(f, &s.iov, v, k, n, off)
		if err == nil {
			s.timed(t)
		}
		return w, err
	}
	// A piece within one part is written from there; else gathered.
	b := within(v, k, n)
	if b == nil {
		s.buf = gather(s.buf[:0], v, k, n)
		b = s.buf
	}
	err := s.unpinned(func() error {
		_, err := s.f.WriteAt(b, off)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// within returns the n bytes of v from byte k on if one piece of v holds
// them all, else nil.
func within(v [][]byte, k, n int64) []byte {
	for _, p := range v {
		if k < int64(len(p)) {
			if k+n <= int64(len(p)) {
				return p[k : k+n]
			}
			return nil
		}
		k -= int64(len(p))
	}
	return nil
}

// gather appends to dst the n bytes of v from byte k on.
func gather(dst []byte, v [][]byte, k, n int64) []byte {
	for _, p := range v {
		if n == 0 {
			break
		}
		if k >= int64(len(p)) {
			k -= int64(len(p))
			continue
		}
		m := min(n, int64(len(p))-k)
		dst = append(dst, p[k:k+m]...)
		n -= m
		k = 0
	}
	return dst
}

// name returns the file's name, for errors.
func (s *fileSink) name() string {
	if f, ok := s.f.(*os.File); ok {
		return f.Name()
	}
	return "recording"
}

// timed notes how long a raw write begun at t took.
func (s *fileSink) timed(t time.Time) {
	phaseSince(phaseRawWrite, t)
	if time.Since(t) <= rawWriteSlow {
		s.slowRun = 0
		return
	}
	s.slowRun++
	s.slowRaw = s.slowRun >= rawSlowWrites
}

// unpinned runs f, which may block, unpinned when the writer is pinned.
func (s *fileSink) unpinned(f func() error) error {
	var err error
	s.steps.unpinned(func() { err = f() })
	return err
}
