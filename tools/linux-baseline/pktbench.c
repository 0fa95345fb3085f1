// pktbench: the Linux side of the kernel-versus-Linux network comparison.
//
// It runs as a static program inside the Linux baseline guest (see build.sh)
// on an emulated e1000 and speaks the wire format of lib/include/wire.h, so
// that its peer can be another Linux guest or the research kernel.  Two
// variants of the same protocol:
//   packet  AF_PACKET SOCK_RAW socket, one send()/recv() per frame (the
//           paper's baseline);
//   mmap    PACKET_MMAP with TPACKET_V2 TX and RX rings: frames are filled
//           in the TX ring and one send() kicks the whole batch; receive
//           polls the RX ring.  V2, not V3: a V3 block reaches user space
//           only when full or when its retire timer (>= 1 ms) fires, which
//           would swamp a round trip.
//   xdp     AF_XDP through libxdp (xdpport.h): the best mode the kernel
//           and NIC offer (zerocopy, native or generic), need_wakeup, busy
//           polling, the receiver spinning on its RX ring; sizes whose frame
//           exceeds a UMEM chunk (no multi-buffer) are skipped ("SKIP").
//   tuned   the socket of `packet` as a user would tune it: qdisc bypass,
//           SO_BUSY_POLL (+ SO_PREFER_BUSY_POLL), one sendmmsg() per batch,
//           recvmmsg() of up to 64 frames in a non-blocking spin;
//   tuned-mmap  a TPACKET_V2 TX ring on a qdisc-bypassing TX socket, and a
//           TPACKET_V3 RX ring (1 ms block retire timer) spun on.
//   xdp-sg  xdp with XDP multi-buffer (Linux 6.6 on): jumbo frames too.
//   Each of these prints a PORT line naming its settings.
// Roles: `server` echoes, `client` measures.  With --reorder (over a bond,
// whose balance-rr reorders frames across links) a burst server takes a
// burst's packets in any order and answers once it has all of them.  Modes: `rtt` and `burst`, and
// `stream`: one TCP (or MPTCP) connection per measurement, bytes verified
// (see the stream section); `flow`: one verified connection for a whole
// link-failure run, delivery per 100 ms printed live (see the flow section).  `pktbench netcfg ...` sets up what busybox
// cannot: a tbf qdisc, MPTCP limits and endpoints (see the netcfg section).
//
// Conventions on the wire beyond lib/include/wire.h (a kernel program
// facing this one follows them):
//  - data travels on channel 1 (PB_CH_DATA);
//  - an rtt request has batch=1; it is echoed with the same header and
//    payload, flags |= WIRE_F_REPLY, to the requester's MAC;
//  - a burst is `batch` (128) packets, seq 0..batch-1, WIRE_F_LAST on the
//    last; the receiver answers with one packet: flags=WIRE_F_REPLY,
//    seq = number of packets it received intact, batch=1, len=1, payload
//    byte wire_pattern(seq, 0);
//  - the client's readiness probe is an rtt request with seq >= PB_PROBE_SEQ;
//  - channel 0xFFFF (PB_CH_CTRL) with seq 1 is "bye": the server answers
//    with WIRE_F_REPLY and exits;
//  - an rtt client ends with a 0-byte rtt request ("quit"), then the bye;
//    a server echoes the quit and stops (after a short wait for a bye).
// Facing the research kernel's pingpong (which echoes the payload under a
// header of its own: its own seq counter, flags WIRE_F_LAST, no
// WIRE_F_REPLY), the rtt client also accepts an echo whose length and
// payload match the request, whatever its header seq and flags; the kernel
// server ends on the quit, the kernel client sends one and never a bye.
//
// Output (stdout, one line each, machine-readable):
//   RESULT rtt variant=.. bytes=.. iter=.. us=.. tsc=..
//   RESULT burst variant=.. bytes=.. rep=.. t0_us=.. t1_us=.. t2_us=..
//          t0_tsc=.. t1_tsc=.. mbps=.. irqs=..
//   SRVSTAT burst variant=.. bytes=.. good=.. bad=.. missing=.. ooo=.. irqs=..
//   RESULT stream proto=tcp|mptcp bytes=(write size) rep=.. total=.. verified=..
//          us=(receiver, first to last byte) mbps=.. client_us=.. subflows=.. fallback=..
//          retrans=(sender's TCP segments retransmitted during the transfer)
//   SRVSTAT stream proto=.. bytes=.. total=.. received=.. verified=.. status=..
//          us=.. mbps=.. subflows=.. fallback=.. ofo=(TCP segments queued out of
//          order) mptcp_ofo=(MPTCP's, across subflows) nic_rx=(bytes per ethN)
//   FLOWSTART / FLOWBIN / FLOWEND (the flow mode, see its section)
//   STATS / NETDEV (socket and interface counters, at the end or on failure)
//   DONE ok | DONE fail <reason>
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/genetlink.h>
#include <linux/if_packet.h>
#include <linux/mptcp.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/include/wire.h"
#include "benchnet.h"
#include "pktproto.h"
#include "rxmark.h"
#include "xdpport.h"


// Ring geometry for the mmap variant: a frame slot holds the TPACKET2 header
// plus a 9014-byte jumbo frame; 4 slots per 64 KiB block; 256 slots hold two
// full bursts, so a burst never overruns the RX ring.
#define RING_FRAME_SIZE 16384u
#define RING_BLOCK_SIZE 65536u
#define RING_FRAMES 256u
// Where a TX frame's data starts inside its slot (no PACKET_TX_HAS_OFF).
#define RING_TX_DATA (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll))

// tuned-mmap's TPACKET_V3 receive ring: 16 KiB blocks (one jumbo frame
// fits), 256 of them; a block not yet full is handed over after 1 ms (the
// smallest retire timeout).  tuned's recvmmsg takes up to MM_BATCH frames.
#define V3_BLOCK 16384u
#define V3_BLOCKS 256u
#define V3_FRAME 2048u // only for the ring's size checks: V3 packs frames
#define V3_RETIRE_MS 1
#define MM_BATCH 64u
#define MM_BUF 16384u
#define TUNED_BUSY_US 50 // SO_BUSY_POLL

enum role { ROLE_SERVER, ROLE_CLIENT };
enum mode { MODE_RTT, MODE_BURST, MODE_WINDOW, MODE_STREAM, MODE_FLOW };
enum variant { VAR_PACKET, VAR_MMAP, VAR_XDP, VAR_TUNED, VAR_TUNED_MMAP, VAR_XDP_SG, VAR_COUNT };

struct opts {
	enum role role;
	enum mode mode;
	enum variant variant;
	const char *ifname;
	const char *irqname; // interrupts counted: /proc/interrupts lines named so (default ifname)
	uint8_t peer[6];
	bool have_peer;
	uint32_t sizes[PB_MAX_SIZES];
	int nsizes;
	int runs;
	int warmup;
	int timeout_ms;       // client: one receive
	int probe_timeout_ms; // client: server readiness
	int idle_timeout_ms;  // server: no traffic at all
	int gap_ms;           // client: pause between bursts
	bool rx_count;        // server: under insnplugin.so (rxmark.h's rx_defer)
	int cpu_ms;           // client: bursts between MARK lines after each size's runs
	int proto;            // stream: IPPROTO_TCP or IPPROTO_MPTCP
	struct in_addr server_ip; // stream client: where to connect
	uint64_t stream_bytes;    // stream: bytes per connection
	bool reorder;             // burst server: packets of a burst may come in any order
	int flow_ms;              // flow client: how long to send
	int flow_cpu_ms;          // flow: busy_ns sampled every this many ms (0: never), FLOWCPU line
	int flow_live;            // flow server: every Nth FLOWBIN line printed live (1: all)
	int flow_grace_ms;        // flow: the server's wait past the duration, the client's for the answer
	int flow_marks[8], nflow_marks; // flow client: FLOWMARK lines at these ms from t0
};

struct ring {
	uint8_t *base;
	uint32_t head; // next slot we look at; mirrors the kernel's own head
};

// tuned-mmap's receive side: the block at `block`, `left` frames of it
// not yet taken, `pkt` the next one.
struct v3ring {
	uint8_t *base;
	uint32_t block, left;
	struct tpacket3_hdr *pkt;
};

// One bound socket, any variant.
struct port {
	int fd;
	int txfd;            // the socket that sends: fd, but tuned-mmap's own
	enum variant variant;
	uint8_t mac[6];
	int timeout_ms;
	uint32_t max_frame;  // the largest frame this port carries both ways
	struct ring rx, tx;  // mmap (both), tuned-mmap (tx)
	struct v3ring v3;    // tuned-mmap
	uint8_t *rxbuf;      // packet variant
	struct mmsghdr *mm;  // tuned: the last recvmmsg batch,
	uint32_t mm_n, mm_i; // its size and the next frame to hand out
	struct xport *xp;    // xdp
	bool rx_held;        // mmap: the RX slot at rx.head is ours
	int rcvtimeo_ms;     // packet: SO_RCVTIMEO now in force
	uint64_t ignored;    // frames not in our format
	uint64_t stale;      // well-formed frames that answer nothing we wait for
};

static const char *variant_name[] = { "packet", "mmap", "xdp", "tuned", "tuned-mmap", "xdp-sg" };

// ---------------------------------------------------------------- utilities

// Whether a token of a /proc/interrupts line (a trailing comma dropped)
// is one of the comma-separated `names`, or a vector "name-..." of one
// (virtio: virtio0-config, virtio0-input.0).  Device names come last on
// the line; a shared line lists several ("eth0, eth2"); chip names such as
// IO-APIC never equal a NIC's.
static bool irq_token_in(const char *tok, size_t len, const char *names)
{
	if (len && tok[len - 1] == ',')
		len--;
	for (const char *p = names; *p;) {
		size_t n = strcspn(p, ",");
		if (n && len >= n && strncmp(tok, p, n) == 0 && (len == n || tok[n] == '-'))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

// Interrupts taken so far by the devices `names` (comma-separated: the
// slaves of a bond; every line that names one of them, once), from
// /proc/interrupts; -1 if some name is on no line.
static long irq_count(const char *names)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[1024];
	long total = 0;
	size_t want = 1, found = 0;
	for (const char *p = names; *p; p++)
		want += *p == ',';
	if (!f)
		return -1;
	// Names seen, to tell whether every device has a line.
	char seen[256] = "";
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		bool match = false;
		if (!colon)
			continue;
		for (char *t = colon + 1; *t;) {
			t += strspn(t, " \t\n");
			size_t n = strcspn(t, " \t\n");
			if (n && irq_token_in(t, n, names)) {
				match = true;
				size_t k = t[n - 1] == ',' ? n - 1 : n;
				char tok[64];
				snprintf(tok, sizeof tok, ",%.*s,", (int)(k < 60 ? k : 60), t);
				char *dash = strchr(tok + 1, '-'); // a vector counts for its device
				if (dash)
					dash[0] = ',', dash[1] = 0;
				if (!strstr(seen, tok) && strlen(seen) + strlen(tok) < sizeof seen) {
					strcat(seen, tok);
					found++;
				}
			}
			t += n;
		}
		if (!match)
			continue;
		total += irq_line_total(colon);
	}
	fclose(f);
	return found >= want ? total : -1;
}

// ---------------------------------------------------------------- port

static void set_int_opt(int fd, int level, int name, int val, const char *what)
{
	if (setsockopt(fd, level, name, &val, sizeof val) < 0)
		die("setsockopt %s: %s", what, strerror(errno));
}

static int if_info(int fd, const char *ifname, uint8_t mac[6])
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
		die("SIOCGIFHWADDR %s: %s", ifname, strerror(errno));
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0)
		die("SIOCGIFINDEX %s: %s", ifname, strerror(errno));
	return ifr.ifr_ifindex;
}

