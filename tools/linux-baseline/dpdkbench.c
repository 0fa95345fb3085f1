// dpdkbench: a DPDK peer for pktbench, on the same emulated NICs.
//
// It runs in the Linux baseline guest (build-dpdk.sh puts it and Debian's
// DPDK 22.11 libraries into the initramfs; init.sh binds the NIC to
// uio_pci_generic and mounts 2 MB hugepages) and drives the NIC from user
// space through a poll-mode driver: net_e1000_em on the e1000 (82540EM) and
// e1000e (82574L), net_virtio on virtio-net.  It speaks pktbench's wire
// format and protocol (pktbench.c's header comment: rtt echo, 128-frame
// bursts answered by one reply, probes, quit and bye), checks every payload
// byte the same way and prints the same lines with variant=dpdk, so either
// end of a pair can be pktbench, this program or the research kernel:
//   RESULT rtt variant=dpdk bytes=.. iter=.. us=.. tsc=..
//   SUMMARY rtt variant=dpdk bytes=.. n=.. median_us=.. p99_us=..
//   RESULT burst variant=dpdk bytes=.. rep=.. t0_us=.. t1_us=.. t2_us=..
//          t0_tsc=.. t1_tsc=.. mbps=.. irqs=..
//   SRVSTAT burst variant=dpdk bytes=.. good=.. bad=.. missing=.. ooo=..
//          irqs=.. r1_tsc=.. check_tsc=.. empty_polls=.. idle_tsc=..
//   MARK burst bytes=.. cpu begin|end bursts=..
//   STATS / DONE ok | DONE fail <reason>
// Clocks as pktbench's: CLOCK_MONOTONIC for times, rdtsc between lfences
// for T1 and R1 (guest instructions under QEMU -icount shift=0).  irqs
// counts the interrupts of the NIC's line (/proc/interrupts, the line
// uio_pci_generic registered): the poll-mode driver enables none, so 0
// unless something is wrong.
//
// What the DPDK program does in the measured windows, chosen as the
// strongest DPDK application would: frames are built outside the timing
// straight into mbufs of the pool (hugepage memory the NIC reads), as an
// application writes its data where the driver sends it from; T1 takes a
// reference on each of the burst's 128 mbufs (so that the driver's free
// after transmission leaves them for the next burst) and hands them to
// rte_eth_tx_burst, copying nothing; a round trip's request is one such
// mbuf.  (pktbench's send() and ring fill copy each frame inside T1; the
// kernel exchanges pages.)  The echo server turns
// the received mbuf round in place (MACs swapped, REPLY set) and transmits
// that same mbuf, copying nothing.  R1 runs from the burst's first frame
// returned by rte_eth_rx_burst to the reply handed to the driver; it counts
// the empty polls between frames (reported as empty_polls, and their ticks
// per packet as idle_tsc), the price of never sleeping.
//
// Mode `ceiling` (a neutral ceiling of the emulated link): the client is a
// txonly sender, the server an rxonly receiver.  Per size the client sends
// frames of channel 2 (PB_CH_CEIL; payload not filled in, not checked) as
// fast as the driver takes them for --ceiling-ms, then a frame with
// WIRE_F_LAST that the server answers; the server counts frames in 100 ms
// windows of its own clock from the first frame on:
//   RESULT ceiling variant=dpdk bytes=.. win=.. frames=.. us=.. mbps=..
//   SRVSTAT ceiling variant=dpdk bytes=.. frames=.. sent=.. (from the LAST frame's seq)
//
// Usage: dpdkbench EAL-ARGS -- --role server|client [--mode rtt|burst|ceiling|window]
//        [--peer MAC] [--sizes 64,1500,8192] [--runs N] [--warmup N]
//        [--timeout-ms N] [--probe-timeout-ms N] [--idle-timeout-ms N]
//        [--gap-ms N] [--cpu-ms N] [--ceiling-ms N] [--rx-count] [--ports N]
//        dpdkbench --selfcheck   (the pattern code against wire.h, the
//                                 striped window's bookkeeping; no EAL)
// Mode `window`: the windowed stream of pktwindow.h (user/stream.c's wire
// format and flow control), its frames sent from mbufs by reference.
// With --ports N (N > 1; --peer then lists the peer's MAC on each port):
// that stream striped over the first N ports, one lcore a port
// (dpdkstripe.h).
#define _GNU_SOURCE
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "../../lib/include/wire.h"
#include "benchnet.h"
#include "pktproto.h"
#include "rxmark.h"

