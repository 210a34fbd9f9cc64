// xskref: the C AF_XDP reference the sweep measures packetio's afxdp
// against, in the same run on the same veth. It is what a C programmer
// writes with libxdp's xsk API, the way the kernel's xdpsock sample does:
// one socket on one queue, need-wakeup on, a 4096-frame UMEM of 2048-byte
// frames, 2048-entry rings, native XDP, batches of -b.
//
// -m is multi-buffer, for frames bigger than one UMEM frame (jumbo frames
// on a veth whose MTU is 9000): 4096-byte frames, the socket bound with
// XDP_USE_SG and the XDP program loaded with BPF_F_XDP_HAS_FRAGS, so a
// packet is a chain of descriptors, every one but the last marked
// XDP_PKT_CONTD. rx counts packets (descriptors without the mark), fwd
// swaps the MACs in each chain's first frame and sends the whole chain
// back, tx sends the -f frame as a chain.
//
//   rx   receive and drop (xdpsock rxdrop)
//   tx   transmit copies of one frame (xdpsock txonly)
//   fwd  swap the MACs and send each frame back out (xdpsock l2fwd)
//
// Waiting, as xdpsock: by default the loop spins and makes a system call
// only when the kernel asks (need-wakeup) or busy-polling is on; with -p it
// blocks in poll(2) when the ring is empty, as packetio's receive loops do.
// -B N sets SO_PREFER_BUSY_POLL, SO_BUSY_POLL=N us and SO_BUSY_POLL_BUDGET=b.
//
// Its XDP program is five instructions loaded here (redirect to the
// socket of the packet's queue, XDP_PASS if there is none): no bpffs pin,
// no libxdp dispatcher, nothing left on the host when the interface goes.
// It is detached on exit.
//
// Every 100 ms it prints "T N": CLOCK_MONOTONIC in ns and the packets
// counted so far (received, sent, or forwarded), so a caller can take the
// rate over any window. It runs until SIGINT/SIGTERM or -d seconds.
//
// Build: cc -O2 -o xskref xskref.c -lxdp -lbpf
#define _GNU_SOURCE
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

#define NUM_FRAMES 4096
#define FRAME_SIZE 2048    // without -m
#define MB_FRAME_SIZE 4096 // with -m
#define RING_SIZE 2048
#define MAX_FRAME 65536

// Multi-buffer AF_XDP (Linux 6.6), in case the headers predate it.
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "xskref: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

