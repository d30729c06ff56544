package jfr

import (
	"fmt"
	"math"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/flightrec/flightrec/internal/leb128"
)

// Kind is the kind of a decoded value.
type Kind uint8

// Value kinds. Byte, Short, Int and Long are signed; Char is a UTF-16 code
// unit. KindRef is a constant-pool reference that Resolve turns into the
// constant; KindNull is a null string, a null reference or a missing constant.
const (
	KindInvalid Kind = iota
	KindNull
	KindBool
	KindByte
	KindShort
	KindChar
	KindInt
	KindLong
	KindFloat
	KindDouble
	KindString
	KindStruct
	KindArray
	KindRef
)

var kindNames = [...]string{"invalid", "null", "boolean", "byte", "short", "char", "int", "long", "float", "double", "string", "struct", "array", "ref"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Value is one decoded value: a primitive, a string, a struct, an array or a
// constant-pool reference. Values of an event share memory with the reader
// and stay valid until the next call to ReadEvent; constants stay valid
// until the reader moves to the next chunk.
//
// A Value is 32 bytes: ptr points to the string's encoded bytes, to the
// struct's fields or array's elements (n of them), or, for references and
// pooled strings, to the chunk's constant pools.
type Value struct {
	kind  Kind
	enc   uint8  // string encoding tag
	n     uint32 // length of what ptr points to
	class *Class // declared type
	bits  uint64 // number bits, string length in chars, or constant key
	ptr   unsafe.Pointer
}

func (v *Value) raw() []byte {
	if v.ptr == nil {
		return nil
	}
	return unsafe.Slice((*byte)(v.ptr), v.n)
}

func (v *Value) sub() []Value {
	if v.ptr == nil || (v.kind != KindStruct && v.kind != KindArray) {
		return nil
	}
	return unsafe.Slice((*Value)(v.ptr), v.n)
}

func (v *Value) pools() *pools { return (*pools)(v.ptr) }

func bytesValue(b []byte) (unsafe.Pointer, uint32) {
	if len(b) == 0 {
		return nil, 0
	}
	return unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b))
}

func valuesOf(c *Class, k Kind, vs []Value) Value {
	v := Value{kind: k, class: c, n: uint32(len(vs))}
	if len(vs) > 0 {
		v.ptr = unsafe.Pointer(unsafe.SliceData(vs))
	}
	return v
}

// Kind returns the value's kind.
func (v Value) Kind() Kind { return v.kind }

// Class returns the value's declared type (nil for null values).
func (v Value) Class() *Class { return v.class }

// IsNull tells whether v is null (null string, null reference, missing
// constant).
func (v Value) IsNull() bool { return v.kind == KindNull || v.kind == KindInvalid }

// Bool returns a boolean's value; any non-zero byte is true.
func (v Value) Bool() bool { return v.bits != 0 }

// Int returns an integral value as a signed 64-bit number, sign-extended from
// the width of its type (chars are unsigned).
func (v Value) Int() int64 {
	switch v.kind {
	case KindByte:
		return int64(int8(v.bits))
	case KindShort:
		return int64(int16(v.bits))
	case KindChar:
		return int64(uint16(v.bits))
	case KindInt:
		return int64(int32(v.bits))
	case KindBool:
		if v.bits != 0 {
			return 1
		}
		return 0
	}
	return int64(v.bits)
}

// Uint returns an integral value as unsigned, masked to the width of its type
// (for fields annotated jdk.jfr.Unsigned).
func (v Value) Uint() uint64 {
	switch v.kind {
	case KindByte:
		return uint64(uint8(v.bits))
	case KindShort, KindChar:
		return uint64(uint16(v.bits))
	case KindInt:
		return uint64(uint32(v.bits))
	}
	return v.bits
}

// Float returns a float or double value.
func (v Value) Float() float64 {
	switch v.kind {
	case KindFloat:
		return float32bits(v.bits)
	case KindDouble:
		return math.Float64frombits(v.bits)
	}
	return float64(v.Int())
}

// Key returns the constant-pool key of a reference.
func (v Value) Key() uint64 { return v.bits }

// Resolve returns the constant a reference (or a pooled string) points to,
// or a null value if the key is 0 or missing from the pool. Other values are
// returned unchanged.
func (v Value) Resolve() Value {
	if v.kind == KindString && v.enc == encPool {
		p := v.pools()
		if p == nil {
			return Value{kind: KindNull}
		}
		c, ok := p.lookup(p.stringClass, v.bits)
		if !ok || (c.kind == KindString && c.enc == encPool) {
			return Value{kind: KindNull}
		}
		return c
	}
	if v.kind != KindRef {
		return v
	}
	c, ok := v.pools().lookup(v.class, v.bits)
	if !ok || c.kind == KindRef {
		return Value{kind: KindNull, class: v.class}
	}
	return c
}

