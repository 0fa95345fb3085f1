// relay: the hyper-crossbar's topology and routing (kernel/net/route.c)
// and the relay in the receive path (kernel/net/relay.c) over two fake
// NICs: a routed frame for another node leaves on the next hop's NIC in the
// very buffers it came in, its Ethernet addresses and hop limit rewritten,
// and the buffers go back to the ring it came from when the NIC is done;
// hop-limit, unroutable, malformed, down and busy cases are dropped and
// counted, their buffers back too.
#include "host.h"
#include "res_test.h"
#include "fake_netdev.h"
#include "res/io_priv.h"
#include "net/txbatch.h"
#include "net/demux.h"
#include "net/relay.h"
#include "net/reliable.h"
#include <err.h>
#include <stdio.h>
#include <string.h>

static const uint8_t MA[6] = { 0x02, 0xaa, 0, 0, 0, 0x01 }; // node 0.0
static const uint8_t MA2[6] = { 0x02, 0xaa, 0, 0, 0, 0x02 }; // node 0.0, second X link
static const uint8_t MC[6] = { 0x02, 0xcc, 0, 0, 0, 0x01 }; // node 1.1
static const uint8_t MC2[6] = { 0x02, 0xcc, 0, 0, 0, 0x02 }; // node 1.1, second Y link
#define MA_S "02:aa:00:00:00:01"
#define MA2_S "02:aa:00:00:00:02"
#define MC_S "02:cc:00:00:00:01"
#define MC2_S "02:cc:00:00:00:02"

// ================================================================ routing

static void test_parse(void)
{
	struct rt_topo t;
	CU_ASSERT_EQUAL(rt_parse(&t, "1.0", "0,1", "0.0/" MA_S ",1.1/" MC_S), 0);
	CU_ASSERT_EQUAL(t.me, wire_node(1, 0, 0));
	CU_ASSERT_EQUAL(t.dims, 2);
	CU_ASSERT_EQUAL(t.nicdim[0], 0);
	CU_ASSERT_EQUAL(t.nicdim[1], 1);
	CU_ASSERT_EQUAL(t.nicdim[2], -1);
	CU_ASSERT_EQUAL(t.ndimnics[0], 1);
	CU_ASSERT_EQUAL(t.dimnics[1][0], 1);
	CU_ASSERT_EQUAL(t.nnb, 2);
	CU_ASSERT_EQUAL(t.nb[0].node, wire_node(0, 0, 0));
	CU_ASSERT_EQUAL(t.nb[0].dim, 0);
	CU_ASSERT_EQUAL(t.nb[1].dim, 1);
	CU_ASSERT_EQUAL(memcmp(t.nb[1].mac[0], MC, 6), 0);
	// two links on X: a neighbour with a MAC on each
	CU_ASSERT_EQUAL(rt_parse(&t, "1.0", "0,0", "0.0/" MA_S "/" MA2_S), 0);
	CU_ASSERT_EQUAL(t.nb[0].nlinks, 2);
	CU_ASSERT_EQUAL(memcmp(t.nb[0].mac[1], MA2, 6), 0);
	// a NIC on no dimension
	CU_ASSERT_EQUAL(rt_parse(&t, "3", "-,0", "4/" MA_S), 0);
	CU_ASSERT_EQUAL(t.dimnics[0][0], 1);
	// no node=: no topology
	CU_ASSERT_EQUAL(rt_parse(&t, NULL, "0", "x"), 0);
	CU_ASSERT_EQUAL(t.me, RT_NONE);
}

static void test_parse_malformed(void)
{
	static const char *bad[][3] = {
		{ "1.0.0.0", "0", "" },                         // four coordinates
		{ "256.0", "0", "" },                           // a coordinate past 255
		{ "1.x", "0", "" },
		{ "1.0", "2", "" },                             // a dimension the node has not
		{ "1.0", "0,1,0,1,0,1,0,1,0", "" },             // more NICs than there are
		{ "1.0", "0,1", "0.1/" MA_S },                  // differs in two coordinates
		{ "1.0", "0,1", "1.0/" MA_S },                  // itself
		{ "1.0", "0,1", "0.0/" MA_S ",0.0/" MA_S },     // twice
		{ "1.0", "0,1", "0.0/" MA_S "/" MA2_S },        // two MACs, X has one link
		{ "1.0", "0,1", "0.0" },                        // no MAC
		{ "1.0", "0,1", "0.0/02:aa:00:00:00" },         // a MAC cut short
		{ "1.0", "0,1", "0.0/" MA_S ";1.1/" MC_S },     // separator
		{ "1.0", "0,1", "0.0.0/" MA_S },                // three coordinates in two
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rt_topo t;
		CU_ASSERT_EQUAL(rt_parse(&t, bad[i][0], bad[i][1], bad[i][2]), -E_INVAL);
		CU_ASSERT_EQUAL(t.me, RT_NONE);
		CU_ASSERT_EQUAL(t.nnb, 0);
	}
}

// Node (x, y, z) of a full hyper-crossbar of n^dims nodes, one link per
// dimension: NIC d on dimension d; every neighbour's MAC names it.
static void full_hxb(struct rt_topo *t, int n, int dims, uint32_t me)
{
	char node[16], nicdim[16] = "", nb[900] = "";
	size_t o = 0;
	snprintf(node, sizeof(node), "%u.%u.%u", wire_coord(me, 0), wire_coord(me, 1), wire_coord(me, 2));
	if (dims == 2)
		node[strlen(node) - 2] = 0;
	for (int d = 0; d < dims; d++) {
		snprintf(nicdim + strlen(nicdim), sizeof(nicdim) - strlen(nicdim), "%s%d", d ? "," : "", d);
		for (int v = 0; v < n; v++) {
			if (v == wire_coord(me, d))
				continue;
			uint32_t x = (me & ~(0xffu << (8 * d))) | (uint32_t)v << (8 * d);
			o += (size_t)snprintf(nb + o, sizeof(nb) - o, "%s%u.%u", o ? "," : "", wire_coord(x, 0),
					      wire_coord(x, 1));
			if (dims == 3)
				o += (size_t)snprintf(nb + o, sizeof(nb) - o, ".%u", wire_coord(x, 2));
			o += (size_t)snprintf(nb + o, sizeof(nb) - o, "/02:00:00:%02x:%02x:%02x", wire_coord(x, 0),
					      wire_coord(x, 1), wire_coord(x, 2));
		}
	}
	CU_ASSERT_EQUAL_FATAL(rt_parse(t, node, nicdim, nb), 0);
}

