package flow

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// Merge's first pass decodes every input once. The spans it reads are
// written, as they are delivered, to a temporary file per input in a
// compact binary form (a span log), and the second pass reads them back
// from it: replaying a span costs a few varints per event instead of
// decoding the recording's chunks, their constant pools and the span
// assembly again, and pass 2 holds no recording reader's spans.
//
// A span in the log:
//
//	flags      byte: 1 non-causal, 2 truncated, 4 unfinished
//	ordinal    uvarint
//	seq        uvarint
//	lastWall   varint, delta from the previous span's
//	in         bytes (uvarint length+1, 0 for nil, then the bytes)
//	outs       uvarint count, then bytes each
//	events     uvarint count, then per event:
//	  kind     byte
//	  thread   uvarint
//	  nano     varint, delta from the previous event's (of any span)
//	  wall     varint, delta from the previous event's
//	  msg      bytes
//	  text     bytes
//
// The file is unlinked as soon as it is created where the system allows
// it (it lives while open and disappears with the process, even killed),
// else when it is closed.

// spanLog records the spans of one input for the second pass.
type spanLog struct {
	f        *os.File
	w        *bufio.Writer
	buf      []byte
	lastWall int64
	nano     int64
	wall     int64
	err      error // the first write error
	unlinked bool
}

func newSpanLog(dir string) (*spanLog, error) {
	f, err := os.CreateTemp(dir, "flightrec-flow-*.spans")
	if err != nil {
		return nil, fmt.Errorf("flow: temporary span log: %w", err)
	}
	l := &spanLog{f: f, w: bufio.NewWriterSize(f, 1<<16)}
	if runtime.GOOS != "windows" {
		l.unlinked = os.Remove(f.Name()) == nil
	}
	return l, nil
}

func appendLogBytes(b, p []byte) []byte {
	if p == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(p))+1)
	return append(b, p...)
}

// add appends a span to the log.
func (l *spanLog) add(sp *rawSpan) {
	if l.err != nil {
		return
	}
	var flags byte
	if sp.nonCausal {
		flags |= 1
	}
	if sp.truncated {
		flags |= 2
	}
	if sp.unfinished {
		flags |= 4
	}
	b := append(l.buf[:0], flags)
	b = binary.AppendUvarint(b, uint64(sp.ordinal))
	b = binary.AppendUvarint(b, uint64(sp.seq))
	b = binary.AppendVarint(b, sp.lastWall-l.lastWall)
	l.lastWall = sp.lastWall
	b = appendLogBytes(b, sp.in)
	b = binary.AppendUvarint(b, uint64(len(sp.out)))
	for _, o := range sp.out {
		b = appendLogBytes(b, o)
	}
	b = binary.AppendUvarint(b, uint64(len(sp.events)))
	for i := range sp.events {
		e := &sp.events[i]
		b = append(b, byte(e.kind))
		b = binary.AppendUvarint(b, uint64(e.thread))
		b = binary.AppendVarint(b, e.nano-l.nano)
		b = binary.AppendVarint(b, e.wall-l.wall)
		l.nano, l.wall = e.nano, e.wall
		b = appendLogBytes(b, e.msg)
		b = appendLogBytes(b, e.text)
	}
	l.buf = b
	if _, err := l.w.Write(b); err != nil {
		l.err = fmt.Errorf("flow: temporary span log: %w", err)
	}
}

// finish flushes the log; it is then ready to be replayed.
func (l *spanLog) finish() error {
	if l.err == nil {
		if err := l.w.Flush(); err != nil {
			l.err = fmt.Errorf("flow: temporary span log: %w", err)
		}
	}
	return l.err
}

// remove closes and deletes the file.
func (l *spanLog) remove() {
	l.f.Close()
	if !l.unlinked {
		os.Remove(l.f.Name())
	}
}

// loggingSource is a source whose spans are also written to a span log.
// When the source ends, its final error is kept for the replay.
type loggingSource struct {
	source
	log    *spanLog
	endErr error
}

func (s *loggingSource) next(sp *rawSpan) error {
	err := s.source.next(sp)
	if err != nil {
		s.endErr = err
		return err
	}
	s.log.add(sp)
	return nil
}

// replaySource reads a span log back. It ends with the error the logged
// source ended with. It reads the file in blocks and decodes each span in
// place (its slices point into the block): a span log is read back at
// memory speed, not a buffered reader's call per byte.
type replaySource struct {
	f        io.Reader
	blk      []byte // blk[pos:] is read and not yet decoded
	pos      int
	eof      bool // f has no more bytes
	endErr   error
	lastWall int64
	nano     int64
	wall     int64
	offs     []int // pairs of offsets into blk: in, outs, then msg and text per event
}

// replayBlock is how much of a span log is read at once; a longer span
// grows the block.
const replayBlock = 1 << 18

func newReplaySource(l *spanLog, endErr error) (*replaySource, error) {
	if _, err := l.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("flow: temporary span log: %w", err)
	}
	if endErr == nil {
		endErr = io.EOF
	}
	return &replaySource{f: l.f, endErr: endErr, blk: make([]byte, 0, replayBlock)}, nil
}

var errBadSpanLog = errors.New("flow: temporary span log is corrupt")

// maxSpanLogBytes bounds a length read back from a span log, so that a
// file damaged on disk cannot make the replay allocate without limit; a
// JFR string is far shorter.
const maxSpanLogBytes = 1 << 30

