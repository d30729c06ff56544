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
	"github.com/flightrec/flightrec/internal/leb128"
)

// Merge's first pass decodes every input once. Each input's read-ahead
// goroutine writes each span the merge took, with the message keys the
// merge found for it (noteKeys), to a temporary file per input in a compact binary form (a span log), and
// the second pass reads them back from it straight into the spans it
// merges (mergeSpan): replaying a span costs a few varints per event
// instead of decoding the recording's chunks, their constant pools and
// the span assembly again, and finding no message ID in the ID table
// (pass 1 found them all); pass 2 holds no recording reader's spans.
//
// A span in the log:
//
//	flags      byte: 1 non-causal, 2 truncated, 4 unfinished, 8 ordinal 0
//	ordinal    varint, delta from the previous span's nonzero one; absent
//	           if 0
//	lastWall   varint, delta from the previous span's
//	keys       uvarint count, then per key a varint, delta from the
//	           previous key of the log (spanKeys: the distinct keys of its
//	           incoming and outgoing IDs, of only the outgoing ones for a
//	           non-causal span)
//	nevents    uvarint: the events the span had
//	kept       uvarint, for a non-causal span only: the events pass 2
//	           keeps (keptEvent), each led by the uvarint gap to its
//	           position in the span (0 for the next); a causal span keeps
//	           them all
//	per event:
//	  kind     byte
//	  thread   uvarint
//	  nano     varint, delta from the previous event's (of any span)
//	  wall     varint: wall - nano, delta from the previous event's (a
//	           recording's two clocks are one tick counter: mostly 0)
//	  msg      uvarint: 0 for none; j+1 for the span's j'th key; else
//	           the key + 1 + the number of the span's keys (an ID only
//	           events name)
//	  text     uvarint length, then the bytes
//
// The log is written and read back through the page cache, so its size
// costs CPU twice. Most events name the span's incoming or outgoing
// message: they refer to its key. A key is some three bytes where a
// compact ID was nine, and the deltas of numbers that mostly grow by one,
// and of wall - nano, are mostly one byte.
//
// The file is unlinked as soon as it is created where the system allows
// it (it lives while open and disappears with the process, even killed),
// else when it is closed.

// spanLog records the spans of one input for the second pass.
type spanLog struct {
	input    string // the input's name, for the replay's errors
	f        *os.File
	w        *bufio.Writer
	buf      []byte
	lastWall int64
	nano     int64
	skew     int64  // wall - nano of the last event
	ordinal  uint32 // the last nonzero
	key      uint32 // the last of a span's keys
	err      error  // the first write error
	unlinked bool
}

func newSpanLog(dir string) (*spanLog, error) {
	f, err := os.CreateTemp(dir, "flightrec-flow-*.spans")
	if err != nil {
		return nil, fmt.Errorf("temporary span log: %w", err)
	}
	l := &spanLog{f: f, w: bufio.NewWriterSize(f, 1<<16)}
	if runtime.GOOS != "windows" {
		l.unlinked = os.Remove(f.Name()) == nil
	}
	return l, nil
}

// keptEvent tells whether pass 2 keeps an event of sp: a causal span's
// events, a non-causal span's retransmissions (its sends of a message).
func keptEvent(sp *rawSpan, e *rawEvent) bool {
	return !sp.nonCausal || e.kind == flowspec.NonCausalSend && e.msg != nil
}

// eventMsgs appends the message key of each of sp's events as pass 2
// gives it (Event.Msg), -1 for none and for the events it does not keep.
// A causal span's receipt names no
// message: it gets the incoming one if the span handled it (the
// reference tool shows the bytes read as the message handled, not one
// it discarded).
func eventMsgs(sp *rawSpan, dst []int32, key func(id []byte) uint32) []int32 {
	inKey := int32(-1)
	if sp.in != nil && !sp.nonCausal {
		for j := range sp.events {
			if e := &sp.events[j]; e.kind == flowspec.HandleStart && string(e.msg) == string(sp.in) {
				inKey = int32(key(sp.in))
				break
			}
		}
	}
	for j := range sp.events {
		e := &sp.events[j]
		k := int32(-1)
		switch {
		case !keptEvent(sp, e):
		case e.msg != nil:
			k = int32(key(e.msg))
		case e.kind == flowspec.Received:
			k = inKey
		}
		dst = append(dst, k)
	}
	return dst
}