static void test_next_hop_dimension_order(void)
{
	struct rt_topo t;
	full_hxb(&t, 2, 2, wire_node(0, 0, 0));
	CU_ASSERT_EQUAL(t.nnb, 2);
	long n = rt_next_hop(&t, wire_node(1, 1, 0)); // X first
	CU_ASSERT_TRUE(n >= 0 && t.nb[n].node == wire_node(1, 0, 0));
	n = rt_next_hop(&t, wire_node(0, 1, 0)); // a neighbour: straight there
	CU_ASSERT_TRUE(n >= 0 && t.nb[n].node == wire_node(0, 1, 0));
	CU_ASSERT_EQUAL(rt_neighbour(&t, wire_node(0, 1, 0)), n);
	CU_ASSERT_EQUAL(rt_neighbour(&t, wire_node(1, 1, 0)), -1); // not direct
	CU_ASSERT_EQUAL(rt_next_hop(&t, wire_node(0, 0, 0)), -E_INVAL); // itself
	CU_ASSERT_EQUAL(rt_next_hop(&t, wire_node(1, 1, 1)), -E_INVAL); // a third dimension
	CU_ASSERT_EQUAL(rt_next_hop(&t, wire_node(2, 2, 0)), -E_NOENT); // no such nodes
	full_hxb(&t, 3, 3, wire_node(1, 2, 0));
	n = rt_next_hop(&t, wire_node(0, 0, 2));
	CU_ASSERT_TRUE(n >= 0 && t.nb[n].node == wire_node(0, 2, 0));
	n = rt_next_hop(&t, wire_node(1, 0, 2));
	CU_ASSERT_TRUE(n >= 0 && t.nb[n].node == wire_node(1, 0, 0));
}

// Every node of full 3x3 (2-D) and 2x2x2 (3-D) crossbars reaches every
// other in at most `dims` hops, each fixing one more coordinate.
static void test_routes_reach_everyone(void)
{
	static struct rt_topo all[27];
	for (int dims = 2; dims <= 3; dims++) {
		int n = dims == 2 ? 3 : 2, count = dims == 2 ? 9 : 8;
		uint32_t node[27];
		for (int i = 0; i < count; i++) {
			node[i] = wire_node((uint8_t)(i % n), (uint8_t)(i / n % n), (uint8_t)(dims == 3 ? i / 4 : 0));
			full_hxb(&all[i], n, dims, node[i]);
		}
		for (int s = 0; s < count; s++)
			for (int d = 0; d < count; d++) {
				if (s == d)
					continue;
				int at = s, hops = 0;
				while (node[at] != node[d] && hops <= dims) {
					long k = rt_next_hop(&all[at], node[d]);
					CU_ASSERT_FATAL(k >= 0);
					uint32_t next = all[at].nb[k].node;
					at = -1;
					for (int i = 0; i < count; i++)
						if (node[i] == next)
							at = i;
					CU_ASSERT_FATAL(at >= 0);
					hops++;
				}
				CU_ASSERT_EQUAL(node[at], node[d]);
				CU_ASSERT_TRUE(hops <= dims);
			}
	}
}

// A line is a crossbar with nodes missing: a-b-c as 0.0, 1.0, 1.1 and
// a-b-c-d as 0.0.0, 1.0.0, 1.1.0, 1.1.1. The first dimension whose next
// hop exists is taken, so the way back works too (c to a: Y, then X).
static void test_next_hop_line(void)
{
	struct rt_topo t;
	CU_ASSERT_EQUAL(rt_parse(&t, "1.1", "1", "1.0/" MA_S), 0);
	long n = rt_next_hop(&t, wire_node(0, 0, 0));
	CU_ASSERT_TRUE(n >= 0 && t.nb[n].node == wire_node(1, 0, 0));
	CU_ASSERT_EQUAL(rt_parse(&t, "0.0", "0", "1.0/" MA_S), 0);
	n = rt_next_hop(&t, wire_node(1, 1, 0));
	CU_ASSERT_TRUE(n >= 0 && t.nb[n].node == wire_node(1, 0, 0));
	CU_ASSERT_EQUAL(rt_parse(&t, "1.1.1", "2", "1.1.0/" MA_S), 0);
	n = rt_next_hop(&t, wire_node(0, 0, 0));
	CU_ASSERT_TRUE(n >= 0 && t.nb[n].node == wire_node(1, 1, 0));
	CU_ASSERT_EQUAL(rt_parse(&t, "1.1.0", "1,2", "1.0.0/" MA_S ",1.1.1/" MC_S), 0);
	n = rt_next_hop(&t, wire_node(0, 0, 0));
	CU_ASSERT_TRUE(n >= 0 && t.nb[n].node == wire_node(1, 0, 0));
	n = rt_next_hop(&t, wire_node(1, 1, 1));
	CU_ASSERT_TRUE(n >= 0 && t.nb[n].node == wire_node(1, 1, 1));
}

// ================================================================ the relay

static uint64_t nfree0;
static uint8_t fb[4 * PAGE_SIZE];
static int nhoard; // frames a test took (below): a new machine has none

// This node is b = 1.0: NIC 0 on X (a = 0.0 there), NIC 1 on Y (c = 1.1);
// or, with two X links, NICs 0 and 1 both on X.
static void start(const char *nicdim, const char *nb)
{
	klock_lock(); // as the kernel runs the relay: under the kernel lock
	res_machine_setup();
	fake_netdev_reset();
	nhoard = 0;
	memset(ios, 0, sizeof(ios));
	memset(demux_nics, 0, sizeof(demux_nics));
	CU_ASSERT_EQUAL_FATAL(fake_nic_attach(0, FAKE_NIC_RX_SLOTS, FAKE_NIC_TX_SLOTS), 0);
	CU_ASSERT_EQUAL_FATAL(fake_nic_attach(1, FAKE_NIC_RX_SLOTS, FAKE_NIC_TX_SLOTS), 1);
	struct io_options o = { .copy_threshold = 256, .rx_scrub = true, .node = "1.0", .nicdim = nicdim, .nb = nb };
	io_init(&o);
	nfree0 = pmem_free_count();
}

static void setup(void) { start("0,1", "0.0/" MA_S ",1.1/" MC_S); }

static void teardown(void)
{
	fake_nic_tx_complete_all();
	io_idle_poll();
	fake_io_teardown();
	relay_init(&(struct rt_topo){ .me = RT_NONE });
	klock_release_all();
}

// A routed frame from a (on nic, to that NIC's MAC) for dst with hops:
// len payload bytes i * 7 + 3, then the trailer. Returns its length.
static uint32_t routed(int nic, uint32_t dst, uint8_t hops, uint32_t len)
{
	wire_put_eth(fb, fake_nics[nic].nd.mac, MA);
	wire_put_hdr(fb, &(struct wire_fields){ .channel = 5, .flags = WIRE_F_ROUTE | WIRE_F_LAST, .seq = 9,
						.batch = 1, .len = len });
	for (uint32_t i = 0; i < len; i++)
		fb[WIRE_FRAME_HLEN + i] = (uint8_t)(i * 7 + 3);
	wire_put_route(fb + WIRE_FRAME_HLEN + len, &(struct wire_route){ .dst = dst, .src = wire_node(0, 0, 0),
									 .hops = hops });
	return WIRE_FRAME_HLEN + len + WIRE_RTLEN;
}

static struct io_relaystats rstats(void)
{
	struct io_relaystats s;
	relay_get_stats(&s);
	return s;
}