// Both rings in one mapping, RX first (the kernel's layout for mmap()).
static void setup_rings(struct port *p)
{
	struct tpacket_req req = {
		.tp_block_size = RING_BLOCK_SIZE,
		.tp_block_nr = RING_FRAMES * RING_FRAME_SIZE / RING_BLOCK_SIZE,
		.tp_frame_size = RING_FRAME_SIZE,
		.tp_frame_nr = RING_FRAMES,
	};
	size_t ring_bytes = (size_t)RING_FRAMES * RING_FRAME_SIZE;
	set_int_opt(p->fd, SOL_PACKET, PACKET_VERSION, TPACKET_V2, "PACKET_VERSION");
	if (setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0)
		die("PACKET_RX_RING: %s", strerror(errno));
	if (setsockopt(p->fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof req) < 0)
		die("PACKET_TX_RING: %s", strerror(errno));
	uint8_t *m = mmap(NULL, 2 * ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, p->fd, 0);
	if (m == MAP_FAILED)
		die("mmap rings: %s", strerror(errno));
	p->rx.base = m;
	p->tx.base = m + ring_bytes;
}

// The tuned variants' socket options: qdisc bypass (frames go straight to
// the driver) and busy polling (a receive call polls the NIC's queue for up
// to TUNED_BUSY_US before it gives up).
static void tune_socket(int fd, bool busy)
{
	int us = TUNED_BUSY_US, on = 1;
	set_int_opt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, 1, "PACKET_QDISC_BYPASS");
	if (busy) {
		set_int_opt(fd, SOL_SOCKET, SO_BUSY_POLL, us, "SO_BUSY_POLL");
		setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &on, sizeof on); // 5.11+
	}
}

// tuned-mmap: a TX-only socket (protocol 0: it receives nothing) with a
// TPACKET_V2 TX ring, and a TPACKET_V3 RX ring on the receiving socket.
static void setup_tuned_rings(struct port *p, int ifindex)
{
	struct tpacket_req tx = {
		.tp_block_size = RING_BLOCK_SIZE,
		.tp_block_nr = RING_FRAMES * RING_FRAME_SIZE / RING_BLOCK_SIZE,
		.tp_frame_size = RING_FRAME_SIZE,
		.tp_frame_nr = RING_FRAMES,
	};
	struct tpacket_req3 rx = {
		.tp_block_size = V3_BLOCK,
		.tp_block_nr = V3_BLOCKS,
		.tp_frame_size = V3_FRAME,
		.tp_frame_nr = V3_BLOCKS * (V3_BLOCK / V3_FRAME),
		.tp_retire_blk_tov = V3_RETIRE_MS,
	};
	p->txfd = socket(AF_PACKET, SOCK_RAW, 0);
	if (p->txfd < 0)
		die("socket AF_PACKET (TX): %s", strerror(errno));
	tune_socket(p->txfd, false);
	set_int_opt(p->txfd, SOL_PACKET, PACKET_VERSION, TPACKET_V2, "PACKET_VERSION (TX)");
	if (setsockopt(p->txfd, SOL_PACKET, PACKET_TX_RING, &tx, sizeof tx) < 0)
		die("PACKET_TX_RING: %s", strerror(errno));
	p->tx.base = mmap(NULL, (size_t)RING_FRAMES * RING_FRAME_SIZE, PROT_READ | PROT_WRITE,
	                  MAP_SHARED | MAP_POPULATE, p->txfd, 0);
	if (p->tx.base == MAP_FAILED)
		die("mmap TX ring: %s", strerror(errno));
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = 0, .sll_ifindex = ifindex };
	if (bind(p->txfd, (struct sockaddr *)&sll, sizeof sll) < 0)
		die("bind TX socket: %s", strerror(errno));
	set_int_opt(p->fd, SOL_PACKET, PACKET_VERSION, TPACKET_V3, "PACKET_VERSION (RX)");
	if (setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &rx, sizeof rx) < 0)
		die("PACKET_RX_RING (V3): %s", strerror(errno));
	p->v3.base = mmap(NULL, (size_t)V3_BLOCKS * V3_BLOCK, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
	                  p->fd, 0);
	if (p->v3.base == MAP_FAILED)
		die("mmap V3 RX ring: %s", strerror(errno));
}

// tuned: MM_BATCH receive buffers for recvmmsg, each with its own iovec.
static void setup_mmsg(struct port *p)
{
	struct iovec *iov = calloc(MM_BATCH, sizeof *iov);
	uint8_t *buf = malloc((size_t)MM_BATCH * MM_BUF);
	p->mm = calloc(MM_BATCH, sizeof *p->mm);
	if (!iov || !buf || !p->mm)
		die("out of memory");
	for (uint32_t i = 0; i < MM_BATCH; i++) {
		iov[i] = (struct iovec){ buf + (size_t)i * MM_BUF, MM_BUF };
		p->mm[i].msg_hdr.msg_iov = &iov[i];
		p->mm[i].msg_hdr.msg_iovlen = 1;
	}
}

static void port_describe(const struct port *p)
{
	if (p->variant == VAR_TUNED)
		printf("PORT variant=tuned qdisc_bypass=1 busy_poll_us=%d rx=recvmmsg/%u tx=sendmmsg spin=1\n",
		       TUNED_BUSY_US, MM_BATCH);
	else if (p->variant == VAR_TUNED_MMAP)
		printf("PORT variant=tuned-mmap qdisc_bypass=1 rx=tpacket_v3/%ux%u retire_ms=%d tx=tpacket_v2 "
		       "spin=1\n", V3_BLOCKS, V3_BLOCK, V3_RETIRE_MS);
}

static void port_open(struct port *p, const struct opts *o, int timeout_ms)
{
	memset(p, 0, sizeof *p);
	p->variant = o->variant;
	p->timeout_ms = timeout_ms;
	p->max_frame = WIRE_MAX_FRAME;
	if (p->variant == VAR_XDP_SG)
		p->variant = VAR_XDP; // the same port, multi-buffer
	if (p->variant == VAR_XDP) {
		static struct xport xp;
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0)
			die("socket: %s", strerror(errno));
		if_info(fd, o->ifname, p->mac);
		close(fd);
		xp_open(&xp, o->ifname, o->variant == VAR_XDP_SG);
		p->xp = &xp;
		p->fd = p->txfd = xp.fd;
		p->max_frame = xp.max_frame;
		return;
	}
	p->fd = socket(AF_PACKET, SOCK_RAW, htons(WIRE_ETHERTYPE));
	if (p->fd < 0)
		die("socket AF_PACKET: %s", strerror(errno));
	p->txfd = p->fd;
	int ifindex = if_info(p->fd, o->ifname, p->mac);
	// A burst of 128 jumbo frames is ~1.2 MB: make the socket buffers large
	// enough that neither side blocks on its own accounting (we are root).
	set_int_opt(p->fd, SOL_SOCKET, SO_SNDBUFFORCE, 16 << 20, "SO_SNDBUFFORCE");
	set_int_opt(p->fd, SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20, "SO_RCVBUFFORCE");
	if (p->variant == VAR_MMAP) {
		setup_rings(p);
	} else if (p->variant == VAR_TUNED_MMAP) {
		tune_socket(p->fd, true);
		setup_tuned_rings(p, ifindex);
	} else if (p->variant == VAR_TUNED) {
		tune_socket(p->fd, true);
		setup_mmsg(p);
	} else {
		p->rxbuf = malloc(65536);
		if (!p->rxbuf)
			die("out of memory");
	}
	// Bind after the rings exist, so no frame lands outside them.
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(WIRE_ETHERTYPE),
		.sll_ifindex = ifindex,
	};
	if (bind(p->fd, (struct sockaddr *)&sll, sizeof sll) < 0)
		die("bind %s: %s", o->ifname, strerror(errno));
	port_describe(p);
}

static void port_close(struct port *p)
{
	if (p->variant == VAR_XDP)
		xp_close(p->xp);
}

static struct tpacket2_hdr *slot(struct ring *r, uint32_t i)
{
	return (struct tpacket2_hdr *)(r->base + (size_t)(i % RING_FRAMES) * RING_FRAME_SIZE);
}

static uint32_t slot_status(struct tpacket2_hdr *h) { return __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE); }

static void slot_set_status(struct tpacket2_hdr *h, uint32_t s) { __atomic_store_n(&h->tp_status, s, __ATOMIC_RELEASE); }

// Waits for the RX slot at the head to be handed to us.
// 0: got one, 1: timeout.
static int ring_rx_wait(struct port *p, int timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	struct tpacket2_hdr *h = slot(&p->rx, p->rx.head);
	while (!(slot_status(h) & TP_STATUS_USER)) {
		struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
		uint64_t now = now_ns();
		if (now >= deadline)
			return 1;
		int left = (int)((deadline - now + 999999) / 1000000);
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
	}
	return 0;
}

static int ring_recv(struct port *p, struct frame *f, int timeout_ms)
{
	if (ring_rx_wait(p, timeout_ms))
		return 1;
	struct tpacket2_hdr *h = slot(&p->rx, p->rx.head);
	p->rx_held = true;
	f->data = (uint8_t *)h + h->tp_mac;
	// A truncated copy (snaplen < len) cannot be verified: make it short
	// enough that parse_frame rejects it.
	f->len = h->tp_snaplen < h->tp_len ? 0 : h->tp_snaplen;
	return 0;
}

