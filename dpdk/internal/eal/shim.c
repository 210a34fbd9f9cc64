//go:build dpdk && linux && amd64 && cgo

// The only translation unit that includes DPDK headers. Every function
// returns 0 or a negative errno and, on failure, writes a message to err
// (PIO_ERRLEN bytes).

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_memzone.h>
#include <rte_version.h>
#include <rte_bus.h>
#include <rte_dev.h>

#include "shim.h"

_Static_assert(sizeof(struct rte_mbuf) == 128, "struct rte_mbuf is not 128 bytes");
_Static_assert(RTE_PKTMBUF_HEADROOM == 128, "RTE_PKTMBUF_HEADROOM is not 128");
#if RTE_VERSION < RTE_VERSION_NUM(23, 3, 0, 0)
_Static_assert(RTE_IOVA_AS_PA == 1, "mbufs carry no IOVA");
#else
_Static_assert(RTE_IOVA_IN_MBUF == 1, "mbufs carry no IOVA");
#endif

#define ERR(...) snprintf(err, PIO_ERRLEN, __VA_ARGS__)

int pio_eal_init(int argc, char **argv, char *err)
{
	int rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		int e = rte_errno;
		ERR("rte_eal_init: %s", rte_strerror(e));
		return -e;
	}
	return 0;
}

const char *pio_runtime_dir(void) { return rte_eal_get_runtime_dir(); }

void pio_layout_get(pio_layout *l)
{
	l->mbuf_size = sizeof(struct rte_mbuf);
	l->headroom = RTE_PKTMBUF_HEADROOM;
	l->obj_header = RTE_ALIGN_CEIL(sizeof(struct rte_mempool_objhdr), RTE_MEMPOOL_ALIGN);
	l->buf_addr = offsetof(struct rte_mbuf, buf_addr);
	l->buf_iova = offsetof(struct rte_mbuf, buf_iova);
	l->data_off = offsetof(struct rte_mbuf, data_off);
	l->ol_flags = offsetof(struct rte_mbuf, ol_flags);
	l->pkt_len = offsetof(struct rte_mbuf, pkt_len);
	l->data_len = offsetof(struct rte_mbuf, data_len);
	l->buf_len = offsetof(struct rte_mbuf, buf_len);
	l->pool = offsetof(struct rte_mbuf, pool);
	l->next = offsetof(struct rte_mbuf, next);
	l->tx_offload = offsetof(struct rte_mbuf, tx_offload);
	l->rx_ip_good = RTE_MBUF_F_RX_IP_CKSUM_GOOD;
	l->rx_l4_good = RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	l->tx_ipv4 = RTE_MBUF_F_TX_IPV4;
	l->tx_ipv6 = RTE_MBUF_F_TX_IPV6;
	l->tx_ip_cksum = RTE_MBUF_F_TX_IP_CKSUM;
	l->tx_tcp_cksum = RTE_MBUF_F_TX_TCP_CKSUM;
	l->tx_udp_cksum = RTE_MBUF_F_TX_UDP_CKSUM;
	l->tx_tcp_seg = RTE_MBUF_F_TX_TCP_SEG;
}

/* ---- the "packetio" mempool ops ---- */

static int pio_ops_alloc(struct rte_mempool *mp) { return mp->pool_config != NULL ? 0 : -EINVAL; }

static void pio_ops_free(struct rte_mempool *mp) { (void)mp; }

static int pio_ops_enqueue(struct rte_mempool *mp, void *const *objs, unsigned int n)
{
	pio_pool *p = mp->pool_config;
	pio_ring *r = &p->returned;
	uint32_t room = r->mask + 1 - (r->tail - r->head);
	if (n > room) {
		__atomic_fetch_add(&p->drops, n, __ATOMIC_RELAXED);
		return -ENOBUFS;
	}
	for (unsigned int i = 0; i < n; i++)
		r->buf[(r->tail + i) & r->mask] = (uint64_t)(uintptr_t)objs[i];
	r->tail += n;
	return 0;
}