#define PB_CH_CEIL 2
#define PB_CEIL_WINDOW_NS 100000000ull // the kernel's ceiling loop's 100 ms

// Driver resources: one queue each way.  An mbuf holds a whole jumbo frame
// (16 KiB of data room: the em driver's buffer sizes are 2, 4, 8 or 16 KiB),
// so no frame is ever chained; 512 receive descriptors hold four bursts.
#define DB_RX_DESC 512
#define DB_TX_DESC 512
#define DB_POOL_N(ports) (1023 + 1024 * (ports)) // 2047 for one port
#define DB_MAX_PORTS 4
#define DB_MBUF_DATA (16384 + RTE_PKTMBUF_HEADROOM)
#define DB_RX_BURST 32
#define DB_MTU 9000

enum role { ROLE_SERVER, ROLE_CLIENT };
enum mode { MODE_RTT, MODE_BURST, MODE_CEILING, MODE_WINDOW };

struct opts {
	enum role role;
	enum mode mode;
	uint8_t peer[6];
	bool have_peer;
	uint32_t sizes[PB_MAX_SIZES];
	int nsizes;
	int runs, warmup;
	int timeout_ms, probe_timeout_ms, idle_timeout_ms, gap_ms, cpu_ms, ceiling_ms;
	bool rx_count; // server: under insnplugin.so (rxmark.h's rx_defer)
	uint16_t nports;                // --ports: the striped window over this many
	uint8_t peers[DB_MAX_PORTS][6]; // --peer's MAC on each port (peer: port 0's)
};

// The NIC's port: received mbufs not yet handed out, the one held.
struct port {
	uint16_t id;
	struct rte_mempool *pool;
	uint8_t mac[6];
	struct rte_mbuf *rx[DB_RX_BURST];
	uint16_t rx_n, rx_i;
	struct rte_mbuf *held;
	struct rte_mbuf *staged; // a round trip's request, made before its timing
	uint64_t ignored, stale, empty_polls;
	uint64_t idle_tsc; // TSC ticks spent in polls that found nothing
};

// ---------------------------------------------------------------- utilities

// Interrupts taken so far on the lines uio_pci_generic holds (the NIC's),
// from /proc/interrupts; -1 if there is no such line.
static long irq_count(void)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[1024];
	long total = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (!colon || !strstr(colon, "uio_pci_generic"))
			continue;
		total = total < 0 ? 0 : total;
		total += irq_line_total(colon);
	}
	fclose(f);
	return total;
}

// ---------------------------------------------------------------- port

// g_ports[0] is the port of every mode; the striped window uses them all.
static struct port g_ports[DB_MAX_PORTS];
static const struct opts *g_opts;