// Byte off of the frame a fake NIC queued (its gather list, as sent).
static uint8_t sent_byte(int nic, int k, uint32_t off)
{
	const struct netpkt *p = &fake_nics[nic].tx[k].pkt;
	for (int s = 0; s < p->nseg; off -= p->seg[s++].len)
		if (off < p->seg[s].len)
			return *((uint8_t *)arch_p2v(p->seg[s].pa) + off);
	return 0;
}

// The NICs finish, the idle loop reclaims, the rings get their buffers.
static void finish(void)
{
	fake_nic_tx_complete(0, -1), fake_nic_tx_complete(1, -1);
	io_idle_poll();
	demux_poll_nic_budget(0, INT32_MAX), demux_poll_nic_budget(1, INT32_MAX);
}

// A frame for c (1.1) comes from a on NIC 0 and leaves on NIC 1 (Y) in the
// same buffers, addressed to c from NIC 1, hop limit one less, every
// payload byte as it came; the buffers go back to ring 0 once NIC 1 is done.
static void forward_case(uint32_t len)
{
	paddr_t b[3] = { fake_nic_rx_next(0, 0), fake_nic_rx_next(0, 1), fake_nic_rx_next(0, 2) };
	uint32_t flen = routed(0, wire_node(1, 1, 0), 5, len);
	int nbuf = fake_nic_rx(0, fb, flen, false);
	CU_ASSERT_FATAL(nbuf > 0);
	int before = fake_nics[1].ntx;
	demux_poll_nic_budget(0, INT32_MAX);
	CU_ASSERT_EQUAL_FATAL(fake_nics[1].ntx, before + 1);
	const struct fake_tx *t = &fake_nics[1].tx[before];
	CU_ASSERT_EQUAL(t->len, flen);
	CU_ASSERT_EQUAL(t->pkt.nseg, nbuf);
	for (int s = 0; s < t->pkt.nseg; s++)
		CU_ASSERT_EQUAL(t->pkt.seg[s].pa, b[s]); // zero copy: the receive buffers themselves
	CU_ASSERT_EQUAL(memcmp(t->bytes, MC, 6), 0);
	CU_ASSERT_EQUAL(memcmp(t->bytes + 6, fake_nics[1].nd.mac, 6), 0);
	CU_ASSERT_EQUAL(wire_get_flags(t->bytes), WIRE_F_ROUTE | WIRE_F_LAST);
	CU_ASSERT_EQUAL(wire_get_link(t->bytes), 1);
	bool same = true;
	for (uint32_t i = 0; i < len; i++)
		same &= sent_byte(1, before, WIRE_FRAME_HLEN + i) == (uint8_t)(i * 7 + 3);
	CU_ASSERT_TRUE(same);
	uint8_t tr[WIRE_RTLEN];
	for (int i = 0; i < WIRE_RTLEN; i++)
		tr[i] = sent_byte(1, before, WIRE_FRAME_HLEN + len + (uint32_t)i);
	struct wire_route r;
	wire_get_route(tr, &r);
	CU_ASSERT_EQUAL(r.dst, wire_node(1, 1, 0));
	CU_ASSERT_EQUAL(r.src, wire_node(0, 0, 0));
	CU_ASSERT_EQUAL(r.hops, 4);
	struct io_relaystats s = rstats();
	CU_ASSERT_EQUAL(s.inflight, 1);
	CU_ASSERT_EQUAL(s.bytes_copied, 0);
	CU_ASSERT_FALSE(fake_nic_rx_has(0, b[0])); // out on NIC 1 meanwhile
	finish();
	CU_ASSERT_EQUAL(rstats().inflight, 0);
	for (int k = 0; k < nbuf; k++)
		CU_ASSERT_TRUE(fake_nic_rx_has(0, b[k])); // back in the ring it came from
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

// rxlock=fine: a relay node's receive path forwards without the kernel
// lock, on the CPU that polls the NIC (it put every routed frame off for
// the kernel lock before, a settle each round), and a reclaim without the
// kernel lock gives the forwarded frames' slots and buffers back at once
// (it put them off before). The frames leave as under the lock.
static void test_forward_unlocked(void)
{
	demux_fine = true;
	for (int i = 0; i < 8; i++)
		CU_ASSERT_FATAL(fake_nic_rx(0, fb, routed(0, wire_node(1, 1, 0), 4, 1000), false) == 1);
	demux_rx_ready(netdev_get(0), NULL); // NIC 0 polled from now on, as after its interrupt
	uint64_t settles = demux_settles, off = txb_put_off;
	int depth = klock_release_all();
	demux_poll_nolock(DEMUX_BUDGET);
	bool held = klock_held_by_me();
	int sent = fake_nics[1].ntx;
	fake_nic_tx_complete(1, -1);
	txb_reclaim_nic(1); // another CPU's reclaim, without the kernel lock too
	klock_reacquire(depth);
	CU_ASSERT_FALSE(held);
	CU_ASSERT_EQUAL(demux_settles, settles); // nothing put off for the kernel lock
	CU_ASSERT_EQUAL(sent, 8);
	CU_ASSERT_EQUAL(memcmp(fake_nics[1].tx[0].bytes, MC, 6), 0);
	bool same = true;
	for (int k = 0; k < 8; k++)
		for (uint32_t i = 0; i < 1000; i++)
			same &= sent_byte(1, k, WIRE_FRAME_HLEN + i) == (uint8_t)(i * 7 + 3);
	CU_ASSERT_TRUE(same);
	struct io_relaystats s = rstats();
	CU_ASSERT_EQUAL(s.relayed, 8);
	CU_ASSERT_EQUAL(s.inflight, 0); // given back by the unlocked reclaim
	CU_ASSERT_EQUAL(txb_put_off, off);
	demux_fine = false;
	finish();
	CU_ASSERT_EQUAL(fake_nics[0].rx_posted, FAKE_NIC_RX_SLOTS);
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

static void test_forward_short(void) { forward_case(100); }
static void test_forward_jumbo(void) { forward_case(8960); }
// The trailer straddles the first and second buffers.
static void test_forward_trailer_split(void) { forward_case(PAGE_SIZE - WIRE_FRAME_HLEN - 4); }

// Frames forwarded in one poll go out with one doorbell; counted.
static void test_forward_batch(void)
{
	for (int i = 0; i < 5; i++)
		CU_ASSERT_FATAL(fake_nic_rx(0, fb, routed(0, wire_node(1, 1, 0), 8, 1000), false) > 0);
	demux_poll_nic_budget(0, INT32_MAX);
	CU_ASSERT_EQUAL(fake_nics[1].ntx, 5);
	CU_ASSERT_EQUAL(fake_nics[1].st.doorbells, 1);
	struct io_relaystats s = rstats();
	CU_ASSERT_EQUAL(s.relayed, 5);
	CU_ASSERT_EQUAL(s.relayed_bytes, 5ull * (WIRE_FRAME_HLEN + 1000 + WIRE_RTLEN));
	CU_ASSERT_EQUAL(s.doorbells, 1);
	CU_ASSERT_EQUAL(s.link_tx[1], 5);
	finish();
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

// Each bad case is dropped and counted by cause, nothing is sent, the
// buffers go back, and nothing panics.
static void test_drops(void)
{
	struct {
		uint32_t dst;
		uint8_t hops;
	} cases[] = {
		{ wire_node(1, 1, 0), 1 },  // hop limit: would reach 0 here
		{ wire_node(1, 1, 0), 0 },  // malformed: no hop left at all
		{ wire_node(7, 7, 0), 4 },  // no route
		{ wire_node(1, 1, 1), 4 },  // outside the two dimensions
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CU_ASSERT_FATAL(fake_nic_rx(0, fb, routed(0, cases[i].dst, cases[i].hops, 64), false) > 0);
		demux_poll_nic_budget(0, INT32_MAX);
	}
	// a routed frame cut short: no room for its trailer (the NIC's own drop)
	uint32_t n = routed(0, wire_node(1, 1, 0), 4, 200);
	CU_ASSERT_FATAL(fake_nic_rx(0, fb, n - 3, false) > 0);
	demux_poll_nic_budget(0, INT32_MAX);
	// one "from" this node for this node
	routed(0, wire_node(1, 0, 0), 4, 64);
	wire_put_route(fb + WIRE_FRAME_HLEN + 64, &(struct wire_route){ .dst = wire_node(1, 0, 0),
									.src = wire_node(1, 0, 0), .hops = 4 });
	CU_ASSERT_FATAL(fake_nic_rx(0, fb, WIRE_FRAME_HLEN + 64 + WIRE_RTLEN, false) > 0);
	demux_poll_nic_budget(0, INT32_MAX);
	struct io_relaystats s = rstats();
	CU_ASSERT_EQUAL(s.drop_hops, 1);
	CU_ASSERT_EQUAL(s.drop_baddst, 3);
	CU_ASSERT_EQUAL(s.drop_noroute, 1);
	CU_ASSERT_EQUAL(s.relayed, 0);
	CU_ASSERT_EQUAL(demux_nics[0].drop_badlen, 1);
	CU_ASSERT_EQUAL(fake_nics[0].ntx + fake_nics[1].ntx, 0);
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

// A routed frame for another node that is not addressed to this relay's
// NIC (broadcast, multicast, another station's MAC: a NIC whose filter
// lets it in hands it up anyway) is dropped and counted on that NIC, never
// forwarded: every relay on the segment would forward a broadcast one.
static void test_not_for_this_relay(void)
{
	static const uint8_t dst[][6] = {
		{ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, // broadcast
		{ 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 }, // IPv4 multicast
		{ 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 }, // IPv6 multicast
		{ 0x02, 0xcc, 0, 0, 0, 0x01 },          // c's own MAC, straight
		{ 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 }, // this node's other NIC
	};
	int n = (int)(sizeof(dst) / sizeof(dst[0]));
	for (int i = 0; i < n; i++) {
		uint32_t len = routed(0, wire_node(1, 1, 0), 4, 64);
		memcpy(fb, dst[i], 6);
		CU_ASSERT_FATAL(fake_nic_rx(0, fb, len, false) > 0);
		demux_poll_nic_budget(0, INT32_MAX);
	}
	struct io_relaystats s = rstats();
	CU_ASSERT_EQUAL(s.relayed, 0);
	CU_ASSERT_EQUAL(s.inflight, 0);
	CU_ASSERT_EQUAL(fake_nics[0].ntx + fake_nics[1].ntx, 0);
	CU_ASSERT_EQUAL(demux_nics[0].drop_notme, (uint64_t)n);
	CU_ASSERT_EQUAL(demux_nics[1].drop_notme, 0);
	CU_ASSERT_EQUAL(fake_nics[0].rx_posted, FAKE_NIC_RX_SLOTS);
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
	// The same frame to this NIC's MAC is forwarded.
	CU_ASSERT_FATAL(fake_nic_rx(0, fb, routed(0, wire_node(1, 1, 0), 4, 64), false) > 0);
	demux_poll_nic_budget(0, INT32_MAX);
	CU_ASSERT_EQUAL(rstats().relayed, 1);
	finish();
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

// The outgoing link down: dropped and counted at once (never waited for);
// a ring that refuses: dropped and counted, buffers back.
static void test_down_and_busy(void)
{
	fake_nic_set_link(1, false);
	CU_ASSERT_FATAL(fake_nic_rx(0, fb, routed(0, wire_node(1, 1, 0), 4, 500), false) > 0);
	demux_poll_nic_budget(0, INT32_MAX);
	CU_ASSERT_EQUAL(rstats().drop_down, 1);
	fake_nic_set_link(1, true);
	fake_nics[1].tx_fail = -E_INVAL;
	CU_ASSERT_FATAL(fake_nic_rx(0, fb, routed(0, wire_node(1, 1, 0), 4, 500), false) > 0);
	demux_poll_nic_budget(0, INT32_MAX);
	struct io_relaystats s = rstats();
	CU_ASSERT_EQUAL(s.drop_busy, 1);
	CU_ASSERT_EQUAL(s.relayed, 0);
	CU_ASSERT_EQUAL(s.inflight, 0);
	CU_ASSERT_EQUAL(fake_nics[1].ntx, 0);
	finish();
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

// Two links on the outgoing dimension: the relay stripes over them, and
// skips one that is down.
static void test_stripe_links(void)
{
	teardown();
	start("0,0", "0.0/" MA_S "/" MA2_S);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_FATAL(fake_nic_rx(0, fb, routed(0, wire_node(0, 0, 0), 4, 300), false) > 0);
	demux_poll_nic_budget(0, INT32_MAX);
	CU_ASSERT_EQUAL(fake_nics[0].ntx, 2);
	CU_ASSERT_EQUAL(fake_nics[1].ntx, 2);
	CU_ASSERT_EQUAL(memcmp(fake_nics[0].tx[0].bytes, MA, 6), 0);
	CU_ASSERT_EQUAL(memcmp(fake_nics[1].tx[0].bytes, MA2, 6), 0);
	fake_nic_set_link(1, false);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_FATAL(fake_nic_rx(0, fb, routed(0, wire_node(0, 0, 0), 4, 300), false) > 0);
	demux_poll_nic_budget(0, INT32_MAX);
	CU_ASSERT_EQUAL(fake_nics[0].ntx, 4);
	CU_ASSERT_EQUAL(fake_nics[1].ntx, 2);
	finish();
	CU_ASSERT_EQUAL(rstats().inflight, 0);
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

// Two links on X and two on Y: a packet turning from X to Y keeps its
// lane (X's link j leaves on Y's link j), so each lane is one path end to
// end and delivers in order; a lane whose link is down is striped over the
// others as before.
static void test_lanes(void)
{
	teardown();
	res_machine_setup();
	fake_netdev_reset();
	memset(ios, 0, sizeof(ios));
	memset(demux_nics, 0, sizeof(demux_nics));
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL_FATAL(fake_nic_attach(i, FAKE_NIC_RX_SLOTS, FAKE_NIC_TX_SLOTS), i);
	struct io_options o = { .copy_threshold = 256, .rx_scrub = true, .node = "1.0", .nicdim = "0,0,1,1",
				.nb = "0.0/" MA_S "/" MA2_S ",1.1/" MC_S "/" MC2_S };
	io_init(&o);
	nfree0 = pmem_free_count();
	for (int in = 0; in < 2; in++)
		for (int k = 0; k < 3; k++) {
			CU_ASSERT_FATAL(fake_nic_rx(in, fb, routed(in, wire_node(1, 1, 0), 4, 300), false) > 0);
			demux_poll_nic_budget(in, INT32_MAX);
			CU_ASSERT_EQUAL(fake_nics[2 + in].ntx, k + 1); // lane in: X link in -> Y link in
			CU_ASSERT_EQUAL(fake_nics[3 - in].ntx, in ? 3 : 0);
		}
	CU_ASSERT_EQUAL(memcmp(fake_nics[2].tx[0].bytes, MC, 6), 0);
	CU_ASSERT_EQUAL(memcmp(fake_nics[3].tx[0].bytes, MC2, 6), 0);
	fake_nic_set_link(3, false); // lane 1 down on Y: its packets take the links up
	for (int k = 0; k < 2; k++) {
		CU_ASSERT_FATAL(fake_nic_rx(1, fb, routed(1, wire_node(1, 1, 0), 4, 300), false) > 0);
		demux_poll_nic_budget(1, INT32_MAX);
	}
	CU_ASSERT_EQUAL(fake_nics[2].ntx, 5);
	CU_ASSERT_EQUAL(fake_nics[3].ntx, 3);
	for (int i = 0; i < 4; i++)
		fake_nic_tx_complete(i, -1);
	io_idle_poll();
	for (int i = 0; i < 4; i++)
		demux_poll_nic_budget(i, INT32_MAX);
	CU_ASSERT_EQUAL(rstats().inflight, 0);
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

// No topology: a routed frame is dropped as unroutable, not forwarded.
static void test_no_topology(void)
{
	teardown();
	start(NULL, NULL);
	relay_init(&(struct rt_topo){ .me = RT_NONE });
	CU_ASSERT_FATAL(fake_nic_rx(0, fb, routed(0, wire_node(1, 1, 0), 4, 64), false) > 0);
	demux_poll_nic_budget(0, INT32_MAX);
	CU_ASSERT_EQUAL(rstats().drop_noroute, 1);
	CU_ASSERT_EQUAL(fake_nics[1].ntx, 0);
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

// ================================================================ out of frames

// Frames a test took so that the allocator has none (or few) left.
static paddr_t hoard[FAKE_PHYS_SIZE / PAGE_SIZE];

static void hoard_all_but(uint64_t leave)
{
	paddr_t pa;
	while (nhoard < (int)(sizeof(hoard) / sizeof(hoard[0])) && pmem_free_count() > leave &&
	       (pa = pmem_alloc_nozero()) != 0)
		hoard[nhoard++] = pa;
}

static void unhoard(void)
{
	while (nhoard > 0)
		pmem_free(hoard[--nhoard]);
}

// n routed 1000-byte frames for c come in on NIC 0 (one buffer each).
static void rx_routed(int n)
{
	for (int i = 0; i < n; i++)
		CU_ASSERT_FATAL(fake_nic_rx(0, fb, routed(0, wire_node(1, 1, 0), 4, 1000), false) == 1);
}

// Every frame taken and the outgoing NIC slow (it finishes nothing until
// told): each forwarded frame keeps its buffer out of ring 0, and no frame
// can replace it. 12 buffers polled out of a ring of 32 leave 20 posted, 4
// short of three quarters: the first 4 frames are dropped (counted, their
// buffers back to the ring), the other 8 leave. Nothing panics, no frame
// 0 reaches a ring, and every frame comes back.
static void test_no_frame_to_replenish(void)
{
	hoard_all_but(0);
	CU_ASSERT_EQUAL_FATAL(pmem_free_count(), 0);
	rx_routed(12);
	demux_poll_nic_budget(0, INT32_MAX);
	struct io_relaystats s = rstats();
	CU_ASSERT_EQUAL(s.drop_nomem, 4);
	CU_ASSERT_EQUAL(s.relayed, 8);
	CU_ASSERT_EQUAL(s.inflight, 8);
	CU_ASSERT_EQUAL(s.drop_busy, 0);
	CU_ASSERT_EQUAL(fake_nics[1].ntx, 8);
	CU_ASSERT_EQUAL(fake_nics[0].rx_posted, 24); // the dropped frames' buffers are back
	CU_ASSERT_EQUAL(fake_nics[0].st.rx_refill_rejected, 0);
	CU_ASSERT_EQUAL(pmem_free_count(), 0);
	// The slow NIC finishes: its 8 buffers go back to ring 0, and the relay
	// forwards again, still without a free frame.
	finish();
	CU_ASSERT_EQUAL(fake_nics[0].rx_posted, FAKE_NIC_RX_SLOTS);
	rx_routed(6);
	demux_poll_nic_budget(0, INT32_MAX);
	s = rstats();
	CU_ASSERT_EQUAL(s.relayed, 14);
	CU_ASSERT_EQUAL(s.drop_nomem, 4);
	CU_ASSERT_EQUAL(fake_nics[1].ntx, 14);
	finish();
	CU_ASSERT_EQUAL(rstats().inflight, 0);
	CU_ASSERT_EQUAL(fake_nics[0].rx_posted, FAKE_NIC_RX_SLOTS);
	CU_ASSERT_EQUAL(pmem_free_count(), 0);
	unhoard();
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

// One frame free and a jumbo frame (3 buffers) that needs 3: dropped, and
// the free frame is not taken (a refused forward changes nothing); with 3
// free, the next one leaves and takes them.
static void test_replenish_all_or_nothing(void)
{
	rx_routed(21); // 21 buffers out on the slow NIC: ring 0 at 11 + 13 fresh = 24
	demux_poll_nic_budget(0, INT32_MAX);
	CU_ASSERT_EQUAL_FATAL(rstats().relayed, 21);
	CU_ASSERT_EQUAL_FATAL(fake_nics[0].rx_posted, 24);
	uint64_t base = pmem_free_count();
	hoard_all_but(1);
	uint32_t n = routed(0, wire_node(1, 1, 0), 4, 8960);
	CU_ASSERT_FATAL(fake_nic_rx(0, fb, n, false) == 3);
	demux_poll_nic_budget(0, INT32_MAX);
	CU_ASSERT_EQUAL(rstats().drop_nomem, 1);
	CU_ASSERT_EQUAL(rstats().relayed, 21);
	CU_ASSERT_EQUAL(pmem_free_count(), 1);
	CU_ASSERT_EQUAL(fake_nics[0].rx_posted, 24);
	unhoard();
	hoard_all_but(3);
	CU_ASSERT_FATAL(fake_nic_rx(0, fb, n, false) == 3);
	demux_poll_nic_budget(0, INT32_MAX);
	CU_ASSERT_EQUAL(rstats().drop_nomem, 1);
	CU_ASSERT_EQUAL(rstats().relayed, 22);
	CU_ASSERT_EQUAL(pmem_free_count(), 0);
	CU_ASSERT_EQUAL(fake_nics[0].rx_posted, 24);
	unhoard();
	CU_ASSERT_EQUAL(pmem_free_count(), base - 3);
	finish();
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

// ================================================================ channels

// This node is a = 0.0: NIC 0 on X (b = 1.0 there, MAC MB), NIC 1 on Y
// (d = 0.1, MAC MD); c = 1.1 is two hops away, through b (X first).
static const uint8_t MB[6] = { 0x02, 0xbb, 0, 0, 0, 0x01 };
#define MB_S "02:bb:00:00:00:01"
#define MD_S "02:dd:00:00:00:01"
#define PID 1
#define VA_SCR USER_BASE
#define VA_IN (USER_BASE + GiB)
#define VA_OUT (USER_BASE + 2 * GiB)

long sys_get_io(const uint64_t *a);
long sys_ctrl_io(const uint64_t *a);
long sys_input_io(const uint64_t *a);
long sys_output_io(const uint64_t *a);
long sys_free_io(const uint64_t *a);

static long vs1;

static void chan_setup(void)
{
	start("0,1", "1.0/" MB_S ",0.1/" MD_S); // NICs and io_init (as node 1.0)
	struct rt_topo t; // then this node's own place: 0.0
	CU_ASSERT_EQUAL_FATAL(rt_parse(&t, "0.0", "0,1", "1.0/" MB_S ",0.1/" MD_S), 0);
	relay_init(&t);
	vs1 = proc_new(PID);
	attach(PID, region_new(PID, 4, VR_MEM_ALL), vs1, VA_SCR);
	fake_proc_set_current(PID);
	nfree0 = pmem_free_count();
}

static void uwrite(uint64_t va, const void *src, size_t n)
{
	const uint8_t *s = src;
	while (n) {
		uint64_t *pte = vspace_pte(vs1, va);
		CU_ASSERT_FATAL(pte && (*pte & PTE_P));
		size_t off = va & (PG - 1), k = PG - off < n ? PG - off : n;
		memcpy((uint8_t *)arch_p2v(*pte & PTE_ADDR_MASK) + off, s, k);
		s += k, va += k, n -= k;
	}
}

static void uread(uint64_t va, void *dst, size_t n) { CU_ASSERT_FATAL(user_read(vs1, va, dst, n)); }

static long ctrl(long id, uint64_t op, uint64_t a0, uint64_t a1, uint64_t a2)
{
	const uint64_t a[5] = { (uint64_t)id, op, a0, a1, a2 };
	return sys_ctrl_io(a);
}

// A channel on the NICs of mask: 1 input slot of 3 pages, 1 output slot.
static long chan(uint8_t mask, uint16_t ch)
{
	const uint64_t a[4] = { IO_DEV(IO_KIND_ETHER, ch, mask), 1, 1, VA_SCR };
	CU_ASSERT_EQUAL_FATAL(sys_get_io(a), 0);
	long id;
	uread(VA_SCR, &id, sizeof(id));
	long in = region_new(PID, 3, VR_MEM_ALL), out = region_new(PID, 3, VR_MEM_ALL);
	attach(PID, in, vs1, VA_IN + ch * 0x1000000ull);
	attach(PID, out, vs1, VA_OUT + ch * 0x1000000ull);
	struct io_regions r = { .in_vr = in, .in_addr = VA_IN + ch * 0x1000000ull, .in_size = 3 * PG,
				.out_vr = out, .out_addr = VA_OUT + ch * 0x1000000ull, .out_size = 3 * PG };
	uwrite(VA_SCR + 64, &r, sizeof(r));
	CU_ASSERT_EQUAL_FATAL(ctrl(id, IO_OP_REGIONS, VA_SCR + 64, 0, 0), 0);
	return id;
}

static long free_chan(long id)
{
	const uint64_t a[1] = { (uint64_t)id };
	return sys_free_io(a);
}

// Naming peers by node: a neighbour on the dimension's NICs of the
// channel, a farther node through the first relay; each error.
static void test_chan_node(void)
{
	long x = chan(1, 3), xy = chan(3, 4);
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_NODE, IO_NODE(1, 1, 0), 0, 0), 0);
	struct io *c = &ios[res_slot(x)];
	CU_ASSERT_EQUAL(c->x.routed, 1u);
	CU_ASSERT_EQUAL(memcmp(c->x.peer[0][0], MB, 6), 0);
	CU_ASSERT_EQUAL(c->x.route_hops[0], WIRE_HOPS_DEFAULT);
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_NODE, IO_NODE(1, 0, 0), 1, 3), 0); // a neighbour: direct
	CU_ASSERT_EQUAL(c->x.routed, 1u);
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_NODE, IO_NODE(0, 1, 0), 2, 0), -E_INVAL); // Y: not this channel's NIC
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_NODE, IO_NODE(0, 0, 0), 2, 0), -E_INVAL); // itself
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_NODE, IO_NODE(0, 0, 1), 2, 0), -E_INVAL); // a third dimension
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_NODE, IO_NODE(5, 5, 0), 2, 0), -E_NOENT);
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_NODE, IO_NODE(1, 1, 0), IO_MAX_PEERS, 0), -E_INVAL);
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_NODE, IO_NODE(1, 1, 0), 2, 256), -E_INVAL);
	// striped channels are reliable by default, and take a relayed peer too
	CU_ASSERT_EQUAL(ctrl(xy, IO_OP_NODE, IO_NODE(1, 1, 0), 0, 0), 0);
	CU_ASSERT_EQUAL(ctrl(xy, IO_OP_NODE, IO_NODE(0, 1, 0), 0, 0), 0);
	CU_ASSERT_EQUAL(ctrl(xy, IO_OP_RELIABLE, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(ctrl(xy, IO_OP_NODE, IO_NODE(1, 1, 0), 1, 0), 0);
	// a MAC given for a peer makes it a neighbour again
	uwrite(VA_SCR + 256, MB, 6);
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_PEER, VA_SCR + 256, 0, 0), 0);
	CU_ASSERT_EQUAL(c->x.routed, 0u);
	CU_ASSERT_EQUAL(free_chan(x), 0);
	CU_ASSERT_EQUAL(free_chan(xy), 0);
	// no topology at all
	relay_init(&(struct rt_topo){ .me = RT_NONE });
	x = chan(1, 5);
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_NODE, IO_NODE(1, 0, 0), 0, 0), -E_INVAL);
	CU_ASSERT_EQUAL(free_chan(x), 0);
}

