//go:build amd64 && !purego

#include "textflag.h"

// func getfp() unsafe.Pointer
// With a zero-size frame the assembler does not push BP, so BP is still
// the caller's frame pointer.
TEXT ·getfp(SB),NOSPLIT,$0-8
	MOVQ	BP, ret+0(FP)
	RET

// func getg() unsafe.Pointer
TEXT ·getg(SB),NOSPLIT,$0-8
	MOVQ	(TLS), AX
	MOVQ	AX, ret+0(FP)
	RET

// func GoidAt() uint64
TEXT ·GoidAt(SB),NOSPLIT,$0-8
	MOVQ	(TLS), AX
	MOVQ	·goidOffset(SB), CX
	MOVQ	(AX)(CX*1), AX
	MOVQ	AX, ret+0(FP)
	RET
