package gobin

import (
	"fmt"

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
	if len(s.Returns) == 0 {
		return s, fmt.Errorf("%s has no RET instruction (it never returns, or ends in a tail jump)", fn.Name)
	}
	return s, nil
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
