//go:build linux

package probe

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/flightrec/flightrec/internal/bpf"
)

// Where is a compiled --where predicate over a call's arguments, results
// and duration. Its top-level conjuncts over integer and boolean values
// are also compiled into the BPF programs, so that records they reject
// never reach user space; the whole predicate is then evaluated in user
// space on each record that arrives.
type Where struct {
	src  string
	root node
}

// WhereError is a malformed --where expression; Pos is the byte offset of
// the problem in the expression.
type WhereError struct {
	Expr string
	Pos  int
	Msg  string
}

func (e *WhereError) Error() string {
	return fmt.Sprintf("--where %q: at offset %d: %s", e.Expr, e.Pos, e.Msg)
}

// value is the result of evaluating a node.
type value struct {
	kind byte // 'i' integer, 'f' float, 's' string, 'b' bool
	i    int64
	f    float64
	s    string
	b    bool
}

type node interface {
	eval(c *Call) (value, error)
}

type constNode struct{ v value }

func (n constNode) eval(*Call) (value, error) { return n.v, nil }

type identNode struct {
	name string
	pos  int
}

func (n identNode) eval(c *Call) (value, error) {
	if n.name == "duration" {
		return value{kind: 'i', i: int64(c.Duration())}, nil
	}
	for _, list := range [][]Value{c.Args, c.Results} {
		for _, v := range list {
			if v.Param.Name != n.name {
				continue
			}
			if v.Missing != "" {
				return value{}, fmt.Errorf("%s: %s", n.name, v.Missing)
			}
			switch v.Param.Kind() {
			case "int":
				return value{kind: 'i', i: v.Int}, nil
			case "uint", "pointer":
				return value{kind: 'i', i: int64(v.Uint)}, nil
			case "bool":
				return value{kind: 'b', b: v.Bool}, nil
			case "string":
				return value{kind: 's', s: v.Str}, nil
			}
			return value{}, fmt.Errorf("%s is a composite value", n.name)
		}
	}
	return value{}, fmt.Errorf("%s has no value in this call", n.name)
}

type unaryNode struct {
	op string
	x  node
}

func (n unaryNode) eval(c *Call) (value, error) {
	v, err := n.x.eval(c)
	if err != nil {
		return v, err
	}
	switch {
	case n.op == "!" && v.kind == 'b':
		return value{kind: 'b', b: !v.b}, nil
	case n.op == "-" && v.kind == 'i':
		return value{kind: 'i', i: -v.i}, nil
	case n.op == "-" && v.kind == 'f':
		return value{kind: 'f', f: -v.f}, nil
	}
	return value{}, fmt.Errorf("%s applied to a %s", n.op, kindName(v.kind))
}

type binaryNode struct {
	op   string
	x, y node
}

