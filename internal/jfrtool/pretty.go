package jfrtool

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/flightrec/flightrec/jfr"
)

// prettyPrinter writes the human format of `jfr print`: one block per
// event with a line per field, values in units (ms, kB, %), threads,
// classes and methods summarised on one line and stack traces cut to
// StackDepth frames. Stack traces and threads repeat across events, so
// their text is rendered once per chunk and indentation.
type prettyPrinter struct {
	*printer
	cache   renderCache
	scratch []byte
	units   []uint16
	ev      *jfr.Event
}

// appendString appends the UTF-8 text of a string value as Java's UTF-8
// encoder writes it: unpaired surrogates become '?'.
func (p *prettyPrinter) appendString(v jfr.Value) {
	if v.Encoding() != encChars {
		p.out = v.AppendText(p.out)
		return
	}
	p.units = v.AppendUTF16(p.units[:0])
	for i := 0; i < len(p.units); i++ {
		u := rune(p.units[i])
		switch {
		case u >= 0xd800 && u < 0xdc00 && i+1 < len(p.units) && p.units[i+1] >= 0xdc00 && p.units[i+1] < 0xe000:
			p.out = utf8.AppendRune(p.out, utf16.DecodeRune(u, rune(p.units[i+1])))
			i++
		case u >= 0xd800 && u < 0xe000:
			p.out = append(p.out, '?')
		default:
			p.out = utf8.AppendRune(p.out, u)
		}
	}
}

// Special renderings of classes in the human format.
const (
	kindPlain = iota
	kindThread
	kindClass
	kindClassLoader
	kindFrame
	kindMethod
	kindStackTrace
)

func classKind(name string) int {
	switch name {
	case "java.lang.Thread":
		return kindThread
	case "java.lang.Class":
		return kindClass
	case "jdk.types.ClassLoader":
		return kindClassLoader
	case "jdk.types.StackFrame":
		return kindFrame
	case "jdk.types.Method":
		return kindMethod
	case "jdk.types.StackTrace":
		return kindStackTrace
	}
	return kindPlain
}

func (p *prettyPrinter) begin()             {}
func (p *prettyPrinter) end()               {}
func (p *prettyPrinter) chunk(c *jfr.Chunk) { p.cache.reset() }
func (p *prettyPrinter) count() int         { return 0 }
func (p *prettyPrinter) setCount(int)       {}

func (p *prettyPrinter) indent(n int) {
	for n > len(spaces) {
		p.out = append(p.out, spaces...)
		n -= len(spaces)
	}
	p.out = append(p.out, spaces[:n]...)
}

func (p *prettyPrinter) event(ev *jfr.Event) {
	p.ev = ev
	p.out = append(p.out, ev.Type.Name...)
	p.out = append(p.out, " {\n"...)
	cp := p.plan(ev.Type)
	var thread, stack jfr.Value
	hasThread, hasStack := false, false
	for i := range cp.fields {
		fp := &cp.fields[i]
		v := ev.Fields[i]
		switch fp.skipTop {
		case 1:
			if fp.f.Name == "eventThread" {
				thread, hasThread = v, true
			} else {
				stack, hasStack = v, true
			}
			continue
		case 2:
			if v.Int() == 0 && v.Kind() != jfr.KindNull {
				continue
			}
		}
		p.field(fp, v, 2, 1)
	}
	if hasThread {
		if t := deref(thread); t.Kind() == jfr.KindStruct && classKind(t.Class().Name) == kindThread {
			p.indent(2)
			p.out = append(p.out, "eventThread = "...)
			if thread.Kind() == jfr.KindRef {
				key := cacheKey{thread.Class(), thread.Key(), -3}
				if b, ok := p.cache.get(key); ok {
					p.out = append(p.out, b...)
				} else {
					start := len(p.out)
					p.thread(t, "")
					p.cache.put(key, p.out[start:])
				}
			} else {
				p.thread(t, "")
			}
		}
	}
	if hasStack {
		if st := deref(stack); st.Kind() == jfr.KindStruct && classKind(st.Class().Name) == kindStackTrace {
			p.indent(2)
			p.out = append(p.out, "stackTrace = "...)
			if stack.Kind() == jfr.KindRef {
				key := cacheKey{stack.Class(), stack.Key(), -2}
				if b, ok := p.cache.get(key); ok {
					p.out = append(p.out, b...)
				} else {
					start := len(p.out)
					p.stackTrace(st, 2)
					p.cache.put(key, p.out[start:])
				}
			} else {
				p.stackTrace(st, 2)
			}
		}
	}
	p.out = append(p.out, "}\n\n"...)
}

