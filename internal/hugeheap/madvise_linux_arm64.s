#include "textflag.h"

// func madvise(addr, n uintptr, advice int) int
TEXT ·madvise(SB),NOSPLIT,$0-32
	MOVD	addr+0(FP), R0
	MOVD	n+8(FP), R1
	MOVD	advice+16(FP), R2
	MOVD	$233, R8 // SYS_madvise
	SVC
	CMN	$4095, R0
	BCC	ok
	NEG	R0, R0
	MOVD	R0, ret+24(FP)
	RET
ok:
	MOVD	$0, ret+24(FP)
	RET
