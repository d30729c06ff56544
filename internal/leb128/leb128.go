package leb128

import (
	"errors"
	"math/bits"
)

// MaxLen is the longest encoding of a 64-bit value.
const MaxLen = 9

// ErrTruncated reports a varint that runs past the end of its buffer.
var ErrTruncated = errors.New("truncated varint")

// Uvarint decodes the varint at the start of b. It returns the value and the
// number of bytes read; n is 0 when b ends before the varint does.
func Uvarint(b []byte) (v uint64, n int) {
	if len(b) >= MaxLen {
		return uvarint9(b)
	}
	for i := 0; i < 8; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0 // eight continuation bytes and no ninth
}

// uvarint9 decodes from a buffer known to hold at least MaxLen bytes, so the
// loop needs no bounds checks.
func uvarint9(b []byte) (v uint64, n int) {
	b = b[:MaxLen]
	for i := 0; i < 8; i++ {
		c := b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return v | uint64(b[8])<<56, 9
}

// Len returns the number of bytes of the minimal encoding of v.
func Len(v uint64) int {
	n := 1
	for v >= 0x80 && n < MaxLen {
		v >>= 7
		n++
	}
	return n
}

// WordMax is the largest value Word takes: 8 bytes of 7 bits.
const WordMax = 1<<56 - 1

// Word returns the minimal encoding of v <= WordMax as a word to store
// little-endian, and its length. The 7-bit groups are spread with three
// shift-and-mask steps that do not wait on one another (Spread), and the
// continuation bits set from a table: the recorder's emit path stores the
// word whole rather than a byte a turn (a chain of dependent turns).
func Word(v uint64) (uint64, int) {
	l := bits.Len64(v)
	return Spread(v) | wordContinued[l], int(wordLen[l])
}

// Spread returns the 7-bit groups of v <= WordMax one to a byte,
// little-endian, with no continuation bits: Word without its length.
func Spread(v uint64) uint64 {
	// A zero bit after each 7: 28-bit halves into 32-bit lanes, 14-bit
	// quarters into 16-bit lanes, then 7-bit groups into bytes.
	x := v&0xfffffff | v<<4&0xfffffff00000000
	x = x&0x00003fff00003fff | x<<2&0x3fff00003fff0000
	return x&0x007f007f007f007f | x<<1&0x7f007f007f007f00
}

// LenRange remembers the values whose minimal encoding takes as many
// bytes as one value Set saw, so that Word can give the length of
// another without computing it from the value: in the emit path the
// length says where the record's next bytes go, and computed from a
// time just read (bits.Len64 and a table) it made every later store of
// the record wait on the clock (1.5-2 ns an event). The zero LenRange
// holds no values.
type LenRange struct {
	lo, span uint64 // the values: lo <= v < lo+span
	cont     uint64 // their continuation bits
	n        int    // their length
}

// Word returns Word(v) if v is in the range; ok false otherwise.
func (r *LenRange) Word(v uint64) (x uint64, n int, ok bool) {
	return Spread(v) | r.cont, r.n, v-r.lo < r.span
}

// Set makes the range that of the values as long as v <= WordMax.
func (r *LenRange) Set(v uint64) {
	l := bits.Len64(v)
	n := int(wordLen[l])
	r.lo, r.span = 0, 1<<7
	if n > 1 {
		r.lo = 1 << (7 * (n - 1))
		r.span = 1<<(7*n) - r.lo
	}
	r.cont, r.n = wordContinued[l], n
}

// FromWord decodes the varint that starts the eight bytes x (loaded
// little-endian), Word's inverse: the bytes up to the first without its
// high bit, their 7-bit groups gathered by shifts, without a branch per
// byte (a loop's exit, at a length that changes from field to field, is
// mispredicted). n is 0 if the varint is longer than x.
func FromWord(x uint64) (v uint64, n int) {
	last := ^x & 0x8080808080808080 // the high bits of bytes that end a varint
	if last == 0 {
		return 0, 0
	}
	x &= last ^ (last - 1) // the bytes up to the first end
	v = x&0x7f | x>>1&(0x7f<<7) | x>>2&(0x7f<<14) | x>>3&(0x7f<<21) |
		x>>4&(0x7f<<28) | x>>5&(0x7f<<35) | x>>6&(0x7f<<42) | x>>7&(0x7f<<49)
	return v, bits.TrailingZeros64(last)>>3 + 1
}

// wordLen is the length of the encoding of a value of l bits, up to 56,
// wordContinued its continuation bits (on every byte but the last).
var (
	wordLen       [65]uint8
	wordContinued [65]uint64
)

func init() {
	for l := range wordLen {
		n := max(1, min((l+6)/7, 8))
		wordLen[l] = uint8(n)
		wordContinued[l] = 0x8080808080808080 >> (72 - 8*n)
	}
}

// AppendUvarint appends the minimal encoding of v to dst.
func AppendUvarint(dst []byte, v uint64) []byte {
	for i := 0; i < 8; i++ {
		if v < 0x80 {
			return append(dst, byte(v))
		}
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// PutPadded writes v into b as a varint that fills all of b exactly, so a size
// reserved in advance can be patched in place. len(b) must be between 1 and 9;
// v must fit in 7*len(b) bits (8 more for the ninth byte).
func PutPadded(b []byte, v uint64) {
	last := len(b) - 1
	for i := 0; i < last; i++ {
		b[i] = byte(v) | 0x80
		v >>= 7
	}
	if last == 8 {
		b[last] = byte(v)
	} else {
		b[last] = byte(v) & 0x7f
	}
}

// PaddedMax returns the largest value that PutPadded can store in n bytes.
func PaddedMax(n int) uint64 {
	if n >= MaxLen {
		return ^uint64(0)
	}
	return 1<<(7*uint(n)) - 1
}

// SelfSize returns the minimal self-inclusive size of a record whose content
// after the size field is payload bytes long: n such that Len(n)+payload == n.
func SelfSize(payload uint64) uint64 {
	n := payload + 1
	for uint64(Len(n))+payload != n {
		n = payload + uint64(Len(n))
	}
	return n
}