// The next port EAL found from `from` on (the allowlisted NICs, in PCI
// order), one RX and one TX queue on `pool`, MTU 9000, started and with its
// link up.
static void port_open(struct port *p, uint16_t from, struct rte_mempool *pool)
{
	struct rte_eth_conf conf = { .rxmode = { .mtu = DB_MTU } };
	struct rte_eth_dev_info info;
	struct rte_ether_addr mac;
	struct rte_eth_link link;
	uint16_t nrx = DB_RX_DESC, ntx = DB_TX_DESC;
	int rc;
	memset(p, 0, sizeof *p);
	p->id = (uint16_t)rte_eth_find_next(from);
	if (p->id >= RTE_MAX_ETHPORTS)
		die("no DPDK port from %u on (is the NIC bound to uio_pci_generic and its PMD loaded?)", from);
	if ((rc = rte_eth_dev_info_get(p->id, &info)) != 0)
		die("rte_eth_dev_info_get: %d", rc);
	if (info.max_rx_pktlen < DB_MTU + RTE_ETHER_HDR_LEN)
		die("%s: frames of at most %u bytes", info.driver_name, info.max_rx_pktlen);
	p->pool = pool;
	if ((rc = rte_eth_dev_configure(p->id, 1, 1, &conf)) != 0)
		die("rte_eth_dev_configure (%s): %d", info.driver_name, rc);
	if ((rc = rte_eth_dev_adjust_nb_rx_tx_desc(p->id, &nrx, &ntx)) != 0)
		die("rte_eth_dev_adjust_nb_rx_tx_desc: %d", rc);
	if ((rc = rte_eth_rx_queue_setup(p->id, 0, nrx, rte_eth_dev_socket_id(p->id), NULL, p->pool)) != 0)
		die("rte_eth_rx_queue_setup %u: %d", nrx, rc);
	if ((rc = rte_eth_tx_queue_setup(p->id, 0, ntx, rte_eth_dev_socket_id(p->id), NULL)) != 0)
		die("rte_eth_tx_queue_setup %u: %d", ntx, rc);
	if ((rc = rte_eth_dev_start(p->id)) != 0)
		die("rte_eth_dev_start: %d", rc);
	rte_eth_macaddr_get(p->id, &mac);
	memcpy(p->mac, mac.addr_bytes, 6);
	rte_eth_link_get(p->id, &link); // waits for the link (up to 9 s)
	struct rte_eth_rxq_info rxq = { 0 };
	rte_eth_rx_queue_info_get(p->id, 0, &rxq);
	printf("DPDK port=%u driver=%s rxd=%u txd=%u mtu=%u link=%s speed=%u scattered_rx=%d "
	       "mac=%02x:%02x:%02x:%02x:%02x:%02x\n", p->id, info.driver_name, nrx, ntx, DB_MTU,
	       link.link_status ? "up" : "down", link.link_speed, rxq.scattered_rx, p->mac[0], p->mac[1], p->mac[2],
	       p->mac[3], p->mac[4], p->mac[5]);
	fflush(stdout);
}

// The first n ports, one mbuf pool for all of them.
static void ports_open(uint16_t n)
{
	if (rte_eth_dev_count_avail() < n)
		die("%u DPDK ports wanted, %u found (are the NICs bound to uio_pci_generic and their PMD loaded?)",
		    n, rte_eth_dev_count_avail());
	struct rte_mempool *pool =
		rte_pktmbuf_pool_create("frames", DB_POOL_N(n), 64, 0, DB_MBUF_DATA, (int)rte_socket_id());
	if (!pool)
		die("mbuf pool: %s", rte_strerror(rte_errno));
	for (uint16_t i = 0; i < n; i++)
		port_open(&g_ports[i], i ? (uint16_t)(g_ports[i - 1].id + 1) : 0, pool);
}

// A received mbuf as a frame; a chained one (never expected, see
// DB_MBUF_DATA) is reported as length 0, which parse_frame rejects.
static void mbuf_frame(struct rte_mbuf *m, struct frame *f)
{
	f->data = rte_pktmbuf_mtod(m, uint8_t *);
	f->len = m->nb_segs == 1 ? m->pkt_len : 0;
}

// Polls for one frame until timeout_ms. 0: got it (call port_release
// after, or hand it on with echo), 1: timeout.
static int port_recv(struct port *p, struct frame *f, int timeout_ms)
{
	if (p->rx_i == p->rx_n) {
		uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u, w0 = 0;
		p->rx_i = p->rx_n = 0;
		RX_POLL_BEGIN();
		while ((p->rx_n = rte_eth_rx_burst(p->id, 0, p->rx, DB_RX_BURST)) == 0) {
			if (!w0)
				w0 = tsc_now();
			p->empty_polls++;
			if ((p->empty_polls & 63) == 0 && now_ns() >= deadline) {
				p->idle_tsc += tsc_now() - w0;
				return 1;
			}
			RX_POLL_EMPTY_USER(); // found nothing; a guest timer tick between counts
		}
		if (w0)
			p->idle_tsc += tsc_now() - w0;
	}
	p->held = p->rx[p->rx_i++];
	mbuf_frame(p->held, f);
	return 0;
}

static void port_release(struct port *p)
{
	if (p->held)
		rte_pktmbuf_free(p->held);
	p->held = NULL;
}