// Sends the n bytes of pay as one packet on channel x, whose output area
// is VA_OUT + slot * 16 MiB: sys_output_io's arguments (offset 0, n bytes,
// no flags) written to the scratch page and kept in a[] for another call;
// returns its result.
static long output_pay(long x, int slot, const uint8_t *pay, uint64_t n, uint64_t a[4])
{
	uwrite(VA_OUT + (uint64_t)slot * 0x1000000ull, pay, n);
	uint64_t args[3] = { 0, n, 0 };
	uwrite(VA_SCR + 512, &args[0], 8);
	uwrite(VA_SCR + 520, &args[1], 8);
	uwrite(VA_SCR + 528, &args[2], 8);
	a[0] = (uint64_t)x, a[1] = VA_SCR + 512, a[2] = VA_SCR + 520, a[3] = VA_SCR + 528;
	return sys_output_io(a);
}

// A packet to a node two hops away leaves for the first relay with the
// route flag and the trailer as one more gather segment after the payload.
static void test_chan_send_routed(void)
{
	long x = chan(1, 3);
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_NODE, IO_NODE(1, 1, 0), 0, 3), 0);
	uint8_t pay[60]; // the whole frame within the fake NIC's snapshot
	for (int i = 0; i < 60; i++)
		pay[i] = (uint8_t)(i ^ 0x5a);
	uint64_t a[4];
	CU_ASSERT_EQUAL(output_pay(x, 3, pay, sizeof(pay), a), 1);
	CU_ASSERT_EQUAL_FATAL(fake_nics[0].ntx, 1);
	const struct fake_tx *t = &fake_nics[0].tx[0];
	CU_ASSERT_EQUAL(t->len, WIRE_FRAME_HLEN + 60 + WIRE_RTLEN);
	CU_ASSERT_EQUAL(memcmp(t->bytes, MB, 6), 0);
	CU_ASSERT_TRUE(wire_get_flags(t->bytes) & WIRE_F_ROUTE);
	CU_ASSERT_EQUAL(wire_get_len(t->bytes), 60);
	CU_ASSERT_EQUAL(memcmp(t->bytes + WIRE_FRAME_HLEN, pay, 60), 0);
	struct wire_route r;
	wire_get_route(t->bytes + WIRE_FRAME_HLEN + 60, &r);
	CU_ASSERT_EQUAL(r.dst, wire_node(1, 1, 0));
	CU_ASSERT_EQUAL(r.src, wire_node(0, 0, 0));
	CU_ASSERT_EQUAL(r.hops, 3);
	// a neighbour's packet: a plain frame, byte for byte as before
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_NODE, IO_NODE(1, 0, 0), 0, 0), 0);
	fake_nic_tx_complete(0, -1);
	CU_ASSERT_EQUAL(sys_output_io(a), 1);
	CU_ASSERT_EQUAL_FATAL(fake_nics[0].ntx, 2);
	CU_ASSERT_EQUAL(fake_nics[0].tx[1].len, WIRE_FRAME_HLEN + 60);
	CU_ASSERT_FALSE(wire_get_flags(fake_nics[0].tx[1].bytes) & WIRE_F_ROUTE);
	fake_nic_tx_complete(0, -1);
	CU_ASSERT_EQUAL(free_chan(x), 0);
}

