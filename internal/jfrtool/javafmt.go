package jfrtool

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
)

// This file renders numbers, durations and times the way the JDK 17
// classes used by `jfr` do (Double.toString, String.format("%.Nf"),
// java.time's toString methods and jfr's own unit formatting). Each
// function appends to a byte slice so the printers do not allocate.

// javaDigits returns the decimal digits (no trailing zeros) and the decimal
// exponent of v > 0, with v = 0.d1d2... × 10^decExp, as JDK 17's
// FloatingDecimal produces them. nSig is 53 for doubles and 24 for floats.
//
// JDK 17 is not always shortest, and this reproduces its two common
// deviations: integers below 2^63 with a binary exponent above nSig print
// all their digits up to a table-driven cut, and a decimal exactly halfway
// to a neighbouring value is never chosen (1e23 prints as
// 9.999999999999999E22). Not reproduced: for some values between 2^84
// and 2^86 (mostly floats) JDK 17 ends with a last digit one below the
// correctly rounded one; we print the correctly rounded digit.
func javaDigits(buf []byte, v float64, nSig int) ([]byte, int) {
	if v == math.Trunc(v) && v >= 1 && v < 1<<63 {
		_, e := math.Frexp(v)
		e-- // unbiased exponent of the normalised value
		lv := uint64(v)
		decExp := 0
		if e > nSig {
			if k := insignificantDigits(e - nSig - 1); k > 0 {
				pow := uint64(1)
				for range k {
					pow *= 10
				}
				res := lv % pow
				lv /= pow
				decExp += k
				if res >= pow>>1 {
					lv++
				}
			}
		}
		start := len(buf)
		buf = strconv.AppendUint(buf, lv, 10)
		n := len(buf) - start
		decExp += n
		for len(buf) > start+1 && buf[len(buf)-1] == '0' {
			buf = buf[:len(buf)-1]
		}
		return buf, decExp
	}
	bits := 64
	if nSig == 24 {
		bits = 32
	}
	start := len(buf)
	var tmp [32]byte
	buf, e := splitDigits(buf, strconv.AppendFloat(tmp[:0], v, 'e', -1, bits))
	if v >= 1<<63 && onBoundary(buf[start:], e, v, nSig) {
		// JDK 17 does not accept a decimal lying exactly halfway to a
		// neighbouring value (1e23 for 99999999999999991611392), which
		// shortest algorithms do when round-half-even maps it back. It
		// then prints the closest value with more digits strictly
		// inside the interval: 9.999999999999999E22.
		maxDigits := 17
		if nSig == 24 {
			maxDigits = 9
		}
		for n := len(buf) - start + 1; n <= maxDigits; n++ {
			d, de := splitDigits(buf[:start], strconv.AppendFloat(tmp[:0], v, 'e', n-1, bits))
			for len(d) > start+1 && d[len(d)-1] == '0' {
				d = d[:len(d)-1]
			}
			if !onBoundary(d[start:], de, v, nSig) && inside(d[start:], de, v, nSig) {
				return d, de
			}
		}
	}
	return buf, e
}

// splitDigits appends the digits of s (d[.ddd]e±XX) to buf and returns
// the decimal exponent for the form 0.ddd × 10^e.
func splitDigits(buf, s []byte) ([]byte, int) {
	i := 0
	for ; i < len(s) && s[i] != 'e'; i++ {
		if s[i] != '.' {
			buf = append(buf, s[i])
		}
	}
	exp, _ := strconv.Atoi(string(s[i+1:]))
	return buf, exp + 1
}

