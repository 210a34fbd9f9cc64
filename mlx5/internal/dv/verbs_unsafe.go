//go:build linux && cgo && mlx5 && (amd64 || arm64)

package dv

/*
#cgo CFLAGS: -Wall
#cgo LDFLAGS: -libverbs -lmlx5
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

// Every function returns 0 on success or -1 with a message in err (256
// bytes, caller's). Nothing allocates on an error path except what it frees
// before returning.

#define PIO_ERRLEN 256

typedef struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	uint64_t dv_flags;
	int port_state;
	int link_layer;
	uint32_t max_qp_wr;
	uint32_t max_cqe;
	char fw[64];
} pio_dev;

static void pio_errf(char *err, const char *what, int e) {
	snprintf(err, PIO_ERRLEN, "%s: %s (errno %d)", what, strerror(e), e);
}

static int pio_open(const char *name, int port, pio_dev *d, char *err) {
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list) {
		pio_errf(err, "ibv_get_device_list", errno);
		return -1;
	}
	struct ibv_device *dev = NULL;
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
			dev = list[i];
			break;
		}
	}
	if (!dev) {
		snprintf(err, PIO_ERRLEN, "verbs device %s not found among %d (is mlx5_ib loaded, /dev/infiniband present?)", name, n);
		ibv_free_device_list(list);
		return -1;
	}
	if (!mlx5dv_is_supported(dev)) {
		snprintf(err, PIO_ERRLEN, "verbs device %s is not handled by the mlx5 provider", name);
		ibv_free_device_list(list);
		return -1;
	}
	d->ctx = ibv_open_device(dev);
	int e = errno;
	ibv_free_device_list(list);
	if (!d->ctx) {
		pio_errf(err, "ibv_open_device", e);
		return -1;
	}
	struct ibv_device_attr_ex attr;
	memset(&attr, 0, sizeof attr);
	if ((e = ibv_query_device_ex(d->ctx, NULL, &attr)) != 0) {
		pio_errf(err, "ibv_query_device_ex", e);
		goto fail;
	}
	snprintf(d->fw, sizeof d->fw, "%s", attr.orig_attr.fw_ver);
	d->max_qp_wr = attr.orig_attr.max_qp_wr;
	d->max_cqe = attr.orig_attr.max_cqe;
	struct ibv_port_attr pattr;
	memset(&pattr, 0, sizeof pattr);
	if ((e = ibv_query_port(d->ctx, port, &pattr)) != 0) {
		pio_errf(err, "ibv_query_port", e);
		goto fail;
	}
	d->port_state = pattr.state;
	d->link_layer = pattr.link_layer;
	if (pattr.link_layer != IBV_LINK_LAYER_ETHERNET) {
		snprintf(err, PIO_ERRLEN, "port %d of %s is not an Ethernet port", port, name);
		goto fail;
	}
	struct mlx5dv_context dvc;
	memset(&dvc, 0, sizeof dvc);
	if ((e = mlx5dv_query_device(d->ctx, &dvc)) != 0) {
		pio_errf(err, "mlx5dv_query_device", e);
		goto fail;
	}
	d->dv_flags = dvc.flags;
	if (!(dvc.flags & MLX5DV_CONTEXT_FLAGS_CQE_V1)) {
		snprintf(err, PIO_ERRLEN, "%s does not report version-1 CQEs", name);
		goto fail;
	}
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd) {
		pio_errf(err, "ibv_alloc_pd", errno);
		goto fail;
	}
	return 0;
fail:
	ibv_close_device(d->ctx);
	d->ctx = NULL;
	return -1;
}

static void pio_close(pio_dev *d) {
	if (d->pd) ibv_dealloc_pd(d->pd);
	if (d->ctx) ibv_close_device(d->ctx);
	d->pd = NULL;
	d->ctx = NULL;
}

static struct ibv_mr *pio_reg_mr(pio_dev *d, void *addr, size_t len, char *err) {
	struct ibv_mr *mr = ibv_reg_mr(d->pd, addr, len, IBV_ACCESS_LOCAL_WRITE);
	if (!mr) pio_errf(err, "ibv_reg_mr", errno);
	return mr;
}

static void pio_clock(pio_dev *d, uint32_t *mult, uint32_t *shift, uint64_t *mask) {
	struct mlx5dv_clock_info ci;
	memset(&ci, 0, sizeof ci);
	if (mlx5dv_get_clock_info(d->ctx, &ci) != 0) {
		*mult = 0; *shift = 0; *mask = 0;
		return;
	}
	*mult = ci.mult; *shift = ci.shift; *mask = ci.mask;
}

static struct ibv_cq *pio_cq(pio_dev *d, int depth, int stamps, int *stamped, char *err) {
	struct ibv_cq_init_attr_ex ca;
	memset(&ca, 0, sizeof ca);
	ca.cqe = depth;
	if (stamps) ca.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	struct mlx5dv_cq_init_attr da;
	memset(&da, 0, sizeof da);
	da.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
	da.cqe_size = 64;
	struct ibv_cq_ex *cq = mlx5dv_create_cq(d->ctx, &ca, &da);
	if (!cq && stamps) {
		// Not every device takes the timestamp flag: retry without,
		// and say so through the caller's stamps check.
		ca.wc_flags = 0;
		cq = mlx5dv_create_cq(d->ctx, &ca, &da);
		if (cq) *stamped = 0;
	}
	if (!cq) {
		pio_errf(err, "mlx5dv_create_cq", errno);
		return NULL;
	}
	return ibv_cq_ex_to_cq(cq);
}

typedef struct {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	void *sq_buf;
	uint32_t sq_cnt, sq_stride;
	uint32_t *qp_dbrec;
	void *uar;
	uint32_t bf_size;
	uint32_t qpn;
	void *cq_buf;
	uint32_t cqe_cnt, cqe_size;
	uint32_t *cq_dbrec;
	uint32_t cqn;
} pio_txq;

static void pio_destroy_txq(pio_txq *q) {
	if (q->qp) ibv_destroy_qp(q->qp);
	if (q->cq) ibv_destroy_cq(q->cq);
	q->qp = NULL;
	q->cq = NULL;
}

static int pio_create_txq(pio_dev *d, int port, int depth, pio_txq *q, char *err) {
	int e;
	int unused = 0;
	q->cq = pio_cq(d, depth, 0, &unused, err);
	if (!q->cq) return -1;
	struct ibv_qp_init_attr qa;
	memset(&qa, 0, sizeof qa);
	qa.send_cq = q->cq;
	qa.recv_cq = q->cq;
	qa.qp_type = IBV_QPT_RAW_PACKET;
	qa.cap.max_send_wr = depth;
	qa.cap.max_send_sge = 1;
	q->qp = ibv_create_qp(d->pd, &qa);
	if (!q->qp) {
		pio_errf(err, "ibv_create_qp (raw packet; needs CAP_NET_RAW)", errno);
		goto fail;
	}
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = port;
	if ((e = ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PORT)) != 0) {
		pio_errf(err, "ibv_modify_qp INIT", e);
		goto fail;
	}
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	if ((e = ibv_modify_qp(q->qp, &a, IBV_QP_STATE)) != 0) {
		pio_errf(err, "ibv_modify_qp RTR", e);
		goto fail;
	}
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	if ((e = ibv_modify_qp(q->qp, &a, IBV_QP_STATE)) != 0) {
		pio_errf(err, "ibv_modify_qp RTS", e);
		goto fail;
	}
	struct mlx5dv_qp dq;
	struct mlx5dv_cq dc;
	memset(&dq, 0, sizeof dq);
	memset(&dc, 0, sizeof dc);
	struct mlx5dv_obj obj;
	memset(&obj, 0, sizeof obj);
	obj.qp.in = q->qp;
	obj.qp.out = &dq;
	obj.cq.in = q->cq;
	obj.cq.out = &dc;
	if ((e = mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ)) != 0) {
		pio_errf(err, "mlx5dv_init_obj", e);
		goto fail;
	}
	q->sq_buf = dq.sq.buf;
	q->sq_cnt = dq.sq.wqe_cnt;
	q->sq_stride = dq.sq.stride;
	q->qp_dbrec = (uint32_t *)dq.dbrec;
	q->uar = dq.bf.reg;
	q->bf_size = dq.bf.size;
	q->qpn = q->qp->qp_num;
	q->cq_buf = dc.buf;
	q->cqe_cnt = dc.cqe_cnt;
	q->cqe_size = dc.cqe_size;
	q->cq_dbrec = (uint32_t *)dc.dbrec;
	q->cqn = dc.cqn;
	return 0;
fail:
	pio_destroy_txq(q);
	return -1;
}

typedef struct {
	struct ibv_wq *wq;
	struct ibv_cq *cq;
	void *rq_buf;
	uint32_t rq_cnt, rq_stride;
	uint32_t *rq_dbrec;
	void *cq_buf;
	uint32_t cqe_cnt, cqe_size;
	uint32_t *cq_dbrec;
	uint32_t cqn;
	int stamped;
} pio_rxq;

static void pio_destroy_rxq(pio_rxq *q) {
	if (q->wq) ibv_destroy_wq(q->wq);
	if (q->cq) ibv_destroy_cq(q->cq);
	q->wq = NULL;
	q->cq = NULL;
}

static int pio_create_rxq(pio_dev *d, int depth, int stamps, pio_rxq *q, char *err) {
	int e;
	q->stamped = stamps;
	q->cq = pio_cq(d, depth, stamps, &q->stamped, err);
	if (!q->cq) return -1;
	struct ibv_wq_init_attr wa;
	memset(&wa, 0, sizeof wa);
	wa.wq_type = IBV_WQT_RQ;
	wa.max_wr = depth;
	wa.max_sge = 1;
	wa.pd = d->pd;
	wa.cq = q->cq;
	q->wq = ibv_create_wq(d->ctx, &wa);
	if (!q->wq) {
		pio_errf(err, "ibv_create_wq", errno);
		goto fail;
	}
	struct ibv_wq_attr ma;
	memset(&ma, 0, sizeof ma);
	ma.attr_mask = IBV_WQ_ATTR_STATE;
	ma.wq_state = IBV_WQS_RDY;
	if ((e = ibv_modify_wq(q->wq, &ma)) != 0) {
		pio_errf(err, "ibv_modify_wq RDY", e);
		goto fail;
	}
	struct mlx5dv_rwq dw;
	struct mlx5dv_cq dc;
	memset(&dw, 0, sizeof dw);
	memset(&dc, 0, sizeof dc);
	struct mlx5dv_obj obj;
	memset(&obj, 0, sizeof obj);
	obj.rwq.in = q->wq;
	obj.rwq.out = &dw;
	obj.cq.in = q->cq;
	obj.cq.out = &dc;
	if ((e = mlx5dv_init_obj(&obj, MLX5DV_OBJ_RWQ | MLX5DV_OBJ_CQ)) != 0) {
		pio_errf(err, "mlx5dv_init_obj", e);
		goto fail;
	}
	q->rq_buf = dw.buf;
	q->rq_cnt = dw.wqe_cnt;
	q->rq_stride = dw.stride;
	q->rq_dbrec = (uint32_t *)dw.dbrec;
	q->cq_buf = dc.buf;
	q->cqe_cnt = dc.cqe_cnt;
	q->cqe_size = dc.cqe_size;
	q->cq_dbrec = (uint32_t *)dc.dbrec;
	q->cqn = dc.cqn;
	return 0;
fail:
	pio_destroy_rxq(q);
	return -1;
}

typedef struct {
	struct ibv_rwq_ind_table *ind;
	struct ibv_qp *qp;
	struct ibv_flow *flows[64];
	int nflows;
} pio_group;

// The usual mlx5 Toeplitz key.
static uint8_t pio_rss_key[40] = {
	0x2c, 0xc6, 0x81, 0xd1, 0x5b, 0xdb, 0xf4, 0xf7, 0xfc, 0xa2,
	0x83, 0x19, 0xdb, 0x1a, 0x3e, 0x94, 0x6b, 0x9e, 0x38, 0xd9,
	0x2c, 0x9c, 0x03, 0xd1, 0xad, 0x99, 0x44, 0xa7, 0xd9, 0x56,
	0x3d, 0x59, 0x06, 0x3c, 0x25, 0xf3, 0xfc, 0x1f, 0xdc, 0x2a,
};

static void pio_unsteer(pio_group *g) {
	for (int i = g->nflows - 1; i >= 0; i--) {
		if (g->flows[i]) ibv_destroy_flow(g->flows[i]);
		g->flows[i] = NULL;
	}
	g->nflows = 0;
}

static void pio_destroy_group(pio_group *g) {
	pio_unsteer(g);
	if (g->qp) ibv_destroy_qp(g->qp);
	if (g->ind) ibv_destroy_rwq_ind_table(g->ind);
	g->qp = NULL;
	g->ind = NULL;
}

static int pio_create_group(pio_dev *d, pio_rxq *qs, int n, pio_group *g, char *err) {
	int log = 0;
	while ((1 << log) < n) log++;
	int size = 1 << log;
	struct ibv_wq **tbl = calloc(size, sizeof *tbl);
	if (!tbl) {
		pio_errf(err, "calloc", ENOMEM);
		return -1;
	}
	for (int i = 0; i < size; i++) tbl[i] = qs[i % n].wq;
	struct ibv_rwq_ind_table_init_attr ia;
	memset(&ia, 0, sizeof ia);
	ia.log_ind_tbl_size = log;
	ia.ind_tbl = tbl;
	g->ind = ibv_create_rwq_ind_table(d->ctx, &ia);
	int e = errno;
	free(tbl);
	if (!g->ind) {
		pio_errf(err, "ibv_create_rwq_ind_table", e);
		return -1;
	}
	struct ibv_qp_init_attr_ex qa;
	memset(&qa, 0, sizeof qa);
	qa.qp_type = IBV_QPT_RAW_PACKET;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
	qa.pd = d->pd;
	qa.rwq_ind_tbl = g->ind;
	qa.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
	qa.rx_hash_conf.rx_hash_key_len = sizeof pio_rss_key;
	qa.rx_hash_conf.rx_hash_key = pio_rss_key;
	qa.rx_hash_conf.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
		IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
	g->qp = ibv_create_qp_ex(d->ctx, &qa);
	if (!g->qp) {
		pio_errf(err, "ibv_create_qp_ex (RSS; needs CAP_NET_RAW)", errno);
		pio_destroy_group(g);
		return -1;
	}
	return 0;
}

// pio_spec mirrors flow.Spec.
typedef struct {
	int promiscuous;
	uint8_t dst_mac[6], dst_mac_mask[6];
	uint16_t vlan, vlan_mask, ether_type, ether_mask;
	int ip;
	uint8_t src[16], src_mask[16], dst[16], dst_mask[16];
	uint8_t proto, proto_mask;
	int l4;
	uint16_t sport, sport_mask, dport, dport_mask;
} pio_spec;

static int pio_steer(pio_group *g, int port, pio_spec *specs, int n, char *err) {
	pio_unsteer(g);
	if (n > 64) {
		snprintf(err, PIO_ERRLEN, "%d flow rules, at most 64", n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		pio_spec *s = &specs[i];
		uint8_t buf[sizeof(struct ibv_flow_attr) + sizeof(struct ibv_flow_spec_eth) +
			sizeof(struct ibv_flow_spec_ipv6) + sizeof(struct ibv_flow_spec_tcp_udp)];
		memset(buf, 0, sizeof buf);
		struct ibv_flow_attr *attr = (struct ibv_flow_attr *)buf;
		size_t off = sizeof *attr;
		attr->type = IBV_FLOW_ATTR_NORMAL;
		attr->port = port;
		struct ibv_flow_spec_eth *eth = (struct ibv_flow_spec_eth *)(buf + off);
		eth->type = IBV_FLOW_SPEC_ETH;
		eth->size = sizeof *eth;
		if (!s->promiscuous) {
			memcpy(eth->val.dst_mac, s->dst_mac, 6);
			memcpy(eth->mask.dst_mac, s->dst_mac_mask, 6);
			eth->val.vlan_tag = htobe16(s->vlan);
			eth->mask.vlan_tag = htobe16(s->vlan_mask);
			uint16_t et = s->ether_type, em = s->ether_mask;
			if (s->ip == 4 && !em) { et = 0x0800; em = 0xffff; }
			if (s->ip == 6 && !em) { et = 0x86dd; em = 0xffff; }
			eth->val.ether_type = htobe16(et);
			eth->mask.ether_type = htobe16(em);
		}
		off += sizeof *eth;
		attr->num_of_specs = 1;
		if (s->ip == 4) {
			struct ibv_flow_spec_ipv4_ext *v4 = (struct ibv_flow_spec_ipv4_ext *)(buf + off);
			v4->type = IBV_FLOW_SPEC_IPV4_EXT;
			v4->size = sizeof *v4;
			memcpy(&v4->val.src_ip, s->src, 4);
			memcpy(&v4->mask.src_ip, s->src_mask, 4);
			memcpy(&v4->val.dst_ip, s->dst, 4);
			memcpy(&v4->mask.dst_ip, s->dst_mask, 4);
			v4->val.proto = s->proto;
			v4->mask.proto = s->proto_mask;
			off += sizeof *v4;
			attr->num_of_specs++;
		} else if (s->ip == 6) {
			struct ibv_flow_spec_ipv6 *v6 = (struct ibv_flow_spec_ipv6 *)(buf + off);
			v6->type = IBV_FLOW_SPEC_IPV6;
			v6->size = sizeof *v6;
			memcpy(v6->val.src_ip, s->src, 16);
			memcpy(v6->mask.src_ip, s->src_mask, 16);
			memcpy(v6->val.dst_ip, s->dst, 16);
			memcpy(v6->mask.dst_ip, s->dst_mask, 16);
			v6->val.next_hdr = s->proto;
			v6->mask.next_hdr = s->proto_mask;
			off += sizeof *v6;
			attr->num_of_specs++;
		}
		if (s->l4) {
			struct ibv_flow_spec_tcp_udp *l4 = (struct ibv_flow_spec_tcp_udp *)(buf + off);
			l4->type = s->l4 == 6 ? IBV_FLOW_SPEC_TCP : IBV_FLOW_SPEC_UDP;
			l4->size = sizeof *l4;
			l4->val.src_port = htobe16(s->sport);
			l4->mask.src_port = htobe16(s->sport_mask);
			l4->val.dst_port = htobe16(s->dport);
			l4->mask.dst_port = htobe16(s->dport_mask);
			off += sizeof *l4;
			attr->num_of_specs++;
		}
		attr->size = off;
		g->flows[i] = ibv_create_flow(g->qp, attr);
		if (!g->flows[i]) {
			int e = errno;
			g->nflows = i;
			pio_unsteer(g);
			char what[64];
			snprintf(what, sizeof what, "ibv_create_flow (rule %d)", i);
			pio_errf(err, what, e);
			return -1;
		}
		g->nflows = i + 1;
	}
	return 0;
}

// pio_min_inline measures the inline header the port requires: it builds
// one send WQE through the verbs send API on a throw-away QP and reads back
// how many header bytes libmlx5 inlined.
static int pio_min_inline(pio_dev *d, int port, uint32_t lkey, void *sample, char *err) {
	int e, result = -1;
	struct ibv_cq *cq = ibv_create_cq(d->ctx, 1, NULL, NULL, 0);
	if (!cq) {
		pio_errf(err, "ibv_create_cq (inline probe)", errno);
		return -1;
	}
	struct ibv_qp_init_attr_ex qa;
	memset(&qa, 0, sizeof qa);
	qa.qp_type = IBV_QPT_RAW_PACKET;
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.cap.max_send_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = d->pd;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND;
	struct ibv_qp *qp = ibv_create_qp_ex(d->ctx, &qa);
	if (!qp) {
		pio_errf(err, "ibv_create_qp_ex (raw packet; needs CAP_NET_RAW)", errno);
		ibv_destroy_cq(cq);
		return -1;
	}
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = port;
	if ((e = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT)) != 0) {
		pio_errf(err, "ibv_modify_qp INIT (inline probe)", e);
		goto out;
	}
	a.qp_state = IBV_QPS_RTR;
	if ((e = ibv_modify_qp(qp, &a, IBV_QP_STATE)) != 0) {
		pio_errf(err, "ibv_modify_qp RTR (inline probe)", e);
		goto out;
	}
	a.qp_state = IBV_QPS_RTS;
	if ((e = ibv_modify_qp(qp, &a, IBV_QP_STATE)) != 0) {
		pio_errf(err, "ibv_modify_qp RTS (inline probe)", e);
		goto out;
	}
	struct mlx5dv_qp dq;
	memset(&dq, 0, sizeof dq);
	struct mlx5dv_obj obj;
	memset(&obj, 0, sizeof obj);
	obj.qp.in = qp;
	obj.qp.out = &dq;
	if ((e = mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP)) != 0) {
		pio_errf(err, "mlx5dv_init_obj (inline probe)", e);
		goto out;
	}
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, lkey, (uintptr_t)sample, 18);
	uint8_t *eth = (uint8_t *)dq.sq.buf + 16;
	result = (eth[12] << 8) | eth[13];
	ibv_wr_abort(qx);
out:
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	return result;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/mlx5/internal/clock"
	"github.com/packetio/packetio/mlx5/internal/flow"
)

// cerr turns the C error buffer into an error wrapping ErrUnsupported: a
// bring-up step the device or this process could not do.
func cerr(ibdev string, buf *C.char) error {
	return fmt.Errorf("mlx5 %s: %s: %w", ibdev, C.GoString(buf), packetio.ErrUnsupported)
}

func errbuf() *C.char { return (*C.char)(C.calloc(1, C.PIO_ERRLEN)) }

// Device is an open verbs device with one protection domain.
type Device struct {
	c        *C.pio_dev
	IBDev    string
	Port     int
	Firmware string
	// Flags are the mlx5dv context flags (wqe.Flag*).
	Flags      uint64
	PortActive bool
	MaxQPWR    int
	MaxCQE     int
}

// Open opens the verbs device of p and allocates its protection domain. It
// refuses a device without version-1 CQEs or a port that is not Ethernet.
func Open(p Port) (*Device, error) {
	name := C.CString(p.IBDev)
	defer C.free(unsafe.Pointer(name))
	e := errbuf()
	defer C.free(unsafe.Pointer(e))
	c := (*C.pio_dev)(C.calloc(1, C.sizeof_pio_dev))
	if C.pio_open(name, C.int(p.Port), c, e) != 0 {
		C.free(unsafe.Pointer(c))
		return nil, cerr(p.IBDev, e)
	}
	return &Device{
		c:          c,
		IBDev:      p.IBDev,
		Port:       p.Port,
		Firmware:   C.GoString(&c.fw[0]),
		Flags:      uint64(c.dv_flags),
		PortActive: c.port_state == C.IBV_PORT_ACTIVE,
		MaxQPWR:    int(c.max_qp_wr),
		MaxCQE:     int(c.max_cqe),
	}, nil
}

// Close releases the protection domain and closes the device. Everything
// made from it must be released first. It is idempotent.
func (d *Device) Close() {
	if d.c == nil {
		return
	}
	C.pio_close(d.c)
	C.free(unsafe.Pointer(d.c))
	d.c = nil
}

// Clock returns the device clock, or the zero Info when it has none.
func (d *Device) Clock() clock.Info {
	var mult, shift C.uint32_t
	var mask C.uint64_t
	C.pio_clock(d.c, &mult, &shift, &mask)
	return clock.Info{Mult: uint32(mult), Shift: uint32(shift), Mask: uint64(mask)}
}

// MR is a registered memory region.
type MR struct {
	c    *C.struct_ibv_mr
	LKey uint32
}

// Register registers mem, which must not be Go heap memory (it is pinned
// and read by the device), for local access.
func (d *Device) Register(mem []byte) (*MR, error) {
	e := errbuf()
	defer C.free(unsafe.Pointer(e))
	mr := C.pio_reg_mr(d.c, unsafe.Pointer(&mem[0]), C.size_t(len(mem)), e)
	if mr == nil {
		return nil, cerr(d.IBDev, e)
	}
	return &MR{c: mr, LKey: uint32(mr.lkey)}, nil
}

// Close deregisters the region. It is idempotent.
func (m *MR) Close() {
	if m.c != nil {
		C.ibv_dereg_mr(m.c)
		m.c = nil
	}
}

// MinInline measures how many header bytes the port requires inline in
// every send WQE: 0 or 18. sample must be registered memory of at least 18
// bytes.
func (d *Device) MinInline(mr *MR, sample []byte) (int, error) {
	e := errbuf()
	defer C.free(unsafe.Pointer(e))
	n := C.pio_min_inline(d.c, C.int(d.Port), C.uint32_t(mr.LKey), unsafe.Pointer(&sample[0]), e)
	if n < 0 {
		return 0, cerr(d.IBDev, e)
	}
	return int(n), nil
}

// cBytes is the n bytes of device-shared memory at p.
func cBytes(p unsafe.Pointer, n int) []byte { return unsafe.Slice((*byte)(p), n) }

// TxQueue is a raw-packet send QP and its CQ, with everything the ring needs.
type TxQueue struct {
	c       *C.pio_txq
	SQ      []byte  // the send queue
	SQDbrec *uint32 // the QP's send doorbell record
	UAR     *uint64 // the doorbell register
	BFSize  int     // the BlueFlame register size (recorded, unused)
	QPN     uint32
	CQ      []byte
	CQDbrec *uint32
	CQN     uint32
}

// CreateTx creates a send queue of depth WQEs and its CQ, and refuses what
// the ring cannot drive: a stride other than 64, 128-byte CQEs, sizes that
// are not powers of two.
func (d *Device) CreateTx(depth int) (*TxQueue, error) {
	e := errbuf()
	defer C.free(unsafe.Pointer(e))
	c := (*C.pio_txq)(C.calloc(1, C.sizeof_pio_txq))
	if C.pio_create_txq(d.c, C.int(d.Port), C.int(depth), c, e) != 0 {
		C.free(unsafe.Pointer(c))
		return nil, cerr(d.IBDev, e)
	}
	q := &TxQueue{c: c, BFSize: int(c.bf_size), QPN: uint32(c.qpn), CQN: uint32(c.cqn)}
	if c.sq_stride != 64 || c.cqe_size != 64 || !pow2(int(c.sq_cnt)) || !pow2(int(c.cqe_cnt)) {
		q.Close()
		return nil, fmt.Errorf("mlx5 %s: send queue stride %d, %d entries, CQE size %d, %d CQEs: not what the ring drives: %w",
			d.IBDev, c.sq_stride, c.sq_cnt, c.cqe_size, c.cqe_cnt, packetio.ErrUnsupported)
	}
	q.SQ = cBytes(c.sq_buf, int(c.sq_cnt)*64)
	// dbrec[MLX5_RCV_DBR] then dbrec[MLX5_SND_DBR]: the send record is the second word.
	q.SQDbrec = (*uint32)(unsafe.Add(unsafe.Pointer(c.qp_dbrec), 4))
	q.UAR = (*uint64)(c.uar)
	q.CQ = cBytes(c.cq_buf, int(c.cqe_cnt)*64)
	q.CQDbrec = (*uint32)(unsafe.Pointer(c.cq_dbrec))
	return q, nil
}

// Close destroys the QP and the CQ. It is idempotent.
func (q *TxQueue) Close() {
	if q.c == nil {
		return
	}
	C.pio_destroy_txq(q.c)
	C.free(unsafe.Pointer(q.c))
	q.c = nil
	q.SQ, q.CQ, q.SQDbrec, q.CQDbrec, q.UAR = nil, nil, nil, nil, nil
}

// RxQueue is a receive WQ and its CQ.
type RxQueue struct {
	c       *C.pio_rxq
	RQ      []byte
	RQDbrec *uint32
	CQ      []byte
	CQDbrec *uint32
	CQN     uint32
	// Stamped says the CQ was created with completion timestamps.
	Stamped bool
}

// CreateRx creates a plain receive WQ of depth entries (one 16-byte data
// segment each) and its CQ.
func (d *Device) CreateRx(depth int, stamps bool) (*RxQueue, error) {
	e := errbuf()
	defer C.free(unsafe.Pointer(e))
	c := (*C.pio_rxq)(C.calloc(1, C.sizeof_pio_rxq))
	st := C.int(0)
	if stamps {
		st = 1
	}
	if C.pio_create_rxq(d.c, C.int(depth), st, c, e) != 0 {
		C.free(unsafe.Pointer(c))
		return nil, cerr(d.IBDev, e)
	}
	q := &RxQueue{c: c, CQN: uint32(c.cqn), Stamped: c.stamped != 0}
	if c.rq_stride != 16 || c.cqe_size != 64 || !pow2(int(c.rq_cnt)) || !pow2(int(c.cqe_cnt)) {
		q.Close()
		return nil, fmt.Errorf("mlx5 %s: receive queue stride %d, %d entries, CQE size %d: not what the ring drives: %w",
			d.IBDev, c.rq_stride, c.rq_cnt, c.cqe_size, packetio.ErrUnsupported)
	}
	q.RQ = cBytes(c.rq_buf, int(c.rq_cnt)*16)
	q.RQDbrec = (*uint32)(unsafe.Pointer(c.rq_dbrec)) // dbrec[MLX5_RCV_DBR]
	q.CQ = cBytes(c.cq_buf, int(c.cqe_cnt)*64)
	q.CQDbrec = (*uint32)(unsafe.Pointer(c.cq_dbrec))
	return q, nil
}

// Close destroys the WQ and the CQ. It is idempotent.
func (q *RxQueue) Close() {
	if q.c == nil {
		return
	}
	C.pio_destroy_rxq(q.c)
	C.free(unsafe.Pointer(q.c))
	q.c = nil
	q.RQ, q.CQ, q.RQDbrec, q.CQDbrec = nil, nil, nil, nil
}

// RxGroup spreads packets over receive queues (RSS: Toeplitz over the IPv4
// addresses and UDP ports) and holds the flow rules that steer packets to
// them.
type RxGroup struct {
	c   *C.pio_group
	dev *Device
}

// CreateRxGroup creates the indirection table and the RSS QP over qs.
func (d *Device) CreateRxGroup(qs []*RxQueue) (*RxGroup, error) {
	e := errbuf()
	defer C.free(unsafe.Pointer(e))
	arr := (*C.pio_rxq)(C.calloc(C.size_t(len(qs)), C.sizeof_pio_rxq))
	defer C.free(unsafe.Pointer(arr))
	elems := unsafe.Slice(arr, len(qs))
	for i, q := range qs {
		elems[i] = *q.c
	}
	g := (*C.pio_group)(C.calloc(1, C.sizeof_pio_group))
	if C.pio_create_group(d.c, arr, C.int(len(qs)), g, e) != 0 {
		C.free(unsafe.Pointer(g))
		return nil, cerr(d.IBDev, e)
	}
	return &RxGroup{c: g, dev: d}, nil
}

// Steer replaces the group's flow rules with specs. On failure no rule is
// left installed: never a partial set.
func (g *RxGroup) Steer(specs []flow.Spec) error {
	e := errbuf()
	defer C.free(unsafe.Pointer(e))
	n := len(specs)
	arr := (*C.pio_spec)(C.calloc(C.size_t(max(n, 1)), C.sizeof_pio_spec))
	defer C.free(unsafe.Pointer(arr))
	cs := unsafe.Slice(arr, max(n, 1))
	for i, s := range specs {
		c := &cs[i]
		if s.Promiscuous {
			c.promiscuous = 1
		}
		for k := 0; k < 6; k++ {
			c.dst_mac[k], c.dst_mac_mask[k] = C.uint8_t(s.DstMAC[k]), C.uint8_t(s.DstMACMask[k])
		}
		c.vlan, c.vlan_mask = C.uint16_t(s.VLAN), C.uint16_t(s.VLANMask)
		c.ether_type, c.ether_mask = C.uint16_t(s.EtherType), C.uint16_t(s.EtherMask)
		c.ip = C.int(s.IP)
		for k := 0; k < 16; k++ {
			c.src[k], c.src_mask[k] = C.uint8_t(s.Src[k]), C.uint8_t(s.SrcMask[k])
			c.dst[k], c.dst_mask[k] = C.uint8_t(s.Dst[k]), C.uint8_t(s.DstMask[k])
		}
		c.proto, c.proto_mask = C.uint8_t(s.Proto), C.uint8_t(s.ProtoMask)
		c.l4 = C.int(s.L4)
		c.sport, c.sport_mask = C.uint16_t(s.SrcPort), C.uint16_t(s.SrcPortMask)
		c.dport, c.dport_mask = C.uint16_t(s.DstPort), C.uint16_t(s.DstPortMask)
	}
	if C.pio_steer(g.c, C.int(g.dev.Port), arr, C.int(n), e) != 0 {
		return cerr(g.dev.IBDev, e)
	}
	return nil
}

// Close removes the flow rules, then the RSS QP and the table. It is
// idempotent.
func (g *RxGroup) Close() {
	if g.c == nil {
		return
	}
	C.pio_destroy_group(g.c)
	C.free(unsafe.Pointer(g.c))
	g.c = nil
}

func pow2(n int) bool { return n > 0 && n&(n-1) == 0 }
