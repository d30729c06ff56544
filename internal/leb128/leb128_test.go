package leb128

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	values := []uint64{0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 1<<28 - 1, 1 << 28, 1<<56 - 1, 1 << 56, math.MaxUint32, math.MaxUint64}
	for k := 1; k < 64; k++ { // every length's edges, and a value in between
		values = append(values, 1<<k-1, 1<<k, 1<<k|0x5555555555555555&(1<<k-1))
	}
	for _, v := range values {
		b := AppendUvarint(nil, v)
		if len(b) != Len(v) {
			t.Errorf("Len(%#x) = %d, encoding has %d bytes", v, Len(v), len(b))
		}
		got, n := Uvarint(b)
		if got != v || n != len(b) {
			t.Errorf("Uvarint(AppendUvarint(%#x)) = %#x, %d; want %d bytes", v, got, n, len(b))
		}

		if _, n := Uvarint(b[:len(b)-1]); n != 0 {
			t.Errorf("truncated encoding of %#x decoded with n=%d", v, n)
		}
		if v <= WordMax {
			// Word: the same bytes, the rest of the word zero.
			x, n := Word(v)
			w := binary.LittleEndian.AppendUint64(nil, x)
			if n != len(b) || !bytes.Equal(w[:n], b) || !bytes.Equal(w[n:], make([]byte, 8-n)) {
				t.Errorf("Word(%#x) = % x (%d bytes), want % x", v, w, n, b)
			}
		}
	}
	if l := Len(math.MaxUint64); l != 9 {
		t.Errorf("Len(max) = %d, want 9 (JFR's ninth byte holds 8 bits)", l)
	}
}

// The examples come from jfr-format.md §2.2, as seen in JDK 17 files.
func TestPaddedExamples(t *testing.T) {
	cases := []struct {
		b    []byte
		want uint64
	}{
		{[]byte{0xdf, 0x80, 0x80, 0x00}, 95},
		{[]byte{0x82, 0x80, 0x80, 0x00}, 2},
		{[]byte{0xb6, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 182},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 0xffffffff}, // int -1
	}
	for _, c := range cases {
		got, n := Uvarint(c.b)
		if got != c.want || n != len(c.b) {
			t.Errorf("Uvarint(% x) = %d, %d; want %d, %d", c.b, got, n, c.want, len(c.b))
		}
	}
	for width := 1; width <= 9; width++ {
		b := make([]byte, width)
		for _, v := range []uint64{0, 95, PaddedMax(width)} {
			PutPadded(b, v)
			got, n := Uvarint(b)
			if got != v || n != width {
				t.Errorf("width %d: PutPadded(%d) decodes to %d in %d bytes", width, v, got, n)
			}
		}
	}
}

func TestSelfSize(t *testing.T) {
	for _, payload := range []uint64{0, 1, 125, 126, 127, 128, 16380, 16381, 16382, 16383, 1<<28 - 3, 1 << 28, 300 << 20} {
		n := SelfSize(payload)
		if uint64(Len(n))+payload != n {
			t.Errorf("SelfSize(%d) = %d, not self-consistent", payload, n)
		}
		if n > 1 && uint64(Len(n-1))+payload == n-1 {
			t.Errorf("SelfSize(%d) = %d is not minimal", payload, n)
		}
	}
}

func FuzzUvarint(f *testing.F) {
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n := Uvarint(b)
		if n == 0 {
			return
		}
		if n > len(b) || n > MaxLen {
			t.Fatalf("n = %d for %d bytes", n, len(b))
		}
		if m := Len(v); m > n {
			t.Fatalf("minimal length %d exceeds consumed %d", m, n)
		}
	})
}

// TestFromWord: FromWord reads back what Word writes, whatever follows in
// the word, and refuses a varint longer than eight bytes.
func TestFromWord(t *testing.T) {
	for l := 0; l <= 56; l++ {
		for _, v := range []uint64{1<<l - 1, 1 << l >> 1} {
			if v > WordMax {
				continue
			}
			x, n := Word(v)
			if got, m := FromWord(x | ^uint64(0)<<(8*n)&^(1<<63)); got != v || m != n {
				t.Fatalf("FromWord(Word(%#x)) = %#x, %d; want %d bytes", v, got, m, n)
			}
		}
	}
	if _, n := FromWord(^uint64(0)); n != 0 {
		t.Errorf("FromWord of eight continued bytes: length %d, want 0", n)
	}
}

// TestLenRange: after Set(v), LenRange.Word gives Word(u) for every u as
// long as v, and refuses every other u, whatever the order of the values.
func TestLenRange(t *testing.T) {
	var values []uint64
	for k := 0; k <= 56; k++ { // every length's edges, and a value in between
		values = append(values, 1<<k-1, min(1<<k, uint64(WordMax)), 1<<k|0x5555555555555555&(1<<k-1)&WordMax)
	}
	values = append(values, math.MaxUint64, 1<<63, WordMax+1)
	var r LenRange
	for _, u := range values {
		if _, _, ok := r.Word(u); ok {
			t.Fatalf("the zero LenRange takes %#x", u)
		}
	}
	for _, v := range values {
		if v > WordMax {
			continue
		}
		r.Set(v)
		for _, u := range values {
			x, n, ok := r.Word(u)
			if want := u <= WordMax && Len(u) == Len(v); ok != want {
				t.Fatalf("after Set(%#x): Word(%#x) ok = %v, want %v", v, u, ok, want)
			}
			if wx, wn := Word(u); ok && (x != wx || n != wn) {
				t.Fatalf("after Set(%#x): Word(%#x) = %#x, %d; want %#x, %d", v, u, x, n, wx, wn)
			}
		}
	}
}
