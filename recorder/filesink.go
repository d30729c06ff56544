package recorder

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"time"

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
//   - Only growing the reservation has a moment when the file is not
//     readable, between extending the file and rewriting the header: it
//     grows by at least 64 MiB at a time (a sparse hole until written),
//     so that the moment comes once per several default-sized chunks.
//
// Headers and filler headers are written in one write each; Linux cuts a
// write short on SIGKILL only between pages, so one straddling a page
// boundary could in principle tear.
//
// At Close the last chunk is shrunk to its data and the file truncated.
type fileSink struct {
	f      sinkFile
	start  int64 // offset of the chunk being written (or last written)
	end    int64 // end of its data
	resEnd int64 // end of its reservation, and of the file
	opened bool  // a chunk has been written
	hdr    [jfr.HeaderSize]byte
	buf    []byte
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
	fillerHeaderSize = 6
	maxFiller        = 1<<28 - 1 // its size is a 4-byte varint and a zero byte
	minGrowth        = 64 << 20
)

// createFile opens a recording's file; tests replace it to inject faults.
var createFile = func(path string) (sinkFile, error) { return os.Create(path) }

func createFileSink(path string) (*fileSink, error) {
	f, err := createFile(path)
	if err != nil {
		return nil, err
	}
	return &fileSink{f: f}, nil
}

// putFiller writes the header of a filler record of n bytes (n >=
// fillerHeaderSize): its size as a 5-byte varint whose last byte is 0,
// then the type, so that bytes 4 and 5 are 0, 2: a chunk header's major
// version.
func putFiller(b []byte, n int64) {
	b[0] = byte(n) | 0x80
	b[1] = byte(n>>7) | 0x80
	b[2] = byte(n>>14) | 0x80
	b[3] = byte(n>>21) | 0x80
	b[4] = 0
	b[5] = jfr.FillerType
}

// layoutSegment gathers seg's bytes into s.buf, followed by the header of
// a filler up to resEnd if room is left, for a segment written at off.
func (s *fileSink) layoutSegment(seg segment, off int64) []byte {
	// Pinned, in steps, as the flusher's other work (steps.go): the
	// chunk writer's steps, which stay pinned, or its own.
	st := s.steps
	if st == nil {
		st = newSteps()
	}
	if !st.pinned {
		defer st.end()
	}
	st.begin()
	b := s.buf[:0]
	for _, p := range seg.parts {
		b = append(b, p...)
		st.point()
	}
	if rest := s.resEnd - off - int64(len(b)); rest > 0 {
		var fh [fillerHeaderSize]byte
		putFiller(fh[:], rest)
		b = append(b, fh[:]...)
	}
	s.buf = b
	return b
}

// fits tells whether n bytes fit at the end of the data, leaving either
// nothing or room for a filler.
func (s *fileSink) fits(n int64) bool {
	rest := s.resEnd - s.end
	return rest == n || (rest >= n+fillerHeaderSize && rest-n <= maxFiller)
}

// grow extends the reservation so that n bytes fit.
func (s *fileSink) grow(n int64) error {
	newEnd := s.end + n + fillerHeaderSize + max(minGrowth, n)
	if err := s.truncate(newEnd); err != nil {
		return err
	}
	var fh [fillerHeaderSize]byte
	putFiller(fh[:], newEnd-s.end)
	if err := s.writeAt(fh[:], s.end); err != nil {
		return err
	}
	s.resEnd = newEnd
	return s.writeHeader(s.resEnd - s.start)
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
		s.resEnd = n + fillerHeaderSize + minGrowth
		b := s.layoutSegment(seg, 0)
		copy(s.hdr[:], seg.header)
		setSize(b, s.resEnd, true)
		if err := s.writeAt(b, 0); err != nil {
			return err
		}
		if err := s.truncate(s.resEnd); err != nil {
			return err
		}
		s.opened, s.start, s.end = true, 0, n
		return nil
	case n == 0:
		copy(s.hdr[:], seg.header)
		return s.writeHeader(s.resEnd - s.start)
	}
	if !s.fits(n) {
		if err := s.grow(n); err != nil {
			return err
		}
	}
	at := s.end
	b := s.layoutSegment(seg, at)
	if seg.first {
		if b[4] != 0 || b[5] != jfr.FillerType {
			return errors.New("internal error: a chunk header does not match the filler")
		}
		setSize(b, s.resEnd-at, true)
	}
	if err := s.writeAt(b[fillerHeaderSize:], at+fillerHeaderSize); err != nil {
		return err
	}
	if err := s.writeAt(b[:fillerHeaderSize], at); err != nil {
		return err
	}
	s.end = at + n
	if seg.first {
		// The previous chunk ends where this one starts, and is no longer
		// the last.
		setSize(s.hdr[:], at-s.start, false)
		if err := s.writeAt(s.hdr[:], s.start); err != nil {
			return err
		}
		s.start = at
		copy(s.hdr[:], b[:jfr.HeaderSize])
		return nil
	}
	copy(s.hdr[:], seg.header)
	return s.writeHeader(s.resEnd - s.start)
}

// close shrinks the last chunk to its data, drops the reservation and
// closes the file.
func (s *fileSink) close() error {
	var err error
	if s.opened && s.resEnd > s.end {
		if err = s.writeHeader(s.end - s.start); err == nil {
			err = s.f.Truncate(s.end)
		}
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Pinned file writes (steps.go): the chunk writer keeps its P through a
// flush, so that goroutines that never block do not queue it behind them.
// A write through the scheduler would let it retake the P once the write
// lasts a sysmon tick (20 us or more), and the writer would come back
// from it in the global run queue. Pinned, writes are raw pwrite calls of
// at most rawWriteMax bytes, a step each (to tmpfs or the page cache,
// 256 KiB take about 0.1 ms). A raw write holds the P and delays a
// stop-the-world (GC) until it returns: a file on a device slow enough
// that rawSlowWrites writes in a row take over rawWriteSlow each
// (writeback throttling, a network file system) is written through the
// scheduler from then on. One slow write proves little on a loaded
// machine, where the thread itself waits for a CPU.
const (
	rawWriteMax   = 256 << 10
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
	f := s.rawFile()
	if f == nil {
		return s.unpinned(func() error {
			_, err := s.f.WriteAt(b, off)
			return err
		})
	}
	for len(b) > 0 {
		t := time.Now()
		n, err := rawPwrite(f, b[:min(len(b), rawWriteMax)], off)
		if err != nil {
			return err
		}
		if n == 0 {
			return &os.PathError{Op: "write", Path: f.Name(), Err: io.ErrShortWrite}
		}
		s.timed(t)
		b, off = b[n:], off+int64(n)
		s.steps.point()
	}
	return nil
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
