#include "textflag.h"

// DMB/DSB option encodings: OSHLD=1, OSHST=2, OSH=3, ST=14.

// func PublishDoorbell(dbrec *uint32, dbval uint32, uar *uint64, ctrl uint64)
TEXT ·PublishDoorbell(SB), NOSPLIT, $0-32
	MOVD dbrec+0(FP), R0
	MOVWU dbval+8(FP), R1
	MOVD uar+16(FP), R2
	MOVD ctrl+24(FP), R3
	// WQE stores before the record, for the device (outer shareable).
	DMB $2
	MOVW R1, (R0)
	// Record complete before the MMIO doorbell.
	DSB $14
	MOVD R3, (R2)
	// Doorbell complete before anything later.
	DSB $14
	RET

// func PublishDbrec(dbrec *uint32, v uint32)
TEXT ·PublishDbrec(SB), NOSPLIT, $0-12
	MOVD dbrec+0(FP), R0
	MOVWU v+8(FP), R1
	// Receive WQE stores before the record.
	DMB $2
	MOVW R1, (R0)
	RET

// func ReleaseCQ(dbrec *uint32, v uint32)
TEXT ·ReleaseCQ(SB), NOSPLIT, $0-12
	MOVD dbrec+0(FP), R0
	MOVWU v+8(FP), R1
	// Loads of the released CQEs (and stores) before the consumer index.
	DMB $3
	MOVW R1, (R0)
	RET

// func LoadCQEHeader(p *byte) uint32
TEXT ·LoadCQEHeader(SB), NOSPLIT, $0-12
	MOVD p+0(FP), R0
	MOVWU (R0), R1
	REVW R1, R1
	// Loads of the CQE body stay after the owner load.
	DMB $1
	MOVW R1, ret+8(FP)
	RET

// func LoadCQEHeaderRaw(p *byte) uint32
TEXT ·LoadCQEHeaderRaw(SB), NOSPLIT, $0-12
	MOVD p+0(FP), R0
	MOVWU (R0), R1
	REVW R1, R1
	MOVW R1, ret+8(FP)
	RET

// func Prefetch(p *byte)
TEXT ·Prefetch(SB), NOSPLIT, $0-8
	MOVD p+0(FP), R0
	PRFM (R0), PLDL1KEEP
	RET