func (n binaryNode) eval(c *Call) (value, error) {
	x, err := n.x.eval(c)
	if err != nil {
		return x, err
	}
	if n.op == "&&" || n.op == "||" {
		if x.kind != 'b' {
			return value{}, fmt.Errorf("%s needs booleans", n.op)
		}
		if (n.op == "&&") != x.b {
			return x, nil
		}
		y, err := n.y.eval(c)
		if err == nil && y.kind != 'b' {
			err = fmt.Errorf("%s needs booleans", n.op)
		}
		return y, err
	}
	y, err := n.y.eval(c)
	if err != nil {
		return y, err
	}
	if x.kind == 'i' && y.kind == 'f' {
		x = value{kind: 'f', f: float64(x.i)}
	}
	if x.kind == 'f' && y.kind == 'i' {
		y = value{kind: 'f', f: float64(y.i)}
	}
	if x.kind != y.kind {
		return value{}, fmt.Errorf("%s between a %s and a %s", n.op, kindName(x.kind), kindName(y.kind))
	}
	switch n.op {
	case "==", "!=", "<", "<=", ">", ">=":
		var c int
		switch x.kind {
		case 'i':
			c = cmp3(x.i < y.i, x.i > y.i)
		case 'f':
			c = cmp3(x.f < y.f, x.f > y.f)
		case 's':
			c = strings.Compare(x.s, y.s)
		case 'b':
			if n.op != "==" && n.op != "!=" {
				return value{}, fmt.Errorf("%s between booleans", n.op)
			}
			c = cmp3(false, x.b != y.b)
		}
		r := map[string]bool{"==": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[n.op]
		return value{kind: 'b', b: r}, nil
	}
	switch x.kind {
	case 'i':
		switch n.op {
		case "+":
			return value{kind: 'i', i: x.i + y.i}, nil
		case "-":
			return value{kind: 'i', i: x.i - y.i}, nil
		case "*":
			return value{kind: 'i', i: x.i * y.i}, nil
		case "/", "%":
			if y.i == 0 {
				return value{}, fmt.Errorf("division by zero")
			}
			if n.op == "/" {
				return value{kind: 'i', i: x.i / y.i}, nil
			}
			return value{kind: 'i', i: x.i % y.i}, nil
		}
	case 'f':
		switch n.op {
		case "+":
			return value{kind: 'f', f: x.f + y.f}, nil
		case "-":
			return value{kind: 'f', f: x.f - y.f}, nil
		case "*":
			return value{kind: 'f', f: x.f * y.f}, nil
		case "/":
			return value{kind: 'f', f: x.f / y.f}, nil
		case "%":
			return value{kind: 'f', f: math.Mod(x.f, y.f)}, nil
		}
	}
	return value{}, fmt.Errorf("%s between %ss", n.op, kindName(x.kind))
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

func kindName(k byte) string {
	return map[byte]string{'i': "integer", 'f': "float", 's': "string", 'b': "boolean"}[k]
}

// Match tells whether call c satisfies the predicate. A call lacking a
// value the predicate needs (an entry record asked about a result, a
// float argument) does not match.
func (w *Where) Match(c *Call) bool {
	v, err := w.root.eval(c)
	return err == nil && v.kind == 'b' && v.b
}

// ParseWhere parses a predicate: argument and result names (as DWARF has
// them), duration, integer, float and string constants, durations with
// units (ns, us, µs, ms, s, m, h), + - * / %, comparisons, &&, || and !,
// and parentheses. names are the identifiers allowed besides duration.
func ParseWhere(expr string, names map[string]bool) (*Where, error) {
	p := &whereParser{src: expr, names: names}
	p.next()
	root := p.or()
	if p.err == nil && p.tok != "" {
		p.fail(p.pos, "unexpected %q", p.tok)
	}
	if p.err != nil {
		return nil, p.err
	}
	return &Where{src: expr, root: root}, nil
}

type whereParser struct {
	src   string
	names map[string]bool
	off   int    // scan offset
	tok   string // current token ("" at the end)
	pos   int    // its offset
	kind  byte   // 'n' number, 's' string, 'i' identifier, 'o' operator
	err   *WhereError
}

func (p *whereParser) fail(pos int, format string, args ...any) {
	if p.err == nil {
		p.err = &WhereError{Expr: p.src, Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
	p.tok = ""
}

func (p *whereParser) next() {
	s := p.src
	for p.off < len(s) && (s[p.off] == ' ' || s[p.off] == '\t') {
		p.off++
	}
	p.pos = p.off
	if p.off >= len(s) || p.err != nil {
		p.tok = ""
		return
	}
	start := p.off
	r := rune(s[p.off])
	switch {
	case r >= '0' && r <= '9' || r == '.':
		for p.off < len(s) && (isAlnum(rune(s[p.off])) || s[p.off] == '.' || strings.HasPrefix(s[p.off:], "µ")) {
			if strings.HasPrefix(s[p.off:], "µ") {
				p.off += len("µ")
				continue
			}
			p.off++
		}
		p.kind = 'n'
	case r == '"':
		p.off++
		for p.off < len(s) && s[p.off] != '"' {
			if s[p.off] == '\\' {
				p.off++
			}
			p.off++
		}
		if p.off >= len(s) {
			p.fail(start, "unterminated string")
			return
		}
		p.off++
		p.kind = 's'
	case unicode.IsLetter(r) || r == '_' || r == '~':
		for p.off < len(s) && (isAlnum(rune(s[p.off])) || s[p.off] == '~') {
			p.off++
		}
		p.kind = 'i'
	default:
		for _, op := range []string{"&&", "||", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "!", "(", ")"} {
			if strings.HasPrefix(s[p.off:], op) {
				p.off += len(op)
				p.kind = 'o'
				p.tok = op
				return
			}
		}
		p.fail(start, "unexpected character %q", s[p.off])
		return
	}
	p.tok = s[start:p.off]
}

func isAlnum(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

var precedence = map[string]int{"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3, "+": 4, "-": 4, "*": 5, "/": 5, "%": 5}

func (p *whereParser) or() node { return p.binary(1) }

func (p *whereParser) binary(prec int) node {
	x := p.unary()
	for p.err == nil && p.kind == 'o' {
		q, ok := precedence[p.tok]
		if !ok || q < prec {
			break
		}
		op := p.tok
		p.next()
		y := p.binary(q + 1)
		x = binaryNode{op: op, x: x, y: y}
	}
	return x
}

func (p *whereParser) unary() node {
	if p.kind == 'o' && (p.tok == "!" || p.tok == "-") && p.tok != "" {
		op := p.tok
		p.next()
		return unaryNode{op: op, x: p.unary()}
	}
	return p.primary()
}

func (p *whereParser) primary() node {
	tok, pos, kind := p.tok, p.pos, p.kind
	if tok == "" {
		p.fail(len(p.src), "expression ends too early")
		return nil
	}
	switch {
	case kind == 'o' && tok == "(":
		p.next()
		x := p.or()
		if p.tok != ")" {
			p.fail(p.pos, "missing )")
			return nil
		}
		p.next()
		return x
	case kind == 'n':
		p.next()
		v, err := parseNumber(tok)
		if err != nil {
			p.fail(pos, "%v", err)
		}
		return constNode{v}
	case kind == 's':
		p.next()
		s, err := strconv.Unquote(tok)
		if err != nil {
			p.fail(pos, "bad string %s", tok)
		}
		return constNode{value{kind: 's', s: s}}
	case kind == 'i':
		p.next()
		switch tok {
		case "true", "false":
			return constNode{value{kind: 'b', b: tok == "true"}}
		}
		if tok != "duration" && !p.names[tok] {
			p.fail(pos, "unknown name %s (arguments and results of the probed functions, or duration)", tok)
			return nil
		}
		return identNode{name: tok, pos: pos}
	}
	p.fail(pos, "unexpected %q", tok)
	return nil
}

// parseNumber reads an integer, a float or a duration with a unit (as
// nanoseconds).
func parseNumber(tok string) (value, error) {
	if i, err := strconv.ParseInt(tok, 0, 64); err == nil {
		return value{kind: 'i', i: i}, nil
	}
	if f, err := strconv.ParseFloat(tok, 64); err == nil {
		return value{kind: 'f', f: f}, nil
	}
	if d, err := time.ParseDuration(tok); err == nil {
		return value{kind: 'i', i: int64(d)}, nil
	}
	return value{}, fmt.Errorf("bad number %s", tok)
}

// KernelPart returns the part of the predicate the kernel evaluates for
// probe p, as source text, or "" when it all runs in user space.
func (w *Where) kernelPart(p *Probe) (*bpf.Expr, string) {
	var exprs []*bpf.Expr
	var srcs []string
	for _, n := range conjuncts(w.root) {
		if e, kind, ok := kernelNode(n, p); ok && kind == 'b' {
			exprs = append(exprs, e)
			srcs = append(srcs, nodeString(n))
		}
	}
	if len(exprs) == 0 {
		return nil, ""
	}
	e := exprs[0]
	for _, x := range exprs[1:] {
		e = &bpf.Expr{Op: "&&", X: e, Y: x}
	}
	return e, strings.Join(srcs, " && ")
}

// conjuncts splits the top-level && chain.
func conjuncts(n node) []node {
	if b, ok := n.(binaryNode); ok && b.op == "&&" {
		return append(conjuncts(b.x), conjuncts(b.y)...)
	}
	return []node{n}
}

// kernelNode translates n for the kernel when it only involves integers
// and booleans the record holds; kind is 'i' or 'b'. Its meaning matches
// the user-space evaluation exactly.
func kernelNode(n node, p *Probe) (*bpf.Expr, byte, bool) {
	switch n := n.(type) {
	case constNode:
		switch n.v.kind {
		case 'i':
			return &bpf.Expr{Op: "const", Val: n.v.i}, 'i', true
		case 'b':
			v := int64(0)
			if n.v.b {
				v = 1
			}
			return &bpf.Expr{Op: "const", Val: v}, 'b', true
		}
	case identNode:
		if n.name == "duration" {
			return &bpf.Expr{Op: "duration"}, 'i', true
		}
		for _, prm := range p.Params {
			if prm.Name != n.name || prm.OnStack || len(prm.words) != 1 || prm.words[0].reg < 0 || (prm.Result && !p.Call) {
				continue
			}
			op := "arg"
			if prm.Result {
				op = "result"
			}
			w := prm.words[0]
			switch prm.Kind() {
			case "int":
				return &bpf.Expr{Op: op, Reg: w.reg, Size: w.size}, 'i', true
			case "bool":
				// A bool is its register's low byte.
				return &bpf.Expr{Op: "!=", X: &bpf.Expr{Op: op, Reg: w.reg, Size: 1}, Y: &bpf.Expr{Op: "const", Val: 0}}, 'b', true
			}
		}
	case unaryNode:
		x, k, ok := kernelNode(n.x, p)
		switch {
		case ok && n.op == "-" && k == 'i':
			return &bpf.Expr{Op: "neg", X: x}, 'i', true
		case ok && n.op == "!" && k == 'b':
			return &bpf.Expr{Op: "!", X: x}, 'b', true
		}
	case binaryNode:
		x, kx, okx := kernelNode(n.x, p)
		y, ky, oky := kernelNode(n.y, p)
		if !okx || !oky || kx != ky {
			return nil, 0, false
		}
		e := &bpf.Expr{Op: n.op, X: x, Y: y}
		switch n.op {
		case "+", "-", "*", "/", "%":
			return e, 'i', kx == 'i'
		case "<", "<=", ">", ">=":
			return e, 'b', kx == 'i'
		case "==", "!=":
			return e, 'b', true
		case "&&", "||":
			return e, 'b', kx == 'b'
		}
	}
	return nil, 0, false
}

// nodeString renders n back as source.
func nodeString(n node) string {
	switch n := n.(type) {
	case constNode:
		switch n.v.kind {
		case 'i':
			return strconv.FormatInt(n.v.i, 10)
		case 'b':
			return strconv.FormatBool(n.v.b)
		case 's':
			return strconv.Quote(n.v.s)
		}
		return strconv.FormatFloat(n.v.f, 'g', -1, 64)
	case identNode:
		return n.name
	case unaryNode:
		return n.op + nodeString(n.x)
	case binaryNode:
		return "(" + nodeString(n.x) + " " + n.op + " " + nodeString(n.y) + ")"
	}
	return "?"
}