// Hands n mbufs to the driver, retrying while its ring is full (bounded by
// the timeout): every frame goes out.
static void port_tx(struct port *p, struct rte_mbuf **m, uint32_t n)
{
	uint64_t deadline = 0;
	uint32_t done = 0;
	while (done < n) {
		done += rte_eth_tx_burst(p->id, 0, m + done, (uint16_t)(n - done));
		if (done == n)
			break;
		if (!deadline)
			deadline = now_ns() + 5000000000ull;
		else if (now_ns() > deadline)
			die("rte_eth_tx_burst: %u of %u frames taken in 5 s", done, n);
	}
}

// A frame copied into an mbuf of the pool, ready for port_tx.
static struct rte_mbuf *frame_mbuf(struct port *p, const uint8_t *f, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);
	if (!m)
		die("mbuf pool empty");
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), f, len);
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	return m;
}

static void send_one(struct port *p, uint8_t *f, uint32_t len)
{
	struct rte_mbuf *m = frame_mbuf(p, f, len);
	port_tx(p, &m, 1);
}

static void port_stats(struct port *p)
{
	struct rte_eth_stats st = { 0 };
	rte_eth_stats_get(p->id, &st);
	printf("STATS variant=dpdk ipackets=%llu opackets=%llu imissed=%llu ierrors=%llu oerrors=%llu "
	       "rx_nombuf=%llu ignored=%llu stale=%llu\n",
	       (unsigned long long)st.ipackets, (unsigned long long)st.opackets, (unsigned long long)st.imissed,
	       (unsigned long long)st.ierrors, (unsigned long long)st.oerrors, (unsigned long long)st.rx_nombuf,
	       (unsigned long long)p->ignored, (unsigned long long)p->stale);
}

// On failure: the driver's counters, and (client) a bye so that the server
// prints its own view and stops instead of waiting for its timeout.
static void diag(void)
{
	static bool once;
	if (once || !g_opts)
		return;
	once = true;
	for (uint16_t i = 0; i < g_opts->nports; i++)
		port_stats(&g_ports[i]);
	if (g_opts->role == ROLE_CLIENT) {
		uint8_t buf[WIRE_MIN_FRAME];
		struct pkt h = { .channel = PB_CH_CTRL, .seq = PB_CTRL_BYE, .batch = 1 };
		struct rte_mbuf *m = rte_pktmbuf_alloc(g_ports[0].pool);
		uint32_t len = build_frame(buf, g_opts->peer, g_ports[0].mac, &h);
		if (m) {
			memcpy(rte_pktmbuf_mtod(m, uint8_t *), buf, len);
			m->data_len = (uint16_t)len;
			m->pkt_len = len;
			if (rte_eth_tx_burst(g_ports[0].id, 0, &m, 1) != 1)
				rte_pktmbuf_free(m);
		}
	}
}

// ---------------------------------------------------------------- server

struct burst_state {
	uint32_t expect, good, bad, missing, ooo, bytes;
	uint64_t first_tsc, check_tsc, polls_mark, idle_mark;
	long irqs_mark; // NIC interrupts when the previous burst was answered
	bool rx_open;   // R1's receive window (rxmark.h), opened waiting for the burst
	uint64_t rx_tsc;
};

struct server {
	struct port *p;
	struct burst_state b;
	uint64_t bad_echo, bad_bursts;
	// ceiling: the current size's frames and window
	uint32_t c_bytes, c_win;
	uint64_t c_frames, c_win_frames, c_win_start;
};

// The windowed stream's frame slots (pktwindow.h): mbufs of the pool, built
// once per size and sent by reference like a burst's, copying nothing.
struct wslots {
	uint8_t *frame[PB_WIN_SLOTS];
	uint32_t len[PB_WIN_SLOTS];
	struct rte_mbuf *m[PB_WIN_SLOTS];
};

// dpdkstripe.h's: the striped window's sending side (--ports N > 1), and
// the marks of its streams.
static void stripe_send(uint32_t n);
static void wslots_stream(struct port *p, struct wslots *s, bool begin);

