package jfrtool

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/flightrec/flightrec/jfr"
)

// jsonPrinter writes `jfr print --json`: a "recording" object whose
// "events" array holds every event with its "type" and "values". Struct
// constants (threads, stack traces, classes...) dominate the output and
// repeat in every event, so the text of each is rendered once per chunk
// and indentation and then copied.
type jsonPrinter struct {
	*printer
	compact bool // no whitespace outside strings (JSON lines)
	n       int  // events written
	cache   renderCache
	scratch []byte
	units   []uint16
	dates   dateCache
}

// encChars is the string encoding tag of strings stored as UTF-16 char
// arrays (see jfr.Value.Encoding).
const encChars = 4

func (j *jsonPrinter) begin() {
	j.out = append(j.out, "{\n  \"recording\": {\n    \"events\": ["...)
}

func (j *jsonPrinter) end() {
	j.out = append(j.out, "]\n  }\n}"...)
}

func (j *jsonPrinter) chunk(c *jfr.Chunk) { j.cache.reset() }
func (j *jsonPrinter) count() int         { return j.n }
func (j *jsonPrinter) setCount(n int)     { j.n = n }

func (j *jsonPrinter) event(ev *jfr.Event) {
	if j.n > 0 {
		j.out = append(j.out, ", "...)
	}
	j.n++
	if j.compact {
		j.out = append(j.out, `{"type":`...)
		j.out = appendJSONString(j.out, ev.Type.Name)
		j.out = append(j.out, `,"values":{`...)
		j.fields(j.plan(ev.Type), ev.Fields, 8, 1)
		j.out = append(j.out, "}}"...)
		return
	}
	j.out = append(j.out, "{\n      \"type\": "...)
	j.out = appendJSONString(j.out, ev.Type.Name)
	j.out = append(j.out, ", \n      \"values\": {\n"...)
	j.fields(j.plan(ev.Type), ev.Fields, 8, 1)
	j.out = append(j.out, "\n      }\n    }"...)
}

const spaces = "                                                                                                                                "

func (j *jsonPrinter) indent(n int) {
	if j.compact {
		return
	}
	for n > len(spaces) {
		j.out = append(j.out, spaces...)
		n -= len(spaces)
	}
	j.out = append(j.out, spaces[:n]...)
}

func (j *jsonPrinter) fields(cp *classPlan, vals []jfr.Value, indent, depth int) {
	for i := range cp.fields {
		if i > 0 {
			j.out = append(j.out, j.separator(", \n")...)
		}
		fp := &cp.fields[i]
		j.indent(indent)
		name := fp.jsonName
		if j.compact {
			name = name[:len(name)-1] // the space after the colon
		}
		j.out = append(j.out, name...)
		var v jfr.Value
		if i < len(vals) {
			v = vals[i]
		}
		switch fp.shape {
		case shapeArray:
			j.array(fp, v, indent, depth)
		case shapeStruct:
			j.structValue(v, indent, depth)
		default:
			j.scalar(fp, v)
		}
	}
}

func (j *jsonPrinter) array(fp *fieldPlan, v jfr.Value, indent, depth int) {
	v = derefRef(v)
	if v.Kind() != jfr.KindArray {
		j.out = append(j.out, "null"...)
		return
	}
	elems := v.Elems()
	if fp.frames && len(elems) > j.opts.StackDepth {
		elems = elems[:j.opts.StackDepth]
	}
	j.out = append(j.out, '[')
	for k, e := range elems {
		if k > 0 {
			j.out = append(j.out, j.separator(", ")...)
		}
		if fp.elemShape == shapeStruct {
			j.structValue(e, indent, depth)
		} else {
			j.scalar(fp, e)
		}
	}
	j.out = append(j.out, ']')
}

// structValue writes an object whose fields are indented by indent+2; a
// constant is taken from the cache or rendered into it.
func (j *jsonPrinter) structValue(v jfr.Value, indent, depth int) {
	if depth > maxDepth {
		j.out = append(j.out, "null"...)
		return
	}
	if v.Kind() != jfr.KindRef {
		j.object(deref(v), indent, depth)
		return
	}
	key := cacheKey{v.Class(), v.Key(), int32(indent)}
	if b, ok := j.cache.get(key); ok {
		j.out = append(j.out, b...)
		return
	}
	start := len(j.out)
	j.object(deref(v), indent, depth)
	j.cache.put(key, j.out[start:])
}

func (j *jsonPrinter) object(v jfr.Value, indent, depth int) {
	if v.Kind() != jfr.KindStruct {
		j.scalar(nil, v)
		return
	}
	j.out = append(j.out, j.separator("{\n")...)
	j.fields(j.plan(v.Class()), v.Elems(), indent+2, depth+1)
	if !j.compact {
		j.out = append(j.out, '\n')
	}
	j.indent(indent)
	j.out = append(j.out, '}')
}

// separator returns sep without its whitespace when compact.
func (j *jsonPrinter) separator(sep string) string {
	if j.compact {
		return sep[:1]
	}
	return sep
}