// field writes "name = value" at indent.
func (p *prettyPrinter) field(fp *fieldPlan, v jfr.Value, indent, depth int) {
	p.indent(indent)
	p.out = append(p.out, fp.f.Name...)
	p.out = append(p.out, " = "...)
	p.value(fp, v, indent, depth, "")
}

// value writes a value and ends the line; postfix goes before the newline
// (array elements but the last get ",").
func (p *prettyPrinter) value(fp *fieldPlan, v jfr.Value, indent, depth int, postfix string) {
	if depth > maxDepth {
		p.out = append(p.out, "N/A\n"...)
		return
	}
	if fp.shape == shapeArray {
		a := derefRef(v)
		if a.Kind() != jfr.KindArray {
			p.out = append(p.out, "N/A\n"...)
			return
		}
		p.out = append(p.out, "[\n"...)
		elems := a.Elems()
		for k, e := range elems {
			p.indent(indent + 2)
			pf := ","
			if k == len(elems)-1 {
				pf = ""
			}
			if fp.elemShape == shapeStruct {
				p.structValue(fp, e, indent+2, depth+1, pf)
			} else {
				p.scalar(fp, e, pf)
			}
		}
		p.indent(indent)
		p.out = append(p.out, "]\n"...)
		return
	}
	if fp.shape == shapeStruct {
		p.structValue(fp, v, indent, depth, postfix)
		return
	}
	p.scalar(fp, v, postfix)
}

// structValue writes a struct (cached when it is a constant).
func (p *prettyPrinter) structValue(fp *fieldPlan, v jfr.Value, indent, depth int, postfix string) {
	if v.Kind() != jfr.KindRef || postfix != "" {
		p.object(fp, v, indent, depth, postfix)
		return
	}
	key := cacheKey{v.Class(), v.Key(), int32(indent)}
	if b, ok := p.cache.get(key); ok {
		p.out = append(p.out, b...)
		return
	}
	start := len(p.out)
	p.object(fp, v, indent, depth, postfix)
	p.cache.put(key, p.out[start:])
}

func (p *prettyPrinter) object(fp *fieldPlan, ref jfr.Value, indent, depth int, postfix string) {
	v := deref(ref)
	if v.Kind() != jfr.KindStruct {
		p.scalar(fp, v, postfix)
		return
	}
	switch classKind(v.Class().Name) {
	case kindThread:
		p.thread(v, postfix)
		return
	case kindClass:
		p.class(v)
		p.out = append(p.out, postfix...)
		p.out = append(p.out, '\n')
		return
	case kindClassLoader:
		p.classLoader(ref, v)
		p.out = append(p.out, postfix...)
		p.out = append(p.out, '\n')
		return
	case kindFrame:
		if jf, ok := v.Field("javaFrame"); !ok || jf.Bool() {
			p.frame(v)
			p.out = append(p.out, postfix...)
			p.out = append(p.out, '\n')
			return
		}
	case kindMethod:
		p.method(v)
		p.out = append(p.out, '\n')
		return
	}
	if fp != nil && fp.f.Type != nil && fp.f.Type.Name == "jdk.types.OldObject" {
		p.oldObject(v, indent)
		return
	}
	p.out = append(p.out, "{\n"...)
	cp := p.plan(v.Class())
	vals := v.Elems()
	for i := range cp.fields {
		if i < len(vals) {
			p.field(&cp.fields[i], vals[i], indent+2, depth+1)
		}
	}
	p.indent(indent)
	p.out = append(p.out, '}')
	p.out = append(p.out, postfix...)
	p.out = append(p.out, '\n')
}

// text appends the UTF-8 text of a string value; null appends "null" as
// Java's string concatenation does.
func (p *prettyPrinter) text(v jfr.Value) {
	v = deref(v)
	if v.Kind() != jfr.KindString {
		p.out = append(p.out, "null"...)
		return
	}
	p.appendString(v)
}

func fieldOf(v jfr.Value, name string) jfr.Value {
	f, ok := v.Field(name)
	if !ok {
		return jfr.Null()
	}
	return f
}

