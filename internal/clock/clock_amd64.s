//go:build amd64 && !purego

#include "textflag.h"

// func rdtsc() uint64
TEXT ·rdtsc(SB),NOSPLIT,$0-8
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+0(FP)
	RET

// func nowAndGWord(off uintptr) (tsc uint64, word uint64)
TEXT ·nowAndGWord(SB),NOSPLIT,$0-24
	MOVQ	off+0(FP), CX
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	(TLS), BX
	MOVQ	(BX)(CX*1), BX
	MOVQ	AX, tsc+8(FP)
	MOVQ	BX, word+16(FP)
	RET