static void wslots_alloc(struct port *p, struct wslots *s)
{
	if (rte_pktmbuf_alloc_bulk(p->pool, s->m, PB_WIN_SLOTS) != 0)
		die("mbuf pool empty");
	for (uint32_t i = 0; i < PB_WIN_SLOTS; i++)
		s->frame[i] = rte_pktmbuf_mtod(s->m[i], uint8_t *);
}

static void wslots_send(struct port *p, struct wslots *s, uint32_t first, uint32_t n)
{
	for (uint32_t i = first; i < first + n; i++) {
		s->m[i]->data_len = (uint16_t)s->len[i];
		s->m[i]->pkt_len = s->len[i];
		rte_mbuf_refcnt_update(s->m[i], 1); // the driver's free after sending leaves it ours
	}
	if (g_opts->nports > 1)
		stripe_send(n);
	else
		port_tx(p, s->m + first, n);
}

// Answers the held frame in place and transmits that mbuf.
static void echo(struct port *p, struct frame *f)
{
	uint8_t src[6];
	struct rte_mbuf *m = p->held;
	wire_get_eth(f->data, NULL, src);
	wire_put_eth(f->data, src, p->mac);
	wire_set_flags(f->data, (uint16_t)(wire_get_flags(f->data) | WIRE_F_REPLY));
	p->held = NULL;
	port_tx(p, &m, 1);
}

// The 128 frames of a burst, built once per size into mbufs we keep.
struct burst_frames {
	struct rte_mbuf *m[PB_BURST_N];
	bool built;
};

#define PB_VARIANT() "dpdk"
#include "pktpeer.h"
#include "pktwindow.h"
#include "dpdkstripe.h"

static void burst_reply(struct server *sv, const uint8_t dst[6])
{
	struct burst_state *b = &sv->b;
	uint64_t held = burst_answer(sv, dst);
	uint64_t sent = tsc_now();
	uint32_t n = b->good + b->bad;
	long irqs = rx_defer ? -1 : irq_count();
	rx_printf("SRVSTAT burst variant=dpdk bytes=%u good=%u bad=%u missing=%u ooo=%u irqs=%ld "
	       "r1_tsc=%llu check_tsc=%llu empty_polls=%llu idle_tsc=%llu\n",
	       b->bytes, b->good, b->bad, b->missing, b->ooo, irqs >= 0 && b->irqs_mark >= 0 ? irqs - b->irqs_mark : -1,
	       (unsigned long long)(n ? (sent - b->first_tsc) / n : 0),
	       (unsigned long long)(n ? b->check_tsc / n : 0),
	       (unsigned long long)(sv->p->empty_polls - b->polls_mark),
	       (unsigned long long)(n ? (sv->p->idle_tsc - b->idle_mark) / n : 0));
	if (b->rx_open) // insnplugin.c's RXW lines pair with these, in order
		rx_printf("SRVSTAT rxwin variant=dpdk bytes=%u packets=%u tsc=%llu\n", b->bytes, n,
		          (unsigned long long)(held - b->rx_tsc));
	if (!rx_defer)
		fflush(stdout);
	if (b->bad || b->missing || b->ooo)
		sv->bad_bursts++;
	memset(b, 0, sizeof *b);
	b->irqs_mark = rx_defer ? -1 : irq_count();
}

static void burst_first(struct server *sv)
{
	sv->b.polls_mark = sv->p->empty_polls;
	sv->b.idle_mark = sv->p->idle_tsc;
}

// One packet of a burst (in order, as on one link).
static void burst_take(struct server *sv, const struct pkt *k, uint64_t arrived)
{
	burst_take_inorder(sv, k, arrived);
}

static void ceiling_window_end(struct server *sv, uint64_t now)
{
	uint64_t ns = now - sv->c_win_start;
	printf("RESULT ceiling variant=dpdk bytes=%u win=%u frames=%llu us=%.1f mbps=%.3f\n", sv->c_bytes, sv->c_win,
	       (unsigned long long)sv->c_win_frames, (double)ns / 1000.0,
	       (double)sv->c_win_frames * sv->c_bytes * 8.0 / ((double)ns / 1000.0));
	sv->c_win++;
	sv->c_win_frames = 0;
	sv->c_win_start = now;
}

