// xdpport.h: pktbench's AF_XDP port (the `xdp` variant), through libxdp's
// xsk API and its built-in redirect program (linked statically, build.sh;
// libxdp's multi-program dispatcher, xdp-dispatcher.o, is in the guest's
// /usr/lib/x86_64-linux-gnu/bpf and bpffs is mounted by init.sh).
//
// The socket is bound to queue 0 with XDP_USE_NEED_WAKEUP, in the best mode
// the running kernel and driver accept, tried in this order:
//   zerocopy  native XDP, XDP_ZEROCOPY (virtio-net from Linux 6.11 on);
//   native    the driver runs the program and copies into the UMEM
//             (virtio-net; in 6.1 only with MTU <= ~3500, so the MTU is
//             lowered for the run and restored at close);
//   generic   XDP_FLAGS_SKB_MODE: the program runs on the stack's skb
//             (e1000 and e1000e have no XDP of their own).
// Busy polling: SO_PREFER_BUSY_POLL, SO_BUSY_POLL and SO_BUSY_POLL_BUDGET on
// the socket, and the receive loop spins on the RX ring, making a
// non-blocking recvfrom() (which drives the NIC's NAPI where the kernel can)
// while it is empty.  Frames are whole UMEM chunks of 4 KiB: without XDP
// multi-buffer (6.1) the largest frame is a chunk less XDP_PACKET_HEADROOM.
// Multi-buffer (the `xdp-sg` variant, Linux 6.6 on): XDP_USE_SG and a
// redirect program of our own loaded with BPF_F_XDP_HAS_FRAGS (libxdp 1.3's
// built-in one is single-buffer): a frame spans up to XP_MAX_SEGS chunks,
// all but the last flagged XDP_PKT_CONTD; a received multi-chunk frame is
// gathered into one buffer (a copy, counted in the receiver's work).
// Included by pktbench.c after benchnet.h (one translation unit).
#ifndef XDPPORT_H
#define XDPPORT_H

#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <stddef.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4) // Linux 6.6's if_xdp.h
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
#define XP_MAX_SEGS 3u // a 9014-byte frame in 4 KiB chunks (3840 bytes on RX)

static void sleep_ms(int ms);

#define XP_FRAME 4096u       // UMEM chunk
#define XP_FRAMES 4096u      // 16 MiB of UMEM
#define XP_RX_FRAMES 2048u   // on the fill ring; the rest are TX frames
#define XP_RING 2048u        // every ring's size
#define XP_HEADROOM 256u     // XDP_PACKET_HEADROOM, taken from each RX chunk
#define XP_VIRTIO_MTU 3500   // native XDP on 6.1's virtio-net: MTU <= ~3506
#define XP_BUSY_US 20
#define XP_BUSY_BUDGET 64

enum xp_mode { XP_GENERIC, XP_NATIVE, XP_ZEROCOPY };
static const char *xp_mode_name[] = { "generic", "native", "zerocopy" };

struct xport {
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	uint8_t *area;
	int fd;
	const char *ifname;
	enum xp_mode mode;
	bool busy_poll;    // the busy-poll options took
	bool sg;           // multi-buffer: our own program, XDP_USE_SG
	int prog_fd, map_fd, ifindex;
	uint32_t xdp_flags; // the program's attach mode (sg)
	uint32_t rx_segs;  // descriptors the held frame spans
	uint64_t rx_seg_addr[XP_MAX_SEGS];
	uint8_t *gather;   // a multi-chunk frame, gathered
	uint32_t max_frame; // largest frame both ways
	int mtu_saved;     // the MTU before native XDP lowered it (0: untouched)
	uint64_t tx_free[XP_FRAMES - XP_RX_FRAMES];
	uint32_t ntx_free;
	uint64_t rx_addr;  // the held RX descriptor's address
	uint64_t kicks;    // sendto() wake-ups, for STATS
	char tried[160];   // the modes that failed and why, for the PORT line
};

static int xp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	if (level > LIBXDP_WARN)
		return 0;
	printf("LIBXDP ");
	return vprintf(fmt, ap);
}