// bounds returns the midpoints between v and its two neighbours, scaled
// by 2 so they are integers (v >= 2^63 is an integer).
func bounds(v float64, nSig int) (lo, hi *big.Int) {
	frac, exp := math.Frexp(v) // v = frac × 2^exp, frac in [0.5, 1)
	m := int64(math.Ldexp(frac, nSig))
	e := exp - nSig // v = m × 2^e, e >= 0 here
	hi = new(big.Int).Lsh(big.NewInt(2*m+1), uint(e))
	if m == 1<<(nSig-1) { // lower neighbour is closer at a power of two
		lo = new(big.Int).Lsh(big.NewInt(4*m-1), uint(e))
		lo.Rsh(lo, 1)
	} else {
		lo = new(big.Int).Lsh(big.NewInt(2*m-1), uint(e))
	}
	return lo, hi
}

// decimalTimes2 is 2 × 0.d × 10^e as an integer (nil if not integral).
func decimalTimes2(d []byte, e int) *big.Int {
	x, ok := new(big.Int).SetString(string(d), 10)
	if !ok {
		return nil
	}
	shift := e - len(d)
	if shift < 0 {
		return nil
	}
	x.Mul(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil))
	return x.Lsh(x, 1)
}

func onBoundary(d []byte, e int, v float64, nSig int) bool {
	// Cheap test first: a midpoint (2m±1)×2^(be-1) has exactly be-1
	// factors of two (be-2 for the lower one at a power of two), and so
	// must the decimal d×10^k.
	if k := e - len(d); k >= 0 && len(d) <= 18 {
		n, err := strconv.ParseUint(string(d), 10, 64)
		_, exp := math.Frexp(v)
		be := exp - nSig
		if twos := bits.TrailingZeros64(n) + k; err == nil && n != 0 && twos != be-1 && twos != be-2 {
			return false
		}
	}
	x := decimalTimes2(d, e)
	if x == nil {
		return false
	}
	lo, hi := bounds(v, nSig)
	return x.Cmp(lo) == 0 || x.Cmp(hi) == 0
}

func inside(d []byte, e int, v float64, nSig int) bool {
	x := decimalTimes2(d, e)
	if x == nil {
		return false
	}
	lo, hi := bounds(v, nSig)
	return x.Cmp(lo) > 0 && x.Cmp(hi) < 0
}

// insignificantTable gives, for a power of two 2^(i), how many low decimal
// digits of an integer that large are below a double's precision
// (FloatingDecimal's insignificantDigitsNumber).
var insignificantTable = [...]uint8{0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 14, 14, 14, 15, 15, 15, 15, 16, 16, 16, 17, 17, 17, 18, 18, 18, 19}

func insignificantDigits(p2 int) int {
	if p2 > 1 && p2 < len(insignificantTable) {
		return int(insignificantTable[p2])
	}
	return 0
}

// appendJavaDouble appends Java's Double.toString(v).
func appendJavaDouble(dst []byte, v float64) []byte { return appendJavaFP(dst, v, 53) }

// appendJavaFloat appends Java's Float.toString(v).
func appendJavaFloat(dst []byte, v float32) []byte { return appendJavaFP(dst, float64(v), 24) }

func appendJavaFP(dst []byte, v float64, nSig int) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(v, -1):
		return append(dst, "-Infinity"...)
	case v == 0:
		if math.Signbit(v) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if v < 0 {
		dst = append(dst, '-')
		v = -v
	}
	// The smallest subnormals: Java's digit loop stops one digit later
	// than the shortest representation (5e-324, 1e-45).
	if nSig == 53 && v == math.SmallestNonzeroFloat64 {
		return append(dst, "4.9E-324"...)
	}
	if nSig == 24 && v == math.SmallestNonzeroFloat32 {
		return append(dst, "1.4E-45"...)
	}
	var tmp [32]byte
	d, e := javaDigits(tmp[:0], v, nSig)
	switch {
	case e > 0 && e < 8:
		if len(d) <= e {
			dst = append(dst, d...)
			for range e - len(d) {
				dst = append(dst, '0')
			}
			return append(dst, ".0"...)
		}
		dst = append(dst, d[:e]...)
		dst = append(dst, '.')
		return append(dst, d[e:]...)
	case e <= 0 && e > -3:
		dst = append(dst, "0."...)
		for range -e {
			dst = append(dst, '0')
		}
		return append(dst, d...)
	}
	dst = append(dst, d[0], '.')
	if len(d) > 1 {
		dst = append(dst, d[1:]...)
	} else {
		dst = append(dst, '0')
	}
	dst = append(dst, 'E')
	return strconv.AppendInt(dst, int64(e-1), 10)
}

