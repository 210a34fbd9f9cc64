#include "textflag.h"

// func PublishDoorbell(dbrec *uint32, dbval uint32, uar *uint64, ctrl uint64)
TEXT ·PublishDoorbell(SB), NOSPLIT, $0-32
	MOVQ dbrec+0(FP), AX
	MOVL dbval+8(FP), BX
	MOVQ uar+16(FP), CX
	MOVQ ctrl+24(FP), DX
	// TSO already orders the WQE stores before this one.
	MOVL BX, (AX)
	// Keep the write-combining UAR store behind the record store.
	SFENCE
	MOVQ DX, (CX)
	// Flush the write-combining buffer: ring now.
	SFENCE
	RET

// func PublishDbrec(dbrec *uint32, v uint32)
TEXT ·PublishDbrec(SB), NOSPLIT, $0-12
	MOVQ dbrec+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET

// func ReleaseCQ(dbrec *uint32, v uint32)
TEXT ·ReleaseCQ(SB), NOSPLIT, $0-12
	MOVQ dbrec+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET

// func LoadCQEHeader(p *byte) uint32
TEXT ·LoadCQEHeader(SB), NOSPLIT, $0-12
	MOVQ p+0(FP), AX
	MOVL (AX), BX
	BSWAPL BX
	// Loads of the CQE body stay after the owner load.
	LFENCE
	MOVL BX, ret+8(FP)
	RET

// func LoadCQEHeaderRaw(p *byte) uint32
TEXT ·LoadCQEHeaderRaw(SB), NOSPLIT, $0-12
	MOVQ p+0(FP), AX
	MOVL (AX), BX
	BSWAPL BX
	MOVL BX, ret+8(FP)
	RET

// func Prefetch(p *byte)
TEXT ·Prefetch(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	RET