// rxlock=fine: a send to a routed peer runs without the kernel lock (it
// took it at its start before): its trailer is the channel's own state
// and the topology's, not the relay's slots. The frame is as under the
// lock: route flag, payload, trailer.
static void test_chan_send_routed_unlocked(void)
{
	demux_fine = true;
	long x = chan(1, 3);
	CU_ASSERT_EQUAL(ctrl(x, IO_OP_NODE, IO_NODE(1, 1, 0), 0, 3), 0);
	uint8_t pay[60];
	for (int i = 0; i < 60; i++)
		pay[i] = (uint8_t)(i ^ 0xa5);
	uint64_t a[4];
	int depth = klock_release_all(); // the system call's entry leaves it to output_io
	long r = output_pay(x, 3, pay, sizeof(pay), a);
	bool took = klock_held_by_me();
	klock_release_all();
	klock_reacquire(depth);
	CU_ASSERT_EQUAL(r, 1);
	CU_ASSERT_FALSE(took);
	CU_ASSERT_EQUAL(ios[res_slot(x)].st.tx_unlocked_calls, 1);
	CU_ASSERT_EQUAL_FATAL(fake_nics[0].ntx, 1);
	const struct fake_tx *t = &fake_nics[0].tx[0];
	CU_ASSERT_EQUAL(t->len, WIRE_FRAME_HLEN + 60 + WIRE_RTLEN);
	CU_ASSERT_TRUE(wire_get_flags(t->bytes) & WIRE_F_ROUTE);
	CU_ASSERT_EQUAL(memcmp(t->bytes + WIRE_FRAME_HLEN, pay, 60), 0);
	struct wire_route w;
	wire_get_route(t->bytes + WIRE_FRAME_HLEN + 60, &w);
	CU_ASSERT_TRUE(w.dst == wire_node(1, 1, 0) && w.src == wire_node(0, 0, 0) && w.hops == 3);
	fake_nic_tx_complete(0, -1);
	demux_fine = false;
	CU_ASSERT_EQUAL(free_chan(x), 0);
}

