//go:build linux && cgo && mlx5 && (amd64 || arm64)

package dv

/*
#include <stddef.h>
#include <infiniband/mlx5dv.h>

static long pio_layout(int i) {
	switch (i) {
	case 0: return offsetof(struct mlx5_wqe_ctrl_seg, opmod_idx_opcode);
	case 1: return offsetof(struct mlx5_wqe_ctrl_seg, qpn_ds);
	case 2: return offsetof(struct mlx5_wqe_ctrl_seg, signature);
	case 3: return offsetof(struct mlx5_wqe_ctrl_seg, fm_ce_se);
	case 4: return offsetof(struct mlx5_wqe_ctrl_seg, imm);
	case 5: return sizeof(struct mlx5_wqe_ctrl_seg);
	case 6: return offsetof(struct mlx5_wqe_eth_seg, cs_flags);
	case 7: return offsetof(struct mlx5_wqe_eth_seg, mss);
	case 8: return offsetof(struct mlx5_wqe_eth_seg, inline_hdr_sz);
	case 9: return offsetof(struct mlx5_wqe_eth_seg, inline_hdr_start);
	case 10: return sizeof(struct mlx5_wqe_eth_seg);
	case 11: return offsetof(struct mlx5_wqe_data_seg, byte_count);
	case 12: return offsetof(struct mlx5_wqe_data_seg, lkey);
	case 13: return offsetof(struct mlx5_wqe_data_seg, addr);
	case 14: return sizeof(struct mlx5_wqe_data_seg);
	case 15: return offsetof(struct mlx5_cqe64, flags_rqpn);
	case 16: return offsetof(struct mlx5_cqe64, hds_ip_ext);
	case 17: return offsetof(struct mlx5_cqe64, l4_hdr_type_etc);
	case 18: return offsetof(struct mlx5_cqe64, vlan_info);
	case 19: return offsetof(struct mlx5_cqe64, byte_cnt);
	case 20: return offsetof(struct mlx5_cqe64, timestamp);
	case 21: return offsetof(struct mlx5_cqe64, sop_drop_qpn);
	case 22: return offsetof(struct mlx5_cqe64, wqe_counter);
	case 23: return offsetof(struct mlx5_cqe64, signature);
	case 24: return offsetof(struct mlx5_cqe64, op_own);
	case 25: return sizeof(struct mlx5_cqe64);
	case 26: return offsetof(struct mlx5_err_cqe, vendor_err_synd);
	case 27: return offsetof(struct mlx5_err_cqe, syndrome);
	case 28: return offsetof(struct mlx5_err_cqe, s_wqe_opcode_qpn);
	case 29: return offsetof(struct mlx5_err_cqe, wqe_counter);
	case 30: return sizeof(struct mlx5_err_cqe);
	case 31: return MLX5_SEND_WQE_BB;
	case 32: return MLX5_OPCODE_NOP;
	case 33: return MLX5_OPCODE_SEND;
	case 34: return MLX5_OPCODE_TSO;
	case 35: return MLX5_WQE_CTRL_CQ_UPDATE;
	case 36: return MLX5_WQE_CTRL_SOLICITED;
	case 37: return MLX5_WQE_CTRL_FENCE;
	case 38: return MLX5_ETH_WQE_L3_CSUM;
	case 39: return MLX5_ETH_WQE_L4_CSUM;
	case 40: return MLX5_INLINE_SEG;
	case 41: return MLX5_RCV_DBR;
	case 42: return MLX5_SND_DBR;
	case 43: return MLX5_CQE_OWNER_MASK;
	case 44: return MLX5_CQE_REQ;
	case 45: return MLX5_CQE_RESP_SEND;
	case 46: return MLX5_CQE_REQ_ERR;
	case 47: return MLX5_CQE_RESP_ERR;
	case 48: return MLX5_CQE_INVALID;
	case 49: return MLX5_CQE_L2_OK;
	case 50: return MLX5_CQE_L3_OK;
	case 51: return MLX5_CQE_L4_OK;
	case 52: return MLX5_CQE_L3_HDR_TYPE_IPV4;
	case 53: return MLX5_CQE_L3_HDR_TYPE_IPV6;
	case 54: return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
	case 55: return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
	case 56: return MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
	case 57: return MLX5DV_CONTEXT_FLAGS_CQE_V1;
	case 58: return MLX5DV_CONTEXT_FLAGS_MPW_ALLOWED;
	case 59: return MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW;
	case 60: return MLX5_SEND_WQE_SHIFT;
	case 61: return sizeof(struct mlx5_wqe_ctrl_seg) + sizeof(struct mlx5_wqe_eth_seg) + sizeof(struct mlx5_wqe_data_seg);
	case 62: return MLX5_CQE_RESP_SEND_IMM;
	case 63: return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	}
	return -1;
}
*/
import "C"

