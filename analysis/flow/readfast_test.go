package flow

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/jfr"
)

// TestSourceClassByType: the reader's classes cached by type ID answer
// for the class asked, also when another chunk's metadata gives the ID to
// another class (a flow event type in one chunk, an unrelated one in the
// next) and for IDs past the cache.
func TestSourceClassByType(t *testing.T) {
	long := &jfr.Class{ID: 1, Name: "long"}
	flowClass := func(id int64, name string) *jfr.Class {
		c := &jfr.Class{ID: id, Name: name}
		for _, f := range eventByName[name].Fields {
			c.Fields = append(c.Fields, jfr.Field{Name: f.Name, Type: long})
		}
		return c
	}
	received := flowClass(20, "flightrec.flow.Received")
	other := &jfr.Class{ID: 20, Name: "jdk.ExecutionSample"}
	span := flowClass(21, flowspec.SpanEvent)
	far := flowClass(byTypeMax+5, "flightrec.flow.HandleStart")
	s := newJFRSource("x.jfr", nil, nil, t.TempDir())
	want := map[*jfr.Class]flowspec.Kind{received: flowspec.Received, far: flowspec.HandleStart}
	for range 3 {
		for _, c := range []*jfr.Class{received, span, other, received, far, other, span} {
			jc := s.class(c)
			switch {
			case c == other:
				if jc != nil {
					t.Fatalf("%s (type %d) gave a flow class", c.Name, c.ID)
				}
			case c == span:
				if jc == nil || !jc.isSpan {
					t.Fatalf("%s (type %d) gave %+v", c.Name, c.ID, jc)
				}
			default:
				if jc == nil || jc.isSpan || jc.kind != want[c] {
					t.Fatalf("%s (type %d) gave %+v", c.Name, c.ID, jc)
				}
			}
		}
	}
}

// TestTickNanos: the nanosecond ticks' shortcut gives what the general
// conversion gives, at the ends of the range too.
func TestTickNanos(t *testing.T) {
	general := func(ticks, tps int64) int64 { return ticks/tps*1e9 + ticks%tps*1e9/tps }
	for _, ticks := range []int64{0, 1, -1, 999_999_999, 1e9, 1e9 + 1, -1e9 - 1, 1700000000123456789,
		math.MaxInt64, math.MinInt64, math.MaxInt64 - 1e9 + 1} {
		for _, tps := range []int64{1e9, 1, 1000, 3_000_000_007} {
			if got, want := tickNanos(ticks, tps), general(ticks, tps); got != want {
				t.Errorf("tickNanos(%d, %d) = %d, want %d", ticks, tps, got, want)
			}
		}
	}
}

// TestUvarintWhole: the record decoder's eight-bytes-at-once varints
// (leb128.FromWord, and decodeRaw's longs through it) read what a byte-by-byte
// read of JFR's varints reads (at most nine bytes, the ninth taking eight
// bits; nothing when the record ends first), at every offset of random
// bytes and of varints of every length, up to the end of the buffer.
func TestUvarintWhole(t *testing.T) {
	byByte := func(b []byte, pos int) (v uint64, n int) {
		for i := range 9 {
			if pos+i >= len(b) {
				return 0, 0
			}
			c := b[pos+i]
			if i == 8 {
				return v | uint64(c)<<56, 9
			}
			v |= uint64(c&0x7f) << (7 * i)
			if c < 0x80 {
				return v, i + 1
			}
		}
		panic("unreachable")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var bufs [][]byte
	for range 200 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
			if rng.IntN(3) > 0 {
				b[i] |= 0x80
			}
		}
		bufs = append(bufs, b)
	}
	for _, v := range []uint64{0, 1, 127, 128, 1 << 21, 1<<56 - 1, 1 << 56, 1<<63 + 5, math.MaxUint64} {
		b := leb128.AppendUvarint(nil, v) // as JFR writes a long
		bufs = append(bufs, b, append(b, 1, 2, 3, 4, 5, 6, 7, 8, 9), append([]byte{1, 2, 3}, b...))
	}
	var f jfrFields
	for _, b := range bufs {
		for pos := range len(b) + 1 {
			wv, wn := byByte(b, pos)
			if v, n := uvarint(b, pos); v != wv || n != wn {
				t.Fatalf("uvarint(% x, %d) = %d, %d; want %d, %d", b, pos, v, n, wv, wn)
			}
			if len(b)-pos >= 8 {
				if v, n := leb128.FromWord(binary.LittleEndian.Uint64(b[pos:])); n != 0 && (v != wv || n != wn) || n == 0 && wn < 9 && wn > 0 {
					t.Fatalf("FromWord(% x) = %d, %d; want %d, %d", b[pos:pos+8], v, n, wv, wn)
				}
			}
			// A record of two longs: the varint at pos, then 5, then
			// what followed the varint; or the rest of b, cut short.
			rec := b[pos:len(b):len(b)]
			if wn > 0 {
				rec = append(append(b[pos:pos+wn:pos+wn], 5), b[pos+wn:]...)
			}
			ok := f.decodeRaw(rec, []fieldOp{opLong, opLong}, nil)
			if ok != (wn > 0) || ok && (f.ints[0] != int64(wv) || f.ints[1] != 5) {
				t.Fatalf("decodeRaw of % x: %v %d; want %d", b[pos:], ok, f.ints[:2], wv)
			}
		}
	}
}