// The packet variant blocks in recv() itself, bounded by SO_RCVTIMEO; the
// option is set only when the wanted timeout changes, so the measured loops
// make no extra system calls.
static void sock_set_timeout(struct port *p, int timeout_ms)
{
	if (timeout_ms == p->rcvtimeo_ms)
		return;
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	if (setsockopt(p->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
		die("SO_RCVTIMEO: %s", strerror(errno));
	p->rcvtimeo_ms = timeout_ms;
}

static int sock_recv(struct port *p, struct frame *f, int timeout_ms)
{
	sock_set_timeout(p, timeout_ms);
	for (;;) {
		struct sockaddr_ll from;
		socklen_t fl = sizeof from;
		ssize_t n = recvfrom(p->fd, p->rxbuf, 65536, MSG_TRUNC, (struct sockaddr *)&from, &fl);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("recv: %s", strerror(errno));
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue; // never expected on a protocol-bound socket
		f->data = p->rxbuf;
		f->len = n > 65536 ? 0 : (uint32_t)n;
		return 0;
	}
}

// tuned: frames from one recvmmsg batch, the next batch fetched by a
// non-blocking recvmmsg in a spin (each call busy-polls the NIC first).
static int mm_recv(struct port *p, struct frame *f, int timeout_ms)
{
	if (p->mm_i >= p->mm_n) {
		uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
		p->mm_i = p->mm_n = 0;
		RX_POLL_BEGIN();
		for (uint32_t spin = 1;; spin++) {
			int n = recvmmsg(p->fd, p->mm, MM_BATCH, MSG_DONTWAIT, NULL);
			if (n > 0) {
				p->mm_n = (uint32_t)n;
				break;
			}
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				die("recvmmsg: %s", strerror(errno));
			if ((spin & 15) == 0 && now_ns() >= deadline)
				return 1;
			RX_POLL_EMPTY(); // nothing came: the round, its busy poll included
		}
	}
	struct mmsghdr *m = &p->mm[p->mm_i++];
	f->data = m->msg_hdr.msg_iov->iov_base;
	f->len = (m->msg_hdr.msg_flags & MSG_TRUNC) ? 0 : m->msg_len;
	return 0;
}

static struct tpacket_block_desc *v3_block(struct port *p)
{
	return (struct tpacket_block_desc *)(p->v3.base + (size_t)(p->v3.block % V3_BLOCKS) * V3_BLOCK);
}

static uint32_t v3_status(struct tpacket_block_desc *b)
{
	return __atomic_load_n(&b->hdr.bh1.block_status, __ATOMIC_ACQUIRE);
}

// tuned-mmap: spins (no system call) until the current V3 block is ours,
// then hands out its frames in order.  0: got one, 1: timeout.
static int v3_recv(struct port *p, struct frame *f, int timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	while (!p->v3.left) {
		struct tpacket_block_desc *b = v3_block(p);
		RX_POLL_BEGIN();
		for (uint32_t spin = 1; !(v3_status(b) & TP_STATUS_USER); spin++) {
			if ((spin & 255) == 0 && now_ns() >= deadline)
				return 1;
			RX_POLL_EMPTY_USER(); // the block fills under interrupts: those count
		}
		p->v3.left = b->hdr.bh1.num_pkts;
		p->v3.pkt = (struct tpacket3_hdr *)((uint8_t *)b + b->hdr.bh1.offset_to_first_pkt);
		if (!p->v3.left) { // never expected: the kernel closes no empty block
			__atomic_store_n(&b->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
			p->v3.block++;
		}
	}
	struct tpacket3_hdr *h = p->v3.pkt;
	p->rx_held = true;
	f->data = (uint8_t *)h + h->tp_mac;
	f->len = h->tp_snaplen < h->tp_len ? 0 : h->tp_snaplen;
	return 0;
}

static void v3_release(struct port *p)
{
	if (--p->v3.left) {
		p->v3.pkt = (struct tpacket3_hdr *)((uint8_t *)p->v3.pkt + p->v3.pkt->tp_next_offset);
		return;
	}
	__atomic_store_n(&v3_block(p)->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
	p->v3.block++;
}

static int xdp_recv(struct port *p, struct frame *f, int timeout_ms)
{
	if (xp_recv(p->xp, &f->data, &f->len, timeout_ms))
		return 1;
	p->rx_held = true;
	return 0;
}

// Receives one frame. 0: got it (call port_release after), 1: timeout.
static int port_recv(struct port *p, struct frame *f, int timeout_ms)
{
	switch (p->variant) {
	case VAR_MMAP: return ring_recv(p, f, timeout_ms);
	case VAR_TUNED_MMAP: return v3_recv(p, f, timeout_ms);
	case VAR_TUNED: return mm_recv(p, f, timeout_ms);
	case VAR_XDP: return xdp_recv(p, f, timeout_ms);
	default: return sock_recv(p, f, timeout_ms);
	}
}

static void port_release(struct port *p)
{
	if (!p->rx_held)
		return;
	p->rx_held = false;
	if (p->variant == VAR_TUNED_MMAP) {
		v3_release(p);
	} else if (p->variant == VAR_XDP) {
		xp_release(p->xp);
	} else {
		slot_set_status(slot(&p->rx, p->rx.head), TP_STATUS_KERNEL);
		p->rx.head = (p->rx.head + 1) % RING_FRAMES;
	}
}

// mmap: waits (outside any measured window) until the next n TX slots are
// free again, i.e. the previous batch's frames have left the device.
static void port_tx_ready(struct port *p, uint32_t n)
{
	if (p->variant == VAR_XDP)
		xp_tx_ready(p->xp, n, p->timeout_ms);
	if (p->variant != VAR_MMAP && p->variant != VAR_TUNED_MMAP)
		return;
	uint64_t deadline = now_ns() + (uint64_t)p->timeout_ms * 1000000u;
	for (uint32_t i = 0; i < n; i++) {
		struct tpacket2_hdr *h = slot(&p->tx, p->tx.head + i);
		uint32_t s;
		while ((s = slot_status(h)) != TP_STATUS_AVAILABLE) {
			if (s & TP_STATUS_WRONG_FORMAT)
				die("TX ring slot %u: wrong format", (p->tx.head + i) % RING_FRAMES);
			if (now_ns() > deadline)
				die("TX ring slot %u stuck in status %u", (p->tx.head + i) % RING_FRAMES, s);
			struct pollfd pfd = { .fd = p->txfd, .events = POLLOUT };
			poll(&pfd, 1, 1);
		}
	}
}

// mmap: one send() hands every SEND_REQUEST slot to the kernel.  It is
// non-blocking so that it returns once the frames are queued, as a plain
// send() does, instead of waiting for the transmit-completion interrupts;
// it is repeated only if the kernel stopped early (buffer accounting).
static void ring_kick(struct port *p, uint64_t total)
{
	uint64_t sent = 0;
	uint64_t deadline = now_ns() + (uint64_t)p->timeout_ms * 1000000u;
	while (sent < total) {
		ssize_t r = send(p->txfd, NULL, 0, MSG_DONTWAIT);
		if (r < 0 && errno != EAGAIN && errno != ENOBUFS && errno != EINTR)
			die("TX ring send: %s", strerror(errno));
		if (r > 0)
			sent += (uint64_t)r;
		if (sent < total && now_ns() > deadline)
			die("TX ring send: %llu of %llu bytes", (unsigned long long)sent, (unsigned long long)total);
	}
}

// tuned-mmap: with the qdisc bypassed a full driver queue fails a send()
// (ENOBUFS) and leaves the frame's slot SEND_REQUEST, counting no bytes for
// the frames sent before it in that call: kick until the last slot of the
// batch has left SEND_REQUEST (the kernel takes the slots in order).
static void ring_kick_bypass(struct port *p, struct tpacket2_hdr *last)
{
	uint64_t deadline = now_ns() + (uint64_t)p->timeout_ms * 1000000u;
	while (slot_status(last) == TP_STATUS_SEND_REQUEST) {
		ssize_t r = send(p->txfd, NULL, 0, MSG_DONTWAIT);
		if (r < 0 && errno != EAGAIN && errno != ENOBUFS && errno != EINTR)
			die("TX ring send: %s", strerror(errno));
		if (now_ns() > deadline)
			die("TX ring send: frames still queued after %d ms", p->timeout_ms);
	}
}

static void ring_send(struct port *p, uint8_t *const *frames, const uint32_t *lens, uint32_t n)
{
	uint64_t total = 0;
	struct tpacket2_hdr *h = NULL;
	for (uint32_t i = 0; i < n; i++) {
		h = slot(&p->tx, p->tx.head);
		memcpy((uint8_t *)h + RING_TX_DATA, frames[i], lens[i]);
		h->tp_len = lens[i];
		slot_set_status(h, TP_STATUS_SEND_REQUEST);
		p->tx.head = (p->tx.head + 1) % RING_FRAMES;
		total += lens[i];
	}
	if (p->variant == VAR_TUNED_MMAP)
		ring_kick_bypass(p, h);
	else
		ring_kick(p, total);
}

// tuned: one sendmmsg for the batch, again from the first frame not sent
// (with the qdisc bypassed a full driver queue fails it with ENOBUFS).
static void mm_send(struct port *p, uint8_t *const *frames, const uint32_t *lens, uint32_t n)
{
	static struct mmsghdr m[PB_BURST_N];
	static struct iovec v[PB_BURST_N];
	uint64_t deadline = now_ns() + (uint64_t)p->timeout_ms * 1000000u;
	if (n > PB_BURST_N)
		die("sendmmsg: %u frames", n);
	for (uint32_t i = 0; i < n; i++) {
		v[i] = (struct iovec){ frames[i], lens[i] };
		m[i].msg_hdr = (struct msghdr){ .msg_iov = &v[i], .msg_iovlen = 1 };
	}
	for (uint32_t done = 0; done < n;) {
		int r = sendmmsg(p->fd, m + done, n - done, 0);
		if (r < 0 && errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
			die("sendmmsg: %s", strerror(errno));
		if (r > 0)
			done += (uint32_t)r;
		if (done < n && now_ns() > deadline)
			die("sendmmsg: %u of %u frames after %d ms", done, n, p->timeout_ms);
	}
}

static void sock_send(struct port *p, uint8_t *const *frames, const uint32_t *lens, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		ssize_t r = send(p->fd, frames[i], lens[i], 0);
		if (r != (ssize_t)lens[i])
			die("send %u bytes: %s", lens[i], r < 0 ? strerror(errno) : "short");
	}
}

// Sends n whole frames: the call whose duration is T1.
static void port_send(struct port *p, uint8_t *const *frames, const uint32_t *lens, uint32_t n)
{
	switch (p->variant) {
	case VAR_MMAP:
	case VAR_TUNED_MMAP: ring_send(p, frames, lens, n); break;
	case VAR_TUNED: mm_send(p, frames, lens, n); break;
	case VAR_XDP: xp_send(p->xp, frames, lens, n, p->timeout_ms); break;
	default: sock_send(p, frames, lens, n);
	}
}

static void port_stats(struct port *p)
{
	if (p->variant == VAR_XDP) {
		xp_stats(p->xp);
		printf("STATS variant=xdp ignored=%llu stale=%llu\n", (unsigned long long)p->ignored,
		       (unsigned long long)p->stale);
		return;
	}
	struct tpacket_stats st = { 0 };
	socklen_t l = sizeof st;
	getsockopt(p->fd, SOL_PACKET, PACKET_STATISTICS, &st, &l);
	printf("STATS variant=%s kernel_packets=%u kernel_drops=%u ignored=%llu stale=%llu\n",
	       variant_name[p->variant], st.tp_packets, st.tp_drops, (unsigned long long)p->ignored,
	       (unsigned long long)p->stale);
}

// The open port and options, for the diagnostics printed on failure.
static struct port *g_port;
static const struct opts *g_opts;

static void print_netdev(const char *ifname)
{
	FILE *f = fopen("/proc/net/dev", "r");
	char line[512];
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char *p = line + strspn(line, " ");
		if (strncmp(p, ifname, strlen(ifname)) == 0 && p[strlen(ifname)] == ':')
			printf("NETDEV %s", p);
	}
	fclose(f);
}

// A "bye" that cannot fail or block: used while already failing.
static void send_bye_best_effort(struct port *p, const struct opts *o)
{
	uint8_t buf[WIRE_MIN_FRAME];
	struct pkt h = { .channel = PB_CH_CTRL, .seq = PB_CTRL_BYE, .batch = 1, .len = 0 };
	uint32_t len = build_frame(buf, o->peer, p->mac, &h);
	uint8_t *f = buf;
	if (p->variant == VAR_XDP) {
		xp_reap(p->xp);
		if (p->xp->ntx_free)
			xp_send(p->xp, &f, &len, 1, 100);
		return;
	}
	if (p->variant != VAR_MMAP && p->variant != VAR_TUNED_MMAP) {
		send(p->fd, buf, len, MSG_DONTWAIT);
		return;
	}
	struct tpacket2_hdr *t = slot(&p->tx, p->tx.head);
	if (slot_status(t) != TP_STATUS_AVAILABLE)
		return;
	memcpy((uint8_t *)t + RING_TX_DATA, buf, len);
	t->tp_len = len;
	slot_set_status(t, TP_STATUS_SEND_REQUEST);
	p->tx.head = (p->tx.head + 1) % RING_FRAMES;
	send(p->txfd, NULL, 0, MSG_DONTWAIT);
}

// On failure: what the kernel saw, and (client) a "bye" so that the server
// prints its own view and powers off instead of waiting for its timeout.
static void diag(void)
{
	static bool once;
	if (once || !g_port)
		return;
	once = true;
	port_stats(g_port);
	print_netdev(g_opts->ifname);
	if (g_opts->role == ROLE_CLIENT)
		send_bye_best_effort(g_port, g_opts);
}

// ---------------------------------------------------------------- server

#define PB_REORDER_MAX 1024u    // --reorder: largest burst (seq bitmap)
#define PB_REORDER_WAIT_MS 500 // --reorder: wait for stragglers after the last

struct burst_state {
	uint32_t expect, good, bad, missing, ooo, bytes;
	// --reorder: which seqs came, the burst's size, whether its last frame
	// has come, and from where
	uint8_t seen[PB_REORDER_MAX / 8];
	uint32_t batch;
	bool last_seen;
	uint8_t src[6];
	long irqs_mark; // NIC interrupts when the previous burst was answered
	// R1: TSC at the burst's first frame received (0: none yet), and the
	// ticks spent checking payloads; guest instructions under -icount.
	uint64_t first_tsc, check_tsc;
	// R1 as receive work: a receive window is open (opened while waiting
	// for the burst), and the TSC when it opened.
	bool rx_open;
	uint64_t rx_tsc;
};

// insnplugin.c's window markers (no-ops): a burst's R1, from its first
// frame received to the reply sent, or a stream connection at either end,
// for the plugin's instruction counts when the guest has several CPUs (no
// -icount there).
#define R1_MARK_START() __asm__ volatile("nopl 0x7ab1c0d0(%%rax)" ::: "memory")
#define R1_MARK_END() __asm__ volatile("nopl 0x7ab1c0d1(%%rax)" ::: "memory")

// The echo side's state.
struct server {
	struct port *p;
	const char *irqname;
	struct burst_state b;
	bool reorder;        // a burst's packets may arrive in any order (a bond)
	uint64_t bad_echo;   // rtt requests whose payload was damaged
	uint64_t bad_bursts; // bursts with a damaged, missing or reordered packet
};

static void send_one(struct port *p, uint8_t *f, uint32_t len)
{
	port_tx_ready(p, 1);
	port_send(p, &f, &len, 1);
}

// Answers a frame in place: MACs swapped, WIRE_F_REPLY set, rest unchanged.
static void echo(struct port *p, struct frame *f)
{
	uint8_t src[6];
	wire_get_eth(f->data, NULL, src);
	wire_put_eth(f->data, src, p->mac);
	wire_set_flags(f->data, (uint16_t)(wire_get_flags(f->data) | WIRE_F_REPLY));
	send_one(p, f->data, f->len);
}

// The windowed stream's frame slots (pktwindow.h): plain buffers, sent by
// the variant's own path like a burst.
struct wslots {
	uint8_t *frame[PB_WIN_SLOTS];
	uint32_t len[PB_WIN_SLOTS];
};

static void wslots_alloc(struct port *p, struct wslots *s)
{
	(void)p;
	uint8_t *mem = malloc((size_t)PB_WIN_SLOTS * PB_FRAME_BUF);
	if (!mem)
		die("out of memory");
	for (uint32_t i = 0; i < PB_WIN_SLOTS; i++)
		s->frame[i] = mem + (size_t)i * PB_FRAME_BUF;
}

static void wslots_send(struct port *p, struct wslots *s, uint32_t first, uint32_t n)
{
	port_tx_ready(p, n);
	port_send(p, s->frame + first, s->len + first, n);
}

static void wslots_stream(struct port *p, struct wslots *s, bool begin)
{
	(void)p, (void)s, (void)begin;
}

// The 128 frames of a burst, built once per size, outside the timing.
struct burst_frames {
	uint8_t *mem;
	uint8_t *frames[PB_BURST_N];
	uint32_t lens[PB_BURST_N];
};

#define PB_VARIANT() variant_name[g_opts->variant]
#include "pktpeer.h"
#include "pktwindow.h"

static void burst_reply(struct server *sv, const uint8_t dst[6])
{
	struct burst_state *b = &sv->b;
	uint64_t held = burst_answer(sv, dst);
	R1_MARK_END();
	uint64_t sent = tsc_now();
	// Bookkeeping only after the reply is out, so it costs no measured time.
	uint32_t n = b->good + b->bad;
	if (sv->reorder)
		b->missing = b->batch > n ? b->batch - n : 0;
	long irqs = rx_defer ? -1 : irq_count(sv->irqname);
	rx_printf("SRVSTAT burst variant=%s bytes=%u good=%u bad=%u missing=%u ooo=%u irqs=%ld "
	       "r1_tsc=%llu check_tsc=%llu\n",
	       variant_name[g_opts->variant], b->bytes, b->good, b->bad, b->missing, b->ooo,
	       irqs >= 0 && b->irqs_mark >= 0 ? irqs - b->irqs_mark : -1,
	       (unsigned long long)(n ? (sent - b->first_tsc) / n : 0),
	       (unsigned long long)(n ? b->check_tsc / n : 0));
	if (b->rx_open) // insnplugin.c's RXW lines pair with these, in order
		rx_printf("SRVSTAT rxwin variant=%s bytes=%u packets=%u tsc=%llu\n", variant_name[g_opts->variant],
		          b->bytes, n, (unsigned long long)(held - b->rx_tsc));
	if (!rx_defer)
		fflush(stdout);
	if (b->bad || b->missing || (b->ooo && !sv->reorder))
		sv->bad_bursts++;
	burst_reset(b);
	b->rx_open = false;
	b->irqs_mark = rx_defer ? -1 : irq_count(sv->irqname);
}

static void burst_first(struct server *sv)
{
	(void)sv;
	R1_MARK_START();
}

// One packet of a burst: checks order and payload; answers after the last.
static void burst_take(struct server *sv, const struct pkt *k, uint64_t arrived)
{
	struct burst_state *b = &sv->b;
	if (sv->reorder) {
		// Over a bond the links reorder: take the packets in any order,
		// answer once all `batch` came (or, serve_idle, a while after
		// the last one if some never come); ooo counts late arrivals.
		if (!b->first_tsc) {
			b->first_tsc = arrived;
			R1_MARK_START();
		}
		if (k->seq < b->expect)
			b->ooo++;
		else
			b->expect = k->seq + 1;
		b->bytes = k->len;
		b->batch = k->batch;
		memcpy(b->src, k->src, 6);
		uint64_t c0 = tsc_now();
		RX_CHECK_BEGIN();
		if (k->seq >= PB_REORDER_MAX || (b->seen[k->seq / 8] & (1u << (k->seq % 8))))
			b->bad++; // out of range or a duplicate
		else if (b->seen[k->seq / 8] |= (uint8_t)(1u << (k->seq % 8)),
		         pattern_check(k->payload, k->len, k->seq) == k->len)
			b->good++;
		else
			b->bad++;
		RX_CHECK_END();
		b->check_tsc += tsc_now() - c0;
		if (k->flags & WIRE_F_LAST)
			b->last_seen = true;
		if (b->good + b->bad >= k->batch)
			burst_reply(sv, k->src);
		return;
	}
	burst_take_inorder(sv, k, arrived);
}

static void serve_other(struct server *sv, const struct pkt *k, struct frame *f)
{
	(void)k, (void)f;
	sv->p->ignored++;
}

// A bond's burst whose last frame came: its stragglers are waited for a while.
static int serve_wait_ms(const struct server *sv, const struct opts *o)
{
	return sv->reorder && sv->b.last_seen ? PB_REORDER_WAIT_MS : o->idle_timeout_ms;
}

static bool serve_idle(struct server *sv)
{
	if (!(sv->reorder && sv->b.last_seen))
		return false;
	burst_reply(sv, sv->b.src); // the burst's missing packets never came
	return true;
}

static int run_server(const struct opts *o)
{
	struct port p;
	struct server sv = { .p = &p, .irqname = o->irqname, .reorder = o->reorder };
	port_open(&p, o, o->idle_timeout_ms);
	g_port = &p;
	g_opts = o;
	rx_defer = o->rx_count;
	sv.b.irqs_mark = irq_count(o->irqname);
	printf("READY role=server variant=%s mac=%02x:%02x:%02x:%02x:%02x:%02x fastpattern=%d\n",
	       variant_name[o->variant], p.mac[0], p.mac[1], p.mac[2], p.mac[3], p.mac[4], p.mac[5],
	       pat_fast);
	fflush(stdout);
	serve(&sv, o);
	rx_idle_window(&p);
	rx_flush();
	port_stats(&p);
	port_close(&p);
	print_netdev(o->ifname);
	server_verdict(&sv);
	return 0;
}

// ---------------------------------------------------------------- client

// The packet variant waits the full timeout per recv() (changing
// SO_RCVTIMEO per call would cost a system call); await_reply's deadline
// still bounds its loop.
static int await_wait_ms(const struct port *p, int left, int timeout_ms)
{
	return p->variant != VAR_PACKET ? left : timeout_ms;
}

static void rtt_stage(struct port *p, uint8_t *buf, uint32_t len)
{
	(void)buf, (void)len;
	port_tx_ready(p, 1);
}

static void rtt_send(struct port *p, uint8_t *buf, uint32_t len)
{
	port_send(p, &buf, &len, 1);
}

static void burst_build(struct port *p, struct burst_frames *bf, const uint8_t dst[6], uint32_t size)
{
	if (!bf->mem && !(bf->mem = malloc((size_t)PB_BURST_N * PB_FRAME_BUF)))
		die("out of memory");
	for (uint32_t i = 0; i < PB_BURST_N; i++) {
		struct pkt h = { .channel = PB_CH_DATA, .seq = i, .batch = PB_BURST_N, .len = size };
		if (i == PB_BURST_N - 1)
			h.flags = WIRE_F_LAST;
		bf->frames[i] = bf->mem + (size_t)i * PB_FRAME_BUF;
		bf->lens[i] = build_frame(bf->frames[i], dst, p->mac, &h);
	}
}

static void burst_stage(struct port *p, struct burst_frames *bf)
{
	(void)bf;
	port_tx_ready(p, PB_BURST_N);
}

// T1's span: for packet the 128 send() calls, timed as one span so the
// clock reads do not add 256 syscalls to T0; for mmap filling the ring plus
// the kick.
static void burst_send(struct port *p, struct burst_frames *bf)
{
	port_send(p, bf->frames, bf->lens, PB_BURST_N);
}

static long nic_irqs(const struct opts *o) { return irq_count(o->irqname); }

static int run_client(const struct opts *o)
{
	struct port p;
	uint32_t seq = 0;
	port_open(&p, o, o->timeout_ms);
	g_port = &p;
	g_opts = o;
	probe_server(&p, o);
	for (int i = 0; i < o->nsizes; i++) {
		// AF_XDP without multi-buffer carries one UMEM chunk per frame.
		if (frame_len_for(o->sizes[i]) > p.max_frame) {
			printf("SKIP %s variant=%s bytes=%u max_frame=%u\n",
			       o->mode == MODE_RTT ? "rtt" : o->mode == MODE_WINDOW ? "window" : "burst",
			       variant_name[o->variant], o->sizes[i], p.max_frame);
			continue;
		}
		if (o->mode == MODE_RTT)
			run_rtt_size(&p, o, o->sizes[i], &seq);
		else if (o->mode == MODE_WINDOW)
			run_window_size(&p, o, o->sizes[i], variant_name[o->variant]);
		else
			run_burst_size(&p, o, o->sizes[i]);
	}
	// The harness reads both VMs' CPU time when it sees the last MARK end
	// line; a guest that powers off at once can outrun it and lose that window.
	if (o->mode == MODE_BURST && o->cpu_ms > 0)
		sleep_ms(300);
	if (o->mode == MODE_RTT)
		send_quit(&p, o, seq);
	say_bye(&p, o);
	port_stats(&p);
	port_close(&p);
	print_netdev(o->ifname);
	printf("DONE ok\n");
	return 0;
}

// ---------------------------------------------------------------- stream
//
// One TCP (or MPTCP) connection per measurement: the client sends a 16-byte
// header (magic, write size, total bytes; total 0 = quit), then `total`
// bytes in write()s of `size` bytes, and reads the server's 32-byte answer
// (magic, status, bytes verified, ns from the first to the last byte
// received).  Stream byte `off` is wire_pattern(off >> 13, off & 8191): the
// receiver checks every byte against its offset, so a lost, duplicated or
// reordered piece shows as a mismatch.

#define PB_STREAM_MAGIC 0x50425354u // "PBST"
#define PB_STREAM_BLOCK 8192u
#define PB_STREAM_PORT 5201
#define PB_STREAM_RXBUF (256u << 10)
#define PB_MAX_NICS 8
enum { ST_OK = 0, ST_MISMATCH = 1, ST_SHORT = 2 };

static uint8_t stream_byte(uint64_t off)
{
	return wire_pattern((uint32_t)(off / PB_STREAM_BLOCK), (uint32_t)(off % PB_STREAM_BLOCK));
}

// Fills p with the stream bytes at [off, off + n).
static void stream_fill(uint8_t *p, uint32_t n, uint64_t off)
{
	while (n) {
		uint32_t in = (uint32_t)(off % PB_STREAM_BLOCK), k = PB_STREAM_BLOCK - in;
		uint32_t seq = (uint32_t)(off / PB_STREAM_BLOCK), i = 0;
		if (k > n)
			k = n;
		if (pat_fast) {
			uint64_t key = 0x0101010101010101ull * pat_key(seq);
			for (; i + 8 <= k; i += 8) {
				uint64_t b;
				memcpy(&b, pat_base + in + i, 8);
				b ^= key;
				memcpy(p + i, &b, 8);
			}
		}
		for (; i < k; i++)
			p[i] = wire_pattern(seq, in + i);
		p += k, n -= k, off += k;
	}
}

// Index of the first byte of p that is not the stream byte at its offset, or n.
static uint32_t stream_check(const uint8_t *p, uint32_t n, uint64_t off)
{
	uint32_t done = 0;
	while (done < n) {
		uint32_t in = (uint32_t)(off % PB_STREAM_BLOCK), k = PB_STREAM_BLOCK - in;
		uint32_t seq = (uint32_t)(off / PB_STREAM_BLOCK), i = 0;
		if (k > n - done)
			k = n - done;
		if (pat_fast) {
			uint64_t key = 0x0101010101010101ull * pat_key(seq);
			for (; i + 8 <= k; i += 8) {
				uint64_t a, b;
				memcpy(&a, p + done + i, 8);
				memcpy(&b, pat_base + in + i, 8);
				if ((a ^ key) != b)
					break;
			}
		}
		for (; i < k; i++)
			if (p[done + i] != wire_pattern(seq, in + i))
				return done + i;
		done += k, off += k;
	}
	return n;
}

// Received bytes of eth0..ethN-1 (from /proc/net/dev), for the per-link share.
static int nic_rx_bytes(uint64_t *v, int max)
{
	FILE *f = fopen("/proc/net/dev", "r");
	char line[512];
	int n = 0;
	for (int i = 0; i < max; i++)
		v[i] = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		int idx;
		unsigned long long rx;
		if (sscanf(line, " eth%d: %llu", &idx, &rx) == 2 && idx >= 0 && idx < max) {
			v[idx] = rx;
			if (idx + 1 > n)
				n = idx + 1;
		}
	}
	fclose(f);
	return n;
}

// MPTCP subflows of a connected socket, the initial one included (the
// kernel's mptcpi_subflows counts only the added ones; -1: not MPTCP), and
// whether it fell back to plain TCP.
static int mptcp_subflows(int fd, bool *fallback)
{
	struct mptcp_info mi;
	socklen_t l = sizeof mi;
	memset(&mi, 0, sizeof mi);
	*fallback = false;
	if (getsockopt(fd, SOL_MPTCP, MPTCP_INFO, &mi, &l) < 0)
		return -1;
	*fallback = (mi.mptcpi_flags & MPTCP_INFO_FLAG_FALLBACK) != 0;
	return mi.mptcpi_subflows + 1;
}

// A counter of /proc/net/snmp or /proc/net/netstat: the field `name` of
// the line pair starting with `prefix` ("Tcp:", "TcpExt:", "MPTcpExt:");
// -1 if absent.
static long long snmp_get(const char *path, const char *prefix, const char *name)
{
	FILE *f = fopen(path, "r");
	static char names[8192], vals[8192];
	long long r = -1;
	if (!f)
		return -1;
	while (fgets(names, sizeof names, f) && fgets(vals, sizeof vals, f)) {
		if (strncmp(names, prefix, strlen(prefix)) != 0)
			continue;
		char *sn, *sv, *n = strtok_r(names, " \n", &sn), *v = strtok_r(vals, " \n", &sv);
		for (; n && v; n = strtok_r(NULL, " \n", &sn), v = strtok_r(NULL, " \n", &sv))
			if (strcmp(n, name) == 0)
				r = atoll(v);
		break;
	}
	fclose(f);
	return r;
}

static const char *proto_name(int proto) { return proto == IPPROTO_MPTCP ? "mptcp" : "tcp"; }

// Each CPU's busy time so far in ns (at most max CPUs), as busy_ns but per
// CPU: /proc/timer_list's "now at" less the CPU's idle and iowait sleep
// times, and less the idle period under way when its tick is stopped (the
// nohz code adds an idle period to idle_sleeptime only when it ends, so a
// CPU asleep across a window would otherwise look busy). Returns the CPUs
// read, 0 when the kernel does not show them.
#define PB_MAX_CPUS 8
static int cpus_busy_ns(long long *busy, int max)
{
	FILE *f = fopen("/proc/timer_list", "r");
	char line[512];
	long long now = -1, idle = 0, entry = 0;
	int cpu = -1, n = 0, stopped = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		char *v = strchr(line, ':');
		if (!strncmp(line, "now at ", 7))
			now = atoll(line + 7);
		else if (!strncmp(line, "cpu: ", 5))
			cpu = atoi(line + 5), idle = entry = stopped = 0;
		else if (cpu < 0 || cpu >= max || !v)
			continue;
		else if (strstr(line, ".tick_stopped"))
			stopped = atoi(v + 1);
		else if (strstr(line, ".idle_entrytime"))
			entry = atoll(v + 1);
		else if (strstr(line, ".idle_sleeptime") || strstr(line, ".iowait_sleeptime"))
			idle += atoll(v + 1);
		else if (strstr(line, ".idle_expires") && now >= 0) { // the CPU's last field
			busy[cpu] = now - idle - (stopped && entry && entry <= now ? now - entry : 0);
			n = cpu + 1 > n ? cpu + 1 : n;
		}
	}
	fclose(f);
	return n;
}

// " cpu_busy_ns=a,b,..": each CPU's busy ns between two cpus_busy_ns reads.
static void print_cpus_busy(const long long *b0, int n0, const long long *b1, int n1)
{
	printf(" cpu_busy_ns=");
	for (int k = 0; k < n0 && k < n1; k++)
		printf("%s%lld", k ? "," : "", b1[k] - b0[k]);
}

// What one busy_ns() window costs when it holds nothing (the reads' own
// work, on either side of the clock), the least of 3: subtracted from a
// measured window by the collector.
static long long busy_mark_ns(void)
{
	static long long cost = -2;
	if (cost != -2)
		return cost;
	cost = -1;
	for (int i = 0; i < 3; i++) {
		long long a = busy_ns(), b = busy_ns();
		if (a >= 0 && b >= a && (cost < 0 || b - a < cost))
			cost = b - a;
	}
	return cost;
}

// Serves one connection; returns 1 when it was the quit.
static int stream_serve(int c, const struct opts *o, uint8_t *buf)
{
	uint8_t hdr[16], ans[32];
	uint64_t rx0[PB_MAX_NICS], rx1[PB_MAX_NICS];
	set_timeouts(c, o->timeout_ms);
	if (read_full(c, hdr, sizeof hdr) || get_be32(hdr) != PB_STREAM_MAGIC)
		die("stream: bad or missing header");
	uint32_t size = get_be32(hdr + 4);
	uint64_t total = get_be64(hdr + 8), got = 0, good = 0, t_first = 0, t_last = 0;
	uint32_t status = ST_OK;
	int nics = nic_rx_bytes(rx0, PB_MAX_NICS);
	// Segments that arrived out of order: TCP's (per subflow for MPTCP) and
	// MPTCP's own, across subflows.
	long long ofo0 = snmp_get("/proc/net/netstat", "TcpExt:", "TCPOFOQueue");
	long long mofo0 = snmp_get("/proc/net/netstat", "MPTcpExt:", "OFOQueue");
	long long mark = busy_mark_ns(), c0[PB_MAX_CPUS], c1[PB_MAX_CPUS];
	int n0 = cpus_busy_ns(c0, PB_MAX_CPUS);
	long long b0 = busy_ns(), w0 = (long long)now_ns();
	R1_MARK_START();
	while (got < total) {
		size_t want = total - got < PB_STREAM_RXBUF ? (size_t)(total - got) : PB_STREAM_RXBUF;
		ssize_t r = read(c, buf, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		t_last = now_ns();
		if (!t_first)
			t_first = t_last;
		if (status == ST_OK) {
			uint32_t k = stream_check(buf, (uint32_t)r, got);
			good += k;
			if (k != (uint32_t)r) {
				status = ST_MISMATCH;
				printf("STREAM mismatch at byte %llu: got 0x%02x want 0x%02x\n",
				       (unsigned long long)(got + k), buf[k], stream_byte(got + k));
			}
		}
		got += (uint64_t)r;
	}
	R1_MARK_END();
	long long b1 = busy_ns(), w1 = (long long)now_ns();
	int n1 = cpus_busy_ns(c1, PB_MAX_CPUS);
	if (status == ST_OK && got != total)
		status = ST_SHORT;
	bool fb;
	int sub = mptcp_subflows(c, &fb);
	nic_rx_bytes(rx1, PB_MAX_NICS);
	long long ofo1 = snmp_get("/proc/net/netstat", "TcpExt:", "TCPOFOQueue");
	long long mofo1 = snmp_get("/proc/net/netstat", "MPTcpExt:", "OFOQueue");
	uint64_t ns = t_last - t_first;
	put_be32(ans, PB_STREAM_MAGIC);
	put_be32(ans + 4, status);
	put_be64(ans + 8, good);
	put_be64(ans + 16, ns);
	put_be64(ans + 24, got);
	if (write_full(c, ans, sizeof ans))
		die("stream: cannot send the answer");
	if (total == 0)
		return 1;
	printf("SRVSTAT stream proto=%s bytes=%u total=%llu received=%llu verified=%llu status=%u "
	       "us=%.1f mbps=%.3f subflows=%d fallback=%d ofo=%lld mptcp_ofo=%lld busy_ns=%lld win_ns=%lld "
	       "mark_ns=%lld nic_rx=",
	       proto_name(o->proto), size, (unsigned long long)total, (unsigned long long)got,
	       (unsigned long long)good, status, (double)ns / 1000.0,
	       ns ? (double)got * 8000.0 / (double)ns : 0.0, sub, fb,
	       ofo0 >= 0 && ofo1 >= 0 ? ofo1 - ofo0 : -1, mofo0 >= 0 && mofo1 >= 0 ? mofo1 - mofo0 : -1,
	       b0 >= 0 && b1 >= 0 ? b1 - b0 : -1, w1 - w0, mark);
	for (int i = 0; i < nics; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)(rx1[i] - rx0[i]));
	print_cpus_busy(c0, n0, c1, n1);
	printf("\n");
	if (status != ST_OK)
		die("stream: %llu of %llu bytes verified (status %u)", (unsigned long long)good,
		    (unsigned long long)total, status);
	return 0;
}

// The stream and flow servers' listening socket (TCP or MPTCP) on PB_STREAM_PORT.
static int stream_listen(const struct opts *o)
{
	int one = 1;
	int l = socket(AF_INET, SOCK_STREAM, o->proto);
	if (l < 0)
		die("socket %s: %s", proto_name(o->proto), strerror(errno));
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PB_STREAM_PORT) };
	if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 4) < 0)
		die("bind/listen: %s", strerror(errno));
	return l;
}