// rxonly: counts the frames of a size in 100 ms windows; the LAST frame
// (seq = frames the sender sent) ends the size and is answered.
static void ceiling_take(struct server *sv, const struct pkt *k, struct frame *f)
{
	uint64_t now = now_ns();
	if (k->flags & WIRE_F_LAST) {
		printf("SRVSTAT ceiling variant=dpdk bytes=%u frames=%llu sent=%u windows=%u\n", sv->c_bytes,
		       (unsigned long long)sv->c_frames, k->seq, sv->c_win);
		fflush(stdout);
		sv->c_bytes = 0;
		echo(sv->p, f);
		return;
	}
	if (k->len != sv->c_bytes) { // a new size: its first window starts now
		sv->c_bytes = k->len;
		sv->c_frames = sv->c_win_frames = 0;
		sv->c_win = 0;
		sv->c_win_start = now;
	}
	sv->c_frames++;
	sv->c_win_frames++;
	if (now - sv->c_win_start >= PB_CEIL_WINDOW_NS)
		ceiling_window_end(sv, now);
}

static void serve_other(struct server *sv, const struct pkt *k, struct frame *f)
{
	if (k->channel == PB_CH_CEIL)
		ceiling_take(sv, k, f);
	else
		sv->p->ignored++;
}

static int serve_wait_ms(const struct server *sv, const struct opts *o)
{
	(void)sv;
	return o->idle_timeout_ms;
}

static bool serve_idle(struct server *sv)
{
	(void)sv;
	return false;
}

static int run_server(const struct opts *o)
{
	struct port *p = &g_ports[0];
	struct server sv = { .p = p, .b.irqs_mark = irq_count() };
	rx_defer = o->rx_count;
	printf("READY role=server variant=dpdk mac=%02x:%02x:%02x:%02x:%02x:%02x fastpattern=%d\n", p->mac[0],
	       p->mac[1], p->mac[2], p->mac[3], p->mac[4], p->mac[5], pat_fast);
	fflush(stdout);
	if (o->nports > 1) {
		stripe_server(o); // its windows, the idle window, its lines and every port's counters
	} else {
		serve(&sv, o);
		rx_idle_window(p);
		rx_flush();
		port_stats(p);
	}
	server_verdict(&sv);
	return 0;
}

// ---------------------------------------------------------------- client

static int await_wait_ms(const struct port *p, int left, int timeout_ms)
{
	(void)p, (void)timeout_ms;
	return left;
}

// A round trip's request copied into an mbuf outside the timing, sent inside.
static void rtt_stage(struct port *p, uint8_t *buf, uint32_t len)
{
	p->staged = frame_mbuf(p, buf, len);
}

static void rtt_send(struct port *p, uint8_t *buf, uint32_t len)
{
	(void)buf, (void)len;
	port_tx(p, &p->staged, 1);
}

static void burst_build(struct port *p, struct burst_frames *bf, const uint8_t dst[6], uint32_t size)
{
	if (bf->built)
		rte_pktmbuf_free_bulk(bf->m, PB_BURST_N);
	if (rte_pktmbuf_alloc_bulk(p->pool, bf->m, PB_BURST_N) != 0)
		die("mbuf pool empty");
	bf->built = true;
	for (uint32_t i = 0; i < PB_BURST_N; i++) {
		struct pkt h = { .channel = PB_CH_DATA, .seq = i, .batch = PB_BURST_N, .len = size };
		if (i == PB_BURST_N - 1)
			h.flags = WIRE_F_LAST;
		uint32_t len = build_frame(rte_pktmbuf_mtod(bf->m[i], uint8_t *), dst, p->mac, &h);
		bf->m[i]->data_len = (uint16_t)len;
		bf->m[i]->pkt_len = len;
	}
}

static void burst_stage(struct port *p, struct burst_frames *bf)
{
	(void)p, (void)bf;
}

// T1: the 128 mbufs referenced and handed to the driver.
static void burst_send(struct port *p, struct burst_frames *bf)
{
	for (uint32_t i = 0; i < PB_BURST_N; i++)
		rte_mbuf_refcnt_update(bf->m[i], 1);
	port_tx(p, bf->m, PB_BURST_N);
}

