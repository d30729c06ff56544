package jfr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/flightrec/flightrec/internal/leb128"
)

// String encodings (the tag byte in front of every java.lang.String value).
const (
	encNull     = 0
	encEmpty    = 1
	encPool     = 2
	encUTF8     = 3
	encChars    = 4
	encLatin1   = 5
	numEncoding = 6
)

// decoder is a cursor over one record with a sticky error: after the first
// failure every read returns zero, so callers check err once per record.
type decoder struct {
	b     []byte
	pos   int
	err   error
	pools *pools // constant pools of the chunk, attached to references
}

var errShort = errors.New("record ends before its content")

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) uvarint() uint64 {
	if d.pos < len(d.b) && d.b[d.pos] < 0x80 { // one byte: the common case
		v := uint64(d.b[d.pos])
		d.pos++
		return v
	}
	return d.uvarintSlow()
}

func (d *decoder) uvarintSlow() uint64 {
	if i := d.pos; i >= 0 && len(d.b)-i >= leb128.MaxLen {
		// Enough bytes for any varint: decode without bounds checks.
		b := (*[leb128.MaxLen]byte)(d.b[i : i+leb128.MaxLen])
		v := uint64(b[0] & 0x7f)
		for j := 1; j < 8; j++ {
			c := b[j]
			v |= uint64(c&0x7f) << (7 * j)
			if c < 0x80 {
				d.pos = i + j + 1
				return v
			}
		}
		d.pos = i + leb128.MaxLen
		return v | uint64(b[8])<<56
	}
	if d.pos >= len(d.b) {
		d.fail(errShort)
		return 0
	}
	v, n := leb128.Uvarint(d.b[d.pos:])
	if n == 0 {
		d.fail(errShort)
		d.pos = len(d.b)
		return 0
	}
	d.pos += n
	return v
}

func (d *decoder) byte1() byte {
	if d.pos >= len(d.b) {
		d.fail(errShort)
		return 0
	}
	c := d.b[d.pos]
	d.pos++
	return c
}

func (d *decoder) be32() uint32 {
	if len(d.b)-d.pos < 4 {
		d.fail(errShort)
		d.pos = len(d.b)
		return 0
	}
	v := binary.BigEndian.Uint32(d.b[d.pos:])
	d.pos += 4
	return v
}

func (d *decoder) be64() uint64 {
	if len(d.b)-d.pos < 8 {
		d.fail(errShort)
		d.pos = len(d.b)
		return 0
	}
	v := binary.BigEndian.Uint64(d.b[d.pos:])
	d.pos += 8
	return v
}

func (d *decoder) remaining() int { return len(d.b) - d.pos }

// count reads an element count and checks it against the bytes left, given
// that each element takes at least minBytes (at least 1 is assumed for the
// bound, so a count never exceeds the record's size).
func (d *decoder) count(minBytes int) int {
	v := d.uvarint()
	if minBytes < 1 {
		minBytes = 1
	}
	if v > uint64(d.remaining()/minBytes) {
		d.fail(fmt.Errorf("count %d exceeds the %d bytes left in the record", v, d.remaining()))
		return 0
	}
	return int(v)
}

