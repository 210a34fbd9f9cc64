// The packetio DPDK shim: plain C types and functions over the EAL, ethdev,
// mempool and rte_flow. This header includes no DPDK header, so the Go files
// that include it compile without parsing DPDK; only shim.c does.
#ifndef PIO_SHIM_H
#define PIO_SHIM_H

#include <stddef.h>
#include <stdint.h>

#define PIO_ERRLEN 256

// A single-producer single-consumer ring of mbuf addresses, shared with Go.
// head is the consumer's index and tail the producer's; both run free.
typedef struct {
	uint64_t *buf;
	uint32_t mask;
	uint32_t head;
	uint32_t tail;
	uint32_t pad;
} pio_ring;

// The private state of a "packetio" mempool: the driver takes receive
// buffers from supply and frees mbufs into returned.
typedef struct {
	pio_ring supply;
	pio_ring returned;
	uint64_t drops; // frees refused because returned was full
	uint64_t empty; // allocations refused because supply was short
} pio_pool;

typedef struct {
	char driver[64];
	char name[64];
	int32_t socket;
	uint32_t if_index;
	uint16_t max_rx_queues, max_tx_queues;
	uint16_t rx_desc_max, tx_desc_max;
	uint32_t min_rx_bufsize, max_rx_pktlen;
	uint64_t rx_offload_capa, tx_offload_capa;
	uint8_t mac[6];
} pio_dev_info;

// Offloads asked for and kept, as packetio's own bits so Go never carries
// DPDK constants.
#define PIO_RX_CHECKSUM 0x1
#define PIO_TX_CHECKSUM 0x2
#define PIO_TX_TSO 0x4

typedef struct {
	uint64_t ipackets, opackets, ibytes, obytes, imissed, ierrors, oerrors, rx_nombuf;
} pio_stats;

// One rte_flow pattern item, flattened; see flow.Item in Go.
typedef struct {
	uint8_t type; // 1 eth, 2 vlan, 3 ipv4, 4 ipv6, 5 tcp, 6 udp
	uint8_t proto, proto_mask;
	uint8_t dst_mac[6], dst_mac_mask[6];
	uint16_t ether_type, ether_type_mask; // host order
	uint16_t tci, tci_mask;
	uint8_t src[16], src_mask[16], dst[16], dst_mask[16];
	uint16_t src_port, src_port_mask, dst_port, dst_port_mask; // host order
} pio_flow_item;

typedef struct {
	int rc;
	int err_no;
	int type;
	char message[PIO_ERRLEN];
} pio_flow_err;

typedef struct {
	uint32_t mbuf_size, headroom, obj_header;
	uint32_t buf_addr, buf_iova, data_off, ol_flags, pkt_len, data_len, buf_len, pool, next, tx_offload;
	uint64_t rx_ip_good, rx_l4_good, tx_ipv4, tx_ipv6, tx_ip_cksum, tx_tcp_cksum, tx_udp_cksum, tx_tcp_seg;
} pio_layout;

int pio_eal_init(int argc, char **argv, char *err);
const char *pio_runtime_dir(void);
void pio_layout_get(pio_layout *l);

int pio_find_port(const char *name, uint16_t *port);
int pio_probe(const char *devargs, const char *name, uint16_t *port, char *err);
int pio_dev_info_get(uint16_t port, pio_dev_info *info, char *err);
int pio_configure(uint16_t port, uint16_t nrx, uint16_t ntx, uint32_t want, uint32_t *kept, char *err);
int pio_rx_queue_setup(uint16_t port, uint16_t q, uint16_t depth, int socket, void *mp, char *err);
int pio_tx_queue_setup(uint16_t port, uint16_t q, uint16_t depth, int socket, char *err);
int pio_start(uint16_t port, char *err);
int pio_stop(uint16_t port, char *err);
int pio_close_remove(uint16_t port, char *err);
int pio_promiscuous(uint16_t port, int on, char *err);
int pio_get_mtu(uint16_t port, uint16_t *mtu);

void *pio_region_reserve(const char *name, size_t size, size_t align, int socket, char *err);
void pio_region_free(const char *name);
int pio_mempool_new(const char *name, void *addr, uint32_t n, uint32_t frame_size, uint32_t ring_size,
		    int socket, void **mp, pio_pool **pool, char *err);
void pio_mempool_free(void *mp, pio_pool *pool);

uint16_t pio_rx_burst(uint16_t port, uint16_t q, uint64_t *mbufs, uint16_t n);
uint16_t pio_tx_burst(uint16_t port, uint16_t q, uint64_t *mbufs, uint16_t n);
void pio_tx_poke(uint16_t port, uint16_t q);

int pio_stats_get(uint16_t port, pio_stats *s);
int pio_xstats_get(uint16_t port, char *names, uint64_t *values, int n);

void pio_flow_isolate(uint16_t port, pio_flow_err *e);
void pio_flow_create(uint16_t port, const pio_flow_item *items, int nitems, const uint16_t *queues, int nq,
		     int validate_only, pio_flow_err *e);
void pio_flow_flush(uint16_t port, pio_flow_err *e);

#endif
