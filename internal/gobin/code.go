package gobin

import (
	"fmt"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

// ProbeSites are the addresses to probe one function at.
type ProbeSites struct {
	// Entry is the first instruction after the stack-bound check (the
	// function's first instruction when it has none): morestack restarts
	// the function from its first byte, so a probe there would count a
	// restarted call twice.
	Entry uint64
	// Returns are the RET instructions.
	Returns []uint64
}

// Sites decodes fn and finds where to place its entry and return probes.
func (b *Binary) Sites(fn *Func) (ProbeSites, error) {
	code, err := b.Code(fn)
	if err != nil {
		return ProbeSites{}, err
	}
	var s ProbeSites
	if b.Arch == "arm64" {
		s = arm64Sites(fn, code)
	} else {
		s = amd64Sites(fn, code)
	}
	if len(s.Returns) == 0 {
		return s, fmt.Errorf("%s has no RET instruction (it never returns, or ends in a tail jump)", fn.Name)
	}
	return s, nil
}

func amd64Sites(fn *Func, code []byte) ProbeSites {
	s := ProbeSites{Entry: fn.Entry + uint64(stackCheckEnd(code))}
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			// Padding between functions (INT3) or bytes the decoder does
			// not know: step over one byte.
			off++
			continue
		}
		if inst.Op == x86asm.RET {
			s.Returns = append(s.Returns, fn.Entry+uint64(off))
		}
		off += inst.Len
	}
	return s
}

// arm64Sites finds the RETs of fn's fixed-size instructions and the
// instruction after its stack-bound check.
func arm64Sites(fn *Func, code []byte) ProbeSites {
	s := ProbeSites{Entry: fn.Entry + uint64(arm64StackCheckEnd(code))}
	for off := 0; off+4 <= len(code); off += 4 {
		inst, err := arm64asm.Decode(code[off:])
		if err == nil && inst.Op == arm64asm.RET {
			s.Returns = append(s.Returns, fn.Entry+uint64(off))
		}
	}
	return s
}

// arm64StackCheckEnd returns the offset of the instruction after the arm64
// prologue's stack-bound check: `LDR X16, [X28,#16]` (g.stackguard0; g is
// X28), `[SUB $n, SP, X17;] CMP; B.LS morestack`; 0 when there is none.
func arm64StackCheckEnd(code []byte) int {
	guard := false
	for off := 0; off+4 <= len(code) && off < 4*6; off += 4 {
		inst, err := arm64asm.Decode(code[off:])
		if err != nil {
			return 0
		}
		switch inst.Op {
		case arm64asm.LDR:
			m, ok := inst.Args[1].(arm64asm.MemImmediate)
			if !ok || m.String() != "[X28,#16]" {
				return 0
			}
			guard = true
		case arm64asm.SUB, arm64asm.SUBS, arm64asm.MOV, arm64asm.MOVZ, arm64asm.MOVK, arm64asm.CMP:
			// Frames larger than the guard's slack compute SP-n first.
		case arm64asm.B:
			c, ok := inst.Args[0].(arm64asm.Cond)
			switch {
			case !ok || !guard:
				return 0
			case c.String() == "LS":
				return off + 4
			case c.String() != "CC" && c.String() != "LO":
				return 0
			}
			// SUBS $n, SP, X17 borrowed (SP < n): morestack too.
		default:
			return 0
		}
	}
	return 0
}

// stackCheckEnd returns the offset of the instruction after the prologue's
// stack-bound check: `[LEAQ -n(SP), R12;] CMPQ SP|R12, 16(R14); JBE/JLS
// morestack`. It returns 0 when the function has no check (NOSPLIT).
func stackCheckEnd(code []byte) int {
	off, guard := 0, false
	for i := 0; i < 5 && off < len(code); i++ {
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			return 0
		}
		off += inst.Len
		switch inst.Op {
		case x86asm.CMP:
			if !comparesStackGuard(inst) {
				return 0
			}
			guard = true
		case x86asm.LEA, x86asm.SUB, x86asm.MOV, x86asm.JB:
			// Frames larger than the guard's slack compute SP-n first.
		case x86asm.JBE:
			if !guard {
				return 0
			}
			return off
		default:
			return 0
		}
	}
	return 0
}

// comparesStackGuard tells whether inst compares with g.stackguard0,
// 16(R14).
func comparesStackGuard(inst x86asm.Inst) bool {
	for _, a := range inst.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Base == x86asm.R14 && m.Disp == 16 {
			return true
		}
	}
	return false
}
