//go:build linux

package probe

import (
	"debug/dwarf"
	"fmt"
	"math"
	"strings"

	"github.com/flightrec/flightrec/internal/bpf"
	"github.com/flightrec/flightrec/internal/gobin"
)

// wordKind is what one register word of a parameter holds.
type wordKind uint8

const (
	wordInt wordKind = iota
	wordUint
	wordBool
	wordPtr
	wordFloat // in an X register, which uprobe programs cannot read
)

// Why values are not captured. A uprobe program sees the task's pt_regs,
// which hold the integer registers only; no helper or kfunc reads X0-X15,
// and the task's saved FPU state in memory is stale while the trap runs
// (the kernel restores user FPU registers lazily, so they are still live
// in the CPU).
const (
	floatUnreadable = "float registers are not readable from eBPF"
	passedOnStack   = "passed on the stack"
)

// word is one register-sized piece of a parameter.
type word struct {
	name string // field path inside the parameter ("" for a scalar)
	kind wordKind
	size int64
	reg  int // integer register index, or -1 (float)
}

// Param is a parameter or result and where the register ABI put it.
type Param struct {
	Name   string
	Type   string // the Go type as DWARF names it
	Result bool
	// OnStack is set when the ABI passed it in memory (too many or too
	// large arguments): its value is not captured.
	OnStack  bool
	words    []word
	isString bool
	str      int // string slot, or -1 when its bytes are not captured
	strLen   int // register index of the string's length
}

// Kind is how a parameter's value is rendered: "int", "uint", "bool",
// "float", "string", "pointer" or "words" (a composite split into register
// words).
func (p *Param) Kind() string {
	switch {
	case p.isString:
		return "string"
	case len(p.words) == 1:
		switch p.words[0].kind {
		case wordInt:
			return "int"
		case wordUint:
			return "uint"
		case wordBool:
			return "bool"
		case wordPtr:
			return "pointer"
		case wordFloat:
			return "float"
		}
	}
	return "words"
}

// assignParams lays out params on Go's amd64 register ABI (ABIInternal):
// integer words in RAX, RBX, RCX, RDI, RSI, R8-R11, floats in X0-X14, each
// argument wholly in registers or wholly on the stack; results start again
// from the first registers.
func assignParams(ps []gobin.Param) []*Param {
	var out []*Param
	var ints, floats int
	results := false
	for _, gp := range ps {
		if gp.Result && !results {
			results, ints, floats = true, 0, 0
		}
		p := &Param{Name: gp.Name, Result: gp.Result, str: -1}
		if gp.Type != nil {
			p.Type = gp.Type.String()
		}
		var ws []word
		ok := gp.Type != nil && flatten(gp.Type, "", &ws, 0)
		ni, nf := 0, 0
		for _, w := range ws {
			if w.kind == wordFloat {
				nf++
			} else {
				ni++
			}
		}
		if !ok || ints+ni > bpf.NumIntRegs || floats+nf > 15 {
			p.OnStack = true
			out = append(out, p)
			continue
		}
		for i := range ws {
			if ws[i].kind == wordFloat {
				ws[i].reg = -1
				floats++
			} else {
				ws[i].reg = ints
				ints++
			}
		}
		p.words = ws
		if isString(gp.Type) && len(ws) == 2 {
			p.isString, p.strLen = true, ws[1].reg
		}
		out = append(out, p)
	}
	return out
}

func isString(t dwarf.Type) bool {
	t = underlying(t)
	st, ok := t.(*dwarf.StructType)
	return ok && st.StructName == "string"
}

func underlying(t dwarf.Type) dwarf.Type {
	for {
		td, ok := t.(*dwarf.TypedefType)
		if !ok {
			return t
		}
		t = td.Type
	}
}

