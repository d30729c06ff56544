package event

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/pin"
	"github.com/flightrec/flightrec/internal/stack"
)

func goid() uint64 { return stack.Goid() }

// commit records the event whose header is h. It is kept out of line so
// the handle methods inline; h does not escape.
//
//go:noinline
func commit(h *header) {
	d := h.d
	end := h.end
	if d.Timed {
		if end == 0 {
			end = clock.Now()
			if end-h.start < d.Threshold.Load() {
				return
			}
		}
	}
	if d.Stack.Load() {
		commitStack(h, end)
		return
	}
	write(h, end, nil)
}

// commitStack captures the stack of commit's caller and records the event.
//
//go:noinline
func commitStack(h *header, end int64) {
	var pcs stack.PCs
	n := stack.Capture(2, &pcs)
	write(h, end, pcs[:n])
}

// write encodes the event into the current P's buffer.
func write(h *header, end int64, pcs []uintptr) {
	s := batch.Active()
	if s == nil {
		return
	}
	d := h.d
	p := unsafe.Pointer(h)
	size := d.FixedMax
	for i := range d.Fields {
		if d.Fields[i].Kind == batch.String {
			size += len(*(*string)(unsafe.Add(p, d.Fields[i].Offset)))
		}
	}
	var skey uint64
	if len(pcs) > 0 {
		skey = batch.StackKey(pcs)
	}
	g := goid()
	if size > batch.BufferSize/2 {
		s.Drop(size)
		return
	}
	id := pin.Pin()
	slot := s.Slot(id)
	if slot == nil || !slot.TryLock() {
		pin.Unpin(id)
		s.Drop(size)
		return
	}
	b := slot.Buf
	if b == nil || !b.Fits(size) || !b.AddThread(g) || (skey != 0 && !b.AddStack(skey, pcs)) || !refsFit(b, d, p) {
		if b = s.Swap(slot); b == nil {
			slot.Unlock()
			pin.Unpin(id)
			s.Drop(size)
			return
		}
		// An empty buffer takes one thread, one stack and the references.
		b.AddThread(g)
		if skey != 0 {
			b.AddStack(skey, pcs)
		}
		refsFit(b, d, p)
	}
	b.Data = encode(b.Data, d, p, h.start, end, g, skey, size)
	slot.Unlock()
	pin.Unpin(id)
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

// encode appends the event record: size, type id, startTime, duration,
// eventThread, stackTrace, fields. The size is one byte when the record
// cannot exceed 127 bytes, else a 4-byte padded varint patched in after.
func encode(dst []byte, d *batch.Desc, p unsafe.Pointer, start, end int64, g, skey uint64, max int) []byte {
	at := len(dst)
	wide := max > 127
	if wide {
		dst = append(dst, 0, 0, 0, 0)
	} else {
		dst = append(dst, 0)
	}
	dst = leb128.AppendUvarint(dst, uint64(d.ID))
	dst = leb128.AppendUvarint(dst, uint64(start))
	if d.Timed {
		dst = leb128.AppendUvarint(dst, uint64(end-start))
	}
	dst = leb128.AppendUvarint(dst, g)
	dst = leb128.AppendUvarint(dst, skey)
	for i := range d.Fields {
		f := &d.Fields[i]
		q := unsafe.Add(p, f.Offset)
		switch f.Kind {
		case batch.Int64, batch.Uint64, batch.Thread:
			dst = leb128.AppendUvarint(dst, *(*uint64)(q))
		case batch.Int32, batch.Uint32:
			dst = leb128.AppendUvarint(dst, uint64(*(*uint32)(q)))
		case batch.String:
			s := *(*string)(q)
			if s == "" {
				dst = append(dst, 1)
			} else {
				dst = leb128.AppendUvarint(append(dst, 3), uint64(len(s)))
				dst = append(dst, s...)
			}
		case batch.Bool, batch.Int8, batch.Uint8:
			dst = append(dst, *(*uint8)(q))
		case batch.Int16, batch.Uint16:
			dst = leb128.AppendUvarint(dst, uint64(*(*uint16)(q)))
		case batch.Float32:
			dst = binary.BigEndian.AppendUint32(dst, math.Float32bits(*(*float32)(q)))
		case batch.Float64:
			dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(*(*float64)(q)))
		}
	}
	if wide {
		leb128.PutPadded(dst[at:at+4], uint64(len(dst)-at))
	} else {
		dst[at] = byte(len(dst) - at)
	}
	return dst
}
