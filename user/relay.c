// The relay node's program, and a prober of relays (docs/design.md
// "Relaying"). The relay itself is in the kernel's receive path; this
// program only watches its counters (IO_OP_RELAYSTATS) and checks them.
//
// Relay mode (default): prints READY, waits until the kernel has forwarded
// at least expect= frames and then nothing more for idle_ms= (default 1500),
// or fails after timeout_ms= (default 60000); then waits for the NICs to
// give every forwarded buffer back and prints
//   RELAY node=X.Y.Z relayed=N bytes=B copied=0 batches=.. doorbells=..
//         per_doorbell=.. inflight_max=.. drop_hops=.. drop_noroute=..
//         drop_baddst=.. drop_busy=.. drop_down=.. drop_notme=.. busy_per_fwd=.. ...
//         drop_nomem=.. window_ms=.. busy_x1000=..
// busy_per_fwd: the machine's busy TSC ticks (elapsed minus halted; guest
// instructions under -icount) from the first forwarded frame seen to the
// last, per frame forwarded meanwhile; net_per_fwd: the same less what the
// machine does when it forwards nothing (timer ticks, this program's own
// polling), at the busy rate measured before the first frame came;
// window_ms: that window, busy_x1000: the busy share of it.
// drop_notme: frames NIC 0 dropped as addressed to another MAC (io_stats;
// a routed broadcast frame is one: no relay forwards it). Checks: 0 bytes
// copied, nothing in flight at the end, exactly hopdrops=, noroute=,
// baddst= and notme= drops (default 0),
// no busy, down or no-frame drops unless busy_ok=1, and with min_busy_per_fwd=N
// (under -icount: guest instructions) busy_per_fwd at least N: the relay's
// work, done in the interrupt that ends a halt, is busy time, not idle.
//
// Probe mode (probe=MAC: the first relay's MAC on NIC nic=): sends, to the
// node dst=, one packet with hop limit 1 on channel 77 (a relay must drop
// it: it needs more than one hop), then raw routed frames the relay must
// drop as malformed or unroutable: a destination with no route (7.7), one
// outside the topology's dimensions (1.1.1 in two dimensions: baddst), and
// a zero hop limit (baddst); and a routed frame for dst, well formed, sent
// to broadcast (every relay on the segment would forward it: each must
// drop it, drop_notme). Then exits; the next program runs.
//
// Pressure mode (pressure=1), one machine whose NICs 0 and 1 are wired to
// each other: node 1.0 with nicdim=0,1 and nb= naming 0.0 on X by NIC 1's
// MAC, so a frame for dst= (0.1) with hop limit 2 leaves NIC 0, comes in
// on NIC 1, is forwarded out of NIC 0 once and dropped as hop-limited the
// second time. First a channel on NIC 1 that is never read holds 128
// jumbo frames, which leaves NIC 1's ring at three quarters posted; then
// this process and a child (role=hog), each within its default frame
// limit, take every free frame. count= routed frames must then all be
// dropped as drop_nomem (none relayed, no panic); the child lets go of
// its frames once it has seen them counted, this process too, and count=
// more frames are each relayed once (drop_nomem unchanged): the relay
// served on. The kernel's exit check says every frame came back.
// unlocked=1 (with rxlock=fine): no served frame was put off for a
// settle (a relay forwards without the kernel lock; how many frames a
// lock-free poll took, rather than a tick's drain under the lock, is
// printed, not checked: the host's timing decides it).
#include <utest.h>
#include <netutil.h>

static long relaystats(struct chan *c, struct io_relaystats *s)
{
	return ctrl_io(c->io, IO_OP_RELAYSTATS, (unsigned long)s, 0, 0);
}

static void node_str(uint64_t n, char *buf, size_t len)
{
	fmt_snprintf(buf, len, "%lu.%lu.%lu", n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff);
}