// A routed frame for this node reaches its channel with the payload where a
// direct frame has it; on a striped channel its peer is found by origin.
static void test_chan_receive_routed(void)
{
	long xy = chan(3, 4);
	CU_ASSERT_EQUAL(ctrl(xy, IO_OP_RELIABLE, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(ctrl(xy, IO_OP_NODE, IO_NODE(1, 1, 0), 0, 0), 0);
	// from c, relayed by b: source MAC b's, origin c
	wire_put_eth(fb, fake_nics[0].nd.mac, MB);
	wire_put_hdr(fb, &(struct wire_fields){ .channel = 4, .flags = WIRE_F_ROUTE | WIRE_F_STRIPE | WIRE_F_LAST,
						.seq = 0, .batch = 1, .len = 300 });
	for (int i = 0; i < 300; i++)
		fb[WIRE_FRAME_HLEN + i] = (uint8_t)(i * 3);
	wire_put_route(fb + WIRE_FRAME_HLEN + 300, &(struct wire_route){ .dst = wire_node(0, 0, 0),
									 .src = wire_node(1, 1, 0), .hops = 7 });
	CU_ASSERT_FATAL(fake_nic_rx(0, fb, WIRE_FRAME_HLEN + 300 + WIRE_RTLEN, false) > 0);
	// the same from an origin no peer has: dropped, no order to put it in
	wire_put_route(fb + WIRE_FRAME_HLEN + 300, &(struct wire_route){ .dst = wire_node(0, 0, 0),
									 .src = wire_node(1, 2, 0), .hops = 7 });
	CU_ASSERT_FATAL(fake_nic_rx(0, fb, WIRE_FRAME_HLEN + 300 + WIRE_RTLEN, false) > 0);
	demux_poll_nic_budget(0, INT32_MAX);
	const uint64_t a[3] = { (uint64_t)xy, VA_SCR + 1024, VA_SCR + 2048 };
	CU_ASSERT_EQUAL(sys_input_io(a), 1);
	uint64_t size, pos;
	uread(VA_SCR + 1024, &size, 8);
	uread(VA_SCR + 2048, &pos, 8);
	CU_ASSERT_EQUAL(size, 300);
	CU_ASSERT_EQUAL(pos, WIRE_FRAME_HLEN);
	uint8_t got[300];
	uread(VA_IN + 4 * 0x1000000ull + pos, got, 300);
	bool same = true;
	for (int i = 0; i < 300; i++)
		same &= got[i] == (uint8_t)(i * 3);
	CU_ASSERT_TRUE(same);
	CU_ASSERT_EQUAL(ios[res_slot(xy)].st.drop_nopeer, 1);
	CU_ASSERT_EQUAL(rstats().delivered, 2);
	CU_ASSERT_EQUAL(rstats().relayed, 0);
	CU_ASSERT_EQUAL(free_chan(xy), 0);
}

// Reliable over striped over routed: a reliable striped channel's packet
// to a node beyond the relay carries the route flag and trailer; the
// origin's routed acknowledgement settles it, and a routed data packet
// from it is acknowledged with a routed control packet.
static void test_chan_reliable_routed(void)
{
	long xy = chan(3, 4);
	CU_ASSERT_EQUAL(ctrl(xy, IO_OP_NODE, IO_NODE(1, 1, 0), 0, 3), 0);
	struct io *c = &ios[res_slot(xy)];
	CU_ASSERT_TRUE(c->x.rel);
	uint8_t pay[60];
	for (int i = 0; i < 60; i++)
		pay[i] = (uint8_t)(i ^ 0x3c);
	uint64_t a[4];
	CU_ASSERT_EQUAL(output_pay(xy, 4, pay, sizeof(pay), a), 1);
	CU_ASSERT_EQUAL_FATAL(fake_nics[0].ntx, 1); // X: the relay's dimension
	const struct fake_tx *t = &fake_nics[0].tx[0];
	CU_ASSERT_EQUAL(t->len, WIRE_FRAME_HLEN + 60 + WIRE_RTLEN);
	CU_ASSERT_EQUAL(memcmp(t->bytes, MB, 6), 0);
	uint16_t fl = wire_get_flags(t->bytes);
	CU_ASSERT_TRUE((fl & WIRE_F_ROUTE) && (fl & WIRE_F_STRIPE));
	CU_ASSERT_EQUAL(memcmp(t->bytes + WIRE_FRAME_HLEN, pay, 60), 0);
	struct wire_route r;
	wire_get_route(t->bytes + WIRE_FRAME_HLEN + 60, &r);
	CU_ASSERT_TRUE(r.dst == wire_node(1, 1, 0) && r.src == wire_node(0, 0, 0) && r.hops == 3);
	fake_nic_tx_complete(0, -1);
	// c's acknowledgement of it, relayed by b: sequence 0 settled
	uint8_t ctl[WIRE_CTRL_HLEN];
	uint32_t len = wire_put_ctrl(ctl, &(struct wire_ctrl){ .session = 0x4321, .your_session = c->x.session,
								  .cum = 1 });
	wire_put_eth(fb, fake_nics[0].nd.mac, MB);
	wire_put_hdr(fb, &(struct wire_fields){ .channel = 4, .flags = WIRE_F_ROUTE | WIRE_F_STRIPE | WIRE_F_ACK,
						.batch = 1, .len = len });
	memcpy(fb + WIRE_FRAME_HLEN, ctl, len);
	wire_put_route(fb + WIRE_FRAME_HLEN + len, &(struct wire_route){ .dst = wire_node(0, 0, 0),
									 .src = wire_node(1, 1, 0), .hops = 7 });
	CU_ASSERT_FATAL(fake_nic_rx(0, fb, WIRE_FRAME_HLEN + len + WIRE_RTLEN, false) > 0);
	demux_poll_nic_budget(0, INT32_MAX);
	CU_ASSERT_EQUAL(c->st.rx_acks, 1);
	struct io_linkstats ls;
	CU_ASSERT_EQUAL(rel_linkstats(c, 0, &ls), 0);
	CU_ASSERT_EQUAL(ls.unacked, 0);
	CU_ASSERT_EQUAL(ls.peer_session, 0x4321);
	// c's data packet, the batch's last: acknowledged at once, routed back
	int ntx = fake_nics[0].ntx;
	wire_put_hdr(fb, &(struct wire_fields){ .channel = 4, .flags = WIRE_F_ROUTE | WIRE_F_STRIPE | WIRE_F_LAST,
						.seq = 0, .batch = 0x4321, .len = 100 });
	wire_put_route(fb + WIRE_FRAME_HLEN + 100, &(struct wire_route){ .dst = wire_node(0, 0, 0),
									 .src = wire_node(1, 1, 0), .hops = 7 });
	CU_ASSERT_FATAL(fake_nic_rx(0, fb, WIRE_FRAME_HLEN + 100 + WIRE_RTLEN, false) > 0);
	demux_poll_nic_budget(0, INT32_MAX);
	CU_ASSERT_EQUAL(c->st.link_rx[0], 1);
	CU_ASSERT_EQUAL_FATAL(fake_nics[0].ntx, ntx + 1);
	t = &fake_nics[0].tx[ntx];
	fl = wire_get_flags(t->bytes);
	CU_ASSERT_TRUE((fl & WIRE_F_ROUTE) && (fl & WIRE_F_ACK));
	uint32_t clen = wire_get_len(t->bytes);
	struct wire_ctrl w;
	CU_ASSERT_EQUAL(wire_get_ctrl(t->bytes + WIRE_FRAME_HLEN, clen, &w), 0);
	CU_ASSERT_EQUAL(w.cum, 1);
	wire_get_route(t->bytes + WIRE_FRAME_HLEN + clen, &r);
	CU_ASSERT_TRUE(r.dst == wire_node(1, 1, 0) && r.src == wire_node(0, 0, 0));
	fake_nic_tx_complete(0, -1);
	CU_ASSERT_EQUAL(free_chan(xy), 0);
}

static const struct test_case chan_tests[] = {
	TEST(test_chan_node), TEST(test_chan_send_routed), TEST(test_chan_send_routed_unlocked), TEST(test_chan_receive_routed),
	TEST(test_chan_reliable_routed),
};

static const struct test_case route_tests[] = {
	TEST(test_parse), TEST(test_parse_malformed), TEST(test_next_hop_dimension_order),
	TEST(test_routes_reach_everyone), TEST(test_next_hop_line),
};

static const struct test_case relay_tests[] = {
	TEST(test_forward_short), TEST(test_forward_unlocked), TEST(test_forward_jumbo), TEST(test_forward_trailer_split),
	TEST(test_forward_batch), TEST(test_drops), TEST(test_not_for_this_relay), TEST(test_down_and_busy),
	TEST(test_stripe_links), TEST(test_lanes), TEST(test_no_topology), TEST(test_no_frame_to_replenish),
	TEST(test_replenish_all_or_nothing),
};

int register_relay(void)
{
	if (ADD_SUITE("route", NULL, NULL, route_tests) < 0)
		return -1;
	if (ADD_SUITE("relay", setup, teardown, relay_tests) < 0)
		return -1;
	return ADD_SUITE("relay_chan", chan_setup, teardown, chan_tests);
}
