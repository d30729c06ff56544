package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// Expr is an integer expression over a record, compiled into the program
// that emits the record so that records it rejects never reach user
// space. Booleans are 0 and 1.
type Expr struct {
	// Op is "const", "arg" or "result" (integer register Reg, of Size
	// bytes, sign-extended), "duration", "neg", "!", or a binary operator:
	// + - * / % == != < <= > >= && ||. Comparisons, / and % are signed.
	Op   string
	Val  int64
	Reg  int
	Size int64
	X, Y *Expr
}

// ErrFilterTooDeep means an expression needs more registers than the
// compiler has.
var ErrFilterTooDeep = errors.New("filter expression too deep for the kernel")

// filterRegs are the registers an expression may use: the programs keep
// ctx in R6 and the record in R8, and need nothing else by then.
var filterRegs = []asm.Register{asm.R0, asm.R1, asm.R2, asm.R3, asm.R4, asm.R5, asm.R7, asm.R9}

type filterCompiler struct {
	s      *Session
	insns  asm.Instructions
	reject string
	call   bool
	err    error
}

// compileFilter returns code that jumps to reject unless e is non-zero for
// the record in R8.
func (s *Session) compileFilter(e *Expr, call bool, reject string) (asm.Instructions, error) {
	c := &filterCompiler{s: s, reject: reject, call: call}
	c.gen(e, 0)
	if c.err != nil {
		return nil, c.err
	}
	return append(c.insns, asm.JEq.Imm(filterRegs[0], 0, reject)), nil
}

func (c *filterCompiler) label() string {
	c.s.labels++
	return fmt.Sprintf("f%d", c.s.labels)
}

func (c *filterCompiler) emit(insns ...asm.Instruction) { c.insns = append(c.insns, insns...) }

// gen leaves e's value in filterRegs[d].
func (c *filterCompiler) gen(e *Expr, d int) {
	if d+1 >= len(filterRegs) {
		c.err = ErrFilterTooDeep
		return
	}
	r, t := filterRegs[d], filterRegs[d+1]
	switch e.Op {
	case "const":
		c.emit(asm.LoadImm(r, e.Val, asm.DWord))
	case "arg", "result":
		base := offArgs
		if e.Op == "result" {
			base = offResults
		}
		c.emit(asm.LoadMem(r, asm.R8, int16(base+8*e.Reg), asm.DWord))
		if e.Size > 0 && e.Size < 8 {
			sh := int32(64 - 8*e.Size)
			c.emit(asm.LSh.Imm(r, sh), asm.ArSh.Imm(r, sh))
		}
	case "duration":
		if !c.call {
			c.emit(asm.Mov.Imm(r, 0))
			return
		}
		c.emit(asm.LoadMem(r, asm.R8, offEnd, asm.DWord), asm.LoadMem(t, asm.R8, offStart, asm.DWord), asm.Sub.Reg(r, t))
	case "neg":
		c.gen(e.X, d)
		c.emit(asm.Mov.Imm(t, 0), asm.Sub.Reg(t, r), asm.Mov.Reg(r, t))
	case "!":
		c.gen(e.X, d)
		c.bool(r, asm.JEq, 0)
	case "&&", "||":
		end := c.label()
		c.gen(e.X, d)
		if e.Op == "&&" {
			c.emit(asm.JEq.Imm(r, 0, end))
		} else {
			c.emit(asm.JNE.Imm(r, 0, end))
		}
		c.gen(e.Y, d)
		c.emit(asm.Mov.Reg(r, r).WithSymbol(end))
		c.bool(r, asm.JNE, 0)
	default:
		c.gen(e.X, d)
		c.gen(e.Y, d+1)
		if c.err != nil {
			return
		}
		switch e.Op {
		case "+":
			c.emit(asm.Add.Reg(r, t))
		case "-":
			c.emit(asm.Sub.Reg(r, t))
		case "*":
			c.emit(asm.Mul.Reg(r, t))
		case "/", "%":
			// Go fails on a zero divisor; the user-space evaluation
			// then does not match, so neither does this.
			c.emit(asm.JEq.Imm(t, 0, c.reject))
			if e.Op == "/" {
				c.emit(asm.SDiv.Reg(r, t))
			} else {
				c.emit(asm.SMod.Reg(r, t))
			}
		case "==", "!=", "<", "<=", ">", ">=":
			op := map[string]asm.JumpOp{"==": asm.JEq, "!=": asm.JNE, "<": asm.JSLT, "<=": asm.JSLE, ">": asm.JSGT, ">=": asm.JSGE}[e.Op]
			yes, end := c.label(), c.label()
			c.emit(op.Reg(r, t, yes), asm.Mov.Imm(r, 0), asm.Ja.Label(end),
				asm.Mov.Imm(r, 1).WithSymbol(yes), asm.Mov.Reg(r, r).WithSymbol(end))
		default:
			c.err = fmt.Errorf("operator %s cannot be compiled", e.Op)
		}
	}
}

// bool sets r to 1 when `r op imm` holds, else to 0.
func (c *filterCompiler) bool(r asm.Register, op asm.JumpOp, imm int32) {
	yes, end := c.label(), c.label()
	c.emit(op.Imm(r, imm, yes), asm.Mov.Imm(r, 0), asm.Ja.Label(end),
		asm.Mov.Imm(r, 1).WithSymbol(yes), asm.Mov.Reg(r, r).WithSymbol(end))
}
