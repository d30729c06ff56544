//go:build arm64 && !purego

#include "textflag.h"

// func getg() unsafe.Pointer
TEXT ·getg(SB),NOSPLIT,$0-8
	MOVD	g, R0
	MOVD	R0, ret+0(FP)
	RET

// func GoidAt() uint64
TEXT ·GoidAt(SB),NOSPLIT,$0-8
	MOVD	·goidOffset(SB), R1
	MOVD	(g)(R1), R0
	MOVD	R0, ret+0(FP)
	RET