static long nic_irqs(const struct opts *o)
{
	(void)o;
	return irq_count();
}

// txonly: DB_RX_BURST frames built once into mbufs; each round takes a
// reference on each (so the driver's free after transmission leaves them)
// and offers them all to the driver, for ceiling_ms; then the LAST frame.
static void run_ceiling_size(struct port *p, const struct opts *o, uint32_t size)
{
	struct rte_mbuf *m[DB_RX_BURST];
	uint64_t sent = 0;
	if (rte_pktmbuf_alloc_bulk(p->pool, m, DB_RX_BURST) != 0)
		die("mbuf pool empty");
	for (uint32_t i = 0; i < DB_RX_BURST; i++) {
		struct pkt h = { .channel = PB_CH_CEIL, .seq = i, .batch = 0, .len = size };
		uint32_t len = build_frame_shell(rte_pktmbuf_mtod(m[i], uint8_t *), o->peer, p->mac, &h);
		m[i]->data_len = (uint16_t)len;
		m[i]->pkt_len = len;
	}
	uint64_t end = now_ns() + (uint64_t)o->ceiling_ms * 1000000u;
	while (now_ns() < end) {
		for (uint32_t i = 0; i < DB_RX_BURST; i++)
			rte_mbuf_refcnt_update(m[i], 1);
		uint16_t n = rte_eth_tx_burst(p->id, 0, m, DB_RX_BURST);
		for (uint32_t i = n; i < DB_RX_BURST; i++)
			rte_mbuf_refcnt_update(m[i], -1);
		sent += n;
	}
	sleep_ms(50); // let the last frames drain before the LAST frame
	struct pkt h = { .channel = PB_CH_CEIL, .flags = WIRE_F_LAST, .seq = (uint32_t)sent, .batch = 1, .len = size };
	struct want w = { PB_CH_CEIL, (uint32_t)sent, (uint32_t)sent, size, false, false };
	struct frame f;
	struct pkt k;
	static uint8_t last[PB_FRAME_BUF];
	send_one(p, last, build_frame(last, o->peer, p->mac, &h));
	if (await_reply(p, &w, o->timeout_ms, &f, &k))
		die("ceiling bytes=%u: the receiver did not answer the end", size);
	port_release(p);
	rte_pktmbuf_free_bulk(m, DB_RX_BURST);
	printf("CEILING variant=dpdk bytes=%u sent=%llu ms=%d\n", size, (unsigned long long)sent, o->ceiling_ms);
	fflush(stdout);
}

static int run_client(const struct opts *o)
{
	struct port *p = &g_ports[0];
	uint32_t seq = 0;
	if (o->nports > 1)
		return stripe_client(o);
	probe_server(p, o);
	for (int i = 0; i < o->nsizes; i++) {
		if (o->mode == MODE_RTT)
			run_rtt_size(p, o, o->sizes[i], &seq);
		else if (o->mode == MODE_BURST)
			run_burst_size(p, o, o->sizes[i]);
		else if (o->mode == MODE_WINDOW)
			run_window_size(p, o, o->sizes[i], "dpdk");
		else
			run_ceiling_size(p, o, o->sizes[i]);
	}
	if (o->mode == MODE_BURST && o->cpu_ms > 0)
		sleep_ms(300); // the harness reads the CPU time at the last MARK
	if (o->mode == MODE_RTT)
		send_quit(p, o, seq);
	say_bye(p, o);
	port_stats(p);
	printf("DONE ok\n");
	return 0;
}

// ---------------------------------------------------------------- options

static void usage(void)
{
	fprintf(stderr, "usage: dpdkbench EAL-ARGS -- --role server|client [--mode rtt|burst|ceiling|window]\n"
	                "         [--peer MAC] [--sizes 64,1500,8192] [--runs N] [--warmup N]\n"
	                "         [--timeout-ms N] [--probe-timeout-ms N] [--idle-timeout-ms N]\n"
	                "         [--gap-ms N] [--cpu-ms N] [--ceiling-ms N] [--rx-count] [--ports N]\n"
	                "       dpdkbench --selfcheck\n");
	exit(2);
}