static int run_stream_server(const struct opts *o)
{
	int l = stream_listen(o);
	uint8_t *buf = malloc(PB_STREAM_RXBUF);
	if (!buf)
		die("out of memory");
	printf("READY role=server mode=stream proto=%s port=%d\n", proto_name(o->proto), PB_STREAM_PORT);
	fflush(stdout);
	for (;;) {
		struct pollfd pfd = { .fd = l, .events = POLLIN };
		int r = poll(&pfd, 1, o->idle_timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			die("server idle for %d ms", o->idle_timeout_ms);
		int c = accept(l, NULL, NULL);
		if (c < 0)
			die("accept: %s", strerror(errno));
		int quit = stream_serve(c, o, buf);
		close(c);
		if (quit)
			break;
	}
	close(l);
	free(buf);
	printf("DONE ok\n");
	return 0;
}

// Connects, retrying while the server is not up yet (until probe_timeout_ms).
static int stream_connect(const struct opts *o)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PB_STREAM_PORT), .sin_addr = o->server_ip };
	uint64_t deadline = now_ns() + (uint64_t)o->probe_timeout_ms * 1000000u;
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM, o->proto);
		if (fd < 0)
			die("socket %s: %s", proto_name(o->proto), strerror(errno));
		set_timeouts(fd, o->timeout_ms);
		if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
			return fd;
		int e = errno;
		close(fd);
		if (now_ns() > deadline)
			die("connect %s: %s", inet_ntoa(o->server_ip), strerror(e));
		sleep_ms(200);
	}
}