// Len returns the number of elements of an array or fields of a struct.
func (v Value) Len() int { return len(v.sub()) }

// Index returns element i of an array or field i of a struct.
func (v Value) Index(i int) Value { return v.sub()[i] }

// Elems returns the elements of an array or the fields of a struct.
func (v Value) Elems() []Value { return v.sub() }

// Field returns the struct field with the given name (resolving a
// reference first); ok is false if there is none.
func (v Value) Field(name string) (f Value, ok bool) {
	v = v.Resolve()
	if v.kind != KindStruct {
		return Value{}, false
	}
	i := v.class.FieldIndex(name)
	sub := v.sub()
	if i < 0 || i >= len(sub) {
		return Value{}, false
	}
	return sub[i], true
}

// String returns the content of a string value (resolving pooled strings)
// and "" for a null one. For other kinds it returns a short description.
func (v Value) String() string {
	switch v.kind {
	case KindString:
		if v.enc == encUTF8 {
			return string(v.raw())
		}
		return string(v.AppendText(nil))
	case KindNull:
		return ""
	}
	return fmt.Sprintf("<%s value>", v.kind)
}

// AppendText appends the UTF-8 text of a string value to dst without
// allocating beyond dst's growth. Invalid UTF-16 surrogates and invalid
// UTF-8 become U+FFFD.
func (v Value) AppendText(dst []byte) []byte {
	if v.kind != KindString {
		return dst
	}
	switch v.enc {
	case encUTF8:
		return append(dst, v.raw()...)
	case encLatin1:
		for _, c := range v.raw() {
			dst = utf8.AppendRune(dst, rune(c))
		}
		return dst
	case encChars:
		b := v.raw()
		var pending rune = -1
		for len(b) > 0 {
			u, n := leb128.Uvarint(b)
			if n == 0 {
				break
			}
			b = b[n:]
			r := rune(uint16(u))
			if pending >= 0 {
				if utf16.IsSurrogate(r) && r >= 0xdc00 {
					dst = utf8.AppendRune(dst, utf16.DecodeRune(pending, r))
					pending = -1
					continue
				}
				dst = utf8.AppendRune(dst, utf8.RuneError)
				pending = -1
			}
			if r >= 0xd800 && r < 0xdc00 {
				pending = r
				continue
			}
			if utf16.IsSurrogate(r) {
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		}
		if pending >= 0 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		}
		return dst
	case encPool:
		return v.Resolve().AppendText(dst)
	}
	return dst
}

// Encoding returns the string encoding tag of a string value (0 null,
// 1 empty, 2 pooled, 3 UTF-8, 4 char array, 5 Latin-1).
func (v Value) Encoding() int { return int(v.enc) }

// Null returns a null value.
func Null() Value { return Value{kind: KindNull} }

// Constructors used by writers and tests.

// BoolValue makes a boolean.
func BoolValue(b bool) Value {
	v := Value{kind: KindBool}
	if b {
		v.bits = 1
	}
	return v
}

// IntValue makes an integral value of the given kind (KindByte, KindShort,
// KindChar, KindInt or KindLong).
func IntValue(k Kind, n int64) Value { return Value{kind: k, bits: uint64(n)} }

// FloatValue makes a float (KindFloat) or double (KindDouble).
func FloatValue(k Kind, f float64) Value {
	if k == KindFloat {
		return Value{kind: KindFloat, bits: uint64(math.Float32bits(float32(f)))}
	}
	return Value{kind: KindDouble, bits: math.Float64bits(f)}
}

// StringValue makes a UTF-8 string.
func StringValue(s string) Value {
	if s == "" {
		return Value{kind: KindString, enc: encEmpty}
	}
	v := Value{kind: KindString, enc: encUTF8}
	v.ptr, v.n = bytesValue([]byte(s))
	return v
}

// RefValue makes a constant-pool reference to key in the pool of class c.
func RefValue(c *Class, key uint64) Value { return Value{kind: KindRef, class: c, bits: key} }

// StructValue makes a struct of class c from its field values.
func StructValue(c *Class, fields ...Value) Value {
	return valuesOf(c, KindStruct, fields)
}

// ArrayValue makes an array with elements of class c.
func ArrayValue(c *Class, elems ...Value) Value {
	return valuesOf(c, KindArray, elems)
}