// A raw routed frame from this node's NIC to mac, for node dst with hops.
static void raw_frame(struct chan *r, uint32_t i, const uint8_t *mac, uint64_t me, uint64_t dst, uint8_t hops)
{
	struct io_stats s;
	chan_stats(r, &s);
	uint8_t *f = chan_out(r, i);
	const uint32_t len = 16;
	wire_put_eth(f, mac, s.mac);
	wire_put_hdr(f, &(struct wire_fields){ .channel = 77, .flags = WIRE_F_ROUTE | WIRE_F_LAST, .batch = 1,
					       .len = len });
	payload_fill(f + WIRE_FRAME_HLEN, 0, len);
	wire_put_route(f + WIRE_FRAME_HLEN + len, &(struct wire_route){ .dst = (uint32_t)dst, .src = (uint32_t)me,
								      .hops = hops });
	r->osize[i] = WIRE_FRAME_HLEN + len + WIRE_RTLEN;
}

static int probe(int argc, char **argv)
{
	uint8_t mac[6];
	int nic = (int)arg_long(argc, argv, "nic", 0);
	CHECK_EQ("probe: relay MAC", parse_mac(arg_get(argc, argv, "probe", ""), mac), 0);
	struct chan c, r;
	CHECK_EQ("probe: channel 77 open", chan_open(&c, 0, IO_DEV_ETHER(nic, 77), 1, 1), 0);
	CHECK_EQ("probe: node with hop limit 1",
		 chan_node(&c, 0, arg_get(argc, argv, "dst", NULL), 1), 0);
	payload_fill(chan_out(&c, 0), 0, 64);
	c.osize[0] = 64, c.peers[0] = 0;
	CHECK_EQ("probe: hop-limited packet sent", chan_send(&c), 1);
	struct io_relaystats rs;
	CHECK_EQ("probe: relay stats", relaystats(&c, &rs), 0);
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	CHECK_EQ("probe: raw channel open", chan_open(&r, 1, IO_DEV_RAW(nic), 0, 4), 0);
	raw_frame(&r, 0, mac, rs.node, IO_NODE(7, 7, 0), 4);
	raw_frame(&r, 1, mac, rs.node, IO_NODE(1, 1, 1), 4);
	raw_frame(&r, 2, mac, rs.node, parse_node(arg_get(argc, argv, "dst", "0")), 0);
	raw_frame(&r, 3, bcast, rs.node, parse_node(arg_get(argc, argv, "dst", "0")), 4);
	CHECK_EQ("probe: malformed and broadcast frames sent", chan_send(&r), 4);
	chan_close(&r);
	chan_close(&c);
	return utest_done("relay probe");
}

// ------------------------------------------------------------ pressure

#define HOG_MAX 64 // a process's regions (its default limit)

struct hog {
	long vr[HOG_MAX];
	int n;
	uint64_t frames;
};

// Takes free frames in regions, halving the size on each refusal, until
// not even one more is given (the process's limit, or none left).
static void hog_take(struct hog *h)
{
	struct sysinfo si;
	sysinfo(&si);
	h->n = 0, h->frames = 0;
	for (uint64_t size = si.frames_free; size > 0 && h->n < HOG_MAX;) {
		long vr = create_vr(size * 4096, VR_MEM_ALL, -1);
		if (vr > 0)
			h->vr[h->n++] = vr, h->frames += size;
		else
			size /= 2;
	}
}

static void hog_free(struct hog *h)
{
	while (h->n > 0)
		delete_vr(h->vr[--h->n]);
}

static uint64_t frames_free(void)
{
	struct sysinfo si;
	sysinfo(&si);
	return si.frames_free;
}

// Polls the relay's counters (every 10 ms, 20 s at most) until done(s).
static void wait_counters(struct chan *c, struct io_relaystats *s, bool (*done)(const struct io_relaystats *, uint64_t),
			  uint64_t arg)
{
	for (long t = 0; relaystats(c, s) == 0 && !done(s, arg) && t < 20000; t += 10)
		sleep(10000);
}

static bool nomem_at(const struct io_relaystats *s, uint64_t n) { return s->drop_nomem >= n; }
static bool hops_at(const struct io_relaystats *s, uint64_t n) { return s->drop_hops >= n; }