struct stream_result {
	uint64_t ns, total;
	long long busy_ns, win_ns; // the client's busy time over the connection, and the window
	long long cpu0[PB_MAX_CPUS], cpu1[PB_MAX_CPUS]; // each CPU's busy ns at either end of it
	int ncpu0, ncpu1;
	long long retrans;
	double client_us;
	int subflows;
	bool fallback;
};

// One connection of `total` bytes in writes of `size`; 0 = the quit.
static void stream_once(const struct opts *o, uint8_t *buf, uint32_t size, uint64_t total, struct stream_result *r)
{
	uint8_t hdr[16], ans[32];
	int fd = stream_connect(o);
	long long re0 = snmp_get("/proc/net/snmp", "Tcp:", "RetransSegs");
	r->ncpu0 = cpus_busy_ns(r->cpu0, PB_MAX_CPUS);
	long long b0 = busy_ns();
	uint64_t t0 = now_ns();
	R1_MARK_START();
	if (total) // a mark for harnesses that act during a transfer (link cuts)
		printf("STREAM begin bytes=%u total=%llu\n", size, (unsigned long long)total);
	put_be32(hdr, PB_STREAM_MAGIC);
	put_be32(hdr + 4, size);
	put_be64(hdr + 8, total);
	if (write_full(fd, hdr, sizeof hdr))
		die("stream: header: %s", strerror(errno));
	for (uint64_t off = 0; off < total;) {
		uint32_t n = total - off < size ? (uint32_t)(total - off) : size;
		stream_fill(buf, n, off);
		if (write_full(fd, buf, n))
			die("stream bytes=%u: write at %llu: %s", size, (unsigned long long)off, strerror(errno));
		off += n;
	}
	r->subflows = mptcp_subflows(fd, &r->fallback);
	if (read_full(fd, ans, sizeof ans) || get_be32(ans) != PB_STREAM_MAGIC)
		die("stream bytes=%u: no answer from the server: %s", size, strerror(errno));
	R1_MARK_END();
	uint64_t t1 = now_ns();
	long long b1 = busy_ns();
	r->ncpu1 = cpus_busy_ns(r->cpu1, PB_MAX_CPUS);
	r->client_us = (double)(t1 - t0) / 1000.0;
	r->busy_ns = b0 >= 0 && b1 >= 0 ? b1 - b0 : -1;
	r->win_ns = (long long)(t1 - t0);
	long long re1 = snmp_get("/proc/net/snmp", "Tcp:", "RetransSegs");
	r->retrans = re0 >= 0 && re1 >= 0 ? re1 - re0 : -1;
	close(fd);
	uint32_t status = get_be32(ans + 4);
	uint64_t good = get_be64(ans + 8), got = get_be64(ans + 24);
	r->ns = get_be64(ans + 16);
	r->total = total;
	if (status != ST_OK || good != total || got != total)
		die("stream bytes=%u: server verified %llu of %llu bytes (received %llu, status %u)", size,
		    (unsigned long long)good, (unsigned long long)total, (unsigned long long)got, status);
}