static int pio_ops_dequeue(struct rte_mempool *mp, void **objs, unsigned int n)
{
	pio_pool *p = mp->pool_config;
	pio_ring *r = &p->supply;
	if (r->tail - r->head < n) {
		__atomic_fetch_add(&p->empty, 1, __ATOMIC_RELAXED);
		return -ENOENT;
	}
	for (unsigned int i = 0; i < n; i++)
		objs[i] = (void *)(uintptr_t)r->buf[(r->head + i) & r->mask];
	r->head += n;
	return 0;
}

static unsigned int pio_ops_count(const struct rte_mempool *mp)
{
	const pio_pool *p = mp->pool_config;
	return p->supply.tail - p->supply.head;
}

static struct rte_mempool_ops pio_ops = {
	.name = "packetio",
	.alloc = pio_ops_alloc,
	.free = pio_ops_free,
	.enqueue = pio_ops_enqueue,
	.dequeue = pio_ops_dequeue,
	.get_count = pio_ops_count,
};

RTE_MEMPOOL_REGISTER_OPS(pio_ops);

/* ---- ports ---- */

int pio_find_port(const char *name, uint16_t *port)
{
	uint16_t p;
	if (rte_eth_dev_get_port_by_name(name, &p) != 0)
		return -ENODEV;
	*port = p;
	return 0;
}

int pio_probe(const char *devargs, const char *name, uint16_t *port, char *err)
{
	int rc = rte_dev_probe(devargs);
	if (rc < 0) {
		ERR("rte_dev_probe %s: %s", devargs, rte_strerror(-rc));
		return rc;
	}
	if (pio_find_port(name, port) != 0) {
		ERR("probing %s made no ethernet port named %s", devargs, name);
		return -ENODEV;
	}
	return 0;
}

int pio_dev_info_get(uint16_t port, pio_dev_info *d, char *err)
{
	struct rte_eth_dev_info info;
	int rc = rte_eth_dev_info_get(port, &info);
	if (rc != 0) {
		ERR("rte_eth_dev_info_get: %s", rte_strerror(-rc));
		return rc;
	}
	memset(d, 0, sizeof(*d));
	snprintf(d->driver, sizeof(d->driver), "%s", info.driver_name ? info.driver_name : "");
	rte_eth_dev_get_name_by_port(port, d->name);
	int s = rte_eth_dev_socket_id(port);
	d->socket = s < 0 ? SOCKET_ID_ANY : s;
	d->if_index = info.if_index;
	d->max_rx_queues = info.max_rx_queues;
	d->max_tx_queues = info.max_tx_queues;
	d->rx_desc_max = info.rx_desc_lim.nb_max;
	d->tx_desc_max = info.tx_desc_lim.nb_max;
	d->min_rx_bufsize = info.min_rx_bufsize;
	d->max_rx_pktlen = info.max_rx_pktlen;
	d->rx_offload_capa = info.rx_offload_capa;
	d->tx_offload_capa = info.tx_offload_capa;
	struct rte_ether_addr mac;
	if (rte_eth_macaddr_get(port, &mac) == 0)
		memcpy(d->mac, mac.addr_bytes, 6);
	return 0;
}

#define RX_CSUM (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM | RTE_ETH_RX_OFFLOAD_TCP_CKSUM)
#define TX_CSUM (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM | RTE_ETH_TX_OFFLOAD_TCP_CKSUM)

int pio_configure(uint16_t port, uint16_t nrx, uint16_t ntx, uint32_t want, uint32_t *kept, char *err)
{
	struct rte_eth_dev_info info;
	int rc = rte_eth_dev_info_get(port, &info);
	if (rc != 0) {
		ERR("rte_eth_dev_info_get: %s", rte_strerror(-rc));
		return rc;
	}
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	if (nrx > 1) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf =
		    (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP) & info.flow_type_rss_offloads;
	}
	if (want & PIO_RX_CHECKSUM)
		conf.rxmode.offloads |= RX_CSUM & info.rx_offload_capa;
	if (want & (PIO_TX_CHECKSUM | PIO_TX_TSO))
		conf.txmode.offloads |= TX_CSUM & info.tx_offload_capa;
	if (want & PIO_TX_TSO)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_TCP_TSO & info.tx_offload_capa;
	rc = rte_eth_dev_configure(port, nrx, ntx, &conf);
	if (rc != 0) {
		ERR("rte_eth_dev_configure (%u rx, %u tx queues): %s", nrx, ntx, rte_strerror(-rc));
		return rc;
	}
	uint32_t k = 0;
	if ((conf.rxmode.offloads & RX_CSUM) == RX_CSUM)
		k |= PIO_RX_CHECKSUM;
	if ((conf.txmode.offloads & TX_CSUM) == TX_CSUM) {
		k |= PIO_TX_CHECKSUM;
		if (conf.txmode.offloads & RTE_ETH_TX_OFFLOAD_TCP_TSO)
			k |= PIO_TX_TSO;
	}
	*kept = k;
	return 0;
}