// bytes returns the next n bytes, sharing memory with the record.
func (d *decoder) bytes(n uint64) []byte {
	if n > uint64(d.remaining()) {
		d.fail(fmt.Errorf("string of %d bytes exceeds the %d bytes left in the record", n, d.remaining()))
		d.pos = len(d.b)
		return nil
	}
	s := d.b[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return s
}

// stringValue decodes a tagged java.lang.String.
func (d *decoder) stringValue() Value {
	tag := d.byte1()
	v := Value{kind: KindString, enc: tag}
	switch tag {
	case encNull:
		v.kind = KindNull
	case encEmpty:
	case encPool:
		v.bits = d.uvarint()
		v.ptr = unsafe.Pointer(d.pools)
	case encUTF8, encLatin1:
		v.ptr, v.n = bytesValue(d.bytes(d.uvarint()))
	case encChars:
		n := d.uvarint()
		if n > uint64(d.remaining()) {
			d.fail(fmt.Errorf("string of %d chars exceeds the %d bytes left in the record", n, d.remaining()))
			return v
		}
		start := d.pos
		if asciiRun(d.b[start : start+int(n)]) {
			// Every char below 0x80 takes one byte: the common case.
			d.pos += int(n)
			v.ptr, v.n = bytesValue(d.b[start:d.pos])
			v.bits = n
			return v
		}
		for i := uint64(0); i < n; i++ {
			if d.pos < len(d.b) && d.b[d.pos] < 0x80 {
				d.pos++
				continue
			}
			d.uvarint()
		}
		v.ptr, v.n = bytesValue(d.b[start:d.pos])
		v.bits = n
	default:
		d.fail(fmt.Errorf("unknown string encoding %d", tag))
	}
	return v
}

// asciiRun tells whether every byte of b is below 0x80, eight at a time.
func asciiRun(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// arena hands out Value slices for struct fields and array elements. Events
// reuse one arena, so a steady stream of events does not allocate; when it
// runs out, the slice is allocated on the heap and the arena grows for the
// next record.
type arena struct {
	buf      []Value
	overflow int
	keep     bool // pool arenas: never reuse, grow by new blocks
}

func (a *arena) alloc(n int) []Value {
	if l := len(a.buf); l+n <= cap(a.buf) {
		a.buf = a.buf[:l+n]
		// No clearing: the decoder overwrites every slot it hands out.
		return a.buf[l : l+n : l+n]
	}
	if a.keep {
		size := max(n, 1024)
		a.buf = make([]Value, n, size)
		return a.buf[:n:n]
	}
	a.overflow += n
	return make([]Value, n)
}

// reset prepares an event arena for the next record.
func (a *arena) reset() {
	if a.overflow > 0 {
		a.buf = make([]Value, 0, 2*(cap(a.buf)+a.overflow))
		a.overflow = 0
	}
	a.buf = a.buf[:0]
}

// fieldOp says how a field is decoded, so the decoder switches once per
// field instead of testing array, pool and kind in turn.
type fieldOp uint8

const (
	opStruct fieldOp = iota // inline struct, or anything not below
	opRef                   // constant-pool key
	opByte                  // boolean or byte: one raw byte
	opVarint                // short, char, int, long
	opFloat
	opDouble
	opString
	opArray
)

func opFor(f *Field) fieldOp {
	if f.Array {
		return opArray
	}
	if f.ConstantPool {
		return opRef
	}
	switch f.Type.kind {
	case KindBool, KindByte:
		return opByte
	case KindShort, KindChar, KindInt, KindLong:
		return opVarint
	case KindFloat:
		return opFloat
	case KindDouble:
		return opDouble
	case KindString:
		return opString
	}
	return opStruct
}

// fields decodes the values of fs into out (len(out) == len(fs)).
func (d *decoder) fields(fs []Field, out []Value, a *arena) {
	for i := range fs {
		f := &fs[i]
		o := &out[i]
		switch f.op {
		case opVarint:
			*o = Value{kind: f.Type.kind, class: f.Type, bits: d.uvarint()}
		case opRef:
			*o = Value{kind: KindRef, class: f.Type, bits: d.uvarint(), ptr: unsafe.Pointer(d.pools)}
		case opByte:
			*o = Value{kind: f.Type.kind, class: f.Type, bits: uint64(d.byte1())}
		case opDouble:
			*o = Value{kind: KindDouble, class: f.Type, bits: d.be64()}
		case opFloat:
			*o = Value{kind: KindFloat, class: f.Type, bits: uint64(d.be32())}
		case opString:
			*o = d.stringValue()
			o.class = f.Type
		default:
			d.field(f, o, a)
		}
		if d.err != nil {
			return
		}
	}
}

// field decodes the value of f into out.
func (d *decoder) field(f *Field, out *Value, a *arena) {
	if !f.Array {
		d.single(f, out, a)
		return
	}
	n := d.count(0)
	elems := a.alloc(n)
	for i := range elems {
		d.single(f, &elems[i], a)
		if d.err != nil {
			break
		}
	}
	*out = valuesOf(f.Type, KindArray, elems)
}

func (d *decoder) single(f *Field, out *Value, a *arena) {
	if f.ConstantPool {
		*out = Value{kind: KindRef, class: f.Type, bits: d.uvarint(), ptr: unsafe.Pointer(d.pools)}
		return
	}
	d.value(f.Type, out, a)
}

// value decodes an inline value of class c into out.
func (d *decoder) value(c *Class, out *Value, a *arena) {
	switch c.kind {
	case KindBool, KindByte:
		*out = Value{kind: c.kind, class: c, bits: uint64(d.byte1())}
	case KindShort, KindChar, KindInt, KindLong:
		*out = Value{kind: c.kind, class: c, bits: d.uvarint()}
	case KindFloat:
		*out = Value{kind: KindFloat, class: c, bits: uint64(d.be32())}
	case KindDouble:
		*out = Value{kind: KindDouble, class: c, bits: d.be64()}
	case KindString:
		*out = d.stringValue()
		out.class = c
	default:
		if c.SimpleType {
			d.field(&c.Fields[0], out, a)
			return
		}
		sub := a.alloc(len(c.Fields))
		d.fields(c.Fields, sub, a)
		*out = valuesOf(c, KindStruct, sub)
	}
}

// float32bits widens the stored bits of a float value.
func float32bits(b uint64) float64 { return float64(math.Float32frombits(uint32(b))) }
