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
// source ended with.
type replaySource struct {
	r        *bufio.Reader
	endErr   error
	lastWall int64
	nano     int64
	wall     int64
	buf      []byte
	offs     []int // pairs of offsets into buf: in, outs, then msg and text per event
}

func newReplaySource(l *spanLog, endErr error) (*replaySource, error) {
	if _, err := l.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("flow: temporary span log: %w", err)
	}
	if endErr == nil {
		endErr = io.EOF
	}
	return &replaySource{r: bufio.NewReaderSize(l.f, 1<<16), endErr: endErr}, nil
}

var errBadSpanLog = errors.New("flow: temporary span log is corrupt")

// maxSpanLogBytes bounds a length read back from a span log, so that a
// file damaged on disk cannot make the replay allocate without limit; a
// JFR string is far shorter.
const maxSpanLogBytes = 1 << 30

func (s *replaySource) uvarint() (uint64, error) {
	v, err := binary.ReadUvarint(s.r)
	if err != nil {
		return 0, errBadSpanLog
	}
	return v, nil
}

func (s *replaySource) varint() (int64, error) {
	v, err := binary.ReadVarint(s.r)
	if err != nil {
		return 0, errBadSpanLog
	}
	return v, nil
}

// bytes reads a length-prefixed byte string into s.buf and records where
// it is (start -1 for nil).
func (s *replaySource) bytes() error {
	n, err := s.uvarint()
	if err != nil {
		return err
	}
	if n == 0 {
		s.offs = append(s.offs, -1, -1)
		return nil
	}
	n--
	start := len(s.buf)
	if n > maxSpanLogBytes {
		return errBadSpanLog
	}
	s.buf = append(s.buf, make([]byte, n)...)
	if _, err := io.ReadFull(s.r, s.buf[start:]); err != nil {
		return errBadSpanLog
	}
	s.offs = append(s.offs, start, len(s.buf))
	return nil
}

func (s *replaySource) slice(i int) []byte {
	if s.offs[i] < 0 {
		return nil
	}
	return s.buf[s.offs[i]:s.offs[i+1]:s.offs[i+1]]
}

func (s *replaySource) next(sp *rawSpan) error {
	flags, err := s.r.ReadByte()
	if err == io.EOF {
		return s.endErr
	}
	if err != nil {
		return fmt.Errorf("flow: temporary span log: %w", err)
	}
	if err := s.read(sp, flags); err != nil {
		return err
	}
	return nil
}

func (s *replaySource) read(sp *rawSpan, flags byte) error {
	sp.nonCausal, sp.truncated, sp.unfinished = flags&1 != 0, flags&2 != 0, flags&4 != 0
	ord, err := s.uvarint()
	if err != nil {
		return err
	}
	seq, err := s.uvarint()
	if err != nil {
		return err
	}
	dw, err := s.varint()
	if err != nil {
		return err
	}
	sp.ordinal, sp.seq = uint32(ord), uint32(seq)
	s.lastWall += dw
	sp.lastWall = s.lastWall
	s.buf, s.offs = s.buf[:0], s.offs[:0]
	if err := s.bytes(); err != nil {
		return err
	}
	nout, err := s.uvarint()
	if err != nil {
		return err
	}
	if nout > 1<<20 {
		return errBadSpanLog
	}
	for range nout {
		if err := s.bytes(); err != nil {
			return err
		}
	}
	nev, err := s.uvarint()
	if err != nil {
		return err
	}
	if nev > 1<<28 {
		return errBadSpanLog
	}
	sp.events = sp.events[:0]
	for range nev {
		k, err := s.r.ReadByte()
		if err != nil {
			return errBadSpanLog
		}
		th, err := s.uvarint()
		if err != nil {
			return err
		}
		dn, err := s.varint()
		if err != nil {
			return err
		}
		dw, err := s.varint()
		if err != nil {
			return err
		}
		s.nano += dn
		s.wall += dw
		sp.events = append(sp.events, rawEvent{nano: s.nano, wall: s.wall, thread: uint32(th), kind: flowspec.Kind(k)})
		if err := s.bytes(); err != nil {
			return err
		}
		if err := s.bytes(); err != nil {
			return err
		}
	}
	// The slices point into s.buf only now that it has stopped growing.
	sp.in = s.slice(0)
	sp.out = sp.out[:0]
	for i := range int(nout) {
		sp.out = append(sp.out, s.slice(2+2*i))
	}
	base := 2 + 2*int(nout)
	for i := range sp.events {
		sp.events[i].msg = s.slice(base + 4*i)
		sp.events[i].text = s.slice(base + 4*i + 2)
	}
	return nil
}

// The replay stands in for the input in pass 2, which asks only for spans.
func (s *replaySource) node() string      { return "" }
func (s *replaySource) threads() []string { return nil }
func (s *replaySource) warnings() int     { return 0 }
func (s *replaySource) damaged() []error  { return nil }
func (s *replaySource) number() int64     { return -1 }
func (s *replaySource) fatal() error      { return nil }
func (s *replaySource) corrected() bool   { return false }
func (s *replaySource) Close() error      { return nil }