// TestHeldVarint: a held event's ticks read back as encoding/binary
// wrote them, whether the buffer has eight bytes left or fewer, for
// values of every varint length and sign.
func TestHeldVarint(t *testing.T) {
	vals := []int64{0, 1, -1, 63, -64, 64, 1 << 20, -(1 << 27), 1<<55 - 1, -(1 << 55), 1 << 55, 1 << 62, math.MaxInt64, math.MinInt64}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		vals = append(vals, rng.Int64()>>rng.IntN(64))
	}
	for _, v := range vals {
		enc := binary.AppendVarint(nil, v)
		for _, tail := range [][]byte{nil, {1}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}} {
			buf := append(append([]byte{0x80, 0x01}, enc...), tail...)
			pos := 2
			if got := heldVarint(buf, &pos); got != v || pos != 2+len(enc) {
				t.Fatalf("heldVarint of % x = %d at %d, want %d at %d", buf, got, pos, v, 2+len(enc))
			}
		}
	}
}

// TestSpanDecUvarint: the span log's varints read from one 8-byte load
// give what encoding/binary gives, the position after them, and its
// errors (a varint past 64 bits is a bad log, one cut short needs more),
// at every offset of encoded values and of random bytes.
func TestSpanDecUvarint(t *testing.T) {
	var bufs [][]byte
	for _, v := range []uint64{0, 1, 127, 128, 1 << 20, 1<<49 - 1, 1 << 49, 1<<56 - 1, 1 << 56, 1 << 63, math.MaxUint64} {
		enc := binary.AppendUvarint(nil, v)
		bufs = append(bufs, enc, append(enc, 1, 2, 3, 4, 5, 6, 7, 8, 9))
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		b := make([]byte, rng.IntN(30))
		for i := range b {
			b[i] = byte(rng.IntN(256)) | byte(rng.IntN(4)/3*0x80)
			if rng.IntN(2) == 0 {
				b[i] |= 0x80
			}
		}
		bufs = append(bufs, b)
	}
	for _, b := range bufs {
		for pos := range len(b) + 1 {
			d := spanDec{b: b, pos: pos}
			v := d.uvarint()
			wv, wn := binary.Uvarint(b[pos:])
			var werr error
			wpos := pos + wn
			switch {
			case wn < 0:
				wv, werr, wpos = 0, errBadSpanLog, len(b)
			case wn == 0:
				wv, werr, wpos = 0, errNeedMore, len(b)
			}
			if v != wv || d.err != werr || d.pos != wpos {
				t.Fatalf("uvarint of % x at %d: %d, %v, at %d; want %d, %v, at %d", b, pos, v, d.err, d.pos, wv, werr, wpos)
			}
		}
	}
}
