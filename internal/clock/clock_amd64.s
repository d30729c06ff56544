//go:build amd64 && !purego

#include "textflag.h"

// func rdtsc() uint64
TEXT ·rdtsc(SB),NOSPLIT,$0-8
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+0(FP)
	RET

// func ticks() int64
TEXT ·ticks(SB),NOSPLIT,$0-8
	CMPB	·tsc(SB), $0
	JEQ	mono
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	SUBQ	·base(SB), AX
	SARQ	$2, AX
	MOVQ	AX, ret+0(FP)
	RET
mono:
	JMP	·monoTicks(SB)

// func nowAndGWord(off uintptr) (ticks int64, word uint64)
TEXT ·nowAndGWord(SB),NOSPLIT,$0-24
	CMPB	·tsc(SB), $0
	JEQ	mono
	MOVQ	off+0(FP), CX
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	SUBQ	·base(SB), AX
	SARQ	$2, AX
	MOVQ	(TLS), BX
	MOVQ	(BX)(CX*1), BX
	MOVQ	AX, ticks+8(FP)
	MOVQ	BX, word+16(FP)
	RET
mono:
	JMP	·monoNowAndGWord(SB)

// func gWord(off uintptr) uint64
TEXT ·gWord(SB),NOSPLIT,$0-16
	MOVQ	off+0(FP), CX
	MOVQ	(TLS), BX
	MOVQ	(BX)(CX*1), BX
	MOVQ	BX, ret+8(FP)
	RET

// func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB),NOSPLIT,$0-24
	MOVL	eaxArg+0(FP), AX
	MOVL	ecxArg+4(FP), CX
	CPUID
	MOVL	AX, eax+8(FP)
	MOVL	BX, ebx+12(FP)
	MOVL	CX, ecx+16(FP)
	MOVL	DX, edx+20(FP)
	RET
