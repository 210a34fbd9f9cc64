// Package wqe encodes mlx5 send work-queue entries and decodes completion
// entries, byte by byte over plain slices. It knows nothing about rings,
// frames or hardware: the ring package decides what to write where, and the
// mocknic package reads what is written with these same definitions.
//
// Every multi-byte field the device reads is big-endian. The names follow
// the structs of rdma-core's infiniband/mlx5dv.h; a layout test in
// mlx5/internal/dv (built with -tags mlx5) compares every offset and
// constant here with the installed headers.
package wqe

// Sizes.
const (
	// BlockSize is a send WQE basic block (WQEBB, MLX5_SEND_WQE_BB): the
	// unit of a send-queue slot. Send-queue indices count blocks.
	BlockSize = 64
	// OctowordSize is the 16-byte unit the control segment's ds field
	// counts.
	OctowordSize = 16
	// MaxDS is the most octowords one WQE may span (60, as DPDK uses).
	MaxDS = 60
	// CQESize is the only completion-entry size used: 64 bytes,
	// uncompressed.
	CQESize = 64
	// RecvWQESize is a receive WQE: one data segment.
	RecvWQESize = 16
)

// Send opcodes (the low byte of the control segment's first word).
const (
	OpNOP  uint8 = 0x00 // MLX5_OPCODE_NOP
	OpSend uint8 = 0x0a // MLX5_OPCODE_SEND
	OpTSO  uint8 = 0x0e // MLX5_OPCODE_TSO; defined, not used
	// OpEMPW is the enhanced multi-packet send (eMPW). rdma-core does not
	// export it; the value is DPDK's MLX5_OPCODE_ENHANCED_MPSW. Allowed
	// only where the device reports MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW.
	OpEMPW uint8 = 0x29
)

// Control segment: offsets inside the first octoword of a WQE, and bits of
// the fm_ce_se byte.
const (
	CtrlOpmodIdxOpcode = 0  // be32: opmod(8) | wqe index(16) | opcode(8)
	CtrlQPNDS          = 4  // be32: QPN(24) | ds(8)
	CtrlSignature      = 8  // u8
	CtrlFmCeSe         = 11 // u8
	CtrlImm            = 12 // be32

	CtrlCQUpdate  uint8 = 2 << 2 // MLX5_WQE_CTRL_CQ_UPDATE: ask for a completion
	CtrlSolicited uint8 = 1 << 1 // MLX5_WQE_CTRL_SOLICITED
	CtrlFence     uint8 = 4 << 5 // MLX5_WQE_CTRL_FENCE
)

// Ethernet segment: offsets relative to its start (WQE offset 16), and the
// checksum flags.
const (
	EthCsFlags        = 4  // u8
	EthMSS            = 6  // be16
	EthInlineHdrSz    = 12 // be16
	EthInlineHdrStart = 14 // first inline byte
	// EthSegSize is the struct size in rdma-core (two octowords: room for
	// 18 inline bytes).
	EthSegSize = 32

	CsumL3 uint8 = 1 << 6 // MLX5_ETH_WQE_L3_CSUM
	CsumL4 uint8 = 1 << 7 // MLX5_ETH_WQE_L4_CSUM
)

// Data segment: offsets and the inline marker.
const (
	DataByteCount = 0 // be32
	DataLKey      = 4 // be32
	DataAddr      = 8 // be64
	// InlineSeg marks a byte count whose data follows inline
	// (MLX5_INLINE_SEG); used by the copied eMPW form.
	InlineSeg uint32 = 0x80000000
)

// Doorbell record indices (MLX5_RCV_DBR, MLX5_SND_DBR): a QP's record is
// two big-endian words, receive first.
const (
	RcvDbr = 0
	SndDbr = 1
)

// Doorbell masks: what the device reads from each record.
const (
	SQIndexMask = 0xffff   // send producer index, in blocks
	RQIndexMask = 0xffff   // receive producer index, in WQEs
	CQIndexMask = 0xffffff // CQ consumer index
)

// Device capability flags from mlx5dv_query_device.
const (
	FlagCQEV1       uint64 = 1 << 0 // MLX5DV_CONTEXT_FLAGS_CQE_V1
	FlagMPWAllowed  uint64 = 1 << 2 // MLX5DV_CONTEXT_FLAGS_MPW_ALLOWED
	FlagEnhancedMPW uint64 = 1 << 3 // MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW
	FlagCQE128Comp  uint64 = 1 << 4 // MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP
	FlagCQE128Pad   uint64 = 1 << 5 // MLX5DV_CONTEXT_FLAGS_CQE_128B_PAD
)
