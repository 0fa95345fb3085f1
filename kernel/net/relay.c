// The relay: a routed frame for another node is forwarded from the receive
// path in the buffers it arrived in (HXB section 3.4). Its Ethernet
// addresses, the wire header's link and the trailer's hop limit are
// rewritten in place; the same buffers are queued on the outgoing NIC, one
// doorbell per outgoing NIC per receive poll (relay_flush); when the NIC
// is done with them they go back to the receive ring they came from. No
// payload byte is copied and no buffer is allocated.
//
// A frame the relay cannot send at once is dropped and counted, never
// waited for: the receive path runs with interrupts off, and a full or
// dead outgoing NIC must not hold up the ring the frame came from (the
// end-to-end channel reports the hole, or retransmits). So is one whose
// buffers its ring cannot spare: below three quarters posted, a forwarded
// frame's buffers are replaced by free frames, and with none free (other
// processes hold them all) it is dropped (drop_nomem), its buffers straight
// back to the ring.
//
// Channels use the topology too: IO_OP_NODE names a peer by node; a
// neighbour gets its MACs on the dimension's links, another node the first
// relay's, and the route trailer on every frame.
#include "relay.h"
#include "shaper.h"
#include "demux.h"
#include "txbatch.h"
#include "transport.h"
#include "slotbits.h"
#include "../res/io_priv.h"
#include "../kprintf.h"
#include "../uaccess.h"
#include <err.h>
#include <string.h>

#define RELAY_SLOTS 512        // forwarded frames in flight at once
#define RELAY_BATCH 64         // queued per outgoing NIC before a doorbell

struct rt_topo route_topo = { .me = RT_NONE };

// The forwarding state below is the relay's lock's (LK_RELAY, taken only
// with rxlock=fine, nl_lock: then a relay node's receive path forwards
// without the kernel lock, on whichever CPU polls the NIC). A completion
// gives its slot back without it (relay_done), from any CPU's reclaim,
// which may hold a NIC's transmit lock (ranked below the relay's): its
// buffers straight back to their ring, its slot by slotbits.h, which the
// free stack takes under the lock (take_back).
static struct spinlock relay_lk = SPINLOCK_INIT("relay", LK_RELAY);
static struct pkt inflight[RELAY_SLOTS];
static uint16_t free_slot[RELAY_SLOTS];
static uint32_t nfree;
static uint64_t slot_back[RELAY_SLOTS / 64];
static struct netpkt queue[NETDEV_MAX][RELAY_BATCH];
static int nqueued[NETDEV_MAX];
static uint32_t queued_mask; // NICs with a frame in queue: relay_flush's
static uint8_t next_link[RT_MAX_NB]; // per neighbour: striping over its links
static struct io_relaystats rst;
// The last destination forwarded to and its next hop (a stream's frames
// all go one way): rt_next_hop once per destination change, not per frame.
static uint32_t hop_dst = RT_NONE;
static long hop_nb;

void relay_init(const struct rt_topo *t)
{
	route_topo = *t;
	hop_dst = RT_NONE;
	nfree = RELAY_SLOTS;
	for (int i = 0; i < RELAY_SLOTS; i++)
		free_slot[i] = (uint16_t)(RELAY_SLOTS - 1 - i);
	memset(slot_back, 0, sizeof(slot_back));
	memset(nqueued, 0, sizeof(nqueued));
	memset(next_link, 0, sizeof(next_link));
	memset(&rst, 0, sizeof(rst));
	rst.node = t->me == RT_NONE ? ~0ul : t->me;
	rst.dims = (uint64_t)t->dims, rst.neighbours = (uint64_t)t->nnb;
	if (t->me == RT_NONE)
		return;
	pr_info("relay: node %u.%u.%u, %d dimension(s), %d neighbour(s); NIC dimensions", wire_coord(t->me, 0),
		wire_coord(t->me, 1), wire_coord(t->me, 2), t->dims, t->nnb);
	for (int i = 0; i < NETDEV_MAX; i++)
		kprintf(" %d", t->nicdim[i]);
	kprintf("\n");
}

// The frame's bytes [off, off + n) lie in its buffers, each a whole page
// but the last; n <= 8 bytes may straddle two.
static uint8_t *pkt_byte(const struct pkt *f, uint32_t off)
{
	return (uint8_t *)arch_p2v(f->buf[off / PAGE_SIZE]) + off % PAGE_SIZE;
}

// The n bytes at off: in place when they lie in one buffer, else copied
// into tmp (n bytes).
static const uint8_t *pkt_bytes(const struct pkt *f, uint32_t off, uint8_t *tmp, uint32_t n)
{
	if (off % PAGE_SIZE + n <= PAGE_SIZE)
		return pkt_byte(f, off);
	for (uint32_t i = 0; i < n; i++)
		tmp[i] = *pkt_byte(f, off + i);
	return tmp;
}