func (p *prettyPrinter) thread(t jfr.Value, postfix string) {
	p.out = append(p.out, '"')
	if id := deref(fieldOf(t, "javaThreadId")); id.Int() > 0 {
		p.text(fieldOf(t, "javaName"))
		p.out = append(p.out, "\" (javaThreadId = "...)
		p.out = strconv.AppendInt(p.out, id.Int(), 10)
	} else {
		p.text(fieldOf(t, "osName"))
		p.out = append(p.out, "\" (osThreadId = "...)
		p.out = strconv.AppendInt(p.out, deref(fieldOf(t, "osThreadId")).Int(), 10)
	}
	p.out = append(p.out, ')')
	p.out = append(p.out, postfix...)
	p.out = append(p.out, '\n')
}

// className appends a class's name with '/' as '.'.
func (p *prettyPrinter) className(c jfr.Value) {
	start := len(p.out)
	p.text(fieldOf(c, "name"))
	for i := start; i < len(p.out); i++ {
		if p.out[i] == '/' {
			p.out[i] = '.'
		}
	}
}

// class appends "name (classLoader = loader)", array classes decoded.
func (p *prettyPrinter) class(c jfr.Value) {
	start := len(p.out)
	p.className(c)
	if start < len(p.out) && p.out[start] == '[' {
		p.scratch = append(p.scratch[:0], p.out[start:]...)
		p.out = p.out[:start]
		ds := decodeDescriptors(string(p.scratch), "")
		if len(ds) > 0 {
			p.out = append(p.out, ds[0]...)
		}
	}
	p.out = append(p.out, " (classLoader = "...)
	l := deref(fieldOf(c, "classLoader"))
	switch {
	case l.Kind() != jfr.KindStruct:
		p.out = append(p.out, "null"...)
	case !deref(fieldOf(l, "name")).IsNull():
		p.text(fieldOf(l, "name"))
	default:
		if t := deref(fieldOf(l, "type")); t.Kind() == jfr.KindStruct {
			p.className(t)
		} else {
			p.out = append(p.out, "null"...)
		}
	}
	p.out = append(p.out, ')')
}

func (p *prettyPrinter) classLoader(ref, l jfr.Value) {
	t := deref(fieldOf(l, "type"))
	if t.Kind() != jfr.KindStruct {
		p.out = append(p.out, "null"...)
		return
	}
	p.className(t)
	p.out = append(p.out, " (id = "...)
	p.out = strconv.AppendUint(p.out, ref.Key(), 10)
	p.out = append(p.out, ')')
}

func (p *prettyPrinter) frame(f jfr.Value) {
	p.method(deref(fieldOf(f, "method")))
	if ln := deref(fieldOf(f, "lineNumber")).Int(); ln >= 0 {
		p.out = append(p.out, " line: "...)
		p.out = strconv.AppendInt(p.out, ln, 10)
	}
}

// method appends Type.name(Param, Types).
func (p *prettyPrinter) method(m jfr.Value) {
	if m.Kind() != jfr.KindStruct {
		p.out = append(p.out, "null"...)
		return
	}
	p.className(deref(fieldOf(m, "type")))
	p.out = append(p.out, '.')
	p.text(fieldOf(m, "name"))
	p.out = append(p.out, '(')
	p.scratch = deref(fieldOf(m, "descriptor")).AppendText(p.scratch[:0])
	d := strings.ReplaceAll(string(p.scratch), "/", ".")
	if end := strings.LastIndexByte(d, ')'); end >= 1 {
		for i, t := range decodeDescriptors(d[1:end], "") {
			if i > 0 {
				p.out = append(p.out, ", "...)
			}
			p.out = append(p.out, t[strings.LastIndexByte(t, '.')+1:]...)
		}
	}
	p.out = append(p.out, ')')
}

