package jfr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/flightrec/flightrec/internal/leb128"
)

// ErrValueKind means a value does not match the declared type of the field
// or constant it is written as.
var ErrValueKind = errors.New("value does not match its declared type")

// PooledStringValue makes a string that refers to key in the chunk's
// java.lang.String pool (written with string tag 2).
func PooledStringValue(key uint64) Value { return Value{kind: KindString, enc: encPool, bits: key} }

// NullString is a null java.lang.String (tag 0), the same as Null().
func NullString() Value { return Value{kind: KindNull} }

// Append helpers for callers that encode event payloads themselves (the Go
// recorder encodes straight into per-P buffers). Integers are varints:
// use leb128.AppendUvarint with the value masked to the width of its Java
// type (an int -1 is 0xFFFFFFFF, jfr-format.md §2.1).

// AppendString appends s as a java.lang.String: tag 1 for "", else tag 3
// (UTF-8) with its byte length.
func AppendString(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, encEmpty)
	}
	dst = append(dst, encUTF8)
	dst = leb128.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendNullString appends a null java.lang.String (tag 0).
func AppendNullString(dst []byte) []byte { return append(dst, encNull) }

// AppendStringRef appends a java.lang.String that refers to key in the
// chunk's string pool (tag 2).
func AppendStringRef(dst []byte, key uint64) []byte {
	return leb128.AppendUvarint(append(dst, encPool), key)
}

// AppendBool appends a boolean as one byte.
func AppendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendFloat appends a float: 4 bytes, big-endian IEEE 754.
func AppendFloat(dst []byte, f float32) []byte {
	return binary.BigEndian.AppendUint32(dst, math.Float32bits(f))
}

// AppendDouble appends a double: 8 bytes, big-endian IEEE 754.
func AppendDouble(dst []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(f))
}

// AppendRecord appends a record (event, metadata or checkpoint) of the
// given type with its minimal self-inclusive size (jfr-format.md §3).
func AppendRecord(dst []byte, typeID int64, payload []byte) []byte {
	body := uint64(leb128.Len(uint64(typeID)) + len(payload))
	dst = leb128.AppendUvarint(dst, leb128.SelfSize(body))
	dst = leb128.AppendUvarint(dst, uint64(typeID))
	return append(dst, payload...)
}

// appendField appends v as the value of field f. It reads values only
// through their exported accessors, so values built by the constructors and
// values decoded by the reader are written alike.
func appendField(dst []byte, f *Field, v Value) ([]byte, error) {
	if !f.Array {
		return appendSingle(dst, f, v)
	}
	if v.Kind() != KindArray {
		return dst, mismatch(f.Name, "array", v)
	}
	elems := v.Elems()
	dst = leb128.AppendUvarint(dst, uint64(len(elems)))
	var err error
	for i := range elems {
		if dst, err = appendSingle(dst, f, elems[i]); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func appendSingle(dst []byte, f *Field, v Value) ([]byte, error) {
	if !f.ConstantPool {
		dst, err := appendValue(dst, f.Type, v)
		if err != nil {
			return dst, fmt.Errorf("%s: %w", f.Name, err)
		}
		return dst, nil
	}
	switch v.Kind() {
	case KindRef:
		if !sameClass(v.Class(), f.Type) {
			return dst, mismatch(f.Name, "reference to "+f.Type.Name, v)
		}
		return leb128.AppendUvarint(dst, v.Key()), nil
	case KindNull:
		return append(dst, 0), nil
	}
	return dst, mismatch(f.Name, "reference to "+f.Type.Name, v)
}

// sameClass accepts values made with a class of another Metadata (the
// reader's, or an earlier chunk's) when the names agree; nil means untyped.
func sameClass(have, want *Class) bool {
	return have == nil || have == want || have.Name == want.Name
}

// appendValue appends v inline as a value of class c. Integers are masked
// to the width of their Java type: negative numbers are written as their
// two's complement in that width, as the JDK does.
func appendValue(dst []byte, c *Class, v Value) ([]byte, error) {
	k := c.Kind()
	if k != KindStruct && k != KindString && v.Kind() != k {
		return dst, mismatch(c.Name, c.Name, v)
	}
	switch k {
	case KindBool:
		return AppendBool(dst, v.Bool()), nil
	case KindByte:
		return append(dst, byte(v.Uint())), nil
	case KindShort, KindChar, KindInt, KindLong:
		return leb128.AppendUvarint(dst, v.Uint()), nil
	case KindFloat:
		return AppendFloat(dst, float32(v.Float())), nil
	case KindDouble:
		return AppendDouble(dst, v.Float()), nil
	case KindString:
		return appendStringValue(dst, v)
	}
	if c.SimpleType {
		if v.Kind() == KindStruct && v.Len() == 1 && sameClass(v.Class(), c) {
			v = v.Index(0)
		}
		return appendField(dst, &c.Fields[0], v)
	}
	if v.Kind() != KindStruct || v.Len() != len(c.Fields) || !sameClass(v.Class(), c) {
		return dst, mismatch(c.Name, fmt.Sprintf("struct %s with %d fields", c.Name, len(c.Fields)), v)
	}
	sub := v.Elems()
	var err error
	for i := range c.Fields {
		if dst, err = appendField(dst, &c.Fields[i], sub[i]); err != nil {
			return dst, fmt.Errorf("%s.%w", c.Name, err)
		}
	}
	return dst, nil
}

// appendStringValue writes a string as UTF-8 (tag 3) whatever encoding it
// was read in; Latin-1 and char arrays come only from JDK files, and UTF-8
// is what every reader accepts. Pooled strings stay references (tag 2).
func appendStringValue(dst []byte, v Value) ([]byte, error) {
	switch v.Kind() {
	case KindNull:
		return append(dst, encNull), nil
	case KindString:
	default:
		return dst, mismatch("", "string", v)
	}
	switch v.Encoding() {
	case encEmpty:
		return append(dst, encEmpty), nil
	case encPool:
		return AppendStringRef(dst, v.Key()), nil
	}
	// Guess a one-byte length, the common case, and move the text if the
	// length needs more; this avoids converting to a temporary string.
	start := len(dst)
	dst = v.AppendText(append(dst, encUTF8, 0))
	n := uint64(len(dst) - start - 2)
	switch {
	case n == 0:
		return append(dst[:start], encEmpty), nil
	case n < 0x80:
		dst[start+1] = byte(n)
		return dst, nil
	}
	l := leb128.Len(n)
	dst = append(dst, make([]byte, l-1)...)
	copy(dst[start+1+l:], dst[start+2:len(dst)-(l-1)])
	leb128.AppendUvarint(dst[:start+1], n)
	return dst, nil
}

func mismatch(where, want string, v Value) error {
	if where == "" {
		return fmt.Errorf("want %s, have %s: %w", want, v.Kind(), ErrValueKind)
	}
	return fmt.Errorf("%s: want %s, have %s: %w", where, want, v.Kind(), ErrValueKind)
}