// layoutNames names pio_layout's entries, in order.
var layoutNames = [...]string{
	"ctrl.opmod_idx_opcode", "ctrl.qpn_ds", "ctrl.signature", "ctrl.fm_ce_se", "ctrl.imm", "sizeof ctrl",
	"eth.cs_flags", "eth.mss", "eth.inline_hdr_sz", "eth.inline_hdr_start", "sizeof eth",
	"data.byte_count", "data.lkey", "data.addr", "sizeof data",
	"cqe64.flags_rqpn", "cqe64.hds_ip_ext", "cqe64.l4_hdr_type_etc", "cqe64.vlan_info", "cqe64.byte_cnt",
	"cqe64.timestamp", "cqe64.sop_drop_qpn", "cqe64.wqe_counter", "cqe64.signature", "cqe64.op_own", "sizeof cqe64",
	"err_cqe.vendor_err_synd", "err_cqe.syndrome", "err_cqe.s_wqe_opcode_qpn", "err_cqe.wqe_counter", "sizeof err_cqe",
	"MLX5_SEND_WQE_BB", "MLX5_OPCODE_NOP", "MLX5_OPCODE_SEND", "MLX5_OPCODE_TSO",
	"MLX5_WQE_CTRL_CQ_UPDATE", "MLX5_WQE_CTRL_SOLICITED", "MLX5_WQE_CTRL_FENCE",
	"MLX5_ETH_WQE_L3_CSUM", "MLX5_ETH_WQE_L4_CSUM", "MLX5_INLINE_SEG", "MLX5_RCV_DBR", "MLX5_SND_DBR",
	"MLX5_CQE_OWNER_MASK", "MLX5_CQE_REQ", "MLX5_CQE_RESP_SEND", "MLX5_CQE_REQ_ERR", "MLX5_CQE_RESP_ERR",
	"MLX5_CQE_INVALID", "MLX5_CQE_L2_OK", "MLX5_CQE_L3_OK", "MLX5_CQE_L4_OK",
	"MLX5_CQE_L3_HDR_TYPE_IPV4", "MLX5_CQE_L3_HDR_TYPE_IPV6",
	"MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR", "MLX5_CQE_SYNDROME_LOCAL_PROT_ERR", "MLX5_CQE_SYNDROME_WR_FLUSH_ERR",
	"MLX5DV_CONTEXT_FLAGS_CQE_V1", "MLX5DV_CONTEXT_FLAGS_MPW_ALLOWED", "MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW",
	"MLX5_SEND_WQE_SHIFT", "ctrl+eth+data", "MLX5_CQE_RESP_SEND_IMM", "MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR",
}

// HeaderLayout returns the offsets, sizes and constants the Go encoders rely
// on, as the installed rdma-core headers define them: for the layout test,
// and for bug reports from machines with other headers.
func HeaderLayout() map[string]int64 {
	m := make(map[string]int64, len(layoutNames))
	for i, name := range layoutNames {
		m[name] = int64(C.pio_layout(C.int(i)))
	}
	return m
}