// add appends a span to the log, with its keys (spanKeys) and its
// events' (eventMsgs).
func (l *spanLog) add(sp *rawSpan, keys []uint32, msgs []int32) {
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
	if sp.ordinal == 0 {
		flags |= 8
	}
	b := append(l.buf[:0], flags)
	if sp.ordinal != 0 {
		b = binary.AppendVarint(b, int64(sp.ordinal)-int64(l.ordinal))
		l.ordinal = sp.ordinal
	}
	b = binary.AppendVarint(b, sp.lastWall-l.lastWall)
	l.lastWall = sp.lastWall
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = binary.AppendVarint(b, int64(k)-int64(l.key))
		l.key = k
	}
	b = binary.AppendUvarint(b, uint64(len(sp.events)))
	if sp.nonCausal {
		kept := 0
		for j := range sp.events {
			if keptEvent(sp, &sp.events[j]) {
				kept++
			}
		}
		b = binary.AppendUvarint(b, uint64(kept))
	}
	next := 0 // a non-causal span's next position
	for j := range sp.events {
		e := &sp.events[j]
		if sp.nonCausal {
			if !keptEvent(sp, e) {
				continue
			}
			b = binary.AppendUvarint(b, uint64(j-next))
			next = j + 1
		}
		b = append(b, byte(e.kind))
		b = binary.AppendUvarint(b, uint64(e.thread))
		b = binary.AppendVarint(b, e.nano-l.nano)
		b = binary.AppendVarint(b, (e.wall-e.nano)-l.skew)
		l.nano, l.skew = e.nano, e.wall-e.nano
		b = binary.AppendUvarint(b, logMsg(keys, msgs[j]))
		b = binary.AppendUvarint(b, uint64(len(e.text)))
		b = append(b, e.text...)
	}
	l.buf = b
	if _, err := l.w.Write(b); err != nil {
		l.err = fmt.Errorf("temporary span log: %w", err)
	}
}

// logMsg encodes an event's message key k (-1 for none) given the
// span's keys.
func logMsg(keys []uint32, k int32) uint64 {
	if k < 0 {
		return 0
	}
	for j, sk := range keys {
		if sk == uint32(k) {
			return uint64(j) + 1
		}
	}
	return uint64(k) + 1 + uint64(len(keys))
}

// finish flushes the log; it is then ready to be replayed.
func (l *spanLog) finish() error {
	if l.err == nil {
		if err := l.w.Flush(); err != nil {
			l.err = fmt.Errorf("temporary span log: %w", err)
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

// loggingSource is a source whose spans pass 1's read-ahead writes to a
// span log, with the keys the merge noted. When the source ends, its
// final error is kept for the replay.
type loggingSource struct {
	source
	log    *spanLog
	endErr error
	sp     rawSpan // nextInto's span from a source that is no batchSource
}

func (s *loggingSource) next(sp *rawSpan) error {
	err := s.source.next(sp)
	if err != nil {
		s.endErr = err
	}
	return err
}

// nextInto appends the next span to b; a recording's reader appends it to
// b itself (batchSource), any other source is copied.
func (s *loggingSource) nextInto(b *spanBatch) error {
	var err error
	if bs, ok := s.source.(batchSource); ok {
		err = bs.nextInto(b)
	} else if err = s.source.next(&s.sp); err == nil {
		b.add(&s.sp)
	}
	if err != nil {
		s.endErr = err
	}
	return err
}

// replaySource reads a span log back into pass 2's merge spans
// (nextInto appends them to a batch's merged). It ends with the error the
// logged source ended with. It reads the file in blocks and decodes each
// span from the block: a span log is read back at memory speed, not a
// buffered reader's call per byte.
type replaySource struct {
	input  string // the input's name
	f      io.Reader
	blk    []byte // blk[pos:] is read and not yet decoded
	pos    int
	base   int64 // the file offset of blk[0]
	eof    bool  // f has no more bytes
	endErr error
	// The running values, as the log's writer had them after the last
	// span decoded.
	lastWall int64
	nano     int64
	skew     int64  // wall - nano of the last event
	ordinal  uint32 // the last nonzero
	key      uint32
	span     uint32 // spans replayed: the next one's number is span+1
	// What the spans' events are converted with: the merge's clock
	// model, the input's node.
	m       *Merger
	node    uint16
	clockAt int // the clock model's estimate used last (correctFrom)
	texts   map[string]string
}

// replayBlock is how much of a span log is read at once; a longer span
// grows the block.
const replayBlock = 1 << 18

// newReplaySource replays l for the merge of m, the input being node
// number node.
func newReplaySource(l *spanLog, endErr error, m *Merger, node uint16) (*replaySource, error) {
	if _, err := l.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("%s: temporary span log: %w", l.input, err)
	}
	if endErr == nil {
		endErr = io.EOF
	}
	return &replaySource{input: l.input, f: l.f, endErr: endErr, blk: make([]byte, 0, replayBlock),
		m: m, node: node, clockAt: -1, texts: make(map[string]string)}, nil
}

var errBadSpanLog = errors.New("temporary span log is corrupt")

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
	s.base += int64(s.pos)
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
		return fmt.Errorf("%s: temporary span log: %w", s.input, err)
	}
	return nil
}

// damaged names the input and the span's byte offset in the log on a
// decoding error.
func (s *replaySource) damaged(err error) error {
	return fmt.Errorf("%s: temporary span log, byte offset %d: %w", s.input, s.base+int64(s.pos), err)
}