// scalar writes a primitive, string, duration or timestamp; fp may be nil
// (no conversions).
func (j *jsonPrinter) scalar(fp *fieldPlan, v jfr.Value) {
	if v.Kind() == jfr.KindString && v.Encoding() == 2 {
		key := cacheKey{v.Class(), v.Key(), -1}
		if b, ok := j.cache.get(key); ok {
			j.out = append(j.out, b...)
			return
		}
		start := len(j.out)
		j.scalar(fp, v.Resolve())
		j.cache.put(key, j.out[start:])
		return
	}
	v = deref(v)
	switch v.Kind() {
	case jfr.KindBool:
		if v.Bool() {
			j.out = append(j.out, "true"...)
		} else {
			j.out = append(j.out, "false"...)
		}
	case jfr.KindByte, jfr.KindShort, jfr.KindInt, jfr.KindLong, jfr.KindChar:
		if fp != nil && fp.conv == convTimespan {
			j.out = append(j.out, '"')
			j.out = appendISODuration(j.out, j.duration(v.Int(), fp.unit))
			j.out = append(j.out, '"')
			return
		}
		if fp != nil && fp.conv == convTimestamp {
			j.out = append(j.out, '"')
			if ns, ok := j.timestamp(v.Int(), fp.unit); ok {
				j.out = appendOffsetDateTime(j.out, ns, j.offset, &j.dates)
			} else {
				j.out = append(j.out, minOffsetDateTime...)
			}
			j.out = append(j.out, '"')
			return
		}
		if v.Kind() == jfr.KindChar {
			j.out = append(j.out, '"')
			j.out = appendJSONUnit(j.out, uint16(v.Int()))
			j.out = append(j.out, '"')
			return
		}
		j.out = strconv.AppendInt(j.out, v.Int(), 10)
	case jfr.KindFloat:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			j.out = append(j.out, "null"...)
			return
		}
		j.out = appendJavaFloat(j.out, float32(f))
	case jfr.KindDouble:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			j.out = append(j.out, "null"...)
			return
		}
		j.out = appendJavaDouble(j.out, f)
	case jfr.KindString:
		if v.Encoding() == encChars {
			// Escape the UTF-16 units themselves: Java keeps unpaired
			// surrogates, which a UTF-8 round trip would lose.
			j.units = v.AppendUTF16(j.units[:0])
			j.out = append(j.out, '"')
			for _, u := range j.units {
				j.out = appendJSONUnit(j.out, u)
			}
			j.out = append(j.out, '"')
			return
		}
		j.scratch = v.AppendText(j.scratch[:0])
		j.out = appendJSONBytes(j.out, j.scratch)
	default:
		j.out = append(j.out, "null"...)
	}
}

// derefRef resolves a reference without flattening.
func derefRef(v jfr.Value) jfr.Value {
	if v.Kind() == jfr.KindRef {
		return v.Resolve()
	}
	return v
}

const hexDigits = "0123456789abcdef"

// appendJSONUnit appends one UTF-16 code unit escaped as jfr's JSON
// writer does: short escapes for \b \t \n \f \r " \ and /, \u00XX for
// other units outside 32..127, the rest raw.
func appendJSONUnit(dst []byte, u uint16) []byte {
	switch u {
	case '\b':
		return append(dst, '\\', 'b')
	case '\n':
		return append(dst, '\\', 'n')
	case '\t':
		return append(dst, '\\', 't')
	case '\f':
		return append(dst, '\\', 'f')
	case '\r':
		return append(dst, '\\', 'r')
	case '"', '\\', '/':
		return append(dst, '\\', byte(u))
	}
	if u < 32 || u > 127 {
		return append(dst, '\\', 'u', hexDigits[u>>12], hexDigits[u>>8&15], hexDigits[u>>4&15], hexDigits[u&15])
	}
	return append(dst, byte(u))
}

// jsonPlain marks the ASCII bytes copied unchanged.
var jsonPlain = func() (t [256]bool) {
	for c := 32; c <= 127; c++ {
		t[c] = c != '"' && c != '\\' && c != '/'
	}
	return t
}()

// appendJSONBytes appends UTF-8 text s as a quoted, escaped JSON string.
func appendJSONBytes(dst, s []byte) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		start := i
		for i < len(s) && jsonPlain[s[i]] {
			i++
		}
		dst = append(dst, s[start:i]...)
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			dst = appendJSONUnit(dst, uint16(c))
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		i += n
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			dst = appendJSONUnit(dst, uint16(r1))
			dst = appendJSONUnit(dst, uint16(r2))
		} else {
			dst = appendJSONUnit(dst, uint16(r))
		}
	}
	return append(dst, '"')
}

func appendJSONString(dst []byte, s string) []byte {
	// The conversion does not allocate when the compiler can see that s
	// is not retained.
	return appendJSONBytes(dst, []byte(s))
}

// renderCache holds rendered text of constants for the current chunk,
// keyed by pool class, key and indentation.
type renderCache struct {
	index map[cacheKey]span
	buf   []byte
}

type cacheKey struct {
	class  *jfr.Class
	key    uint64
	indent int32
}

type span struct{ off, n uint32 }

// maxCache bounds the cached text of one chunk; beyond it constants are
// rendered each time.
const maxCache = 256 << 20

func (c *renderCache) reset() {
	if c.index == nil {
		c.index = make(map[cacheKey]span)
	}
	clear(c.index)
	c.buf = c.buf[:0]
}

func (c *renderCache) get(k cacheKey) ([]byte, bool) {
	s, ok := c.index[k]
	if !ok {
		return nil, false
	}
	return c.buf[s.off : s.off+s.n], true
}

func (c *renderCache) put(k cacheKey, b []byte) {
	if len(c.buf)+len(b) > maxCache {
		return
	}
	if c.index == nil {
		c.index = make(map[cacheKey]span)
	}
	c.index[k] = span{uint32(len(c.buf)), uint32(len(b))}
	c.buf = append(c.buf, b...)
}
