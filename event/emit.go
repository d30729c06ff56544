package event

import (
	"encoding/binary"
	"math"
	"runtime"
	"time"
	"unsafe"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/pin"
	"github.com/flightrec/flightrec/internal/stack"
)

// fastClock tells whether commit reads the time and the goroutine id in
// one call (clock.NowAndGWord).
var fastClock = stack.GoidFast && clock.GWord

// commit records the event whose header is h and marks it committed. It
// is kept out of line so the handle methods inline; h does not escape.
// The common case (no stack trace, no Goroutine or Func field, room in the
// P's buffer, the same goroutine as the buffer's last event) runs straight
// through, with three calls: pinning, the clock and goroutine id, and
// unpinning. prepare handles the rest out of line.
//
//go:noinline
func commit(h *header) {
	d := h.d
	start, end := h.start, h.end
	// Committed: a later Begin of the same variable starts afresh.
	h.d, h.start, h.end = nil, 0, 0
	// Pinned to its P, this goroutine is the only writer of the P's buffer
	// and stack scratch: no lock, and one plain store publishes the event
	// to the flusher. Pinning before the clock read, not after it,
	// measured faster (by 4 ns in a variant specialised to one type).
	id := pin.Pin()
	// The goroutine id, and the time if the event still needs one (an
	// Instant's, a Timed event's end unless ShouldCommit took it).
	var now int64
	var g uint64
	needNow := (d.Timed && end == 0) || (!d.Timed && start == 0)
	switch {
	case fastClock && needNow:
		now, g = clock.NowAndGWord(stack.GoidOffset())
	case stack.GoidFast:
		g = stack.GoidAt()
	default:
		g = stack.Goid()
		if needNow {
			now = clock.Now()
		}
	}
	if d.Timed {
		if end == 0 {
			end = now
		}
		if d.Short(end - start) {
			pin.Unpin(id)
			return
		}
	} else if start == 0 {
		start = now
	}
	p := unsafe.Pointer(h)
	size := d.FixedMax
	for _, off := range d.Strings {
		size += len(*(*string)(unsafe.Add(p, off)))
	}
	b := batch.Current(id)
	s := batch.Active()
	if s == nil {
		pin.Unpin(id)
		return
	}
	var skey uint64
	yield := false
	if b == nil || d.Refs || d.Stack.Load() || !b.Fits(size) || !b.SameThread(g) {
		if b, skey, yield = prepare(s, b, id, d, p, g, size); b == nil {
			pin.Unpin(id)
			return
		}
	}
	// The record: size, type id, startTime, duration, eventThread,
	// stackTrace, fields. The size is one byte when the record cannot
	// exceed 127 bytes, else a 4-byte padded varint. Bytes are stored
	// through a pointer, without bounds checks: Fits checked that size,
	// which bounds the record, is free. The encoding is written out here
	// rather than called: a call cost 2 ns.
	dst := b.Tail()[:size]
	out := unsafe.Pointer(unsafe.SliceData(dst))
	i := 1
	if size > 127 {
		i = 4
	}
	i = putUvarint(out, i, uint64(d.ID))
	// start and duration come from SetTime or SetTimes too, and may be
	// negative (a time before the process started): the 9-byte form.
	i = putUvarint64(out, i, uint64(start))
	if d.Timed {
		i = putUvarint64(out, i, uint64(end-start))
	}
	i = putUvarint(out, i, g)
	i = putUvarint(out, i, skey)
	for _, op := range d.Ops {
		q := unsafe.Add(p, op.Offset)
		switch op.Enc {
		case batch.EncVarint64:
			i = putUvarint64(out, i, *(*uint64)(q))
		case batch.EncVarint32:
			i = putUvarint(out, i, uint64(*(*uint32)(q)))
		case batch.EncString:
			str := *(*string)(q)
			if str == "" {
				*(*byte)(unsafe.Add(out, i)) = 1
				i++
				continue
			}
			k := b.CachedKey(str) // inlined: the common case
			if k == 0 {
				k = b.StringKey(str)
			}
			if k != 0 {
				*(*byte)(unsafe.Add(out, i)) = 2
				i = putUvarint(out, i+1, k)
			} else {
				*(*byte)(unsafe.Add(out, i)) = 3
				i = putUvarint(out, i+1, uint64(len(str)))
				i += copy(dst[i:], str)
			}
		case batch.EncByte:
			*(*byte)(unsafe.Add(out, i)) = *(*uint8)(q)
			i++
		case batch.EncVarint16:
			i = putUvarint(out, i, uint64(*(*uint16)(q)))
		default:
			i = encodeRare(out, dst, i, op.Enc, q)
		}
	}
	if size > 127 {
		leb128.PutPadded(dst[:4], uint64(i))
	} else {
		*(*byte)(out) = byte(i)
	}
	b.Commit(i)
	pin.Unpin(id)
	if yield {
		runtime.Gosched()
	}
}