// The child: the frames its limit allows (the parent took the rest
// before), held until the relay has counted want frames dropped for none.
static int hog_child(int argc, char **argv)
{
	struct chan w;
	struct hog h;
	struct io_relaystats s;
	uint64_t want = (uint64_t)arg_long(argc, argv, "want", 1);
	CHECK_EQ("hog: watch channel open", chan_open(&w, 0, IO_DEV_ETHER(0, 81), 0, 1), 0);
	hog_take(&h);
	printf("HOG child took %lu frames in %d regions, %lu free\n", h.frames, h.n, frames_free());
	wait_counters(&w, &s, nomem_at, want);
	CHECK("hog: the relay counted the drops while every frame was held", s.drop_nomem >= want);
	hog_free(&h);
	chan_close(&w);
	return utest_done("relay hog");
}

// The sink (NIC 1, never read) gets 128 jumbo frames from the feeder (NIC
// 0) and holds them: NIC 1's ring is left at three quarters posted.
static void fill_sink(struct chan *k, struct chan *t)
{
	struct io_stats ks;
	chan_stats(k, &ks);
	CHECK_EQ("pressure: feeder's peer is NIC 1", ctrl_io(t->io, IO_OP_PEER, (unsigned long)ks.mac, 0, 0), 0);
	for (int b = 0; b < 2; b++) {
		for (int i = 0; i < 64; i++)
			t->osize[i] = 8192, t->peers[i] = 0;
		CHECK_EQ("pressure: 64 jumbo frames to the sink", chan_send(t), 64);
	}
	for (int i = 0; i < 2000 && chan_stats(k, &ks) == 0 && ks.frames_held < 128; i++)
		sleep(10000);
	CHECK_EQ("pressure: the sink holds 128 frames", ks.frames_held, 128);
}

// Every free frame taken: this process's up to its limit, then a child
// (role=hog) the rest, holding them until want frames are counted as
// dropped for none. Returns the child's pid.
static long take_all(struct hog *h, uint64_t want)
{
	char args[64];
	hog_take(h);
	fmt_snprintf(args, sizeof(args), "role=hog want=%lu", want);
	long pid = spawn("relay", args, PRIO_DEFAULT);
	CHECK("pressure: hog child spawned", pid > 0);
	for (int i = 0; i < 2000 && pid > 0 && frames_free() > 0; i++)
		sleep(10000);
	printf("HOG parent took %lu frames in %d regions, %lu free\n", h->frames, h->n, frames_free());
	CHECK_EQ("pressure: every frame taken, each process within its limit", frames_free(), 0);
	return pid;
}

// n routed packets of 1000 bytes on r (its peer 0: the node dst=).
static long send_routed(struct chan *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		payload_fill(chan_out(r, i), i, 1000);
		r->osize[i] = 1000, r->peers[i] = 0;
	}
	return chan_send(r);
}

// No frame free and NIC 1's ring at three quarters: each of n routed
// frames is dropped for want of a frame to stand in for its buffer.
static void starved(struct chan *r, uint32_t n)
{
	struct io_relaystats s1, s2;
	relaystats(r, &s1);
	CHECK_EQ("pressure: routed frames sent with no frame free", send_routed(r, n), n);
	wait_counters(r, &s2, nomem_at, s1.drop_nomem + n);
	CHECK_EQ("pressure: each dropped for want of a frame", s2.drop_nomem - s1.drop_nomem, n);
	CHECK_EQ("pressure: none relayed meanwhile", s2.relayed, s1.relayed);
}

static bool arg_unlocked; // unlocked=1 (pressure, rxlock=fine): forwarded without the kernel lock

// Frames free again: each of n routed frames is relayed once, then
// dropped at its hop limit when it comes back. unlocked=1: none of them
// was put off for a settle.
static void served(struct chan *r, uint32_t n)
{
	struct io_relaystats s1, s2;
	struct sysinfo i1, i2;
	sysinfo(&i1);
	relaystats(r, &s1);
	CHECK_EQ("pressure: routed frames sent again", send_routed(r, n), n);
	wait_counters(r, &s2, hops_at, s1.drop_hops + n);
	CHECK_EQ("pressure: each relayed once (the node serves on)", s2.relayed - s1.relayed, n);
	CHECK_EQ("pressure: ... and dropped at its hop limit when back", s2.drop_hops - s1.drop_hops, n);
	CHECK_EQ("pressure: no drop for want of a frame then", s2.drop_nomem, s1.drop_nomem);
	printf("RELAY pressure relayed=%lu drop_nomem=%lu drop_hops=%lu drop_busy=%lu inflight=%lu\n", s2.relayed,
	       s2.drop_nomem, s2.drop_hops, s2.drop_busy, s2.inflight);
	sysinfo(&i2);
	if (arg_unlocked) {
		printf("RELAY pressure unlocked=%lu settles=%lu\n", i2.rx_unlocked - i1.rx_unlocked,
		       i2.rx_settles - i1.rx_settles);
		// Which CPU takes a frame, and whether under the kernel lock (a
		// tick's drain) or not, is the host's timing: only that nothing
		// was put off for a settle is checked (the old relay put every
		// routed frame a lock-free poll took off for one).
		CHECK("pressure: the kernel says rxlock=fine", i2.rx_fine == 1);
		CHECK_EQ("pressure: nothing put off for a settle", i2.rx_settles - i1.rx_settles, 0);
	}
}