// The link (NIC) a frame to neighbour n goes on: round-robin over the
// dimension's links the neighbour has, skipping those down; -1: none up.
static int pick_link(int n)
{
	const struct rt_nb *nb = &route_topo.nb[n];
	for (int k = 0; k < nb->nlinks; k++) {
		int j = (next_link[n] + k) % nb->nlinks;
		int nic = route_topo.dimnics[nb->dim][j];
		if (demux_nic_usable(nic) && demux_nics[nic].link_up) {
			next_link[n] = (uint8_t)(j + 1);
			return j;
		}
	}
	return -1;
}

// The link a forwarded packet takes to neighbour n: its lane (its link
// number in the dimension it came by) when it turns into another dimension
// that has a link of that number up, so each lane is one path end to end
// and delivers in order, which a reliable sender's loss detection (link
// order) and per-link heartbeats rely on; else round-robin (pick_link).
static int lane_link(int n, int in_nic)
{
	const struct rt_nb *nb = &route_topo.nb[n];
	int d = in_nic >= 0 && in_nic < NETDEV_MAX ? route_topo.nicdim[in_nic] : -1;
	if (d < 0 || d == nb->dim)
		return pick_link(n);
	int lane = 0;
	while (lane < route_topo.ndimnics[d] && route_topo.dimnics[d][lane] != in_nic)
		lane++;
	int nic = lane < nb->nlinks ? route_topo.dimnics[nb->dim][lane] : -1;
	if (nic >= 0 && demux_nic_usable(nic) && demux_nics[nic].link_up)
		return lane;
	return pick_link(n);
}

// The slots completions gave back, onto the free stack (the lock held).
static void take_back(void) { nfree = slotbits_take(slot_back, RELAY_SLOTS / 64, free_slot, nfree, RELAY_SLOTS); }

static void flush_locked(void);

static void drop(const struct pkt *f, uint64_t *counter)
{
	(*counter)++;
	demux_give_back(f);
}

// Rewrites f for neighbour n on its link j and queues it on that NIC. Its
// buffers stay out of their ring until the NIC is done: free frames take
// their place there first, or (none free) the frame is dropped.
static void forward(const struct pkt *f, uint32_t flen, uint32_t toff, int n, int j)
{
	int nic = route_topo.dimnics[route_topo.nb[n].dim][j];
	if (!nfree)
		take_back();
	if (!nfree)
		return drop(f, &rst.drop_busy);
	if (nqueued[nic] == RELAY_BATCH)
		flush_locked(); // finished sends' buffers back to their rings too
	if (demux_replenish(f->nic, f->nbuf) < 0)
		return drop(f, &rst.drop_nomem);
	uint8_t *h = arch_p2v(f->buf[0]);
	wire_put_eth(h, route_topo.nb[n].mac[j], netdev_at(nic)->mac);
	wire_put16(h + WIRE_OFF(link), (uint16_t)nic);
	*pkt_byte(f, toff + 6) -= 1; // hops: more than 1, relay_rx checked
	uint16_t slot = free_slot[--nfree];
	inflight[slot] = *f;
	struct netpkt *p = &queue[nic][nqueued[nic]++];
	queued_mask |= 1u << nic;
	p->nseg = 0;
	for (uint32_t off = 0; off < flen; off += PAGE_SIZE) {
		uint32_t len = flen - off < PAGE_SIZE ? flen - off : PAGE_SIZE;
		p->seg[p->nseg++] = (struct netseg){ f->buf[off / PAGE_SIZE], len };
	}
	p->cookie = txb_cookie_relay(slot);
	txb_lock(nic);
	shaper_charge(nic, flen); // its wire time counts against the NIC's own senders
	txb_unlock(nic);
	rst.relayed++;
	rst.relayed_bytes += flen;
	rst.link_tx[nic]++;
}

static bool rx_locked(const struct pkt *f, uint32_t len, uint32_t *src);

bool relay_rx(const struct pkt *f, uint32_t len, uint32_t *src)
{
	nl_lock(&relay_lk);
	bool r = rx_locked(f, len, src);
	nl_unlock(&relay_lk);
	return r;
}

static bool rx_locked(const struct pkt *f, uint32_t len, uint32_t *src)
{
	uint32_t toff = WIRE_FRAME_HLEN + len;
	uint8_t t[WIRE_RTLEN];
	struct wire_route r;
	wire_get_route(pkt_bytes(f, toff, t, WIRE_RTLEN), &r);
	if (route_topo.me == RT_NONE) {
		drop(f, &rst.drop_noroute);
		return true;
	}
	if (r.dst == route_topo.me) {
		if (r.src == route_topo.me) {
			drop(f, &rst.drop_baddst);
			return true;
		}
		rst.delivered++;
		*src = r.src;
		return false;
	}
	if (r.hops == 0) {
		drop(f, &rst.drop_baddst);
		return true;
	}
	if (r.hops == 1) {
		drop(f, &rst.drop_hops);
		return true;
	}
	long n = r.dst == hop_dst ? hop_nb : rt_next_hop(&route_topo, r.dst);
	if (n >= 0)
		hop_dst = r.dst, hop_nb = n;
	if (n < 0) {
		drop(f, n == -E_INVAL ? &rst.drop_baddst : &rst.drop_noroute);
		return true;
	}
	int j = lane_link((int)n, f->nic);
	if (j < 0) {
		drop(f, &rst.drop_down);
		return true;
	}
	forward(f, toff + WIRE_RTLEN, toff, (int)n, j);
	return true;
}

