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
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

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
	uint32_t max_frame; // largest frame both ways
	int mtu_saved;     // the MTU before native XDP lowered it (0: untouched)
	uint64_t tx_free[XP_FRAMES - XP_RX_FRAMES];
	uint32_t ntx_free;
	uint64_t rx_addr;  // the held RX descriptor's address
	uint64_t kicks;    // sendto() wake-ups, for STATS
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
		.xdp_flags = xdp_flags,
		.bind_flags = (uint16_t)(bind_flags | XDP_USE_NEED_WAKEUP),
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
	return e;
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
		if (xp_try(x, XDP_FLAGS_DRV_MODE, XDP_COPY) == 0) {
			x->mode = XP_NATIVE;
			x->mtu_saved = mtu;
			return;
		}
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
static void xp_open(struct xport *x, const char *ifname)
{
	uint32_t idx;
	memset(x, 0, sizeof *x);
	x->ifname = ifname;
	libxdp_set_print(xp_print);
	x->area = mmap(NULL, (size_t)XP_FRAMES * XP_FRAME, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (x->area == MAP_FAILED)
		die("UMEM mmap: %s", strerror(errno));
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
	x->max_frame = XP_FRAME - XP_HEADROOM;
	if (mtu > 0 && (uint32_t)mtu + 14 < x->max_frame)
		x->max_frame = (uint32_t)mtu + 14;
	printf("PORT variant=xdp xdp_mode=%s need_wakeup=1 busy_poll=%d busy_us=%d max_frame=%u mtu=%d\n",
	       xp_mode_name[x->mode], x->busy_poll, XP_BUSY_US, x->max_frame, mtu);
}

static void xp_close(struct xport *x)
{
	if (!x->xsk)
		return;
	xsk_socket__delete(x->xsk);
	xsk_umem__delete(x->umem);
	x->xsk = NULL;
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

// Spins until the RX ring holds a frame. 0: got one (call xp_release), 1: timeout.
static int xp_recv(struct xport *x, uint8_t **data, uint32_t *len, int timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	uint32_t idx;
	for (uint32_t spin = 1; xsk_ring_cons__peek(&x->rx, 1, &idx) != 1; spin++) {
		if (x->busy_poll || xsk_ring_prod__needs_wakeup(&x->fill))
			xp_wake(x, false);
		if ((spin & 63) == 0 && now_ns() >= deadline)
			return 1;
	}
	const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx);
	x->rx_addr = d->addr;
	*data = xsk_umem__get_data(x->area, d->addr);
	*len = d->len;
	return 0;
}

// Hands the held RX frame back to the kernel through the fill ring (which
// always has room: it is as large as the RX frames).
static void xp_release(struct xport *x)
{
	uint32_t idx;
	xsk_ring_cons__release(&x->rx, 1);
	if (xsk_ring_prod__reserve(&x->fill, 1, &idx) != 1)
		die("fill ring full");
	*xsk_ring_prod__fill_addr(&x->fill, idx) = xsk_umem__extract_addr(x->rx_addr);
	xsk_ring_prod__submit(&x->fill, 1);
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
	uint32_t idx;
	if (n > x->ntx_free || xsk_ring_prod__reserve(&x->tx, n, &idx) != n)
		die("AF_XDP TX: no room for %u frames", n);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t a = x->tx_free[--x->ntx_free];
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + i);
		memcpy(x->area + a, frames[i], lens[i]);
		d->addr = a;
		d->len = lens[i];
	}
	xsk_ring_prod__submit(&x->tx, n);
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
