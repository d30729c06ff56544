package event

import (
	"encoding/binary"
	"math"
	"runtime"
	"unsafe"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/pin"
	"github.com/flightrec/flightrec/internal/stack"
)

func goid() uint64 { return stack.Goid() }

// commit records the event whose header is h and marks it committed. It is
// kept out of line so the handle methods inline; h does not escape.
//
//go:noinline
func commit(h *header) {
	d := h.d
	h.d = nil
	end := h.end
	if d.Timed && end == 0 {
		end = clock.Now()
		if end-h.start < d.Threshold.Load() {
			return
		}
	}
	if d.Stack.Load() {
		commitStack(d, h, end)
		return
	}
	write(d, h, end, nil, 0)
}

// commitStack captures the stack of commit's caller and records the event.
//
//go:noinline
func commitStack(d *batch.Desc, h *header, end int64) {
	var pcs stack.PCs
	n := stack.Capture(2, &pcs)
	write(d, h, end, pcs[:n], batch.StackKey(pcs[:n]))
}

// write encodes the event into the current P's buffer. Pinned to the P,
// it is the buffer's only writer: no lock, and one plain store publishes
// the event to the flusher.
func write(d *batch.Desc, h *header, end int64, pcs []uintptr, skey uint64) {
	p := unsafe.Pointer(h)
	size := d.FixedMax
	for _, off := range d.Strings {
		size += len(*(*string)(unsafe.Add(p, off)))
	}
	g := goid()
	id := pin.Pin()
	s := batch.Active()
	if s == nil {
		pin.Unpin(id)
		return
	}
	b := s.Buffer(id)
	swapped := false
	if b == nil || !b.Fits(size) || !b.AddThread(g) || (skey != 0 && !b.AddStack(skey, pcs)) || (d.Refs && !refsFit(b, d, p)) {
		if b = swap(s, id, d, p, g, pcs, skey, size); b == nil {
			pin.Unpin(id)
			return
		}
		swapped = true
	}
	start := h.start
	if start == 0 {
		start = clock.Now()
	}
	b.Commit(encode(b.Tail(), d, p, start, end, g, skey, size))
	pin.Unpin(id)
	if swapped && s.Behind() {
		runtime.Gosched()
	}
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

// refsFit notes the goroutines that Goroutine fields refer to.
func refsFit(b *batch.Buffer, d *batch.Desc, p unsafe.Pointer) bool {
	for i := range d.Fields {
		if f := &d.Fields[i]; f.Kind == batch.Thread {
			if g := *(*uint64)(unsafe.Add(p, f.Offset)); g != 0 && !b.AddThread(g) {
				return false
			}
		}
	}
	return true
}

// encode writes the event record into dst, which has room for max bytes:
// size, type id, startTime, duration, eventThread, stackTrace, fields. The
// size is one byte when the record cannot exceed 127 bytes, else a 4-byte
// padded varint. It returns the record's length.
func encode(dst []byte, d *batch.Desc, p unsafe.Pointer, start, end int64, g, skey uint64, max int) int {
	dst = dst[:max]
	i := 1
	wide := max > 127
	if wide {
		i = 4
	}
	i += leb128.PutUvarint(dst[i:], uint64(d.ID))
	i += leb128.PutUvarint(dst[i:], uint64(start))
	if d.Timed {
		i += leb128.PutUvarint(dst[i:], uint64(end-start))
	}
	i += leb128.PutUvarint(dst[i:], g)
	i += leb128.PutUvarint(dst[i:], skey)
	for k := range d.Fields {
		f := &d.Fields[k]
		q := unsafe.Add(p, f.Offset)
		switch f.Kind {
		case batch.Int64, batch.Uint64, batch.Thread:
			i += leb128.PutUvarint(dst[i:], *(*uint64)(q))
		case batch.Int32, batch.Uint32:
			i += leb128.PutUvarint(dst[i:], uint64(*(*uint32)(q)))
		case batch.String:
			s := *(*string)(q)
			if s == "" {
				dst[i] = 1
				i++
			} else {
				dst[i] = 3
				i++
				i += leb128.PutUvarint(dst[i:], uint64(len(s)))
				i += copy(dst[i:], s)
			}
		case batch.Bool, batch.Int8, batch.Uint8:
			dst[i] = *(*uint8)(q)
			i++
		case batch.Int16, batch.Uint16:
			i += leb128.PutUvarint(dst[i:], uint64(*(*uint16)(q)))
		case batch.Float32:
			binary.BigEndian.PutUint32(dst[i:], math.Float32bits(*(*float32)(q)))
			i += 4
		case batch.Float64:
			binary.BigEndian.PutUint64(dst[i:], math.Float64bits(*(*float64)(q)))
			i += 8
		}
	}
	if wide {
		leb128.PutPadded(dst[:4], uint64(i))
	} else {
		dst[0] = byte(i)
	}
	return i
}
