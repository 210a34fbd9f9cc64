//go:build linux && cgo && mlx5 && (amd64 || arm64)

package dv

import (
	"testing"

	"github.com/packetio/packetio/mlx5/internal/wqe"
)

// TestLayoutMatchesHeaders compares every offset and constant the Go
// encoders and decoders use with the installed rdma-core headers.
func TestLayoutMatchesHeaders(t *testing.T) {
	got := HeaderLayout()
	want := map[string]int64{
		"ctrl.opmod_idx_opcode": wqe.CtrlOpmodIdxOpcode,
		"ctrl.qpn_ds":           wqe.CtrlQPNDS,
		"ctrl.signature":        wqe.CtrlSignature,
		"ctrl.fm_ce_se":         wqe.CtrlFmCeSe,
		"ctrl.imm":              wqe.CtrlImm,
		"sizeof ctrl":           wqe.OctowordSize,

		"eth.cs_flags":         wqe.EthCsFlags,
		"eth.mss":              wqe.EthMSS,
		"eth.inline_hdr_sz":    wqe.EthInlineHdrSz,
		"eth.inline_hdr_start": wqe.EthInlineHdrStart,
		"sizeof eth":           wqe.EthSegSize,

		"data.byte_count": wqe.DataByteCount,
		"data.lkey":       wqe.DataLKey,
		"data.addr":       wqe.DataAddr,
		"sizeof data":     wqe.OctowordSize,

		"cqe64.flags_rqpn":      wqe.CQEFlagsRQPN,
		"cqe64.hds_ip_ext":      wqe.CQEHdsIPExt,
		"cqe64.l4_hdr_type_etc": wqe.CQEL4HdrTypeEtc,
		"cqe64.vlan_info":       wqe.CQEVlanInfo,
		"cqe64.byte_cnt":        wqe.CQEByteCnt,
		"cqe64.timestamp":       wqe.CQETimestamp,
		"cqe64.sop_drop_qpn":    wqe.CQESopDropQPN,
		"cqe64.wqe_counter":     wqe.CQEWQECounter,
		"cqe64.signature":       wqe.CQESignature,
		"cqe64.op_own":          wqe.CQEOpOwn,
		"sizeof cqe64":          wqe.CQESize,

		"err_cqe.vendor_err_synd":  wqe.CQEVendorSyndrome,
		"err_cqe.syndrome":         wqe.CQESyndrome,
		"err_cqe.s_wqe_opcode_qpn": wqe.CQESopDropQPN,
		"err_cqe.wqe_counter":      wqe.CQEWQECounter,
		"sizeof err_cqe":           wqe.CQESize,

		"MLX5_SEND_WQE_BB":        wqe.BlockSize,
		"MLX5_SEND_WQE_SHIFT":     6,
		"MLX5_OPCODE_NOP":         int64(wqe.OpNOP),
		"MLX5_OPCODE_SEND":        int64(wqe.OpSend),
		"MLX5_OPCODE_TSO":         int64(wqe.OpTSO),
		"MLX5_WQE_CTRL_CQ_UPDATE": int64(wqe.CtrlCQUpdate),
		"MLX5_WQE_CTRL_SOLICITED": int64(wqe.CtrlSolicited),
		"MLX5_WQE_CTRL_FENCE":     int64(wqe.CtrlFence),
		"MLX5_ETH_WQE_L3_CSUM":    int64(wqe.CsumL3),
		"MLX5_ETH_WQE_L4_CSUM":    int64(wqe.CsumL4),
		"MLX5_INLINE_SEG":         int64(wqe.InlineSeg),
		"MLX5_RCV_DBR":            wqe.RcvDbr,
		"MLX5_SND_DBR":            wqe.SndDbr,

		"MLX5_CQE_OWNER_MASK":       1,
		"MLX5_CQE_REQ":              int64(wqe.CQEReq),
		"MLX5_CQE_RESP_SEND":        int64(wqe.CQERespSend),
		"MLX5_CQE_RESP_SEND_IMM":    int64(wqe.CQERespSendImm),
		"MLX5_CQE_REQ_ERR":          int64(wqe.CQEReqErr),
		"MLX5_CQE_RESP_ERR":         int64(wqe.CQERespErr),
		"MLX5_CQE_INVALID":          int64(wqe.CQEInvalid),
		"MLX5_CQE_L2_OK":            int64(wqe.CQEL2OK),
		"MLX5_CQE_L3_OK":            int64(wqe.CQEL3OK),
		"MLX5_CQE_L4_OK":            int64(wqe.CQEL4OK),
		"MLX5_CQE_L3_HDR_TYPE_IPV4": int64(wqe.L3IPv4),
		"MLX5_CQE_L3_HDR_TYPE_IPV6": int64(wqe.L3IPv6),

		"MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR": int64(wqe.SyndromeLocalLength),
		"MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR":  int64(wqe.SyndromeLocalQPOp),
		"MLX5_CQE_SYNDROME_LOCAL_PROT_ERR":   int64(wqe.SyndromeLocalProtection),
		"MLX5_CQE_SYNDROME_WR_FLUSH_ERR":     int64(wqe.SyndromeWRFlush),

		"MLX5DV_CONTEXT_FLAGS_CQE_V1":       int64(wqe.FlagCQEV1),
		"MLX5DV_CONTEXT_FLAGS_MPW_ALLOWED":  int64(wqe.FlagMPWAllowed),
		"MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW": int64(wqe.FlagEnhancedMPW),

		// 18 inline bytes plus one data segment make exactly one block.
		"ctrl+eth+data": wqe.BlockSize,
	}
	if len(got) != len(want) {
		t.Errorf("the probe reports %d names, the test checks %d", len(got), len(want))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: not probed", name)
			continue
		}
		if g != w {
			t.Errorf("%s: headers say %d, Go uses %d", name, g, w)
		}
	}
	// And the encoder's own arithmetic agrees: 18 inline + data = 1 block.
	s := wqe.Sender{Inline: 18}
	if s.DS(64)*wqe.OctowordSize != int(got["ctrl+eth+data"]) {
		t.Errorf("Sender.DS(64) = %d octowords, headers say %d bytes", s.DS(64), got["ctrl+eth+data"])
	}
}
