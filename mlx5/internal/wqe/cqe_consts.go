package wqe

// CQE field offsets in a 64-byte entry (struct mlx5_cqe64 and struct
// mlx5_err_cqe). All big-endian.
const (
	CQERxHash         = 12 // be32 RSS hash result (DPDK's rx_hash_res; rdma-core calls it reserved)
	CQEFlagsRQPN      = 24 // be32
	CQEHdsIPExt       = 28 // u8: L2/L3/L4 OK bits
	CQEL4HdrTypeEtc   = 29 // u8: bits 3:2 are the L3 header type
	CQEVlanInfo       = 30 // be16 (only with VLAN stripping, never enabled)
	CQEByteCnt        = 44 // be32
	CQETimestamp      = 48 // be64
	CQEVendorSyndrome = 54 // u8, error CQEs
	CQESyndrome       = 55 // u8, error CQEs
	CQESopDropQPN     = 56 // be32: WQE opcode (8, error CQEs) | QPN (24)
	CQEWQECounter     = 60 // be16
	CQESignature      = 62 // u8
	CQEOpOwn          = 63 // u8: opcode(4) | format(2) | se(1) | owner(1)
	// CQEHeader is where the 32-bit ownership word starts: wqe_counter,
	// signature and op_own, loaded as one big-endian word.
	CQEHeader = 60
)

// CQE opcodes (the high nibble of op_own).
const (
	CQEReq         uint8 = 0  // MLX5_CQE_REQ: a send completed
	CQERespWrImm   uint8 = 1  // MLX5_CQE_RESP_WR_IMM
	CQERespSend    uint8 = 2  // MLX5_CQE_RESP_SEND: a packet arrived
	CQERespSendImm uint8 = 3  // MLX5_CQE_RESP_SEND_IMM
	CQERespSendInv uint8 = 4  // MLX5_CQE_RESP_SEND_INV
	CQEResizeCQ    uint8 = 5  // MLX5_CQE_RESIZE_CQ
	CQENoPacket    uint8 = 6  // MLX5_CQE_NO_PACKET
	CQESigErr      uint8 = 12 // MLX5_CQE_SIG_ERR
	CQEReqErr      uint8 = 13 // MLX5_CQE_REQ_ERR: a send failed
	CQERespErr     uint8 = 14 // MLX5_CQE_RESP_ERR: a receive failed
	CQEInvalid     uint8 = 15 // MLX5_CQE_INVALID: fresh CQ memory
)

// CQE formats (bits 3:2 of op_own). Only FormatPlain is accepted: CQs are
// created uncompressed, so anything else is undecodable.
const (
	FormatPlain      uint8 = 0
	FormatInline32   uint8 = 1
	FormatInline64   uint8 = 2
	FormatCompressed uint8 = 3
)

// Receive checksum bits (hds_ip_ext) and L3 types.
const (
	CQEL2OK uint8 = 1 << 0 // MLX5_CQE_L2_OK
	CQEL3OK uint8 = 1 << 1 // MLX5_CQE_L3_OK
	CQEL4OK uint8 = 1 << 2 // MLX5_CQE_L4_OK

	L3None uint8 = 0 // MLX5_CQE_L3_HDR_TYPE_NONE
	L3IPv6 uint8 = 1 // MLX5_CQE_L3_HDR_TYPE_IPV6
	L3IPv4 uint8 = 2 // MLX5_CQE_L3_HDR_TYPE_IPV4
)

// Completion syndromes (struct mlx5_err_cqe.syndrome).
const (
	SyndromeLocalLength     uint8 = 0x01
	SyndromeLocalQPOp       uint8 = 0x02
	SyndromeLocalProtection uint8 = 0x04
	SyndromeWRFlush         uint8 = 0x05
	SyndromeMWBind          uint8 = 0x06
	SyndromeBadResp         uint8 = 0x10
	SyndromeLocalAccess     uint8 = 0x11
	SyndromeRemoteInvalReq  uint8 = 0x12
	SyndromeRemoteAccess    uint8 = 0x13
	SyndromeRemoteOp        uint8 = 0x14
	SyndromeTransportRetry  uint8 = 0x15
	SyndromeRNRRetry        uint8 = 0x16
	SyndromeRemoteAborted   uint8 = 0x22
	SyndromeVendorODPFault  uint8 = 0x93 // vendor syndrome seen on ODP faults
)

// SyndromeName names a syndrome for error messages.
func SyndromeName(s uint8) string {
	switch s {
	case SyndromeLocalLength:
		return "local length error"
	case SyndromeLocalQPOp:
		return "local QP operation error"
	case SyndromeLocalProtection:
		return "local protection error"
	case SyndromeWRFlush:
		return "work request flushed"
	case SyndromeMWBind:
		return "memory window bind error"
	case SyndromeBadResp:
		return "bad response"
	case SyndromeLocalAccess:
		return "local access error"
	case SyndromeRemoteInvalReq:
		return "remote invalid request"
	case SyndromeRemoteAccess:
		return "remote access error"
	case SyndromeRemoteOp:
		return "remote operation error"
	case SyndromeTransportRetry:
		return "transport retry exceeded"
	case SyndromeRNRRetry:
		return "RNR retry exceeded"
	case SyndromeRemoteAborted:
		return "remote aborted"
	}
	return "unknown syndrome"
}