static int run_stream_client(const struct opts *o)
{
	uint32_t maxs = 0;
	for (int i = 0; i < o->nsizes; i++)
		maxs = o->sizes[i] > maxs ? o->sizes[i] : maxs;
	uint8_t *buf = malloc(maxs);
	if (!buf)
		die("out of memory");
	for (int i = 0; i < o->nsizes; i++) {
		for (int rep = -o->warmup; rep < o->runs; rep++) {
			struct stream_result r;
			stream_once(o, buf, o->sizes[i], o->stream_bytes, &r);
			if (rep < 0)
				continue;
			printf("RESULT stream proto=%s bytes=%u rep=%d total=%llu verified=%llu us=%.1f "
			       "mbps=%.3f client_us=%.1f subflows=%d fallback=%d retrans=%lld busy_ns=%lld "
			       "win_ns=%lld mark_ns=%lld",
			       proto_name(o->proto), o->sizes[i], rep, (unsigned long long)r.total,
			       (unsigned long long)r.total, (double)r.ns / 1000.0,
			       r.ns ? (double)r.total * 8000.0 / (double)r.ns : 0.0, r.client_us, r.subflows,
			       r.fallback, r.retrans, r.busy_ns, r.win_ns, busy_mark_ns());
			print_cpus_busy(r.cpu0, r.ncpu0, r.cpu1, r.ncpu1);
			printf("\n");
		}
	}
	struct stream_result q;
	stream_once(o, buf, 1, 0, &q);
	free(buf);
	printf("DONE ok\n");
	return 0;
}

// ---------------------------------------------------------------- flow
//
// The link-failure stream (`--mode flow`): one TCP (or MPTCP) connection for
// the whole run, never reconnected.  The client sends a 16-byte header
// (PB_FLOW_MAGIC, write size, duration in ms), then stream bytes (the
// stream section's pattern, by offset) for that long, then shuts its side
// down and waits for the server's 32-byte answer (magic, status, bytes
// received, bytes corrupt).  The server takes the header's arrival as t=0
// and prints, live, one line per 100 ms bin of delivered bytes, so that a
// host reading the serial console can put its own instants (a link cut) on
// the guest's clock; every byte is compared with the pattern at its offset.
// A connection that stalls or breaks ends the run at the duration plus
// PB_FLOW_GRACE_MS (--flow-grace-ms: more where the receiver's clock runs
// faster than the sender's, an idle receiver and a busy sender under
// -icount) with the numbers so far: the server never waits longer.
//   FLOWSTART proto=.. bytes=.. ms=..                      (server, t=0)
//   FLOWBIN i=K bytes=B g_us=G    bin K = [K*100, K*100+100) ms; G: guest time of the line
//   FLOWBINS from=K bytes=B,B,...  (at the end: every bin again, 20 a line)
//   FLOWEND role=server status=eof|stalled|broken received=.. corrupt=.. max_gap_us=..
//           max_gap_at_us=.. last_us=.. end_us=.. bins=.. retrans=.. ofo=.. subflows=.. nic_rx=..
//   (max_gap: the longest time between two reads that returned data, t=0
//   counting as one; last_us: the last such read; a stall that lasts to
//   the end is end_us - last_us)
//   FLOWEND role=client status=ok|stalled|broken written=.. received=.. corrupt=..
//           lost=.. retrans=.. subflows=.. fallback=..   (received..lost: -1 without the answer)

#define PB_FLOW_MAGIC 0x5042464cu // "PBFL"
#define PB_FLOW_BIN_NS 100000000ull
#define PB_FLOW_GRACE_MS 3000
#define PB_FLOW_MAX_BINS 6000 // 10 minutes
enum { FL_EOF = 0, FL_STALLED = 1, FL_BROKEN = 2 };
static const char *flow_status_name[] = { "eof", "stalled", "broken" };

// CPU work over the flow (--flow-cpu-ms N, both ends): this machine's
// busy ns (busy_ns(): CLOCK_MONOTONIC less idle; under -icount shift=0 its
// instructions) and the bytes received or written so far, sampled at the
// first moment past each N ms from t=0 and printed at the end:
//   FLOWCPU role=.. every_ms=N mark_ns=(one busy_ns() read's own cost) n=K
//           t_us=T,.. busy_ns=B,.. bytes=Y,..
#define PB_FLOW_MAX_CPU 1200
struct flow_cpu {
	uint64_t every, t0, next;
	int n;
	uint64_t t[PB_FLOW_MAX_CPU], bytes[PB_FLOW_MAX_CPU];
	long long busy[PB_FLOW_MAX_CPU];
};

static void flow_cpu_sample(struct flow_cpu *c, uint64_t bytes)
{
	if (!c->every || c->n >= PB_FLOW_MAX_CPU)
		return;
	uint64_t now = now_ns();
	if (c->n && now < c->next)
		return;
	if (!c->n)
		c->t0 = now;
	c->busy[c->n] = busy_ns();
	c->t[c->n] = now - c->t0, c->bytes[c->n++] = bytes;
	c->next = c->t0 + ((now - c->t0) / c->every + 1) * c->every;
}

static void flow_cpu_print(const struct flow_cpu *c, const char *role)
{
	if (!c->every)
		return;
	printf("FLOWCPU role=%s every_ms=%llu mark_ns=%lld n=%d t_us=", role,
	       (unsigned long long)(c->every / 1000000u), busy_mark_ns(), c->n);
	for (int i = 0; i < c->n; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)(c->t[i] / 1000));
	printf(" busy_ns=");
	for (int i = 0; i < c->n; i++)
		printf("%s%lld", i ? "," : "", c->busy[i]);
	printf(" bytes=");
	for (int i = 0; i < c->n; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)c->bytes[i]);
	printf("\n");
}

struct flow_rx {
	uint64_t t0, last, got, corrupt, max_gap, max_gap_at;
	int printed; // bins printed so far
	int live;    // every live-th bin's line printed as it ends
	struct flow_cpu cpu;
	uint64_t bins[PB_FLOW_MAX_BINS];
};

// Bytes of p that differ from the stream bytes at their offsets (checks on
// past a mismatch, so a corrupt piece is counted, not just noticed).
static uint64_t flow_count_bad(const uint8_t *p, uint32_t n, uint64_t off)
{
	uint64_t bad = 0;
	while (n) {
		uint32_t k = stream_check(p, n, off);
		if (k == n)
			break;
		bad++;
		p += k + 1, n -= k + 1, off += k + 1;
	}
	return bad;
}

// Prints every bin that has ended by `now` (zero bins too: a stall shows).
static void flow_print_bins(struct flow_rx *f, uint64_t now)
{
	while (f->printed < PB_FLOW_MAX_BINS && f->t0 + (uint64_t)(f->printed + 1) * PB_FLOW_BIN_NS <= now) {
		if (f->printed % f->live == 0)
			printf("FLOWBIN i=%d bytes=%llu g_us=%llu\n", f->printed, (unsigned long long)f->bins[f->printed],
			       (unsigned long long)((now - f->t0) / 1000));
		f->printed++;
	}
}

// The whole series again, 20 bins a line, once the flow is over: a kernel
// message printed on the console in the middle of a live FLOWBIN line
// garbles that line, and these lines come when the links are quiet.
static void flow_print_series(const struct flow_rx *f)
{
	int n = f->printed < PB_FLOW_MAX_BINS && f->bins[f->printed] ? f->printed + 1 : f->printed;
	for (int i = 0; i < n; i += 20) {
		printf("FLOWBINS from=%d bytes=", i);
		for (int k = i; k < n && k < i + 20; k++)
			printf("%s%llu", k > i ? "," : "", (unsigned long long)f->bins[k]);
		printf("\n");
	}
}

// One read's bytes: verified, put in the bin of their arrival, gap noted.
static void flow_take(struct flow_rx *f, const uint8_t *buf, uint32_t n, uint64_t now)
{
	uint64_t bin = (now - f->t0) / PB_FLOW_BIN_NS;
	if (now - f->last > f->max_gap) {
		f->max_gap = now - f->last;
		f->max_gap_at = f->last - f->t0;
	}
	f->last = now;
	if (bin < PB_FLOW_MAX_BINS)
		f->bins[bin] += n;
	f->corrupt += flow_count_bad(buf, n, f->got);
	f->got += n;
}

// Receives until EOF, an error, or the deadline; returns the status.
static int flow_receive(int c, struct flow_rx *f, uint8_t *buf, uint64_t deadline)
{
	for (;;) {
		uint64_t now = now_ns();
		flow_print_bins(f, now);
		flow_cpu_sample(&f->cpu, f->got);
		if (now >= deadline)
			return FL_STALLED;
		uint64_t next = f->t0 + (uint64_t)(f->printed + 1) * PB_FLOW_BIN_NS;
		uint64_t until = next < deadline ? next : deadline;
		struct pollfd pfd = { .fd = c, .events = POLLIN };
		int r = poll(&pfd, 1, (int)((until - now) / 1000000u) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		ssize_t n = read(c, buf, PB_STREAM_RXBUF);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n == 0)
			return FL_EOF;
		if (n < 0) {
			printf("FLOW read: %s\n", strerror(errno));
			return FL_BROKEN;
		}
		flow_take(f, buf, (uint32_t)n, now_ns());
	}
}