static int pressure(int argc, char **argv)
{
	struct chan k, t, r;
	struct io_relaystats s0;
	struct hog h;
	int status = -1;
	uint32_t n = (uint32_t)arg_long(argc, argv, "count", 32);
	arg_unlocked = arg_long(argc, argv, "unlocked", 0) != 0;
	n = n < 1 ? 1 : n > 64 ? 64 : n;
	CHECK_EQ("pressure: sink channel open (NIC 1, never read)", chan_open(&k, 0, IO_DEV_ETHER(1, 79), 1, 0), 0);
	CHECK_EQ("pressure: its feeder open (NIC 0)", chan_open(&t, 1, IO_DEV_ETHER(0, 79), 0, 64), 0);
	CHECK_EQ("pressure: routed channel open (NIC 0)", chan_open(&r, 2, IO_DEV_ETHER(0, 77), 0, n), 0);
	CHECK_EQ("pressure: routed peer", chan_node(&r, 0, arg_get(argc, argv, "dst", "0.1"), 2), 0);
	fill_sink(&k, &t);
	relaystats(&r, &s0);
	long pid = take_all(&h, s0.drop_nomem + n);
	starved(&r, n);
	CHECK_EQ("pressure: hog child done", wait(pid, &status), pid);
	CHECK_EQ("pressure: hog child's checks passed", status, 0);
	hog_free(&h);
	served(&r, n);
	chan_close(&r);
	chan_close(&t);
	chan_close(&k);
	return utest_done("relay pressure");
}

