package flow

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/jfr"
)

// A flow recording's reader decodes the flow events' records itself: their
// layouts are known from the chunk's metadata (longs, booleans, strings and
// arrays of longs and strings), and decoding them into jfr.Values, then
// reading those back, was most of the reader's work. A record it cannot
// take (another string encoding, a field of another type, a record that
// ends early) goes to the generic decoder (jfr.Reader.LoadEvent), which
// also reports a malformed record as the damage it is.

// fieldOp is how the flow reader decodes one field of a flow event type.
type fieldOp uint8

const (
	opSlow    fieldOp = iota // a type the fast path does not take
	opLong                   // a varint long
	opBool                   // one byte
	opString                 // a java.lang.String
	opLongs                  // an array of longs
	opStrings                // an array of strings
)

// fieldOps returns how to decode each field of class c, and whether the
// fast path takes the class at all: its first field, the start time, must
// be a long.
func fieldOps(c *jfr.Class) ([]fieldOp, bool) {
	if len(c.Fields) == 0 {
		return nil, false
	}
	ops := make([]fieldOp, len(c.Fields))
	for i := range c.Fields {
		f := &c.Fields[i]
		if f.ConstantPool || f.Type == nil {
			return nil, false
		}
		switch k := f.Type.Kind(); {
		case k == jfr.KindLong && f.Array:
			ops[i] = opLongs
		case k == jfr.KindString && f.Array:
			ops[i] = opStrings
		case f.Array:
			return nil, false
		case k == jfr.KindLong:
			ops[i] = opLong
		case k == jfr.KindBool:
			ops[i] = opBool
		case k == jfr.KindString:
			ops[i] = opString
		default:
			return nil, false
		}
	}
	return ops, ops[0] == opLong
}

// jfrFields holds the fields of one event as the flow reader uses them,
// by field index: integers (longs, booleans as 0 or 1), texts (nil for
// null), and arrays as ranges of elems and texts. Texts point into the
// record or into buf, valid until the next event.
type jfrFields struct {
	ints  []int64
	strs  [][]byte
	null  []bool
	isArr []bool
	arr   [][2]int
	elems []int64  // long array elements
	texts [][]byte // string array elements, nil for null
	buf   []byte   // texts that needed converting
}

// reset prepares f for an event of n fields.
func (f *jfrFields) reset(n int) {
	if n > len(f.ints) {
		f.ints, f.strs, f.null = make([]int64, n), make([][]byte, n), make([]bool, n)
		f.isArr, f.arr = make([]bool, n), make([][2]int, n)
	}
	f.elems, f.texts, f.buf = f.elems[:0], f.texts[:0], f.buf[:0]
}

// isNull tells whether field i is null or missing.
func (f *jfrFields) isNull(i int) bool { return i < 0 || f.null[i] }

// str returns the text of string field i, nil for none.
func (f *jfrFields) str(i int) []byte {
	if i < 0 {
		return nil
	}
	return f.strs[i]
}

// decodeRaw decodes a record's fields with ops; false if the record needs
// the generic decoder.
func (f *jfrFields) decodeRaw(b []byte, ops []fieldOp, c *jfr.Chunk) bool {
	f.reset(len(ops))
	pos := 0
	for i, op := range ops {
		f.null[i], f.isArr[i] = false, false
		switch op {
		case opLong:
			if len(b)-pos >= 8 {
				if v, n := leb128.FromWord(binary.LittleEndian.Uint64(b[pos:])); n > 0 {
					f.ints[i], pos = int64(v), pos+n
					continue
				}
			}
			v, n := uvarint(b, pos)
			if n == 0 {
				return false
			}
			f.ints[i], pos = int64(v), pos+n
		case opBool:
			if pos >= len(b) {
				return false
			}
			f.ints[i] = 0
			if b[pos] != 0 {
				f.ints[i] = 1
			}
			pos++
		case opString:
			s, null, n := f.text(b, pos, c)
			if n == 0 {
				return false
			}
			f.strs[i], f.null[i], pos = s, null, pos+n
		case opLongs, opStrings:
			count, n := uvarint(b, pos)
			if n == 0 || count > uint64(len(b)-pos-n) {
				return false
			}
			pos += n
			f.isArr[i] = true
			if op == opLongs {
				start := len(f.elems)
				for range count {
					v, n := uvarint(b, pos)
					if n == 0 {
						return false
					}
					f.elems, pos = append(f.elems, int64(v)), pos+n
				}
				f.arr[i] = [2]int{start, len(f.elems)}
				continue
			}
			start := len(f.texts)
			for range count {
				s, null, n := f.text(b, pos, c)
				if n == 0 {
					return false
				}
				if null {
					s = nil
				}
				f.texts, pos = append(f.texts, s), pos+n
			}
			f.arr[i] = [2]int{start, len(f.texts)}
		default:
			return false
		}
	}
	return true
}