// flatten appends the register words of t, reporting false for what the
// ABI never passes in registers (arrays of more than one element).
func flatten(t dwarf.Type, name string, ws *[]word, depth int) bool {
	if depth > 8 {
		return false
	}
	t = underlying(t)
	join := func(f string) string {
		if name == "" {
			return f
		}
		return name + "." + f
	}
	switch t := t.(type) {
	case *dwarf.IntType:
		*ws = append(*ws, word{name: name, kind: wordInt, size: t.ByteSize})
	case *dwarf.UintType:
		*ws = append(*ws, word{name: name, kind: wordUint, size: t.ByteSize})
	case *dwarf.CharType, *dwarf.UcharType:
		*ws = append(*ws, word{name: name, kind: wordUint, size: t.Size()})
	case *dwarf.BoolType:
		*ws = append(*ws, word{name: name, kind: wordBool, size: 1})
	case *dwarf.FloatType:
		*ws = append(*ws, word{name: name, kind: wordFloat, size: t.ByteSize})
	case *dwarf.ComplexType:
		*ws = append(*ws, word{name: join("real"), kind: wordFloat, size: t.ByteSize / 2}, word{name: join("imag"), kind: wordFloat, size: t.ByteSize / 2})
	case *dwarf.PtrType, *dwarf.FuncType, *dwarf.UnspecifiedType:
		*ws = append(*ws, word{name: name, kind: wordPtr, size: 8})
	case *dwarf.StructType:
		for _, f := range t.Field {
			if !flatten(f.Type, join(f.Name), ws, depth+1) {
				return false
			}
		}
	case *dwarf.ArrayType:
		switch t.Count {
		case 0:
		case 1:
			return flatten(t.Type, join("0"), ws, depth+1)
		default:
			return false
		}
	default:
		// Go's DWARF gives maps, channels and funcs as pointer typedefs;
		// anything else is passed in memory as far as we know.
		if t.Size() == 8 {
			*ws = append(*ws, word{name: name, kind: wordPtr, size: 8})
			return true
		}
		return false
	}
	return true
}

// Value is a captured argument or result.
type Value struct {
	Param *Param
	// Int, Uint, Bool, Str hold the scalar by Param.Kind(); Words holds
	// the register words of a composite (nil when on the stack).
	Int   int64
	Uint  uint64
	Bool  bool
	Str   string
	Words []uint64
	// Missing says why there is no value (on the stack, in an X register).
	Missing string
}

// decode reads p's value from the register copies regs and strings.
func (p *Param) decode(regs *[bpf.NumIntRegs]uint64, strs [][]byte) Value {
	v := Value{Param: p}
	switch {
	case p.OnStack:
		v.Missing = passedOnStack
		return v
	case p.isString:
		n := regs[p.strLen]
		v.Uint = n
		if p.str < 0 || p.str >= len(strs) {
			v.Missing = "string bytes not captured"
			return v
		}
		b := strs[p.str]
		if n < uint64(len(b)) {
			b = b[:n]
		}
		v.Str = string(b)
		return v
	}
	if len(p.words) == 1 {
		w := p.words[0]
		if w.reg < 0 {
			v.Missing = floatUnreadable
			return v
		}
		r := regs[w.reg]
		switch w.kind {
		case wordInt:
			v.Int = signExtend(r, w.size)
		case wordBool:
			v.Bool = r&0xff != 0
		default:
			v.Uint = truncate(r, w.size)
		}
		return v
	}
	for _, w := range p.words {
		if w.reg < 0 {
			v.Words = append(v.Words, math.Float64bits(math.NaN()))
			continue
		}
		v.Words = append(v.Words, truncate(regs[w.reg], w.size))
	}
	return v
}

func signExtend(r uint64, size int64) int64 {
	switch size {
	case 1:
		return int64(int8(r))
	case 2:
		return int64(int16(r))
	case 4:
		return int64(int32(r))
	}
	return int64(r)
}

func truncate(r uint64, size int64) uint64 {
	if size >= 8 || size <= 0 {
		return r
	}
	return r & (1<<(8*uint(size)) - 1)
}

// JSON returns the value as encoding/json renders it in a trace line: a
// value not captured is the string "unavailable: <why>", so it cannot be
// taken for a real value.
func (v Value) JSON() any {
	if v.Missing != "" {
		return "unavailable: " + v.Missing
	}
	switch v.Param.Kind() {
	case "int":
		return v.Int
	case "uint":
		return v.Uint
	case "bool":
		return v.Bool
	case "string":
		return v.Str
	case "pointer":
		return fmt.Sprintf("%#x", v.Uint)
	}
	m := map[string]any{}
	for i, w := range v.Param.words {
		if w.reg < 0 {
			m[w.name] = "unavailable: " + floatUnreadable
			continue
		}
		m[w.name] = v.Words[i]
	}
	return m
}

// String renders the value for a trace line; a value not captured is
// <unavailable: why>.
func (v Value) String() string {
	if v.Missing != "" {
		return "<unavailable: " + v.Missing + ">"
	}
	switch v.Param.Kind() {
	case "int":
		return fmt.Sprint(v.Int)
	case "uint":
		return fmt.Sprint(v.Uint)
	case "bool":
		return fmt.Sprint(v.Bool)
	case "string":
		return fmt.Sprintf("%q", v.Str)
	case "pointer":
		return fmt.Sprintf("%#x", v.Uint)
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, w := range v.Param.words {
		if i > 0 {
			b.WriteString(", ")
		}
		if w.reg < 0 {
			fmt.Fprintf(&b, "%s: <unavailable>", w.name)
		} else {
			fmt.Fprintf(&b, "%s: %#x", w.name, v.Words[i])
		}
	}
	b.WriteByte('}')
	return b.String()
}