int pio_rx_queue_setup(uint16_t port, uint16_t q, uint16_t depth, int socket, void *mp, char *err)
{
	int rc = rte_eth_rx_queue_setup(port, q, depth, socket, NULL, mp);
	if (rc != 0)
		ERR("rte_eth_rx_queue_setup %u: %s", q, rte_strerror(-rc));
	return rc;
}

int pio_tx_queue_setup(uint16_t port, uint16_t q, uint16_t depth, int socket, char *err)
{
	int rc = rte_eth_tx_queue_setup(port, q, depth, socket, NULL);
	if (rc != 0)
		ERR("rte_eth_tx_queue_setup %u: %s", q, rte_strerror(-rc));
	return rc;
}

int pio_start(uint16_t port, char *err)
{
	int rc = rte_eth_dev_start(port);
	if (rc < 0)
		ERR("rte_eth_dev_start: %s", rte_strerror(-rc));
	return rc < 0 ? rc : 0;
}

int pio_stop(uint16_t port, char *err)
{
	int rc = rte_eth_dev_stop(port);
	if (rc < 0 && rc != -ENODEV) {
		ERR("rte_eth_dev_stop: %s", rte_strerror(-rc));
		return rc;
	}
	return 0;
}

int pio_close_remove(uint16_t port, char *err)
{
	struct rte_eth_dev_info info;
	struct rte_device *dev = NULL;
	if (rte_eth_dev_info_get(port, &info) == 0)
		dev = info.device;
	int rc = rte_eth_dev_close(port);
	if (rc < 0 && rc != -ENODEV) {
		ERR("rte_eth_dev_close: %s", rte_strerror(-rc));
		return rc;
	}
	if (dev != NULL) {
		rc = rte_dev_remove(dev);
		if (rc < 0 && rc != -ENOENT) {
			ERR("rte_dev_remove: %s", rte_strerror(-rc));
			return rc;
		}
	}
	return 0;
}

int pio_promiscuous(uint16_t port, int on, char *err)
{
	int rc = on ? rte_eth_promiscuous_enable(port) : rte_eth_promiscuous_disable(port);
	if (rc != 0)
		ERR("promiscuous %s: %s", on ? "on" : "off", rte_strerror(-rc));
	return rc;
}

int pio_get_mtu(uint16_t port, uint16_t *mtu) { return rte_eth_dev_get_mtu(port, mtu); }

/* ---- memory ---- */

void *pio_region_reserve(const char *name, size_t size, size_t align, int socket, char *err)
{
	const struct rte_memzone *mz = rte_memzone_reserve_aligned(name, size, socket, 0, align);
	if (mz == NULL) {
		int e = rte_errno;
		ERR("rte_memzone_reserve %zu MB: %s (give the EAL more memory: -m, or hugepages)", size >> 20,
		    rte_strerror(e));
		return NULL;
	}
	return mz->addr;
}

void pio_region_free(const char *name)
{
	const struct rte_memzone *mz = rte_memzone_lookup(name);
	if (mz != NULL)
		rte_memzone_free(mz);
}

static int ring_init(pio_ring *r, uint32_t size, int socket)
{
	r->buf = rte_zmalloc_socket("pio_ring", size * sizeof(uint64_t), RTE_CACHE_LINE_SIZE, socket);
	if (r->buf == NULL)
		return -ENOMEM;
	r->mask = size - 1;
	r->head = r->tail = 0;
	return 0;
}

void pio_mempool_free(void *mp, pio_pool *pool)
{
	if (mp != NULL)
		rte_mempool_free(mp);
	if (pool != NULL) {
		rte_free(pool->supply.buf);
		rte_free(pool->returned.buf);
		rte_free(pool);
	}
}