// A forwarded frame the NIC is done with (or never took): without the
// relay's lock, see relay_lk. Each slot completes once.
void relay_done(uint32_t slot)
{
	if (slot >= RELAY_SLOTS || !inflight[slot].nbuf)
		return;
	demux_give_back(&inflight[slot]);
	inflight[slot].nbuf = 0;
	slotbits_give(slot_back, slot);
}

// One outgoing NIC's queue: finished sends reclaimed first (room, and the
// buffers of earlier forwards back to their rings), then one doorbell;
// what the ring does not take is dropped.
static void flush_nic(int nic)
{
	struct netdev *nd = netdev_at(nic);
	int n = nqueued[nic];
	nqueued[nic] = 0;
	txb_reclaim_nic(nic);
	txb_lock(nic);
	int r = nd->ops->tx_batch(nd, queue[nic], n);
	txb_unlock(nic);
	if (r < 0)
		r = 0;
	for (int i = r; i < n; i++) {
		uint32_t slot = (uint32_t)(queue[nic][i].cookie >> 8);
		rst.drop_busy++;
		rst.relayed--; // counted as it was queued
		for (int s = 0; s < queue[nic][i].nseg; s++)
			rst.relayed_bytes -= queue[nic][i].seg[s].len;
		rst.link_tx[nic]--;
		relay_done(slot);
	}
	if (r > 0)
		rst.batches++, rst.doorbells++;
	take_back();
	uint64_t held = (uint64_t)(RELAY_SLOTS - nfree);
	if (held > rst.inflight_max)
		rst.inflight_max = held;
	txb_reclaim_nic(nic); // QEMU's e1000 sends inside the doorbell write
}

static void flush_locked(void)
{
	for (uint32_t m = queued_mask; m; m &= m - 1)
		flush_nic(__builtin_ctz(m));
	queued_mask = 0;
}

// What a CPU queued it flushes itself at the end of its poll, so a read
// of the mask without the lock that finds none has none of its own.
void relay_flush(void)
{
	if (!__atomic_load_n(&queued_mask, __ATOMIC_RELAXED))
		return;
	nl_lock(&relay_lk);
	flush_locked();
	nl_unlock(&relay_lk);
}

// ------------------------------------------------------------ channels

long relay_set_peer(struct io *c, uint64_t node, uint64_t peer, uint64_t hops)
{
	if (peer >= IO_MAX_PEERS || node >> 24 || hops > 255 || route_topo.me == RT_NONE)
		return -E_INVAL;
	long n = rt_next_hop(&route_topo, (uint32_t)node);
	if (n < 0)
		return n;
	// A routed peer of a reliable channel: its link state is that of the
	// links to the first relay, its acknowledgements end to end.
	bool routed = route_topo.nb[n].node != node;
	const struct rt_nb *nb = &route_topo.nb[n];
	uint8_t links = 0;
	for (int j = 0; j < nb->nlinks; j++) {
		int nic = route_topo.dimnics[nb->dim][j];
		if (c->nicmask & (1u << nic))
			links |= (uint8_t)(1u << nic);
	}
	if (!links)
		return -E_INVAL; // the channel has none of the dimension's NICs
	long e = xport_add_peer_state(c, (int)peer);
	if (e)
		return e;
	for (int j = 0; j < nb->nlinks; j++)
		memcpy(c->x.peer[peer][route_topo.dimnics[nb->dim][j]], nb->mac[j], 6);
	c->x.peer_links[peer] = links;
	c->x.peer_valid |= 1u << peer;
	c->x.routed = routed ? c->x.routed | 1u << peer : c->x.routed & ~(1u << peer);
	c->x.route_node[peer] = (uint32_t)node;
	c->x.route_hops[peer] = (uint8_t)(hops ? hops : WIRE_HOPS_DEFAULT);
	return 0;
}

void relay_get_stats(struct io_relaystats *s)
{
	nl_lock(&relay_lk);
	take_back();
	*s = rst;
	s->inflight = (uint64_t)(RELAY_SLOTS - nfree);
	nl_unlock(&relay_lk);
}

long relay_stats(uint64_t uptr)
{
	struct io_relaystats s;
	relay_get_stats(&s);
	return copy_to_user(uptr, &s, sizeof(s));
}

uint16_t relay_flag(const struct io *c, uint64_t peer)
{
	return (c->x.routed >> peer) & 1 ? WIRE_F_ROUTE : 0;
}

void relay_trailer(const struct io *c, uint64_t peer, uint8_t *t, paddr_t pa, struct netpkt *p)
{
	wire_put_route(t, &(struct wire_route){ .dst = c->x.route_node[peer], .src = route_topo.me,
						.hops = c->x.route_hops[peer] });
	p->seg[p->nseg++] = (struct netseg){ pa, WIRE_RTLEN };
}