// load_redirect loads "return bpf_redirect_map(&xsks, ctx->rx_queue_index,
// XDP_PASS)" over the map.
static int load_redirect(int map_fd, int frags)
{
	struct bpf_insn insns[] = {
		{.code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_1, .off = 16}, // r2 = ctx->rx_queue_index
		{.code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1, .src_reg = BPF_PSEUDO_MAP_FD, .imm = map_fd},
		{0},
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3, .imm = XDP_PASS},
		{.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_redirect_map},
		{.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .prog_flags = frags ? BPF_F_XDP_HAS_FRAGS : 0);
	return bpf_prog_load(BPF_PROG_TYPE_XDP, "xskref", "GPL", insns, sizeof(insns) / sizeof(insns[0]), &opts);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

struct ref {
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	void *area;
	int fd, busy, block;
	unsigned batch, outstanding;
	unsigned long long count;
	// Multi-buffer (-m): frame size, descriptors a transmitted packet
	// takes, completed transmit descriptors not yet a whole packet, and
	// whether forward is inside a chain.
	unsigned fsize, per, partial;
	int mb, chained;
};

static void kick_tx(struct ref *r)
{
	if (r->busy || xsk_ring_prod__needs_wakeup(&r->tx))
		sendto(r->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
}

// complete takes finished transmit frames off the completion ring; with
// refill they go straight back to the fill ring (forwarding).
static void complete(struct ref *r, int refill)
{
	__u32 idx_cq = 0, idx_fq = 0;
	if (!r->outstanding)
		return;
	kick_tx(r);
	unsigned n = xsk_ring_cons__peek(&r->cq, r->batch * 4, &idx_cq);
	if (!n)
		return;
	if (refill) {
		while (xsk_ring_prod__reserve(&r->fq, n, &idx_fq) != n)
			if (r->busy || xsk_ring_prod__needs_wakeup(&r->fq))
				recvfrom(r->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
		for (unsigned i = 0; i < n; i++)
			*xsk_ring_prod__fill_addr(&r->fq, idx_fq++) = *xsk_ring_cons__comp_addr(&r->cq, idx_cq++);
		xsk_ring_prod__submit(&r->fq, n);
	}
	xsk_ring_cons__release(&r->cq, n);
	r->outstanding -= n;
	if (!refill) {
		r->partial += n;
		r->count += r->partial / r->per;
		r->partial %= r->per;
	}
}

// packets counts the descriptors that end a packet (all of them without
// multi-buffer).
static unsigned packets(struct ref *r, __u32 idx, unsigned n)
{
	if (!r->mb)
		return n;
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++)
		if (!(xsk_ring_cons__rx_desc(&r->rx, idx + i)->options & XDP_PKT_CONTD))
			k++;
	return k;
}

// wait_rx is what a loop does when the receive ring is empty.
static void wait_rx(struct ref *r)
{
	if (r->block) {
		struct pollfd p = {.fd = r->fd, .events = POLLIN};
		poll(&p, 1, 1000);
		return;
	}
	if (r->busy || xsk_ring_prod__needs_wakeup(&r->fq))
		recvfrom(r->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

static void rx_drop(struct ref *r)
{
	__u32 idx_rx = 0, idx_fq = 0;
	unsigned n = xsk_ring_cons__peek(&r->rx, r->batch, &idx_rx);
	if (!n) {
		wait_rx(r);
		return;
	}
	while (xsk_ring_prod__reserve(&r->fq, n, &idx_fq) != n)
		if (r->busy || xsk_ring_prod__needs_wakeup(&r->fq))
			recvfrom(r->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
	for (unsigned i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&r->fq, idx_fq++) = xsk_ring_cons__rx_desc(&r->rx, idx_rx++)->addr;
	xsk_ring_prod__submit(&r->fq, n);
	r->count += packets(r, idx_rx - n, n);
	xsk_ring_cons__release(&r->rx, n);
}

static void l2fwd(struct ref *r)
{
	__u32 idx_rx = 0, idx_tx = 0;
	complete(r, 1);
	unsigned n = xsk_ring_cons__peek(&r->rx, r->batch, &idx_rx);
	if (!n) {
		wait_rx(r);
		return;
	}
	while (xsk_ring_prod__reserve(&r->tx, n, &idx_tx) != n) {
		complete(r, 1);
		if (stop)
			return;
	}
	unsigned done = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct xdp_desc *in = xsk_ring_cons__rx_desc(&r->rx, idx_rx++);
		if (!r->chained) { // a packet's first frame holds its MACs
			unsigned char *p = xsk_umem__get_data(r->area, in->addr), mac[6];
			memcpy(mac, p, 6);
			memcpy(p, p + 6, 6);
			memcpy(p + 6, mac, 6);
		}
		r->chained = r->mb && (in->options & XDP_PKT_CONTD);
		done += !r->chained;
		struct xdp_desc *out = xsk_ring_prod__tx_desc(&r->tx, idx_tx++);
		out->addr = in->addr;
		out->len = in->len;
		out->options = in->options & XDP_PKT_CONTD;
	}
	xsk_ring_prod__submit(&r->tx, n);
	xsk_ring_cons__release(&r->rx, n);
	r->outstanding += n;
	r->count += done;
	kick_tx(r);
}

// tx_only sends batches of the frame, each packet from per consecutive
// UMEM frames (the frame cut into fsize pieces, written there once).
static void tx_only(struct ref *r, unsigned len, unsigned *next)
{
	__u32 idx = 0;
	unsigned n = r->batch * r->per, slots = NUM_FRAMES / r->per;
	if (xsk_ring_prod__reserve(&r->tx, n, &idx) == n) {
		for (unsigned i = 0; i < r->batch; i++) {
			unsigned first = (*next)++ % slots * r->per;
			for (unsigned j = 0; j < r->per; j++) {
				struct xdp_desc *d = xsk_ring_prod__tx_desc(&r->tx, idx++);
				d->addr = (__u64)(first + j) * r->fsize;
				d->len = j + 1 < r->per ? r->fsize : len - j * r->fsize;
				d->options = j + 1 < r->per ? XDP_PKT_CONTD : 0;
			}
		}
		xsk_ring_prod__submit(&r->tx, n);
		r->outstanding += n;
	}
	complete(r, 0);
}

static void usage(void)
{
	fprintf(stderr, "usage: xskref rx|tx|fwd -i IFACE [-q QUEUE] [-b BATCH] [-B BUSY_USECS] [-p] [-m] [-c CPU] [-d SECONDS] [-f FRAMEHEX]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct ref r = {.batch = 64, .fsize = FRAME_SIZE, .per = 1};
	const char *ifname = NULL, *hex = NULL;
	int queue = 0, cpu = -1, secs = 0, opt;
	if (argc < 2)
		usage();
	const char *mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "i:q:b:B:pmc:d:f:")) != -1) {
		switch (opt) {
		case 'i': ifname = optarg; break;
		case 'q': queue = atoi(optarg); break;
		case 'b': r.batch = (unsigned)atoi(optarg); break;
		case 'B': r.busy = atoi(optarg); break;
		case 'p': r.block = 1; break;
		case 'm': r.mb = 1, r.fsize = MB_FRAME_SIZE; break;
		case 'c': cpu = atoi(optarg); break;
		case 'd': secs = atoi(optarg); break;
		case 'f': hex = optarg; break;
		default: usage();
		}
	}
	int rx = !strcmp(mode, "rx"), tx = !strcmp(mode, "tx"), fwd = !strcmp(mode, "fwd");
	if (!ifname || !(rx || tx || fwd) || r.batch < 1 || r.batch > 512 || (tx && !hex))
		usage();
	int ifindex = if_nametoindex(ifname);
	if (!ifindex)
		die(ifname, errno);
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			die("sched_setaffinity", errno);
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	r.area = mmap(NULL, (size_t)NUM_FRAMES * r.fsize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r.area == MAP_FAILED)
		die("mmap", errno);
	struct xsk_umem_config uc = {.fill_size = RING_SIZE, .comp_size = RING_SIZE, .frame_size = r.fsize};
	int err = xsk_umem__create(&r.umem, r.area, (__u64)NUM_FRAMES * r.fsize, &r.fq, &r.cq, &uc);
	if (err)
		die("xsk_umem__create", err);
	struct xsk_socket_config sc = {
		.rx_size = rx || fwd ? RING_SIZE : 0,
		.tx_size = tx || fwd ? RING_SIZE : 0,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = XDP_FLAGS_DRV_MODE,
		.bind_flags = XDP_USE_NEED_WAKEUP | (r.mb ? XDP_USE_SG : 0),
	};
	err = xsk_socket__create(&r.xsk, ifname, queue, r.umem, sc.rx_size ? &r.rx : NULL, sc.tx_size ? &r.tx : NULL, &sc);
	if (err)
		die("xsk_socket__create", err);
	r.fd = xsk_socket__fd(r.xsk);

	int map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "xskref", 4, 4, 64, NULL);
	if (map_fd < 0)
		die("bpf_map_create", errno);
	int prog_fd = load_redirect(map_fd, r.mb);
	if (prog_fd < 0)
		die("bpf_prog_load", errno);
	if ((err = xsk_socket__update_xskmap(r.xsk, map_fd)))
		die("xsk_socket__update_xskmap", err);
	if ((err = bpf_xdp_attach(ifindex, prog_fd, XDP_FLAGS_DRV_MODE, NULL)))
		die("bpf_xdp_attach (native)", err);

	if (r.busy) {
		int one = 1, usecs = r.busy, budget = (int)r.batch;
		if (setsockopt(r.fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof(one)) ||
		    setsockopt(r.fd, SOL_SOCKET, SO_BUSY_POLL, &usecs, sizeof(usecs)) ||
		    setsockopt(r.fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof(budget)))
			die("busy-poll socket options", errno);
	}

	unsigned len = 0, next = 0;
	if (tx) {
		size_t n = strlen(hex) / 2;
		if (n < 14 || n > (r.mb ? MAX_FRAME : r.fsize))
			usage();
		static unsigned char frame[MAX_FRAME];
		for (size_t i = 0; i < n; i++) {
			int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
			if (hi < 0 || lo < 0)
				usage();
			frame[i] = (unsigned char)(hi << 4 | lo);
		}
		len = (unsigned)n;
		r.per = (len + r.fsize - 1) / r.fsize;
		if (r.batch * r.per > RING_SIZE)
			r.batch = RING_SIZE / r.per;
		for (int f = 0; f < NUM_FRAMES; f++) {
			size_t off = (size_t)(f % r.per) * r.fsize;
			if (off < n)
				memcpy((char *)r.area + (size_t)f * r.fsize, frame + off, n - off < r.fsize ? n - off : r.fsize);
		}
	} else {
		// Half the frames to the fill ring, the rest for forwarding.
		__u32 idx = 0;
		unsigned fill = RING_SIZE;
		if (xsk_ring_prod__reserve(&r.fq, fill, &idx) != fill)
			die("fill ring", ENOSPC);
		for (unsigned i = 0; i < fill; i++)
			*xsk_ring_prod__fill_addr(&r.fq, idx++) = (__u64)i * r.fsize;
		xsk_ring_prod__submit(&r.fq, fill);
	}

	unsigned long long start = now_ns(), last = start;
	printf("%llu %llu\n", start, 0ull);
	fflush(stdout);
	while (!stop) {
		if (rx)
			rx_drop(&r);
		else if (fwd)
			l2fwd(&r);
		else
			tx_only(&r, len, &next);
		unsigned long long t = now_ns();
		if (t - last >= 100000000ull) {
			printf("%llu %llu\n", t, r.count);
			fflush(stdout);
			last = t;
			if (secs && t - start >= (unsigned long long)secs * 1000000000ull)
				break;
		}
	}
	printf("%llu %llu\n", now_ns(), r.count);
	bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
	xsk_socket__delete(r.xsk);
	xsk_umem__delete(r.umem);
	return 0;
}