static int run_flow_server(const struct opts *o)
{
	int l = stream_listen(o);
	uint8_t *buf = malloc(PB_STREAM_RXBUF);
	struct flow_rx *f = calloc(1, sizeof *f);
	if (!buf || !f)
		die("out of memory");
	printf("READY role=server mode=flow proto=%s port=%d\n", proto_name(o->proto), PB_STREAM_PORT);
	struct pollfd pfd = { .fd = l, .events = POLLIN };
	if (poll(&pfd, 1, o->idle_timeout_ms) <= 0)
		die("flow: no connection within %d ms", o->idle_timeout_ms);
	int c = accept(l, NULL, NULL);
	if (c < 0)
		die("accept: %s", strerror(errno));
	uint8_t hdr[16], ans[32];
	set_timeouts(c, o->timeout_ms);
	if (read_full(c, hdr, sizeof hdr) || get_be32(hdr) != PB_FLOW_MAGIC)
		die("flow: bad or missing header");
	uint32_t size = get_be32(hdr + 4);
	uint64_t ms = get_be64(hdr + 8);
	if (ms < 1 || ms + (uint64_t)o->flow_grace_ms > (uint64_t)PB_FLOW_MAX_BINS * 100)
		die("flow: duration %llu ms out of range", (unsigned long long)ms);
	long long re0 = snmp_get("/proc/net/snmp", "Tcp:", "RetransSegs");
	long long ofo0 = snmp_get("/proc/net/netstat", "TcpExt:", "TCPOFOQueue");
	uint64_t rx0[PB_MAX_NICS], rx1[PB_MAX_NICS];
	int nics = nic_rx_bytes(rx0, PB_MAX_NICS);
	f->t0 = f->last = now_ns();
	f->live = o->flow_live;
	f->cpu.every = (uint64_t)o->flow_cpu_ms * 1000000u;
	busy_mark_ns(); // measured now, printed at the end
	flow_cpu_sample(&f->cpu, 0);
	printf("FLOWSTART proto=%s bytes=%u ms=%llu\n", proto_name(o->proto), size, (unsigned long long)ms);
	int st = flow_receive(c, f, buf, f->t0 + (ms + (uint64_t)o->flow_grace_ms) * 1000000u);
	uint64_t end = now_ns();
	flow_print_bins(f, end);
	if (f->printed < PB_FLOW_MAX_BINS && f->bins[f->printed]) // the last bin, cut short by the end
		printf("FLOWBIN i=%d bytes=%llu g_us=%llu partial=1\n", f->printed,
		       (unsigned long long)f->bins[f->printed], (unsigned long long)((end - f->t0) / 1000));
	bool fb;
	int sub = mptcp_subflows(c, &fb);
	long long re1 = snmp_get("/proc/net/snmp", "Tcp:", "RetransSegs");
	long long ofo1 = snmp_get("/proc/net/netstat", "TcpExt:", "TCPOFOQueue");
	nic_rx_bytes(rx1, PB_MAX_NICS);
	put_be32(ans, PB_FLOW_MAGIC);
	put_be32(ans + 4, (uint32_t)st);
	put_be64(ans + 8, f->got);
	put_be64(ans + 16, f->corrupt);
	put_be64(ans + 24, 0);
	set_timeouts(c, 1000);
	if (st != FL_BROKEN && write_full(c, ans, sizeof ans))
		printf("FLOW answer not sent: %s\n", strerror(errno));
	flow_print_series(f);
	flow_cpu_print(&f->cpu, "server");
	printf("FLOWEND role=server status=%s received=%llu corrupt=%llu max_gap_us=%llu max_gap_at_us=%llu "
	       "last_us=%llu end_us=%llu bins=%d retrans=%lld ofo=%lld subflows=%d fallback=%d nic_rx=",
	       flow_status_name[st], (unsigned long long)f->got, (unsigned long long)f->corrupt,
	       (unsigned long long)(f->max_gap / 1000), (unsigned long long)(f->max_gap_at / 1000),
	       (unsigned long long)((f->last - f->t0) / 1000), (unsigned long long)((end - f->t0) / 1000), f->printed,
	       re0 >= 0 && re1 >= 0 ? re1 - re0 : -1, ofo0 >= 0 && ofo1 >= 0 ? ofo1 - ofo0 : -1, sub, fb);
	for (int i = 0; i < nics; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)(rx1[i] - rx0[i]));
	printf("\n");
	// Give the answer a moment to leave before the close (and the power-off).
	shutdown(c, SHUT_WR);
	sleep_ms(200);
	close(c);
	close(l);
	free(f);
	free(buf);
	printf("DONE ok\n");
	return 0;
}

// Writes stream bytes until `deadline`; returns the status, *sent the
// bytes the socket took.  A blocked write returns after the send timeout,
// so a stalled connection still ends at the deadline.
static int flow_send(int fd, uint8_t *buf, uint32_t size, uint64_t deadline, uint64_t *sent, struct flow_cpu *cpu,
		     const struct opts *o, uint64_t t0)
{
	uint64_t off = 0;
	uint32_t have = 0, pos = 0; // buf holds stream bytes [off - pos, off - pos + have)
	int marked = 0;
	while (now_ns() < deadline) {
		flow_cpu_sample(cpu, off);
		// --flow-marks: a line as the flow passes each (a runner cuts and
		// restores a link on them: this guest's clock, not the host's).
		for (uint64_t now = now_ns(); marked < o->nflow_marks &&
		     now - t0 >= (uint64_t)o->flow_marks[marked] * 1000000u; marked++)
			printf("FLOWMARK i=%d t_us=%llu mono_us=%llu\n", marked, (unsigned long long)((now - t0) / 1000),
			       (unsigned long long)(now / 1000));
		if (pos == have) {
			stream_fill(buf, size, off);
			have = size, pos = 0;
		}
		ssize_t n = write(fd, buf + pos, have - pos);
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n <= 0) {
			printf("FLOW write at %llu: %s\n", (unsigned long long)off, n ? strerror(errno) : "0 bytes");
			*sent = off;
			return FL_BROKEN;
		}
		pos += (uint32_t)n, off += (uint64_t)n;
	}
	*sent = off;
	return FL_EOF;
}

static int run_flow_client(const struct opts *o)
{
	uint32_t size = o->sizes[0];
	uint8_t *buf = malloc(size);
	uint8_t hdr[16], ans[32];
	if (!buf)
		die("out of memory");
	int fd = stream_connect(o);
	set_timeouts(fd, 200);
	long long re0 = snmp_get("/proc/net/snmp", "Tcp:", "RetransSegs");
	put_be32(hdr, PB_FLOW_MAGIC);
	put_be32(hdr + 4, size);
	put_be64(hdr + 8, (uint64_t)o->flow_ms);
	if (write_full(fd, hdr, sizeof hdr))
		die("flow: header: %s", strerror(errno));
	static struct flow_cpu cpu;
	cpu.every = (uint64_t)o->flow_cpu_ms * 1000000u;
	busy_mark_ns();
	printf("FLOWBEGIN proto=%s bytes=%u ms=%d\n", proto_name(o->proto), size, o->flow_ms);
	uint64_t t0 = now_ns(), written = 0;
	int st = flow_send(fd, buf, size, t0 + (uint64_t)o->flow_ms * 1000000u, &written, &cpu, o, t0);
	flow_cpu_sample(&cpu, written);
	bool fb;
	int sub = mptcp_subflows(fd, &fb);
	long long got = -1, bad = -1;
	const char *status = "broken";
	if (st == FL_EOF) {
		// The server answers at EOF, or at its deadline if the stream stalls.
		shutdown(fd, SHUT_WR);
		set_timeouts(fd, o->flow_grace_ms + 2000);
		if (read_full(fd, ans, sizeof ans) == 0 && get_be32(ans) == PB_FLOW_MAGIC) {
			got = (long long)get_be64(ans + 8);
			bad = (long long)get_be64(ans + 16);
			status = get_be32(ans + 4) == FL_EOF ? "ok" : "stalled";
		} else {
			status = "stalled";
		}
	}
	long long re1 = snmp_get("/proc/net/snmp", "Tcp:", "RetransSegs");
	flow_cpu_print(&cpu, "client");
	printf("FLOWEND role=client status=%s written=%llu received=%lld corrupt=%lld lost=%lld retrans=%lld "
	       "subflows=%d fallback=%d\n",
	       status, (unsigned long long)written, got, bad, got >= 0 ? (long long)written - got : -1,
	       re0 >= 0 && re1 >= 0 ? re1 - re0 : -1, sub, fb);
	close(fd);
	free(buf);
	printf("DONE ok\n");
	return 0;
}

// ---------------------------------------------------------------- netcfg
//
// What busybox cannot configure, over netlink: a tbf root qdisc on a NIC
// (busybox tc knows no tbf), and MPTCP limits and endpoints (busybox ip has
// no `mptcp`; the path manager is the "mptcp_pm" generic netlink family).

struct nlbuf {
	union {
		struct nlmsghdr h;
		uint8_t b[1024];
	};
};

static struct rtattr *nl_put(struct nlbuf *m, uint16_t type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)(m->b + NLMSG_ALIGN(m->h.nlmsg_len));
	if (NLMSG_ALIGN(m->h.nlmsg_len) + RTA_SPACE(len) > sizeof m->b)
		die("netlink message too long");
	a->rta_type = type;
	a->rta_len = (uint16_t)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), data, len);
	m->h.nlmsg_len = (uint32_t)(NLMSG_ALIGN(m->h.nlmsg_len) + RTA_SPACE(len));
	return a;
}

static void nl_end(struct nlbuf *m, struct rtattr *nest)
{
	nest->rta_len = (uint16_t)(m->b + m->h.nlmsg_len - (uint8_t *)nest);
}

// Sends m and waits for its acknowledgement; returns 0 or -errno.  If `reply`
// is given, the first non-error answer is copied there.
static int nl_talk(int proto, struct nlbuf *m, struct nlbuf *reply)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, proto);
	if (fd < 0)
		die("netlink socket: %s", strerror(errno));
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	m->h.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	m->h.nlmsg_seq = 1;
	set_timeouts(fd, 2000);
	if (sendto(fd, m->b, m->h.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("netlink send: %s", strerror(errno));
	static uint8_t rb[16384];
	for (;;) {
		ssize_t n = recv(fd, rb, sizeof rb, 0);
		if (n < 0)
			die("netlink recv: %s", strerror(errno));
		for (struct nlmsghdr *h = (struct nlmsghdr *)rb; NLMSG_OK(h, (uint32_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);
				close(fd);
				return e->error;
			}
			if (reply && h->nlmsg_len <= sizeof reply->b) {
				memcpy(reply->b, h, h->nlmsg_len);
				reply = NULL;
			}
		}
	}
}

// tbf on IF's root at MBPS Mbit/s: burst 4 ms of the rate plus two jumbo
// frames, the bucket the research kernel's pacer gives a NIC (nic_mbps=), so
// both systems' links are modelled alike; queue limit 4 MiB (a 128-frame
// burst of 8 KiB frames must fit).
static int netcfg_tbf(const char *ifname, double mbps)
{
	struct nlbuf m;
	unsigned ifindex = if_nametoindex(ifname);
	if (!ifindex)
		die("tbf: no interface %s", ifname);
	if (!(mbps > 0))
		die("tbf: bad rate %g", mbps);
	uint64_t bps = (uint64_t)(mbps * 1e6 / 8.0); // bytes per second
	uint32_t burst = (uint32_t)(bps / 250 + 2 * 9038);
	memset(&m, 0, sizeof m);
	m.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg));
	m.h.nlmsg_type = RTM_NEWQDISC;
	m.h.nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE;
	struct tcmsg *t = NLMSG_DATA(&m.h);
	t->tcm_family = AF_UNSPEC;
	t->tcm_ifindex = (int)ifindex;
	t->tcm_handle = 0x10000; // 1:
	t->tcm_parent = TC_H_ROOT;
	nl_put(&m, TCA_KIND, "tbf", 4);
	struct rtattr *opt = nl_put(&m, TCA_OPTIONS, NULL, 0);
	struct tc_tbf_qopt q;
	memset(&q, 0, sizeof q);
	q.rate.rate = bps > 0xffffffffu ? 0xffffffffu : (uint32_t)bps;
	q.rate.linklayer = TC_LINKLAYER_ETHERNET; // no rate table needed
	q.limit = 4u << 20;
	nl_put(&m, TCA_TBF_PARMS, &q, sizeof q);
	if (bps > 0xffffffffu)
		nl_put(&m, TCA_TBF_RATE64, &bps, sizeof bps);
	nl_put(&m, TCA_TBF_BURST, &burst, sizeof burst);
	nl_end(&m, opt);
	int e = nl_talk(NETLINK_ROUTE, &m, NULL);
	if (e)
		die("tbf on %s: %s", ifname, strerror(-e));
	printf("TBF %s rate=%.1fMbit burst=%u limit=%u\n", ifname, mbps, burst, q.limit);
	return 0;
}