// prepare is commit's uncommon case. It captures the stack trace if the
// type records them, notes the event's references (its goroutine, stack,
// and Goroutine or Func fields) in the P's buffer b, and hands b off for
// a fresh one of session s when b is full or absent. It returns the
// buffer to encode into, the stack's key (0: none) and whether to yield
// the P once unpinned (see batch.Session.Behind); or a nil buffer if the
// event is dropped, which it counts.
//
//go:noinline
func prepare(s *batch.Session, b *batch.Buffer, id int, d *batch.Desc, p unsafe.Pointer, g uint64, size int) (*batch.Buffer, uint64, bool) {
	var pcs []uintptr
	var skey uint64
	if d.Stack.Load() {
		if sc := batch.Scratch(id); sc != nil {
			// Skip prepare and commit: the stack starts in the caller of
			// Commit.
			pcs = sc[:stack.Capture(2, sc)]
			skey = batch.StackKey(pcs)
		}
	}
	if b != nil && b.Fits(size) && b.AddThread(g) && (skey == 0 || b.AddStack(skey, pcs)) && (!d.Refs || refsFit(b, d, p)) {
		return b, skey, false
	}
	if b = swap(s, id, d, p, g, pcs, skey, size); b == nil {
		return nil, 0, false
	}
	return b, skey, s.Behind()
}

// swap hands the P's buffer off and notes the event's references in a
// fresh one, or counts the event as dropped and returns nil.
//
//go:noinline
func swap(s *batch.Session, id int, d *batch.Desc, p unsafe.Pointer, g uint64, pcs []uintptr, skey uint64, size int) *batch.Buffer {
	var b *batch.Buffer
	if size <= batch.BufferSize/2 {
		b = s.Swap(id)
	}
	if b == nil {
		s.Drop(size)
		return nil
	}
	// An empty buffer takes one thread, one stack and the references.
	b.AddThread(g)
	if skey != 0 {
		b.AddStack(skey, pcs)
	}
	refsFit(b, d, p)
	return b
}

// refsFit notes the goroutines and functions that Goroutine and Func
// fields refer to.
func refsFit(b *batch.Buffer, d *batch.Desc, p unsafe.Pointer) bool {
	for i := range d.Fields {
		switch f := &d.Fields[i]; f.Kind {
		case batch.Thread:
			if g := *(*uint64)(unsafe.Add(p, f.Offset)); g != 0 && !b.AddThread(g) {
				return false
			}
		case batch.Func:
			if pc := *(*uintptr)(unsafe.Add(p, f.Offset)); pc != 0 && !b.AddFunc(pc) {
				return false
			}
		}
	}
	return true
}

// encodeRare writes a field of one of the rarer encodings at dst[i] (out
// is dst's start) and returns the offset after it.
func encodeRare(out unsafe.Pointer, dst []byte, i int, e batch.Enc, q unsafe.Pointer) int {
	switch e {
	case batch.EncFloat32:
		binary.BigEndian.PutUint32(dst[i:], math.Float32bits(*(*float32)(q)))
		return i + 4
	case batch.EncFloat64:
		binary.BigEndian.PutUint64(dst[i:], math.Float64bits(*(*float64)(q)))
		return i + 8
	case batch.EncTime:
		var ticks int64
		if t := (*time.Time)(q); !t.IsZero() {
			ticks = clock.TicksAt(t.UnixNano())
		}
		return putUvarint64(out, i, uint64(ticks))
	case batch.EncUnixNanos:
		var ticks int64
		if ns := *(*int64)(q); ns != 0 {
			ticks = clock.TicksAt(ns)
		}
		return putUvarint64(out, i, uint64(ticks))
	case batch.EncFunc:
		return putUvarint(out, i, uint64(*(*uintptr)(q)))
	}
	return i
}

// putUvarint writes v, below 2^63, at out+i as JFR's varint
// (leb128.PutUvarint) and returns the offset after it. Up to 2^63 that is
// plain LEB128; larger values, which only fields hold, take putUvarint9.
func putUvarint(out unsafe.Pointer, i int, v uint64) int {
	for v >= 0x80 {
		*(*byte)(unsafe.Add(out, i)) = byte(v) | 0x80
		v >>= 7
		i++
	}
	*(*byte)(unsafe.Add(out, i)) = byte(v)
	return i + 1
}

// putUvarint64 writes any value as JFR's varint.
func putUvarint64(out unsafe.Pointer, i int, v uint64) int {
	if v < 1<<63 {
		return putUvarint(out, i, v)
	}
	return putUvarint9(out, i, v)
}

// putUvarint9 writes a value of 2^56 or more: 9 bytes, the last holding 8
// bits (where LEB128 would take 10 from 2^63).
func putUvarint9(out unsafe.Pointer, i int, v uint64) int {
	for range 8 {
		*(*byte)(unsafe.Add(out, i)) = byte(v) | 0x80
		v >>= 7
		i++
	}
	*(*byte)(unsafe.Add(out, i)) = byte(v)
	return i + 1
}