// decodeDescriptors turns JVM type descriptors into Java type names; the
// first array dimension gets arraySize ("byte[3067]").
func decodeDescriptors(s, arraySize string) []string {
	var out []string
	for i := 0; i < len(s); {
		var suffix strings.Builder
		for i < len(s) && s[i] == '[' {
			suffix.WriteString("[" + arraySize + "]")
			arraySize = ""
			i++
		}
		if i >= len(s) {
			break
		}
		var base string
		switch s[i] {
		case 'L':
			end := strings.IndexByte(s[i:], ';')
			if end < 0 {
				base = s[i+1:]
				i = len(s)
			} else {
				base = s[i+1 : i+end]
				i += end + 1
			}
		default:
			switch s[i] {
			case 'I':
				base = "int"
			case 'J':
				base = "long"
			case 'Z':
				base = "boolean"
			case 'D':
				base = "double"
			case 'F':
				base = "float"
			case 'S':
				base = "short"
			case 'C':
				base = "char"
			case 'B':
				base = "byte"
			default:
				base = "<unknown-descriptor-type>"
			}
			i++
		}
		out = append(out, base+suffix.String())
	}
	return out
}

// stackTrace writes "[", the first StackDepth visible Java frames and
// "]" as jfr does, including its quirks about hidden frames and "...".
func (p *prettyPrinter) stackTrace(st jfr.Value, indent int) {
	p.out = append(p.out, "[\n"...)
	frames := derefRef(fieldOf(st, "frames"))
	var elems []jfr.Value
	if frames.Kind() == jfr.KindArray {
		elems = frames.Elems()
	}
	depth := p.opts.StackDepth
	i, printed := 0, 0
	for ; i < len(elems) && printed < depth; i++ {
		f := deref(elems[i])
		if f.Kind() != jfr.KindStruct {
			continue
		}
		if jf, ok := f.Field("javaFrame"); ok && !jf.Bool() {
			continue
		}
		m := deref(fieldOf(f, "method"))
		if h, ok := m.Field("hidden"); ok && h.Bool() {
			continue
		}
		p.indent(indent + 2)
		p.frame(f)
		p.out = append(p.out, '\n')
		printed++
	}
	if deref(fieldOf(st, "truncated")).Bool() || i == depth {
		p.indent(indent + 2)
		p.out = append(p.out, "...\n"...)
	}
	p.indent(indent)
	p.out = append(p.out, "]\n"...)
}

// oldObject writes the reference chain of an OldObjectSample's object.
func (p *prettyPrinter) oldObject(obj jfr.Value, indent int) {
	p.out = append(p.out, " [\n"...)
	size := int64(math.MinInt64)
	if p.ev != nil {
		if a, ok := p.ev.Field("arrayElements"); ok {
			size = deref(a).Int()
		}
	}
	p.indent(indent + 2)
	p.objectLine(obj, size)
	ref := deref(fieldOf(obj, "referrer"))
	for n := 0; ref.Kind() == jfr.KindStruct && n < 1<<16; n++ {
		if deref(fieldOf(ref, "skip")).Int() > 0 {
			p.indent(indent + 2)
			p.out = append(p.out, "...\n"...)
		}
		p.indent(indent + 2)
		size = math.MinInt64
		if arr := deref(fieldOf(ref, "array")); arr.Kind() == jfr.KindStruct && fieldOf(ref, "field").IsNull() {
			p.out = append(p.out, '[')
			p.out = strconv.AppendInt(p.out, deref(fieldOf(arr, "index")).Int(), 10)
			p.out = append(p.out, ']')
			size = deref(fieldOf(arr, "size")).Int()
		} else if arr.Kind() == jfr.KindStruct {
			size = deref(fieldOf(arr, "size")).Int()
		}
		if fld := deref(fieldOf(ref, "field")); fld.Kind() == jfr.KindStruct {
			p.text(fieldOf(fld, "name"))
		}
		p.out = append(p.out, " : "...)
		o := deref(fieldOf(ref, "object"))
		if o.Kind() != jfr.KindStruct {
			p.out = append(p.out, '\n')
			break
		}
		p.objectLine(o, size)
		ref = deref(fieldOf(o, "referrer"))
	}
	p.indent(indent)
	p.out = append(p.out, "]\n"...)
}

func (p *prettyPrinter) objectLine(o jfr.Value, arraySize int64) {
	if c := deref(fieldOf(o, "type")); c.Kind() == jfr.KindStruct {
		start := len(p.out)
		p.className(c)
		if start < len(p.out) && p.out[start] == '[' {
			name := string(p.out[start:])
			p.out = p.out[:start]
			size := ""
			if arraySize > 0 {
				size = strconv.FormatInt(arraySize, 10)
			}
			if ds := decodeDescriptors(name, size); len(ds) > 0 {
				p.out = append(p.out, ds[0]...)
			}
		}
		if d := deref(fieldOf(o, "description")); d.Kind() == jfr.KindString {
			p.out = append(p.out, ' ')
			p.appendString(d)
		}
	}
	p.out = append(p.out, '\n')
}