// appendJavaFixed appends Java's String.format("%.<prec>f", v) in an
// English locale: the value's toString digits rounded half up as a
// decimal string (so 0.125 gives 0.13, unlike Go's exact rounding).
func appendJavaFixed(dst []byte, v float64, prec int) []byte {
	if math.IsNaN(v) {
		return append(dst, "NaN"...)
	}
	if math.Signbit(v) {
		dst = append(dst, '-')
		v = -v
	}
	if math.IsInf(v, 0) {
		return append(dst, "Infinity"...)
	}
	var tmp [40]byte
	var d []byte
	e := 0
	if v == 0 {
		d = append(tmp[:0], '0')
	} else {
		d, e = javaDigits(tmp[:0], v, 53)
	}
	// Round the digit string at prec digits after the point.
	if p := e + prec; p >= 0 && p < len(d) {
		if p == 0 {
			if d[0] >= '5' {
				d[0] = '1'
				for i := 1; i < len(d); i++ {
					d[i] = '0'
				}
				e++
			} else {
				for i := range d {
					d[i] = '0'
				}
			}
		} else if d[p] >= '5' {
			i := p - 1
			for i > 0 && d[i] == '9' {
				i--
			}
			if d[i] == '9' { // all nines
				d[0] = '1'
				for j := 1; j < len(d); j++ {
					d[j] = '0'
				}
				e++
			} else {
				d[i]++
				for j := i + 1; j < len(d); j++ {
					d[j] = '0'
				}
			}
		} else {
			for j := p; j < len(d); j++ {
				d[j] = '0'
			}
		}
	}
	nfrac := 0
	if e > 0 {
		if len(d) < e {
			dst = append(dst, d...)
			for range e - len(d) {
				dst = append(dst, '0')
			}
		} else {
			dst = append(dst, d[:e]...)
			t := min(len(d)-e, prec)
			if t > 0 {
				dst = append(dst, '.')
				dst = append(dst, d[e:e+t]...)
				nfrac = t
			}
		}
	} else {
		zeros := max(0, min(-e, prec))
		t := max(0, min(len(d), prec+e))
		dst = append(dst, '0')
		if zeros > 0 || t > 0 {
			dst = append(dst, '.')
			for range zeros {
				dst = append(dst, '0')
			}
			dst = append(dst, d[:t]...)
			nfrac = zeros + t
		}
	}
	if prec > 0 {
		if nfrac == 0 {
			dst = append(dst, '.')
		}
		for range prec - nfrac {
			dst = append(dst, '0')
		}
	}
	return dst
}

// Duration is a java.time.Duration: seconds and a nanosecond adjustment in
// [0, 1e9).
type Duration struct {
	Seconds int64
	Nanos   int32
}

// durationOfNanos is Duration.ofNanos.
func durationOfNanos(n int64) Duration {
	s, r := n/1e9, n%1e9
	if r < 0 {
		s--
		r += 1e9
	}
	return Duration{s, int32(r)}
}

// minDuration is the sentinel jfr uses for Long.MIN_VALUE timespans.
var minDuration = Duration{Seconds: math.MinInt64}

