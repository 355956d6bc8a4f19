#include "textflag.h"

// func madvise(addr, n uintptr, advice int) int
TEXT ·madvise(SB),NOSPLIT,$0-32
	MOVQ	addr+0(FP), DI
	MOVQ	n+8(FP), SI
	MOVQ	advice+16(FP), DX
	MOVQ	$28, AX // SYS_madvise
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	NEGQ	AX
	MOVQ	AX, ret+24(FP)
	RET
ok:
	MOVQ	$0, ret+24(FP)
	RET