// nextInto appends the next span to b.merged, its keys and events to
// b.keys and b.evs.
func (s *replaySource) nextInto(b *spanBatch) error {
	for {
		if s.pos == len(s.blk) && s.eof {
			return s.endErr
		}
		if s.pos < len(s.blk) {
			n, err := s.read(b, s.blk[s.pos:])
			if err == nil {
				s.pos += n
				return nil
			}
			if err != errNeedMore {
				return s.damaged(err)
			}
			if s.eof {
				return s.damaged(errBadSpanLog) // the file ends within a span
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
	// Most of a log's varints take one byte; the others (keys, times)
	// two to eight, read from one 8-byte load where eight bytes are left
	// (leb128.FromWord; within eight bytes encoding/binary's varints are JFR's),
	// not a loop whose exit is mispredicted from one field to the next.
	if p := d.pos; p >= 0 && len(d.b)-p >= 8 {
		if c := d.b[p]; c < 0x80 {
			d.pos = p + 1
			return uint64(c)
		}
		if v, n := leb128.FromWord(binary.LittleEndian.Uint64(d.b[p:])); n > 0 {
			d.pos = p + n
			return v
		}
	}
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

// bytes returns the n bytes at d's position and skips them.
func (d *spanDec) bytes(n uint64) []byte {
	if n > maxSpanLogBytes {
		d.fail(errBadSpanLog)
		return nil
	}
	if n > uint64(len(d.b)-d.pos) {
		d.fail(errNeedMore)
		return nil
	}
	p := d.b[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return p
}

func (d *spanDec) fail(err error) {
	if d.err == nil {
		d.err = err
		d.pos = len(d.b)
	}
}

// read decodes the span that blk starts with into b and returns its
// length, or errNeedMore if blk ends within it (b and the running values
// are then as they were).
func (s *replaySource) read(b *spanBatch, blk []byte) (int, error) {
	d := spanDec{b: blk}
	nkeys0, nevs0 := len(b.keys), len(b.evs)
	n, err := s.decode(b, &d)
	if err != nil {
		b.keys = b.keys[:nkeys0]
		clear(b.evs[nevs0:]) // their texts
		b.evs = b.evs[:nevs0]
		return 0, err
	}
	return n, nil
}

func (s *replaySource) decode(b *spanBatch, d *spanDec) (int, error) {
	flags := d.byte1()
	ms := mergeSpan{nonCausal: flags&1 != 0, truncated: flags&2 != 0, unfinished: flags&4 != 0}
	var ordinal uint32
	if flags&8 == 0 {
		ordinal = s.ordinal + uint32(d.varint())
	}
	lastWall := s.lastWall + d.varint()
	nkeys := d.uvarint()
	if nkeys > 1<<20 {
		d.fail(errBadSpanLog)
	}
	start := len(b.keys)
	key, nids := s.key, uint32(s.m.ids.Len())
	for range nkeys {
		if key += uint32(d.varint()); d.err != nil {
			return 0, d.err
		}
		if key >= nids {
			return 0, errBadSpanLog
		}
		b.keys = append(b.keys, key)
	}
	ms.keys = b.keys[start:len(b.keys):len(b.keys)]
	nev := d.uvarint()
	kept := nev
	if ms.nonCausal {
		kept = d.uvarint()
	}
	if nev > 1<<28 || kept > nev {
		d.fail(errBadSpanLog)
	}
	if d.err != nil {
		return 0, d.err
	}
	ms.nevents = int(nev)
	span := s.span + 1
	nano, skew := s.nano, s.skew
	start = len(b.evs)
	pos := uint64(0) // the next event's position in the span
	for range kept {
		if ms.nonCausal {
			pos += d.uvarint()
		}
		k := d.byte1()
		th := d.uvarint()
		nano += d.varint()
		skew += d.varint()
		msg := d.uvarint()
		text := d.bytes(d.uvarint())
		switch {
		case d.err != nil:
			return 0, d.err
		case pos >= nev:
			return 0, errBadSpanLog
		}
		wall := nano + skew
		ev := Event{
			Nano: nano, Wall: s.m.correctFrom(s.node, wall, &s.clockAt), RawWall: wall,
			Msg: -1, Thread: uint32(th), Span: span, Ordinal: ordinal, Seq: uint32(pos),
			Node: s.node, Kind: flowspec.Kind(k), Unfinished: ms.unfinished,
		}
		switch {
		case msg == 0:
		case msg <= nkeys:
			ev.Msg = int32(ms.keys[msg-1])
		case msg-1-nkeys < uint64(nids):
			ev.Msg = int32(msg - 1 - nkeys)
		default:
			return 0, errBadSpanLog
		}
		if len(text) > 0 {
			t, ok := s.texts[string(text)]
			if !ok {
				t = string(text)
				if len(s.texts) < maxTexts {
					s.texts[t] = t
				}
			}
			ev.Text = t
		}
		b.evs = append(b.evs, ev)
		pos++
	}
	ms.events = b.evs[start:len(b.evs):len(b.evs)]
	ms.endAt = s.m.correctFrom(s.node, lastWall, &s.clockAt)
	b.merged = append(b.merged, ms)
	s.nano, s.skew, s.key, s.span, s.lastWall = nano, skew, key, span, lastWall
	if flags&8 == 0 {
		s.ordinal = ordinal
	}
	return d.pos, nil
}