int pio_mempool_new(const char *name, void *addr, uint32_t n, uint32_t frame_size, uint32_t ring_size, int socket,
		    void **out_mp, pio_pool **out_pool, char *err)
{
	pio_pool *pool = rte_zmalloc_socket("pio_pool", sizeof(*pool), RTE_CACHE_LINE_SIZE, socket);
	if (pool == NULL || ring_init(&pool->supply, ring_size, socket) != 0 ||
	    ring_init(&pool->returned, ring_size, socket) != 0) {
		pio_mempool_free(NULL, pool);
		ERR("mempool %s: out of EAL memory for its rings", name);
		return -ENOMEM;
	}
	uint32_t hdr = RTE_ALIGN_CEIL(sizeof(struct rte_mempool_objhdr), RTE_MEMPOOL_ALIGN);
	struct rte_mempool *mp = rte_mempool_create_empty(name, n, frame_size - hdr, 0,
							  sizeof(struct rte_pktmbuf_pool_private), socket,
							  RTE_MEMPOOL_F_NO_SPREAD);
	if (mp == NULL) {
		int e = rte_errno;
		pio_mempool_free(NULL, pool);
		ERR("rte_mempool_create_empty %s: %s", name, rte_strerror(e));
		return -e;
	}
	int rc;
	if (mp->header_size != hdr || mp->trailer_size != 0 || mp->header_size + mp->elt_size != frame_size) {
		ERR("mempool %s: objects are %u+%u+%u bytes, not one %u-byte frame", name, mp->header_size,
		    mp->elt_size, mp->trailer_size, frame_size);
		rc = -EINVAL;
		goto fail;
	}
	rc = rte_mempool_set_ops_byname(mp, "packetio", pool);
	if (rc != 0) {
		ERR("rte_mempool_set_ops_byname: %s", rte_strerror(-rc));
		goto fail;
	}
	struct rte_pktmbuf_pool_private priv = {
	    .mbuf_data_room_size = frame_size - hdr - sizeof(struct rte_mbuf),
	    .mbuf_priv_size = 0,
	};
	rte_pktmbuf_pool_init(mp, &priv);
	rc = rte_mempool_populate_virt(mp, addr, (size_t)n * frame_size, getpagesize(), NULL, NULL);
	if (rc < 0 || (uint32_t)rc != n) {
		ERR("rte_mempool_populate_virt %s: %d of %u objects (%s)", name, rc, n,
		    rc < 0 ? rte_strerror(-rc) : "short");
		rc = rc < 0 ? rc : -ENOMEM;
		goto fail;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	pool->returned.head = pool->returned.tail; // populate "freed" every object
	*out_mp = mp;
	*out_pool = pool;
	return 0;
fail:
	pio_mempool_free(mp, pool);
	return rc;
}

/* ---- the fast path: one call per burst ---- */

uint16_t pio_rx_burst(uint16_t port, uint16_t q, uint64_t *mbufs, uint16_t n)
{
	return rte_eth_rx_burst(port, q, (struct rte_mbuf **)mbufs, n);
}

uint16_t pio_tx_burst(uint16_t port, uint16_t q, uint64_t *mbufs, uint16_t n)
{
	return rte_eth_tx_burst(port, q, (struct rte_mbuf **)mbufs, n);
}

void pio_tx_poke(uint16_t port, uint16_t q)
{
	/* A driver without a cleanup call (net_af_xdp) reaps its completion
	 * ring in a transmit burst, even an empty one. */
	struct rte_mbuf *none[1];

	if (rte_eth_tx_done_cleanup(port, q, 0) == -ENOTSUP) {
		rte_eth_tx_descriptor_status(port, q, 0);
		rte_eth_tx_burst(port, q, none, 0);
	}
}

/* ---- counters ---- */

int pio_stats_get(uint16_t port, pio_stats *s)
{
	struct rte_eth_stats st;
	int rc = rte_eth_stats_get(port, &st);
	if (rc != 0)
		return rc;
	s->ipackets = st.ipackets;
	s->opackets = st.opackets;
	s->ibytes = st.ibytes;
	s->obytes = st.obytes;
	s->imissed = st.imissed;
	s->ierrors = st.ierrors;
	s->oerrors = st.oerrors;
	s->rx_nombuf = st.rx_nombuf;
	return 0;
}

// pio_xstats_get fills names (n entries of RTE_ETH_XSTATS_NAME_SIZE bytes)
// and values, each value landing beside the name its id names. With n == 0
// it returns how many there are.
int pio_xstats_get(uint16_t port, char *names, uint64_t *values, int n)
{
	int count = rte_eth_xstats_get_names(port, NULL, 0);
	if (count < 0 || n == 0 || names == NULL)
		return count;
	if (count > n)
		count = n;
	struct rte_eth_xstat_name *xn = calloc(count, sizeof(*xn));
	struct rte_eth_xstat *xs = calloc(count, sizeof(*xs));
	int rc = -ENOMEM;
	if (xn == NULL || xs == NULL)
		goto out;
	rc = rte_eth_xstats_get_names(port, xn, count);
	if (rc < 0)
		goto out;
	int got = rte_eth_xstats_get(port, xs, count);
	if (got < 0) {
		rc = got;
		goto out;
	}
	if (got > count)
		got = count;
	for (int i = 0; i < count; i++) {
		snprintf(names + (size_t)i * RTE_ETH_XSTATS_NAME_SIZE, RTE_ETH_XSTATS_NAME_SIZE, "%s", xn[i].name);
		values[i] = 0;
	}
	for (int i = 0; i < got; i++)
		if (xs[i].id < (uint64_t)count)
			values[xs[i].id] = xs[i].value;
	rc = count;
out:
	free(xn);
	free(xs);
	return rc;
}

/* ---- rte_flow ---- */

static void flow_err(pio_flow_err *e, int rc, struct rte_flow_error *fe)
{
	e->rc = rc;
	e->err_no = rte_errno;
	e->type = fe->type;
	snprintf(e->message, sizeof(e->message), "%s", fe->message ? fe->message : "");
}

void pio_flow_isolate(uint16_t port, pio_flow_err *e)
{
	struct rte_flow_error fe = {0};
	memset(e, 0, sizeof(*e));
	int rc = rte_flow_isolate(port, 1, &fe);
	if (rc != 0)
		flow_err(e, rc, &fe);
}

void pio_flow_flush(uint16_t port, pio_flow_err *e)
{
	struct rte_flow_error fe = {0};
	memset(e, 0, sizeof(*e));
	int rc = rte_flow_flush(port, &fe);
	if (rc != 0)
		flow_err(e, rc, &fe);
}

#define PIO_MAX_ITEMS 8
#define PIO_MAX_QUEUES 64

void pio_flow_create(uint16_t port, const pio_flow_item *items, int nitems, const uint16_t *queues, int nq,
		     int validate_only, pio_flow_err *e)
{
	memset(e, 0, sizeof(*e));
	if (nitems > PIO_MAX_ITEMS || nq < 1 || nq > PIO_MAX_QUEUES) {
		e->rc = -EINVAL;
		e->err_no = EINVAL;
		snprintf(e->message, sizeof(e->message), "%d items and %d queues is beyond the shim", nitems, nq);
		return;
	}
	struct rte_flow_item pat[PIO_MAX_ITEMS + 1];
	struct rte_flow_item_eth eth[2];
	struct rte_flow_item_vlan vlan[2];
	struct rte_flow_item_ipv4 ip4[2];
	struct rte_flow_item_ipv6 ip6[2];
	struct rte_flow_item_tcp tcp[2];
	struct rte_flow_item_udp udp[2];
	memset(pat, 0, sizeof(pat));
	memset(eth, 0, sizeof(eth));
	memset(vlan, 0, sizeof(vlan));
	memset(ip4, 0, sizeof(ip4));
	memset(ip6, 0, sizeof(ip6));
	memset(tcp, 0, sizeof(tcp));
	memset(udp, 0, sizeof(udp));
	for (int i = 0; i < nitems; i++) {
		const pio_flow_item *it = &items[i];
		switch (it->type) {
		case 1:
			pat[i].type = RTE_FLOW_ITEM_TYPE_ETH;
			memcpy(eth[0].dst.addr_bytes, it->dst_mac, 6);
			memcpy(eth[1].dst.addr_bytes, it->dst_mac_mask, 6);
			eth[0].type = rte_cpu_to_be_16(it->ether_type);
			eth[1].type = rte_cpu_to_be_16(it->ether_type_mask);
			pat[i].spec = &eth[0];
			pat[i].mask = &eth[1];
			break;
		case 2:
			pat[i].type = RTE_FLOW_ITEM_TYPE_VLAN;
			vlan[0].tci = rte_cpu_to_be_16(it->tci);
			vlan[1].tci = rte_cpu_to_be_16(it->tci_mask);
			vlan[0].inner_type = rte_cpu_to_be_16(it->ether_type);
			vlan[1].inner_type = rte_cpu_to_be_16(it->ether_type_mask);
			pat[i].spec = &vlan[0];
			pat[i].mask = &vlan[1];
			break;
		case 3:
			pat[i].type = RTE_FLOW_ITEM_TYPE_IPV4;
			memcpy(&ip4[0].hdr.src_addr, it->src, 4);
			memcpy(&ip4[1].hdr.src_addr, it->src_mask, 4);
			memcpy(&ip4[0].hdr.dst_addr, it->dst, 4);
			memcpy(&ip4[1].hdr.dst_addr, it->dst_mask, 4);
			ip4[0].hdr.next_proto_id = it->proto;
			ip4[1].hdr.next_proto_id = it->proto_mask;
			pat[i].spec = &ip4[0];
			pat[i].mask = &ip4[1];
			break;
		case 4:
			pat[i].type = RTE_FLOW_ITEM_TYPE_IPV6;
			memcpy(ip6[0].hdr.src_addr, it->src, 16);
			memcpy(ip6[1].hdr.src_addr, it->src_mask, 16);
			memcpy(ip6[0].hdr.dst_addr, it->dst, 16);
			memcpy(ip6[1].hdr.dst_addr, it->dst_mask, 16);
			ip6[0].hdr.proto = it->proto;
			ip6[1].hdr.proto = it->proto_mask;
			pat[i].spec = &ip6[0];
			pat[i].mask = &ip6[1];
			break;
		case 5:
			pat[i].type = RTE_FLOW_ITEM_TYPE_TCP;
			tcp[0].hdr.src_port = rte_cpu_to_be_16(it->src_port);
			tcp[1].hdr.src_port = rte_cpu_to_be_16(it->src_port_mask);
			tcp[0].hdr.dst_port = rte_cpu_to_be_16(it->dst_port);
			tcp[1].hdr.dst_port = rte_cpu_to_be_16(it->dst_port_mask);
			pat[i].spec = &tcp[0];
			pat[i].mask = &tcp[1];
			break;
		case 6:
			pat[i].type = RTE_FLOW_ITEM_TYPE_UDP;
			udp[0].hdr.src_port = rte_cpu_to_be_16(it->src_port);
			udp[1].hdr.src_port = rte_cpu_to_be_16(it->src_port_mask);
			udp[0].hdr.dst_port = rte_cpu_to_be_16(it->dst_port);
			udp[1].hdr.dst_port = rte_cpu_to_be_16(it->dst_port_mask);
			pat[i].spec = &udp[0];
			pat[i].mask = &udp[1];
			break;
		default:
			e->rc = -EINVAL;
			e->err_no = EINVAL;
			snprintf(e->message, sizeof(e->message), "item type %u unknown to the shim", it->type);
			return;
		}
	}
	pat[nitems].type = RTE_FLOW_ITEM_TYPE_END;

	struct rte_flow_action_queue aq = {.index = queues[0]};
	struct rte_flow_action_rss rss = {
	    .types = RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP,
	    .queue_num = nq,
	    .queue = queues,
	};
	struct rte_flow_action act[2] = {
	    {.type = nq == 1 ? RTE_FLOW_ACTION_TYPE_QUEUE : RTE_FLOW_ACTION_TYPE_RSS,
	     .conf = nq == 1 ? (const void *)&aq : (const void *)&rss},
	    {.type = RTE_FLOW_ACTION_TYPE_END},
	};
	struct rte_flow_attr attr = {.ingress = 1};
	struct rte_flow_error fe = {0};
	int rc = rte_flow_validate(port, &attr, pat, act, &fe);
	if (rc != 0) {
		flow_err(e, rc, &fe);
		return;
	}
	if (validate_only)
		return;
	if (rte_flow_create(port, &attr, pat, act, &fe) == NULL)
		flow_err(e, -rte_errno, &fe);
}
