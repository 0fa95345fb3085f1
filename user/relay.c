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
//         drop_baddst=.. drop_busy=.. drop_down=.. drop_notme=.. busy_per_fwd=..
// busy_per_fwd: the machine's busy TSC ticks (elapsed minus halted; guest
// instructions under -icount) from the first forwarded frame seen to the
// last, per frame forwarded meanwhile; net_per_fwd: the same less what the
// machine does when it forwards nothing (timer ticks, this program's own
// polling), at the busy rate measured before the first frame came.
// drop_notme: frames NIC 0 dropped as addressed to another MAC (io_stats;
// a routed broadcast frame is one: no relay forwards it). Checks: 0 bytes
// copied, nothing in flight at the end, exactly hopdrops=, noroute=,
// baddst= and notme= drops (default 0),
// no busy or down drops unless busy_ok=1, and with min_busy_per_fwd=N
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

int main(int argc, char **argv)
{
	if (arg_get(argc, argv, "probe", NULL))
		return probe(argc, argv);
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
	       "drop_down=%lu drop_notme=%lu busy_per_fwd=%lu net_per_fwd=%lu quiet_ms=%lu quiet_busy_x1e6=%lu link_tx=%lu,%lu,%lu,%lu\n",
	       node, s.relayed, s.relayed_bytes, s.bytes_copied, s.batches, s.doorbells,
	       s.doorbells ? s.relayed * 10 / s.doorbells : 0, s.inflight_max, s.delivered, s.drop_hops,
	       s.drop_noroute, s.drop_baddst, s.drop_busy, s.drop_down, is.drop_notme, timed ? busy / timed : 0, timed ? net / timed : 0,
	       (q_t1 - q_t0) / (hz / 1000), q_t1 > q_t0 ? (uint64_t)((__uint128_t)q_busy * 1000000 / (q_t1 - q_t0)) : 0,
	       s.link_tx[0],
	       s.link_tx[1], s.link_tx[2], s.link_tx[3]);
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
		CHECK_EQ("relay: no busy or down drops", s.drop_busy + s.drop_down, 0);
	chan_close(&c);
	return utest_done("relay");
}