static int xp_get_mtu(const char *ifname)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM, 0), mtu = -1;
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
	if (fd >= 0 && ioctl(fd, SIOCGIFMTU, &ifr) == 0)
		mtu = ifr.ifr_mtu;
	if (fd >= 0)
		close(fd);
	return mtu;
}

static int xp_set_mtu(const char *ifname, int mtu)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM, 0), r = -1;
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
	ifr.ifr_mtu = mtu;
	if (fd >= 0)
		r = ioctl(fd, SIOCSIFMTU, &ifr);
	if (fd >= 0)
		close(fd);
	return r;
}

// One attempt at a socket in one mode: 0 or a negative errno.  The UMEM
// is made afresh each time: the first socket is the UMEM's own file, which
// a failed bind leaves with its rings set up.
static int xp_try(struct xport *x, uint32_t xdp_flags, uint16_t bind_flags)
{
	struct xsk_umem_config ucfg = {
		.fill_size = XP_RING,
		.comp_size = XP_RING,
		.frame_size = XP_FRAME,
		.frame_headroom = 0,
	};
	struct xsk_socket_config cfg = {
		.rx_size = XP_RING,
		.tx_size = XP_RING,
		.libxdp_flags = x->sg ? XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD : 0,
		.xdp_flags = xdp_flags,
		.bind_flags = (uint16_t)(bind_flags | XDP_USE_NEED_WAKEUP | (x->sg ? XDP_USE_SG : 0)),
	};
	int e;
	// A failed attempt's socket leaves the queue only once the kernel's
	// deferred release has run: EBUSY until then.
	for (int tries = 0; tries < 50; tries++) {
		e = xsk_umem__create(&x->umem, x->area, (uint64_t)XP_FRAMES * XP_FRAME, &x->fill, &x->comp, &ucfg);
		if (e)
			die("xsk_umem__create: %s", strerror(-e));
		e = xsk_socket__create(&x->xsk, x->ifname, 0, x->umem, &x->rx, &x->tx, &cfg);
		if (!e)
			return 0;
		xsk_umem__delete(x->umem);
		x->umem = NULL;
		x->xsk = NULL;
		if (e != -EBUSY)
			break;
		sleep_ms(20);
	}
	size_t n = strlen(x->tried);
	snprintf(x->tried + n, sizeof x->tried - n, "%s%s-%s:%d", n ? "," : "",
	         xdp_flags & XDP_FLAGS_SKB_MODE ? "skb" : "drv", bind_flags & XDP_ZEROCOPY ? "zc" : "copy", -e);
	return e;
}

// The multi-buffer redirect program: every frame of queue i to the socket
// in xsks[i], XDP_PASS when there is none (bpf_redirect_map's fallback).
static int xp_sg_prog(int map_fd)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_1,
		  .off = offsetof(struct xdp_md, rx_queue_index) },
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1, .src_reg = BPF_PSEUDO_MAP_FD, .imm = map_fd },
		{ 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3, .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_redirect_map },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .prog_flags = BPF_F_XDP_HAS_FRAGS);
	return bpf_prog_load(BPF_PROG_TYPE_XDP, "pb_xsk_frags", "GPL", insns, sizeof insns / sizeof insns[0], &o);
}

// Multi-buffer: our program attached natively or else generically, then
// the socket (zero-copy first) put into its map.
static void xp_bind_sg(struct xport *x)
{
	static const uint32_t modes[] = { XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE };
	x->ifindex = (int)if_nametoindex(x->ifname);
	x->map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "pb_xsks", 4, 4, 64, NULL);
	if (x->map_fd < 0 || (x->prog_fd = xp_sg_prog(x->map_fd)) < 0)
		die("multi-buffer XDP program: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		if (bpf_xdp_attach(x->ifindex, x->prog_fd, modes[i], NULL) < 0) {
			size_t n = strlen(x->tried);
			snprintf(x->tried + n, sizeof x->tried - n, "%s%s-attach:%d", n ? "," : "",
			         modes[i] == XDP_FLAGS_DRV_MODE ? "drv" : "skb", errno);
			continue;
		}
		x->xdp_flags = modes[i];
		bool drv = modes[i] == XDP_FLAGS_DRV_MODE;
		if ((drv && xp_try(x, modes[i], XDP_ZEROCOPY) == 0 && (x->mode = XP_ZEROCOPY, true)) ||
		    (xp_try(x, modes[i], XDP_COPY) == 0 && (x->mode = drv ? XP_NATIVE : XP_GENERIC, true))) {
			int e = xsk_socket__update_xskmap(x->xsk, x->map_fd);
			if (e)
				die("XSKMAP update: %s", strerror(-e));
			return;
		}
		bpf_xdp_detach(x->ifindex, modes[i], NULL);
	}
	die("AF_XDP multi-buffer socket on %s: no mode took (XDP_USE_SG needs Linux 6.6)", x->ifname);
}

