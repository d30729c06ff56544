package emit

import (
	"encoding/binary"
	"math"
	"time"
	"unsafe"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/pin"
)

// Writer encodes the record of one event, between Record and End: the
// interface between the recorder and the Commit methods that `flightrec
// gen` writes (through package event/eventimpl). Its use:
//
//	w, ok := emit.Record(h, len(e.Path)) // the strings' lengths
//	if !ok {
//		return
//	}
//	w = w.Varint(uint64(e.Bytes)) // each field, in order
//	...
//	w.End()
//	w.Unpin()
//
// A Writer is a small value that methods return updated, so that the
// compiler keeps it in registers. Between Record and Unpin the goroutine is
// pinned to its P: the code between them must not block, allocate or call
// anything that might. The zero Writer is not usable (its methods fault):
// only Record makes one.
type Writer struct {
	b   *batch.Buffer
	out unsafe.Pointer // the record's first byte
	i   int            // the offset of the next byte
	tag int            // the pinned P's id << 1, | 1 if the size takes 4 bytes
}

// Varint writes an integer field (int16..int64, uint16..uint64, Goroutine,
// Func) as JFR's varint. Signed values are passed as their bits at their
// own width: uint64(uint32(v)) for an int32.
func (w Writer) Varint(v uint64) Writer {
	w.i = putVarint(w.out, w.i, v)
	return w
}

// Byte writes an int8 or uint8 field.
func (w Writer) Byte(v uint8) Writer {
	*(*byte)(unsafe.Add(w.out, w.i)) = v
	w.i++
	return w
}

// Bool writes a bool field.
func (w Writer) Bool(v bool) Writer {
	*(*bool)(unsafe.Add(w.out, w.i)) = v
	w.i++
	return w
}

// Float32 writes a float32 field.
func (w Writer) Float32(v float32) Writer {
	binary.BigEndian.PutUint32((*[4]byte)(unsafe.Add(w.out, w.i))[:], math.Float32bits(v))
	w.i += 4
	return w
}

// Float64 writes a float64 field.
func (w Writer) Float64(v float64) Writer {
	binary.BigEndian.PutUint64((*[8]byte)(unsafe.Add(w.out, w.i))[:], math.Float64bits(v))
	w.i += 8
	return w
}

// Time writes a time.Time field, in ticks (0 for the zero time).
func (w Writer) Time(t time.Time) Writer {
	if t.IsZero() {
		return w.Varint(0)
	}
	return w.Varint(uint64(clock.TicksAt(t.UnixNano())))
}

// UnixNanos writes an int64 field of content type timestamp, ns since the
// Unix epoch, in ticks (0 stays 0).
func (w Writer) UnixNanos(ns int64) Writer {
	if ns == 0 {
		return w.Varint(0)
	}
	return w.Varint(uint64(clock.TicksAt(ns)))
}

// CachedKey returns the pool key of s if the buffer pooled it already
// (then write it with Ref), else 0 (then call String). This split keeps
// the common case inline.
func (w Writer) CachedKey(s string) uint64 { return w.b.CachedKey(s) }

// Ref writes a string field as a reference to the pooled string of key k,
// from CachedKey.
func (w Writer) Ref(k uint64) Writer {
	*(*byte)(unsafe.Add(w.out, w.i)) = 2
	// Keys are below 2^16 (batch's maxInterned).
	w.i = putUvarint(w.out, w.i+1, k)
	return w
}

// String writes a string field: empty, a reference to the string pool if
// s repeats (see batch.Buffer.StringKey), or inline.
//
//go:noinline
func (w Writer) String(s string) Writer {
	i := w.i
	if s == "" {
		*(*byte)(unsafe.Add(w.out, i)) = 1
		w.i = i + 1
		return w
	}
	if k := w.b.StringKey(s); k != 0 {
		return w.Ref(k)
	}
	*(*byte)(unsafe.Add(w.out, i)) = 3
	i = putVarint(w.out, i+1, uint64(len(s)))
	w.i = i + copy(unsafe.Slice((*byte)(unsafe.Add(w.out, i)), len(s)), s)
	return w
}

// End writes the record's size and publishes the record to the flusher.
// Call Unpin next.
func (w Writer) End() {
	i := w.i
	if w.tag&1 != 0 {
		// leb128.PutPadded for 4 bytes, written out: calling it would
		// put End over the inlining budget. Little-endian byte order
		// whatever the platform's, at any alignment.
		u := uint32(i)
		binary.LittleEndian.PutUint32((*[4]byte)(w.out)[:], u&0x7f|u<<1&0x7f00|u<<2&0x7f0000|u<<3&0x7f000000|0x808080)
	} else {
		*(*byte)(w.out) = byte(i)
	}
	w.b.Commit(i)
}

// Unpin ends what Record began. It is separate from End so that each
// inlines.
func (w Writer) Unpin() { pin.Unpin(w.tag >> 1) }

// SchemaKind is a field's word in a generated Commit's schema
// (eventimpl.Schema): named is the field type's package path and name
// (time.Time, say), kind its Go kind, content its content tag.
func SchemaKind(named, kind, content string) string {
	switch named {
	case "github.com/flightrec/flightrec/event.Goroutine":
		return "goroutine"
	case "github.com/flightrec/flightrec/event.Func":
		return "func"
	case "time.Time":
		return "time"
	}
	if content == "timestamp" {
		return kind + "@timestamp"
	}
	return kind
}