// errNeedMore: the span being decoded goes on past the bytes read.
var errNeedMore = errors.New("span goes on past the block")

// fill reads more of the file after the undecoded bytes, keeping them;
// the block grows when they fill it (a span longer than a block).
func (s *replaySource) fill() error {
	n := copy(s.blk[:cap(s.blk)], s.blk[s.pos:])
	s.blk, s.pos = s.blk[:n], 0
	if n == cap(s.blk) {
		s.blk = append(s.blk, make([]byte, cap(s.blk))...)[:n]
	}
	k, err := io.ReadAtLeast(s.f, s.blk[n:cap(s.blk)], 1)
	s.blk = s.blk[:n+k]
	if errors.Is(err, io.EOF) {
		s.eof = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("flow: temporary span log: %w", err)
	}
	return nil
}

func (s *replaySource) next(sp *rawSpan) error {
	for {
		if s.pos == len(s.blk) && s.eof {
			return s.endErr
		}
		if s.pos < len(s.blk) {
			n, err := s.read(sp, s.blk[s.pos:])
			if err == nil {
				s.pos += n
				return nil
			}
			if err != errNeedMore {
				return err
			}
			if s.eof {
				return errBadSpanLog // the file ends within a span
			}
		}
		if err := s.fill(); err != nil {
			return err
		}
	}
}

// spanDec decodes one span of a span log from a block.
type spanDec struct {
	b   []byte
	pos int
	err error
}

func (d *spanDec) uvarint() uint64 {
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		if n < 0 {
			d.fail(errBadSpanLog)
		} else {
			d.fail(errNeedMore)
		}
		return 0
	}
	d.pos += n
	return v
}

func (d *spanDec) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *spanDec) byte1() byte {
	if d.pos >= len(d.b) {
		d.fail(errNeedMore)
		return 0
	}
	c := d.b[d.pos]
	d.pos++
	return c
}

func (d *spanDec) fail(err error) {
	if d.err == nil {
		d.err = err
		d.pos = len(d.b)
	}
}

// bytes reads a length-prefixed byte string and records where it is
// (start -1 for nil).
func (s *replaySource) bytes(d *spanDec) {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		s.offs = append(s.offs, -1, -1)
		return
	}
	n--
	if n > maxSpanLogBytes {
		d.fail(errBadSpanLog)
		return
	}
	if n > uint64(len(d.b)-d.pos) {
		d.fail(errNeedMore)
		return
	}
	s.offs = append(s.offs, d.pos, d.pos+int(n))
	d.pos += int(n)
}

func slice(b []byte, offs []int, i int) []byte {
	if offs[i] < 0 {
		return nil
	}
	return b[offs[i]:offs[i+1]:offs[i+1]]
}

// read decodes the span that b starts with and returns its length, or
// errNeedMore if b ends within it. The running times change only once the
// span is whole.
func (s *replaySource) read(sp *rawSpan, b []byte) (int, error) {
	d := spanDec{b: b}
	flags := d.byte1()
	sp.nonCausal, sp.truncated, sp.unfinished = flags&1 != 0, flags&2 != 0, flags&4 != 0
	ord := d.uvarint()
	seq := d.uvarint()
	dw := d.varint()
	sp.ordinal, sp.seq = uint32(ord), uint32(seq)
	s.offs = s.offs[:0]
	s.bytes(&d)
	nout := d.uvarint()
	if nout > 1<<20 {
		d.fail(errBadSpanLog)
	}
	for range nout {
		if s.bytes(&d); d.err != nil {
			break
		}
	}
	nev := d.uvarint()
	if nev > 1<<28 {
		d.fail(errBadSpanLog)
	}
	if d.err != nil {
		return 0, d.err
	}
	sp.events = sp.events[:0]
	nano, wall := s.nano, s.wall
	for range nev {
		k := d.byte1()
		th := d.uvarint()
		nano += d.varint()
		wall += d.varint()
		s.bytes(&d)
		s.bytes(&d)
		if d.err != nil {
			return 0, d.err
		}
		sp.events = append(sp.events, rawEvent{nano: nano, wall: wall, thread: uint32(th), kind: flowspec.Kind(k)})
	}
	s.nano, s.wall = nano, wall
	s.lastWall += dw
	sp.lastWall = s.lastWall
	sp.in = slice(b, s.offs, 0)
	sp.out = sp.out[:0]
	for i := range int(nout) {
		sp.out = append(sp.out, slice(b, s.offs, 2+2*i))
	}
	base := 2 + 2*int(nout)
	for i := range sp.events {
		sp.events[i].msg = slice(b, s.offs, base+4*i)
		sp.events[i].text = slice(b, s.offs, base+4*i+2)
	}
	return d.pos, nil
}

// The replay stands in for the input in pass 2, which asks only for spans.
func (s *replaySource) node() string         { return "" }
func (s *replaySource) threads() []string    { return nil }
func (s *replaySource) warnings() int        { return 0 }
func (s *replaySource) damaged() []error     { return nil }
func (s *replaySource) number() int64        { return -1 }
func (s *replaySource) fatal() error         { return nil }
func (s *replaySource) memoryWarning() error { return nil }
func (s *replaySource) corrected() bool      { return false }
func (s *replaySource) Close() error         { return nil }