// The modes in order of preference (see the header).  Native XDP on a
// 6.1 virtio-net refuses a 9000-byte MTU: lowered once and tried again.
static void xp_bind_best(struct xport *x)
{
	int e;
	if ((e = xp_try(x, XDP_FLAGS_DRV_MODE, XDP_ZEROCOPY)) == 0) {
		x->mode = XP_ZEROCOPY;
		return;
	}
	if ((e = xp_try(x, XDP_FLAGS_DRV_MODE, XDP_COPY)) == 0) {
		x->mode = XP_NATIVE;
		return;
	}
	int mtu = xp_get_mtu(x->ifname);
	if (e != -EOPNOTSUPP && mtu > XP_VIRTIO_MTU && xp_set_mtu(x->ifname, XP_VIRTIO_MTU) == 0) {
		x->mtu_saved = mtu;
		if (xp_try(x, XDP_FLAGS_DRV_MODE, XDP_ZEROCOPY) == 0) {
			x->mode = XP_ZEROCOPY;
			return;
		}
		if (xp_try(x, XDP_FLAGS_DRV_MODE, XDP_COPY) == 0) {
			x->mode = XP_NATIVE;
			return;
		}
		x->mtu_saved = 0;
		xp_set_mtu(x->ifname, mtu);
	}
	if ((e = xp_try(x, XDP_FLAGS_SKB_MODE, XDP_COPY)) == 0) {
		x->mode = XP_GENERIC;
		return;
	}
	die("AF_XDP socket on %s queue 0: %s", x->ifname, strerror(-e));
}

static void xp_busy_poll(struct xport *x)
{
	int on = 1, us = XP_BUSY_US, budget = XP_BUSY_BUDGET;
	x->busy_poll = setsockopt(x->fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &on, sizeof on) == 0 &&
	               setsockopt(x->fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof us) == 0 &&
	               setsockopt(x->fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof budget) == 0;
}