// appendISODuration appends Duration.toString(): PT8H6M12.345S.
func appendISODuration(dst []byte, d Duration) []byte {
	if d.Seconds == 0 && d.Nanos == 0 {
		return append(dst, "PT0S"...)
	}
	eff := d.Seconds
	if eff < 0 && d.Nanos > 0 {
		eff++
	}
	h := eff / 3600
	m := (eff % 3600) / 60
	sec := eff % 60
	dst = append(dst, "PT"...)
	start := len(dst)
	if h != 0 {
		dst = strconv.AppendInt(dst, h, 10)
		dst = append(dst, 'H')
	}
	if m != 0 {
		dst = strconv.AppendInt(dst, m, 10)
		dst = append(dst, 'M')
	}
	if sec == 0 && d.Nanos == 0 && len(dst) > start {
		return dst
	}
	if d.Seconds < 0 && d.Nanos > 0 && sec == 0 {
		dst = append(dst, "-0"...)
	} else {
		dst = strconv.AppendInt(dst, sec, 10)
	}
	if d.Nanos > 0 {
		var frac int64
		if d.Seconds < 0 {
			frac = 2e9 - int64(d.Nanos)
		} else {
			frac = int64(d.Nanos) + 1e9
		}
		var tmp [12]byte
		f := strconv.AppendInt(tmp[:0], frac, 10)
		for f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		dst = append(dst, '.')
		dst = append(dst, f[1:]...)
	}
	return append(dst, 'S')
}