// --peer MAC[,MAC...]: the peer's MAC on each port, in port order; one MAC
// serves every port.
static int parse_peers(const char *arg, struct opts *o)
{
	char copy[DB_MAX_PORTS * 18 + 1], *save = NULL;
	int n = 0;
	if (strlen(arg) >= sizeof copy)
		return -1;
	strcpy(copy, arg);
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (n == DB_MAX_PORTS || parse_mac(t, o->peers[n]) < 0)
			return -1;
		n++;
	}
	if (!n)
		return -1;
	for (int i = n; i < DB_MAX_PORTS; i++)
		memcpy(o->peers[i], o->peers[0], 6);
	memcpy(o->peer, o->peers[0], 6);
	o->have_peer = true;
	return 0;
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "role", 1, 0, 'r' },       { "mode", 1, 0, 'm' },   { "peer", 1, 0, 'p' },
		{ "sizes", 1, 0, 's' },      { "runs", 1, 0, 'n' },   { "warmup", 1, 0, 'w' },
		{ "timeout-ms", 1, 0, 't' }, { "probe-timeout-ms", 1, 0, 'P' },
		{ "idle-timeout-ms", 1, 0, 'I' }, { "gap-ms", 1, 0, 'g' }, { "cpu-ms", 1, 0, 'c' },
		{ "ceiling-ms", 1, 0, 'C' }, { "rx-count", 0, 0, 'X' }, { "ports", 1, 0, 'N' },
		{ 0, 0, 0, 0 },
	};
	*o = (struct opts){ .runs = 20, .warmup = 3, .timeout_ms = 5000, .probe_timeout_ms = 120000,
		            .idle_timeout_ms = 300000, .gap_ms = 2, .ceiling_ms = 1000, .nports = 1 };
	parse_sizes("64", o);
	bool have_role = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'r':
			have_role = true;
			if (strcmp(optarg, "server") == 0)
				o->role = ROLE_SERVER;
			else if (strcmp(optarg, "client") == 0)
				o->role = ROLE_CLIENT;
			else
				usage();
			break;
		case 'm':
			if (strcmp(optarg, "rtt") == 0)
				o->mode = MODE_RTT;
			else if (strcmp(optarg, "burst") == 0)
				o->mode = MODE_BURST;
			else if (strcmp(optarg, "ceiling") == 0)
				o->mode = MODE_CEILING;
			else if (strcmp(optarg, "window") == 0)
				o->mode = MODE_WINDOW;
			else
				usage();
			break;
		case 'C': o->ceiling_ms = atoi(optarg); break;
		case 'N': o->nports = (uint16_t)atoi(optarg); break;
		case 'p': if (parse_peers(optarg, o) < 0) usage(); break;
		default: if (!parse_peer_opt(c, optarg, o)) usage();
		}
	}
	if (!have_role || o->runs < 1 || o->warmup < 0 || o->timeout_ms < 1 || o->ceiling_ms < 1 ||
	    (o->role == ROLE_CLIENT && !o->have_peer) || o->nports < 1 || o->nports > DB_MAX_PORTS ||
	    (o->nports > 1 && (o->mode != MODE_WINDOW || PB_WIN_BATCH % o->nports)))
		usage();
}

// Host-side check that the copied pattern code agrees with wire.h.
static int selfcheck(void)
{
	if (pattern_selfcheck() || stripe_selfcheck())
		return 1;
	printf("DONE ok fastpattern=%d\n", pat_fast);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	setvbuf(stdout, NULL, _IOLBF, 0);
	pattern_init();
	if (argc == 2 && strcmp(argv[1], "--selfcheck") == 0)
		return selfcheck();
	int n = rte_eal_init(argc, argv);
	if (n < 0) {
		printf("DONE fail rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	// EAL leaves the program's name in argv[n], before our options.
	parse_opts(argc - n, argv + n, &o);
	ports_open(o.nports);
	g_opts = &o;
	die_hook = diag;
	int rc = o.role == ROLE_SERVER ? run_server(&o) : run_client(&o);
	for (uint16_t i = 0; i < o.nports; i++)
		rte_eth_dev_stop(g_ports[i].id);
	rte_eal_cleanup();
	return rc;
}