// Opens the port on ifname: UMEM, socket in the best mode, every RX frame
// on the fill ring, the TX frames on the free list.
static void xp_open(struct xport *x, const char *ifname, bool sg)
{
	uint32_t idx;
	memset(x, 0, sizeof *x);
	x->ifname = ifname;
	x->sg = sg;
	if (sg && !(x->gather = malloc((size_t)XP_MAX_SEGS * XP_FRAME)))
		die("out of memory");
	libxdp_set_print(xp_print);
	x->area = mmap(NULL, (size_t)XP_FRAMES * XP_FRAME, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (x->area == MAP_FAILED)
		die("UMEM mmap: %s", strerror(errno));
	if (sg)
		xp_bind_sg(x);
	else
		xp_bind_best(x);
	x->fd = xsk_socket__fd(x->xsk);
	if (xsk_ring_prod__reserve(&x->fill, XP_RX_FRAMES, &idx) != XP_RX_FRAMES)
		die("fill ring: no room for %u frames", XP_RX_FRAMES);
	for (uint32_t i = 0; i < XP_RX_FRAMES; i++)
		*xsk_ring_prod__fill_addr(&x->fill, idx + i) = (uint64_t)i * XP_FRAME;
	xsk_ring_prod__submit(&x->fill, XP_RX_FRAMES);
	for (uint32_t i = XP_RX_FRAMES; i < XP_FRAMES; i++)
		x->tx_free[x->ntx_free++] = (uint64_t)i * XP_FRAME;
	xp_busy_poll(x);
	int mtu = xp_get_mtu(ifname);
	x->max_frame = sg ? XP_MAX_SEGS * (XP_FRAME - XP_HEADROOM) : XP_FRAME - XP_HEADROOM;
	if (mtu > 0 && (uint32_t)mtu + 14 < x->max_frame)
		x->max_frame = (uint32_t)mtu + 14;
	printf("PORT variant=%s xdp_mode=%s multi_buffer=%d need_wakeup=1 busy_poll=%d busy_us=%d max_frame=%u "
	       "mtu=%d failed=%s\n", sg ? "xdp-sg" : "xdp", xp_mode_name[x->mode], sg, x->busy_poll, XP_BUSY_US,
	       x->max_frame, mtu, x->tried[0] ? x->tried : "none");
}

static void xp_close(struct xport *x)
{
	if (!x->xsk)
		return;
	xsk_socket__delete(x->xsk);
	xsk_umem__delete(x->umem);
	x->xsk = NULL;
	if (x->sg)
		bpf_xdp_detach(x->ifindex, x->xdp_flags, NULL);
	if (x->mtu_saved)
		xp_set_mtu(x->ifname, x->mtu_saved);
}

// A wake-up: a non-blocking recvfrom (RX) or sendto (TX) whose errors only
// mean "try again".
static void xp_wake(struct xport *x, bool tx)
{
	ssize_t r = tx ? sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0)
	               : recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
	x->kicks++;
	if (r < 0 && errno != EAGAIN && errno != EBUSY && errno != ENOBUFS && errno != ENETDOWN && errno != EINTR)
		die("AF_XDP %s wake-up: %s", tx ? "TX" : "RX", strerror(errno));
}

// A frame that continues in the next descriptors (multi-buffer): its
// chunks copied one after the other into x->gather.  The kernel posts a
// frame's descriptors together; a longer one than XP_MAX_SEGS is cut.
static int xp_gather(struct xport *x, uint32_t idx, uint8_t **data, uint32_t *len, uint64_t deadline)
{
	uint32_t n = *len, more = 0;
	memcpy(x->gather, *data, n);
	for (const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx); d->options & XDP_PKT_CONTD;) {
		uint32_t i;
		while (xsk_ring_cons__peek(&x->rx, 1, &i) != 1)
			if (now_ns() >= deadline)
				die("AF_XDP: a frame's continuation never came");
		d = xsk_ring_cons__rx_desc(&x->rx, i);
		more++;
		if (x->rx_segs < XP_MAX_SEGS) {
			x->rx_seg_addr[x->rx_segs++] = d->addr;
			memcpy(x->gather + n, xsk_umem__get_data(x->area, d->addr), d->len);
			n += d->len;
		} else {
			n = 0; // too long for us: make it fail the parse
		}
	}
	x->rx_segs = 1 + more;
	*data = x->gather;
	*len = n;
	return 0;
}

// Spins until the RX ring holds a frame. 0: got one (call xp_release), 1: timeout.
static int xp_recv(struct xport *x, uint8_t **data, uint32_t *len, int timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	uint32_t idx;
	RX_POLL_BEGIN();
	for (uint32_t spin = 1; xsk_ring_cons__peek(&x->rx, 1, &idx) != 1; spin++) {
		bool woke = x->busy_poll || xsk_ring_prod__needs_wakeup(&x->fill);
		if (woke)
			xp_wake(x, false);
		if ((spin & 63) == 0 && now_ns() >= deadline)
			return 1;
		// Nothing came: the whole round is left out, or only its user
		// part when no system call ran (interrupts between count); a
		// wake-up that brought frames is kept.
		if (!woke)
			RX_POLL_EMPTY_USER();
		else if (!xsk_cons_nb_avail(&x->rx, 1))
			RX_POLL_EMPTY();
		else
			RX_POLL_BEGIN();
	}
	const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx);
	x->rx_addr = d->addr;
	x->rx_seg_addr[0] = d->addr;
	x->rx_segs = 1;
	*data = xsk_umem__get_data(x->area, d->addr);
	*len = d->len;
	if (d->options & XDP_PKT_CONTD)
		return xp_gather(x, idx, data, len, deadline);
	return 0;
}