// appendPad appends v in decimal, zero-padded to width digits.
func appendPad(dst []byte, v int64, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], v, 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// civil converts days since 1970-01-01 to a proleptic Gregorian date.
func civil(days int64) (y int64, m, d int) {
	// Howard Hinnant's days_from_civil inverse.
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// dateCache remembers the date and time text up to the minute of the last
// timestamp formatted: events come in time order, so most share it.
type dateCache struct {
	minute int64 // local minutes since the epoch
	text   []byte
	valid  bool
}

// appendOffsetDateTime appends OffsetDateTime.toString() for the instant
// epochNanos seen at the given offset (seconds east of UTC). dc may be nil.
func appendOffsetDateTime(dst []byte, epochNanos int64, offset int, dc *dateCache) []byte {
	secs := floorDiv(epochNanos, 1e9)
	nano := epochNanos - secs*1e9
	local := secs + int64(offset)
	minute := floorDiv(local, 60)
	if dc != nil && dc.valid && dc.minute == minute {
		dst = append(dst, dc.text...)
	} else {
		start := len(dst)
		dst = appendDateMinute(dst, local)
		if dc != nil {
			dc.minute, dc.valid = minute, true
			dc.text = append(dc.text[:0], dst[start:]...)
		}
	}
	if s := local - minute*60; s > 0 || nano > 0 {
		dst = append(dst, ':')
		dst = appendPad(dst, s, 2)
		switch {
		case nano == 0:
		case nano%1e6 == 0:
			dst = append(dst, '.')
			dst = appendPad(dst, nano/1e6, 3)
		case nano%1e3 == 0:
			dst = append(dst, '.')
			dst = appendPad(dst, nano/1e3, 6)
		default:
			dst = append(dst, '.')
			dst = appendPad(dst, nano, 9)
		}
	}
	return appendOffset(dst, offset)
}

// appendDateMinute appends yyyy-MM-ddTHH:mm of local epoch seconds.
func appendDateMinute(dst []byte, local int64) []byte {
	days := floorDiv(local, 86400)
	sod := local - days*86400
	y, mo, d := civil(days)
	switch {
	case y > 9999:
		dst = append(dst, '+')
		dst = strconv.AppendInt(dst, y, 10)
	case y < 0:
		dst = append(dst, '-')
		dst = appendPad(dst, -y, 4)
	default:
		dst = appendPad(dst, y, 4)
	}
	dst = append(dst, '-')
	dst = appendPad(dst, int64(mo), 2)
	dst = append(dst, '-')
	dst = appendPad(dst, int64(d), 2)
	dst = append(dst, 'T')
	dst = appendPad(dst, sod/3600, 2)
	dst = append(dst, ':')
	return appendPad(dst, sod%3600/60, 2)
}

func appendOffset(dst []byte, offset int) []byte {
	if offset == 0 {
		return append(dst, 'Z')
	}
	if offset < 0 {
		dst = append(dst, '-')
		offset = -offset
	} else {
		dst = append(dst, '+')
	}
	dst = appendPad(dst, int64(offset/3600), 2)
	dst = append(dst, ':')
	dst = appendPad(dst, int64(offset%3600/60), 2)
	if s := offset % 60; s != 0 {
		dst = append(dst, ':')
		dst = appendPad(dst, int64(s), 2)
	}
	return dst
}

// minOffsetDateTime is OffsetDateTime.MIN's text, jfr's rendering of a
// Long.MIN_VALUE timestamp.
const minOffsetDateTime = "-999999999-01-01T00:00+18:00"

// appendLocalClock appends HH:mm:ss.SSS of the instant at the offset (the
// human format's timestamps; the fraction is truncated).
func appendLocalClock(dst []byte, epochNanos int64, offset int) []byte {
	secs := floorDiv(epochNanos, 1e9)
	nano := epochNanos - secs*1e9
	local := secs + int64(offset)
	sod := local - floorDiv(local, 86400)*86400
	dst = appendPad(dst, sod/3600, 2)
	dst = append(dst, ':')
	dst = appendPad(dst, sod%3600/60, 2)
	dst = append(dst, ':')
	dst = appendPad(dst, sod%60, 2)
	dst = append(dst, '.')
	return appendPad(dst, nano/1e6, 3)
}

// digitCount is the number of decimal digits of v >= 1.
func digitCount(v int64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// durNanos is a Duration as 128-bit-safe parts for formatDuration: all
// arithmetic stays in seconds + nanos like java.time does.
func (d Duration) isNeg() bool { return d.Seconds < 0 }

func (d Duration) negate() Duration {
	if d.Nanos == 0 {
		return Duration{-d.Seconds, 0}
	}
	return Duration{-d.Seconds - 1, 1e9 - d.Nanos}
}

// appendHumanDuration appends jfr's Utils.formatDuration: three
// significant digits below a minute, then "m s", "h m" and "d h".
func appendHumanDuration(dst []byte, d Duration) []byte {
	if d == minDuration {
		return append(dst, "N/A"...)
	}
	if d.Seconds == 0 && d.Nanos == 0 {
		return append(dst, "0 s"...)
	}
	neg := d.isNeg()
	if neg {
		d = d.negate()
	}
	r := roundPos(d)
	if r.Seconds == 0 && r.Nanos == 0 {
		return append(dst, "0 s"...)
	}
	if neg {
		dst = append(dst, '-')
	}
	return appendPosDuration(dst, r)
}

func roundPos(d Duration) Duration {
	switch {
	case d.Seconds == 0 && d.Nanos < 1000:
		return d
	case d.Seconds == 0:
		m := pow10(digitCount(int64(d.Nanos)) - 3)
		n := int64(math.Round(float64(d.Nanos)/float64(m))) * m
		return durationOfNanos(n)
	case d.Seconds < 60:
		millis := int64(d.Nanos) / 1e6
		m := pow10(digitCount(d.Seconds))
		ms := int64(math.Round(float64(millis)/float64(m))) * m
		return addNanos(Duration{d.Seconds, 0}, ms*1e6)
	case d.Seconds < 3600:
		t := addNanos(d, 500e6)
		return Duration{t.Seconds, 0}
	case d.Seconds < 86400:
		t := addNanos(d, 30e9)
		return Duration{t.Seconds - t.Seconds%60, 0}
	}
	t := addNanos(d, 1800e9)
	return Duration{t.Seconds - t.Seconds%3600, 0}
}

func addNanos(d Duration, n int64) Duration {
	x := durationOfNanos(int64(d.Nanos) + n)
	return Duration{d.Seconds + x.Seconds, x.Nanos}
}

func appendPosDuration(dst []byte, d Duration) []byte {
	switch {
	case d.Seconds == 0 && d.Nanos < 1000:
		dst = appendJavaFixed(dst, float64(d.Nanos)/1e6, 6)
		return append(dst, " ms"...)
	case d.Seconds == 0:
		k := 9 - digitCount(int64(d.Nanos))
		dst = appendJavaFixed(dst, float64(d.Nanos)/1e6, k)
		return append(dst, " ms"...)
	case d.Seconds < 60:
		k := 3 - digitCount(d.Seconds)
		millis := int64(d.Nanos) / 1e6
		dst = appendJavaFixed(dst, float64(d.Seconds)+float64(millis)/1000.0, k)
		return append(dst, " s"...)
	case d.Seconds < 3600:
		dst = strconv.AppendInt(dst, d.Seconds/60, 10)
		dst = append(dst, " m "...)
		dst = strconv.AppendInt(dst, d.Seconds%60, 10)
		return append(dst, " s"...)
	case d.Seconds < 86400:
		dst = strconv.AppendInt(dst, d.Seconds/3600, 10)
		dst = append(dst, " h "...)
		dst = strconv.AppendInt(dst, d.Seconds%3600/60, 10)
		return append(dst, " m"...)
	}
	dst = strconv.AppendInt(dst, d.Seconds/86400, 10)
	dst = append(dst, " d "...)
	dst = strconv.AppendInt(dst, d.Seconds%86400/3600, 10)
	return append(dst, " h"...)
}

// Data amounts (jdk.jfr.internal.Utils).

func appendDataAmount(dst []byte, x int64, unit string) []byte {
	if x == math.MinInt64 {
		return append(dst, "N/A"...)
	}
	a := math.Abs(float64(x))
	e := int(math.Log(a) / math.Log(1024))
	v := float64(x) / math.Pow(1024, float64(e))
	dst = appendJavaFixed(dst, v, 1)
	dst = append(dst, ' ')
	if e >= 1 && e <= 6 {
		dst = append(dst, "kMGTPE"[e-1])
	}
	return append(dst, unit...)
}

func appendBytes(dst []byte, x int64) []byte {
	switch {
	case x == 1 || x == -1:
		return append(strconv.AppendInt(dst, x, 10), " byte"...)
	case x > -1024 && x < 1024:
		return append(strconv.AppendInt(dst, x, 10), " bytes"...)
	}
	return appendDataAmount(dst, x, "B")
}

func appendBits(dst []byte, x int64) []byte {
	switch {
	case x == 1 || x == -1:
		return append(strconv.AppendInt(dst, x, 10), " bit"...)
	case x > -1024 && x < 1024:
		return append(strconv.AppendInt(dst, x, 10), " bits"...)
	}
	return appendDataAmount(dst, x, "bit")
}

func appendBytesPerSecond(dst []byte, x int64) []byte {
	if x > -1024 && x < 1024 {
		return append(strconv.AppendInt(dst, x, 10), " byte/s"...)
	}
	return appendDataAmount(dst, x, "B/s")
}

func appendBitsPerSecond(dst []byte, x int64) []byte {
	if x > -1024 && x < 1024 {
		return append(strconv.AppendInt(dst, x, 10), " bps"...)
	}
	return appendDataAmount(dst, x, "bps")
}

// appendHexAddress appends String.format("0x%08X", v).
func appendHexAddress(dst []byte, v int64) []byte {
	var tmp [16]byte
	s := strconv.AppendUint(tmp[:0], uint64(v), 16)
	dst = append(dst, "0x"...)
	for i := len(s); i < 8; i++ {
		dst = append(dst, '0')
	}
	for _, c := range s {
		if c >= 'a' {
			c -= 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// javaLongToDouble is (double) of a long, then Java's (long) cast back:
// truncation toward zero that saturates instead of wrapping.
func saturatingInt64(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= 9.223372036854775807e18:
		return math.MaxInt64
	case f <= -9.223372036854775808e18:
		return math.MinInt64
	}
	return int64(f)
}