int main(int argc, char **argv)
{
	if (arg_get(argc, argv, "probe", NULL))
		return probe(argc, argv);
	if (!strcmp(arg_get(argc, argv, "role", ""), "hog"))
		return hog_child(argc, argv);
	if (arg_long(argc, argv, "pressure", 0))
		return pressure(argc, argv);
	struct chan c;
	struct io_relaystats s0, s, last;
	struct io_stats is;
	struct sysinfo si;
	uint64_t hz = 0, t0 = 0, t1 = 0, idle0 = 0, idle1 = 0, n0 = 0, n1 = 0, quiet_since = 0;
	uint64_t q_t0 = 0, q_t1 = 0, q_idle0 = 0, q_idle1 = 0; // before any frame: the quiet baseline
	uint64_t expect = (uint64_t)arg_long(argc, argv, "expect", 1);
	uint64_t idle_ms = (uint64_t)arg_long(argc, argv, "idle_ms", 1500);
	uint64_t timeout_ms = (uint64_t)arg_long(argc, argv, "timeout_ms", 60000);
	CHECK_EQ("relay: watch channel open", chan_open(&c, 0, IO_DEV_ETHER(0, 78), 1, 1), 0);
	CHECK_EQ("relay: stats", relaystats(&c, &s0), 0);
	CHECK("relay: this node has a topology", s0.node != ~0ul);
	sysinfo(&si);
	hz = si.tsc_hz;
	printf("READY relay\n");
	last = s0;
	uint64_t start = rdtsc();
	for (;;) {
		sleep(20000);
		relaystats(&c, &s);
		uint64_t now = rdtsc();
		if (!t0 && s.relayed == s0.relayed) {
			sysinfo(&si);
			if (!q_t0)
				q_t0 = now, q_idle0 = si.idle_tsc;
			q_t1 = now, q_idle1 = si.idle_tsc;
		}
		if (s.relayed != last.relayed) {
			sysinfo(&si);
			if (!t0)
				t0 = now, idle0 = si.idle_tsc, n0 = s.relayed;
			t1 = now, idle1 = si.idle_tsc, n1 = s.relayed;
			quiet_since = now;
		}
		last = s;
		if (s.relayed >= expect && quiet_since && now - quiet_since > hz / 1000 * idle_ms)
			break;
		if (now - start > hz / 1000 * timeout_ms) {
			printf("relay: timed out with %lu forwarded (want %lu)\n", s.relayed, expect);
			break;
		}
	}
	for (int k = 0; k < 1000 && s.inflight; k++) { // virtio-net finishes sends later
		sleep(1000);
		relaystats(&c, &s);
	}
	chan_stats(&c, &is);
	char node[16];
	node_str(s.node, node, sizeof(node));
	uint64_t busy = t1 - t0 - (idle1 - idle0), timed = n1 - n0;
	uint64_t q_busy = q_t1 - q_t0 - (q_idle1 - q_idle0);
	uint64_t base = q_t1 > q_t0 ? (uint64_t)((__uint128_t)q_busy * (t1 - t0) / (q_t1 - q_t0)) : 0;
	uint64_t net = busy > base ? busy - base : 0;
	printf("RELAY node=%s relayed=%lu bytes=%lu copied=%lu batches=%lu doorbells=%lu per_doorbell_x10=%lu "
	       "inflight_max=%lu delivered=%lu drop_hops=%lu drop_noroute=%lu drop_baddst=%lu drop_busy=%lu "
	       "drop_down=%lu drop_notme=%lu busy_per_fwd=%lu net_per_fwd=%lu quiet_ms=%lu quiet_busy_x1e6=%lu link_tx=%lu,%lu,%lu,%lu "
	       "drop_nomem=%lu window_ms=%lu busy_x1000=%lu\n",
	       node, s.relayed, s.relayed_bytes, s.bytes_copied, s.batches, s.doorbells,
	       s.doorbells ? s.relayed * 10 / s.doorbells : 0, s.inflight_max, s.delivered, s.drop_hops,
	       s.drop_noroute, s.drop_baddst, s.drop_busy, s.drop_down, is.drop_notme, timed ? busy / timed : 0, timed ? net / timed : 0,
	       (q_t1 - q_t0) / (hz / 1000), q_t1 > q_t0 ? (uint64_t)((__uint128_t)q_busy * 1000000 / (q_t1 - q_t0)) : 0,
	       s.link_tx[0],
	       s.link_tx[1], s.link_tx[2], s.link_tx[3], s.drop_nomem, (t1 - t0) / (hz / 1000),
	       t1 > t0 ? busy * 1000 / (t1 - t0) : 0);
	CHECK("relay: forwarded what was expected", s.relayed >= expect);
	CHECK_EQ("relay: zero bytes copied", s.bytes_copied, 0);
	CHECK_EQ("relay: every buffer back from the NICs", s.inflight, 0);
	CHECK_EQ("relay: hop-limit drops", s.drop_hops, (uint64_t)arg_long(argc, argv, "hopdrops", 0));
	CHECK_EQ("relay: unroutable drops", s.drop_noroute, (uint64_t)arg_long(argc, argv, "noroute", 0));
	CHECK_EQ("relay: malformed drops", s.drop_baddst, (uint64_t)arg_long(argc, argv, "baddst", 0));
	CHECK_EQ("relay: frames not addressed to it dropped, not forwarded", is.drop_notme,
		 (uint64_t)arg_long(argc, argv, "notme", 0));
	uint64_t min_busy = (uint64_t)arg_long(argc, argv, "min_busy_per_fwd", 0);
	if (min_busy)
		CHECK("relay: its work counted as busy time (busy_per_fwd >= min_busy_per_fwd)",
		      timed && busy / timed >= min_busy);
	if (!arg_long(argc, argv, "busy_ok", 0))
		CHECK_EQ("relay: no busy, down or no-frame drops", s.drop_busy + s.drop_down + s.drop_nomem, 0);
	chan_close(&c);
	return utest_done("relay");
}