// scalar writes a primitive, string, duration or timestamp and the line
// end.
func (p *prettyPrinter) scalar(fp *fieldPlan, v jfr.Value, postfix string) {
	v = deref(v)
	p.scalarText(fp, v)
	p.out = append(p.out, postfix...)
	p.out = append(p.out, '\n')
}

func (p *prettyPrinter) scalarText(fp *fieldPlan, v jfr.Value) {
	k := v.Kind()
	switch k {
	case jfr.KindNull, jfr.KindInvalid, jfr.KindStruct, jfr.KindArray, jfr.KindRef:
		p.out = append(p.out, "N/A"...)
		return
	}
	isInt := k == jfr.KindByte || k == jfr.KindShort || k == jfr.KindInt || k == jfr.KindLong || k == jfr.KindChar
	if fp != nil && isInt && fp.conv == convTimespan {
		d := p.duration(v.Int(), fp.unit)
		if fp.hasCT {
			p.out = appendHumanDuration(p.out, d)
		} else {
			p.out = appendISODuration(p.out, d)
		}
		return
	}
	if fp != nil && isInt && fp.conv == convTimestamp {
		ns, ok := p.timestamp(v.Int(), fp.unit)
		switch {
		case !ok && fp.hasCT:
			p.out = append(p.out, "N/A"...)
		case !ok:
			p.out = append(p.out, minOffsetDateTime...)
		case fp.hasCT:
			p.out = appendLocalClock(p.out, ns, p.offset)
		default:
			p.out = appendOffsetDateTime(p.out, ns, p.offset, nil)
		}
		return
	}
	switch k {
	case jfr.KindFloat, jfr.KindDouble:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, -1) {
			p.out = append(p.out, "N/A"...)
			return
		}
	case jfr.KindLong:
		if v.Int() == math.MinInt64 {
			p.out = append(p.out, "N/A"...)
			return
		}
	case jfr.KindInt:
		if v.Int() == math.MinInt32 {
			p.out = append(p.out, "N/A"...)
			return
		}
	}
	isNum := isInt && k != jfr.KindChar || k == jfr.KindFloat || k == jfr.KindDouble
	if fp != nil && isNum && fp.content != ctNone {
		switch fp.content {
		case ctPercentage:
			p.out = appendJavaFixed(p.out, v.Float()*100, 2)
			p.out = append(p.out, '%')
		case ctBytes:
			p.out = appendBytes(p.out, longValue(v))
		case ctBits:
			p.out = appendBits(p.out, longValue(v))
		case ctBytesPerSecond:
			p.out = appendBytesPerSecond(p.out, longValue(v))
		case ctBitsPerSecond:
			p.out = appendBitsPerSecond(p.out, longValue(v))
		case ctAddress:
			p.out = appendHexAddress(p.out, longValue(v))
		case ctFrequency:
			p.javaText(v)
			p.out = append(p.out, " Hz"...)
		}
		return
	}
	if k == jfr.KindString {
		p.out = append(p.out, '"')
		p.appendString(v)
		p.out = append(p.out, '"')
		return
	}
	p.javaText(v)
}

// longValue is Number.longValue(): doubles truncate and saturate.
func longValue(v jfr.Value) int64 {
	if k := v.Kind(); k == jfr.KindFloat || k == jfr.KindDouble {
		return saturatingInt64(v.Float())
	}
	return v.Int()
}

// javaText appends String.valueOf of a primitive.
func (p *prettyPrinter) javaText(v jfr.Value) {
	switch v.Kind() {
	case jfr.KindBool:
		p.out = strconv.AppendBool(p.out, v.Bool())
	case jfr.KindChar:
		r := rune(v.Int())
		if r >= 0xd800 && r < 0xe000 {
			r = '?'
		}
		p.out = append(p.out, string(r)...)
	case jfr.KindFloat:
		p.out = appendJavaFloat(p.out, float32(v.Float()))
	case jfr.KindDouble:
		p.out = appendJavaDouble(p.out, v.Float())
	case jfr.KindString:
		p.appendString(v)
	default:
		p.out = strconv.AppendInt(p.out, v.Int(), 10)
	}
}