// text decodes the string at b[pos:]: its UTF-8 bytes, whether it is null,
// and the bytes it took (0: the fast path does not take it).
func (f *jfrFields) text(b []byte, pos int, c *jfr.Chunk) (s []byte, null bool, n int) {
	if pos >= len(b) {
		return nil, false, 0
	}
	switch b[pos] {
	case 0: // null
		return nil, true, 1
	case 1: // empty
		return b[pos+1 : pos+1], false, 1
	case 2: // a constant of the string pool
		key, k := uvarint(b, pos+1)
		if k == 0 {
			return nil, false, 0
		}
		start := len(f.buf)
		f.buf, _ = c.AppendPooledString(f.buf, key)
		return f.buf[start:len(f.buf):len(f.buf)], false, 1 + k
	case 3, 5: // UTF-8, Latin-1
		size, k := uvarint(b, pos+1)
		start := pos + 1 + k
		if k == 0 || size > uint64(len(b)-start) {
			return nil, false, 0
		}
		s := b[start : start+int(size) : start+int(size)]
		if b[pos] == 5 && !ascii(s) {
			from := len(f.buf)
			for _, c := range s {
				f.buf = utf8.AppendRune(f.buf, rune(c))
			}
			s = f.buf[from:len(f.buf):len(f.buf)]
		}
		return s, false, 1 + k + int(size)
	case 4: // UTF-16 code units as varints: taken when all are ASCII
		count, k := uvarint(b, pos+1)
		start := pos + 1 + k
		if k == 0 || count > uint64(len(b)-start) || !ascii(b[start:start+int(count)]) {
			return nil, false, 0
		}
		return b[start : start+int(count) : start+int(count)], false, 1 + k + int(count)
	}
	return nil, false, 0
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// uvarint decodes the LEB128 varint at b[pos:], as JFR writes it: at most
// nine bytes, the ninth taking all eight bits. n is 0 if b ends first.
func uvarint(b []byte, pos int) (v uint64, n int) {
	for i := 0; i < 8; i++ {
		if pos+i >= len(b) {
			return 0, 0
		}
		c := b[pos+i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	if pos+8 >= len(b) {
		return 0, 0
	}
	return v | uint64(b[pos+8])<<56, 9
}

// fromValues takes the fields the generic decoder decoded.
// A field index the reader has for the class is below n, the class's
// field count; a record that decoded to fewer values has failed.
func (f *jfrFields) fromValues(vals []jfr.Value, n int) {
	f.reset(max(n, 1))
	f.ints[0] = 0
	for i := range vals {
		v := vals[i]
		f.null[i], f.isArr[i], f.strs[i], f.ints[i] = v.IsNull(), false, nil, v.Int()
		switch v.Kind() {
		case jfr.KindString:
			start := len(f.buf)
			f.buf = v.AppendText(f.buf)
			f.strs[i] = f.buf[start:len(f.buf):len(f.buf)]
		case jfr.KindArray:
			f.isArr[i] = true
			start := len(f.elems) // == len(f.texts)
			for _, e := range v.Elems() {
				f.elems = append(f.elems, e.Int())
				var s []byte
				if !e.IsNull() {
					from := len(f.buf)
					f.buf = e.AppendText(f.buf)
					s = f.buf[from:len(f.buf):len(f.buf)]
				}
				f.texts = append(f.texts, s)
			}
			// Both views of the array: the reader asks for the one its
			// field's type has.
			f.arr[i] = [2]int{start, len(f.elems)}
		}
	}
}