static uint16_t mptcp_family(void)
{
	struct nlbuf m, r;
	memset(&m, 0, sizeof m);
	m.h.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m.h.nlmsg_type = GENL_ID_CTRL;
	struct genlmsghdr *g = NLMSG_DATA(&m.h);
	g->cmd = CTRL_CMD_GETFAMILY;
	g->version = 1;
	nl_put(&m, CTRL_ATTR_FAMILY_NAME, MPTCP_PM_NAME, sizeof MPTCP_PM_NAME);
	memset(&r, 0, sizeof r);
	int e = nl_talk(NETLINK_GENERIC, &m, &r);
	if (e || r.h.nlmsg_type != GENL_ID_CTRL)
		die("generic netlink family %s: %s", MPTCP_PM_NAME, e ? strerror(-e) : "no answer");
	int len = (int)r.h.nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
	for (struct rtattr *a = (struct rtattr *)((uint8_t *)NLMSG_DATA(&r.h) + GENL_HDRLEN); RTA_OK(a, len);
	     a = RTA_NEXT(a, len))
		if (a->rta_type == CTRL_ATTR_FAMILY_ID)
			return *(uint16_t *)RTA_DATA(a);
	die("no id for generic netlink family %s", MPTCP_PM_NAME);
	return 0;
}

static void mptcp_msg(struct nlbuf *m, uint8_t cmd)
{
	memset(m, 0, sizeof *m);
	m->h.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m->h.nlmsg_type = mptcp_family();
	struct genlmsghdr *g = NLMSG_DATA(&m->h);
	g->cmd = cmd;
	g->version = MPTCP_PM_VER;
}

// The in-kernel path manager's limits: extra subflows, ADD_ADDRs accepted.
static int netcfg_mptcp_limits(uint32_t subflows, uint32_t addrs)
{
	struct nlbuf m;
	mptcp_msg(&m, MPTCP_PM_CMD_SET_LIMITS);
	nl_put(&m, MPTCP_PM_ATTR_SUBFLOWS, &subflows, 4);
	nl_put(&m, MPTCP_PM_ATTR_RCV_ADD_ADDRS, &addrs, 4);
	int e = nl_talk(NETLINK_GENERIC, &m, NULL);
	if (e)
		die("mptcp limits: %s", strerror(-e));
	printf("MPTCP limits subflows=%u add_addr_accepted=%u\n", subflows, addrs);
	return 0;
}

// An endpoint: ADDR on IF with flags "signal" (announce it to the peer) or
// "subflow" (open a subflow from it), id ID.
static int netcfg_mptcp_endpoint(const char *addr, const char *ifname, const char *flags, int id)
{
	struct nlbuf m;
	struct in_addr ip;
	uint16_t fam = AF_INET;
	uint8_t id8 = (uint8_t)id;
	int32_t ifindex = (int32_t)if_nametoindex(ifname);
	uint32_t fl = strcmp(flags, "signal") == 0 ? MPTCP_PM_ADDR_FLAG_SIGNAL
	              : strcmp(flags, "subflow") == 0 ? MPTCP_PM_ADDR_FLAG_SUBFLOW : 0;
	if (!inet_aton(addr, &ip) || !ifindex || !fl || id < 1 || id > 255)
		die("mptcp endpoint %s dev %s %s id %d: bad argument", addr, ifname, flags, id);
	mptcp_msg(&m, MPTCP_PM_CMD_ADD_ADDR);
	struct rtattr *n = nl_put(&m, MPTCP_PM_ATTR_ADDR | NLA_F_NESTED, NULL, 0);
	nl_put(&m, MPTCP_PM_ADDR_ATTR_FAMILY, &fam, 2);
	nl_put(&m, MPTCP_PM_ADDR_ATTR_ID, &id8, 1);
	nl_put(&m, MPTCP_PM_ADDR_ATTR_ADDR4, &ip, 4);
	nl_put(&m, MPTCP_PM_ADDR_ATTR_FLAGS, &fl, 4);
	nl_put(&m, MPTCP_PM_ADDR_ATTR_IF_IDX, &ifindex, 4);
	nl_end(&m, n);
	int e = nl_talk(NETLINK_GENERIC, &m, NULL);
	if (e)
		die("mptcp endpoint %s: %s", addr, strerror(-e));
	printf("MPTCP endpoint %s dev %s %s id %d\n", addr, ifname, flags, id);
	return 0;
}

// pktbench netcfg tbf IF MBPS | mptcp-limits SUBFLOWS ADDRS |
//                  mptcp-endpoint ADDR IF signal|subflow ID
static int netcfg(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[2], "tbf") == 0)
		return netcfg_tbf(argv[3], atof(argv[4]));
	if (argc == 5 && strcmp(argv[2], "mptcp-limits") == 0)
		return netcfg_mptcp_limits((uint32_t)atoi(argv[3]), (uint32_t)atoi(argv[4]));
	if (argc == 7 && strcmp(argv[2], "mptcp-endpoint") == 0)
		return netcfg_mptcp_endpoint(argv[3], argv[4], argv[5], atoi(argv[6]));
	fprintf(stderr, "usage: pktbench netcfg tbf IF MBPS | mptcp-limits SUBFLOWS ADDRS |\n"
	                "       mptcp-endpoint ADDR IF signal|subflow ID\n");
	return 2;
}

// ---------------------------------------------------------------- options

static void usage(void)
{
	fprintf(stderr,
	        "usage: pktbench --role server|client [--mode rtt|burst|window|stream|flow] [--variant packet|mmap|xdp|tuned|tuned-mmap]\n"
	        "                [--if eth0] [--irqs NAME[,NAME...]] [--peer MAC] [--sizes 64,1500,8192]\n"
	        "                [--runs N] [--warmup N]\n"
	        "                [--timeout-ms N] [--probe-timeout-ms N] [--idle-timeout-ms N] [--gap-ms N] [--rx-count]\n"
	        "                [--cpu-ms N] [--proto tcp|mptcp] [--server-ip A.B.C.D] [--bytes N]\n"
	        "                [--reorder] [--flow-ms N] [--flow-cpu-ms N] [--flow-live N] [--flow-marks MS,..]\n"
	        "                [--flow-grace-ms N]\n"
	        "       pktbench netcfg tbf IF MBPS | mptcp-limits SUBFLOWS ADDRS |\n"
	        "                mptcp-endpoint ADDR IF signal|subflow ID\n"
	        "       pktbench --selfcheck\n");
	exit(2);
}

static int pick(const char *v, const char *a, const char *b)
{
	if (strcmp(v, a) == 0)
		return 0;
	if (strcmp(v, b) == 0)
		return 1;
	usage();
	return -1;
}

static enum variant pick_variant(const char *v)
{
	for (int i = 0; i < VAR_COUNT; i++)
		if (strcmp(v, variant_name[i]) == 0)
			return (enum variant)i;
	usage();
	return VAR_PACKET;
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "role", 1, 0, 'r' },  { "mode", 1, 0, 'm' },        { "variant", 1, 0, 'v' },
		{ "if", 1, 0, 'i' },    { "peer", 1, 0, 'p' },        { "sizes", 1, 0, 's' },
		{ "runs", 1, 0, 'n' },  { "warmup", 1, 0, 'w' },      { "timeout-ms", 1, 0, 't' },
		{ "probe-timeout-ms", 1, 0, 'P' }, { "idle-timeout-ms", 1, 0, 'I' },
		{ "gap-ms", 1, 0, 'g' }, { "irqs", 1, 0, 'q' }, { "cpu-ms", 1, 0, 'c' },
		{ "proto", 1, 0, 'T' }, { "server-ip", 1, 0, 'S' }, { "bytes", 1, 0, 'B' },
		{ "reorder", 0, 0, 'R' }, { "flow-ms", 1, 0, 'F' }, { "rx-count", 0, 0, 'X' },
		{ "flow-cpu-ms", 1, 0, 'C' }, { "flow-live", 1, 0, 'L' }, { "flow-marks", 1, 0, 'M' },
		{ "flow-grace-ms", 1, 0, 'G' }, { 0, 0, 0, 0 },
	};
	*o = (struct opts){ .ifname = "eth0", .runs = 20, .warmup = 3, .timeout_ms = 5000,
		            .probe_timeout_ms = 120000, .idle_timeout_ms = 300000, .gap_ms = 2,
	            .proto = IPPROTO_TCP, .stream_bytes = 16u << 20, .flow_ms = 20000, .flow_live = 1,
		    .flow_grace_ms = PB_FLOW_GRACE_MS };
	parse_sizes("64", o);
	bool have_role = false, have_ip = false;
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'r': o->role = pick(optarg, "server", "client"); have_role = true; break;
		case 'm':
			if (strcmp(optarg, "stream") == 0)
				o->mode = MODE_STREAM;
			else if (strcmp(optarg, "flow") == 0)
				o->mode = MODE_FLOW;
			else if (strcmp(optarg, "window") == 0)
				o->mode = MODE_WINDOW;
			else
				o->mode = pick(optarg, "rtt", "burst");
			break;
		case 'T': o->proto = pick(optarg, "tcp", "mptcp") ? IPPROTO_MPTCP : IPPROTO_TCP; break;
		case 'S': if (!inet_aton(optarg, &o->server_ip)) usage(); have_ip = true; break;
		case 'R': o->reorder = true; break;
		case 'F': o->flow_ms = atoi(optarg); break;
		case 'C': o->flow_cpu_ms = atoi(optarg); break;
		case 'L': o->flow_live = atoi(optarg); break;
		case 'G': o->flow_grace_ms = atoi(optarg); break;
		case 'M':
			for (char *p = optarg; *p && o->nflow_marks < 8; p += *p == ',')
				o->flow_marks[o->nflow_marks++] = (int)strtol(p, &p, 10);
			break;
		case 'B': o->stream_bytes = strtoull(optarg, NULL, 10); if (!o->stream_bytes) usage(); break;
		case 'v': o->variant = pick_variant(optarg); break;
		case 'i': o->ifname = optarg; break;
		case 'q': o->irqname = optarg; break;
		default: if (!parse_peer_opt(c, optarg, o)) usage();
		}
	}
	if (!o->irqname)
		o->irqname = o->ifname;
	if (!have_role || o->runs < 1 || o->warmup < 0 || o->timeout_ms < 1 ||
	    (o->role == ROLE_CLIENT && o->mode < MODE_STREAM && !o->have_peer) ||
	    (o->role == ROLE_CLIENT && o->mode >= MODE_STREAM && !have_ip) ||
	    o->flow_ms < 1 || o->flow_ms > 500000 || o->flow_cpu_ms < 0 || o->flow_live < 1 ||
	    o->flow_grace_ms < 0 || o->flow_grace_ms > 500000)
		usage();
}

// Host-side check that the fast pattern code and the stream's agree with wire.h.
static int selfcheck(void)
{
	if (pattern_selfcheck())
		return 1;
	static uint8_t sb[3 * PB_STREAM_BLOCK];
	for (uint64_t off = 0; off < 5 * PB_STREAM_BLOCK; off += 1237) {
		stream_fill(sb, sizeof sb, off);
		for (uint32_t i = 0; i < sizeof sb; i++)
			if (sb[i] != stream_byte(off + i))
				return printf("DONE fail stream pattern off=%llu byte=%u\n", (unsigned long long)off, i), 1;
		if (stream_check(sb, sizeof sb, off) != sizeof sb)
			return printf("DONE fail stream check off=%llu\n", (unsigned long long)off), 1;
		sb[5000] ^= 0x40;
		if (stream_check(sb, sizeof sb, off) != 5000)
			return printf("DONE fail stream mismatch off=%llu\n", (unsigned long long)off), 1;
	}
	printf("DONE ok fastpattern=%d\n", pat_fast);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	setvbuf(stdout, NULL, _IOLBF, 0);
	die_hook = diag; // every failure line comes after the diagnostics
	pattern_init();
	if (argc == 2 && strcmp(argv[1], "--selfcheck") == 0)
		return selfcheck();
	if (argc >= 2 && strcmp(argv[1], "netcfg") == 0)
		return netcfg(argc, argv);
	parse_opts(argc, argv, &o);
	if (o.mode == MODE_STREAM)
		return o.role == ROLE_SERVER ? run_stream_server(&o) : run_stream_client(&o);
	if (o.mode == MODE_FLOW)
		return o.role == ROLE_SERVER ? run_flow_server(&o) : run_flow_client(&o);
	return o.role == ROLE_SERVER ? run_server(&o) : run_client(&o);
}