// Hands the held RX frame back to the kernel through the fill ring (which
// always has room: it is as large as the RX frames).
static void xp_release(struct xport *x)
{
	uint32_t idx, n = x->rx_segs < XP_MAX_SEGS ? x->rx_segs : XP_MAX_SEGS;
	xsk_ring_cons__release(&x->rx, x->rx_segs);
	if (xsk_ring_prod__reserve(&x->fill, n, &idx) != n)
		die("fill ring full");
	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&x->fill, idx + i) = xsk_umem__extract_addr(x->rx_seg_addr[i]);
	xsk_ring_prod__submit(&x->fill, n);
}

// Sent frames whose transmission completed, back on the free list.
static void xp_reap(struct xport *x)
{
	uint32_t idx, n = xsk_ring_cons__peek(&x->comp, XP_RING, &idx);
	for (uint32_t i = 0; i < n; i++)
		x->tx_free[x->ntx_free++] = *xsk_ring_cons__comp_addr(&x->comp, idx + i);
	xsk_ring_cons__release(&x->comp, n);
}

// Waits (outside any measured window) until n TX frames are free.
static void xp_tx_ready(struct xport *x, uint32_t n, int timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	if (x->sg)
		n *= XP_MAX_SEGS;
	for (xp_reap(x); x->ntx_free < n; xp_reap(x)) {
		xp_wake(x, true);
		if (now_ns() > deadline)
			die("AF_XDP: %u of %u TX frames free after %d ms", x->ntx_free, n, timeout_ms);
	}
}

// Copies n frames into free TX frames, posts them and, while the kernel
// wants a wake-up (always in copy mode, where sendto() transmits at most
// 32 descriptors per call), kicks until it has taken every descriptor.
static void xp_send(struct xport *x, uint8_t *const *frames, const uint32_t *lens, uint32_t n, int timeout_ms)
{
	uint32_t idx, descs = 0;
	for (uint32_t i = 0; i < n; i++)
		descs += x->sg ? (lens[i] + XP_FRAME - 1) / XP_FRAME : 1;
	if (descs > x->ntx_free || xsk_ring_prod__reserve(&x->tx, descs, &idx) != descs)
		die("AF_XDP TX: no room for %u frames", n);
	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t off = 0; off < lens[i]; off += XP_FRAME) { // one pass unless sg
			uint64_t a = x->tx_free[--x->ntx_free];
			struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx++);
			uint32_t part = x->sg && lens[i] - off > XP_FRAME ? XP_FRAME : lens[i] - off;
			memcpy(x->area + a, frames[i] + off, part);
			d->addr = a;
			d->len = part;
			d->options = off + part < lens[i] ? XDP_PKT_CONTD : 0;
		}
	}
	xsk_ring_prod__submit(&x->tx, descs);
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	while (xsk_prod_nb_free(&x->tx, XP_RING) < XP_RING && xsk_ring_prod__needs_wakeup(&x->tx)) {
		xp_wake(x, true);
		if (now_ns() > deadline)
			die("AF_XDP TX: descriptors not taken after %d ms", timeout_ms);
	}
}

static void xp_stats(struct xport *x)
{
	struct xdp_statistics st;
	socklen_t l = sizeof st;
	memset(&st, 0, sizeof st);
	getsockopt(x->fd, SOL_XDP, XDP_STATISTICS, &st, &l);
	printf("XDPSTATS xdp_mode=%s rx_dropped=%llu rx_invalid=%llu tx_invalid=%llu rx_ring_full=%llu "
	       "fill_empty=%llu tx_ring_empty=%llu kicks=%llu\n",
	       xp_mode_name[x->mode], (unsigned long long)st.rx_dropped, (unsigned long long)st.rx_invalid_descs,
	       (unsigned long long)st.tx_invalid_descs, (unsigned long long)st.rx_ring_full,
	       (unsigned long long)st.rx_fill_ring_empty_descs, (unsigned long long)st.tx_ring_empty_descs,
	       (unsigned long long)x->kicks);
}

#endif
