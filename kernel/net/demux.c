// Receive demultiplexing and refill: a NIC's buffers are assembled into
// packets, checked (malformed ones dropped and counted by cause), handed to
// the relay when routed elsewhere, else to their channel: a plain packet
// to the channel's sink (io_take), a striped one to its order
// (stripe_order), a reliable channel's control packet to the reliable
// transport. Buffers kept out of a ring are replaced (demux_replenish)
// and given back in groups (one RDT write each).
#include "demux.h"
#include "relay.h"
#include "stripe.h"
#include "transport.h"
#include "../res/io_priv.h"
#include "../res/pmem.h"
#include "../res/tlb.h"
#include "../res/proc.h"
#include "../kprintf.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

struct demux_nic demux_nics[NETDEV_MAX];

#define REFILL_GROUP 64

void demux_refill_add(int nic, paddr_t pa)
{
	struct demux_nic *ni = &demux_nics[nic];
	if (ni->nrefill == IO_RING_MAX + PKT_MAX_BUFS)
		pmem_free(pa); // the ring cannot take more (pmem_free syncs the TLB)
	else
		ni->refill[ni->nrefill++] = pa;
}

void demux_give_back(const struct pkt *f)
{
	for (int i = 0; i < f->nbuf; i++)
		demux_refill_add(f->nic, f->buf[i]);
}

// Posts the collected frames to the ring; what the ring cannot take (it
// was refilled from the reserve while frames were held) goes back to pmem.
void demux_flush_refill(int nic)
{
	tlb_batch_sync(); // a NIC writes into these: no stale translation left
	struct demux_nic *ni = &demux_nics[nic];
	struct netdev *nd = netdev_at(nic);
	int taken = ni->nrefill ? nd->ops->rx_refill(nd, ni->refill, ni->nrefill) : 0;
	if (taken < 0)
		taken = 0;
	for (int i = taken; i < ni->nrefill; i++)
		pmem_free(ni->refill[i]);
	ni->nrefill = 0;
}

// Posts only a full group, or when the ring runs below half its buffers.
static void maybe_refill(int nic)
{
	struct netdev *nd = netdev_at(nic);
	if (demux_nics[nic].nrefill >= REFILL_GROUP || nd->ops->rx_free_slots(nd) >= nd->rx_slots / 2)
		demux_flush_refill(nic);
}

static struct io *channel_of(int nic, uint16_t chan)
{
	for (int i = 0; i < NIO; i++)
		if (ios[i].h.used && !ios[i].x.raw && (ios[i].nicmask & (1u << nic)) && ios[i].channel == chan)
			return &ios[i];
	return NULL;
}

// A frame kept out of the ring (held for a later input_io, or waiting for
// its turn) leaves the ring short of its buffers until it is exchanged
// into a slot, whose old pages then go back. The ring gets reserve frames
// (zeroed ahead, each a page's zeroing of work) only once fewer than three
// quarters of its buffers are posted or on their way (QEMU's e1000 drops a
// frame it has too few buffers for: the ring must not run low). Returns
// how many of n buffers kept out of nic's ring need a frame in their place.
static int replenish_need(int nic, int n)
{
	struct netdev *nd = netdev_at(nic);
	int have = nd->rx_slots - nd->ops->rx_free_slots(nd) + demux_nics[nic].nrefill;
	int low = nd->rx_slots * 3 / 4 - have;
	return low <= 0 ? 0 : low < n ? low : n;
}

// All or nothing: every frame needed is free (pmem_free_count counts the
// reserve pmem_take draws on first), or none is taken and -E_NOMEM says
// so. Never a frame 0 into a ring's refill list: the driver would refuse
// the whole list and demux_flush_refill hand each entry to pmem_free.
long demux_replenish(int nic, int n)
{
	int need = replenish_need(nic, n);
	if (pmem_free_count() < (uint64_t)need)
		return -E_NOMEM;
	paddr_t f[32]; // a few at a time: one turn of the allocator's lock each
	for (int i = 0, k; i < need; i += k) {
		k = pmem_take_n(f, need - i < 32 ? need - i : 32);
		if (!k)
			return -E_NOMEM; // another CPU took the last ones meanwhile
		for (int j = 0; j < k; j++)
			demux_refill_add(nic, f[j]);
	}
	return 0;
}

// True when frame b is addressed to nic's own MAC. The wire protocol sends
// only to unicast addresses (a peer is named by its MAC, IO_OP_PEER, or by
// its node, whose MACs the topology gives), never to broadcast or
// multicast. A NIC whose filter lets everything in (virtio-net before its
// filter is programmed, any NIC under promisc=1) hands up frames for other
// stations too: none of them is this node's, and a relay must not forward
// one (every relay on a segment would).
static bool for_this_nic(int nic, const uint8_t *b)
{
	return wire_mac_eq(b + WIRE_OFF_DST, netdev_at(nic)->mac);
}

// Demultiplexing is finding a packet's channel (channel_of) and, for a
// striped one, the peer it came from: by the source MAC on some link (the
// last peer first: a stream comes from one), or a routed packet by its
// origin node.
static bool peer_has(struct io *c, int p, const uint8_t *mac)
{
	IO_FOR_EACH_NIC(c, n)
		if ((c->x.peer_links[p] & (1u << n)) && wire_mac_eq(c->x.peer[p][n], mac))
			return true;
	return false;
}

static int peer_by_mac(struct io *c, const uint8_t *mac)
{
	if ((c->x.peer_valid & (1u << c->x.last_peer)) && peer_has(c, c->x.last_peer, mac))
		return c->x.last_peer;
	for (int p = 0; p < IO_MAX_PEERS; p++)
		if ((c->x.peer_valid & (1u << p)) && peer_has(c, p, mac))
			return c->x.last_peer = p;
	return -1;
}

static int peer_by_node(struct io *c, uint32_t src)
{
	for (int p = 0; p < IO_MAX_PEERS; p++)
		if ((c->x.routed & (1u << p)) && c->x.route_node[p] == src)
			return p;
	return -1;
}

// Checks a whole frame and hands it to its channel. Returns the drop
// counter to bump, or NULL when the frame was taken.
static uint64_t *dispatch(int nic, const struct pkt *f, bool error)
{
	struct demux_nic *ni = &demux_nics[nic];
	if (error)
		return &ni->drop_rxerr;
	if (f->len < WIRE_FRAME_HLEN)
		return &ni->drop_short;
	const uint8_t *b = arch_p2v(f->buf[0]);
	if (!for_this_nic(nic, b))
		return &ni->drop_notme;
	if (wire_get_type(b) != WIRE_ETHERTYPE)
		return &ni->drop_ethertype;
	// QEMU zero-pads frames under 60 bytes: a header cut short shows as a
	// zero batch count, which no sender writes.
	if (wire_get_batch(b) == 0)
		return &ni->drop_short;
	uint32_t len = wire_get_len(b);
	if (len > WIRE_MAX_PAYLOAD)
		return &ni->drop_toolong;
	// The NIC pads short frames to 60 bytes; otherwise the length must match.
	uint16_t flags = wire_get_flags(b);
	uint32_t need = WIRE_FRAME_HLEN + len + (flags & WIRE_F_ROUTE ? WIRE_RTLEN : 0);
	if (f->len < need || (f->len > need && f->len > WIRE_MIN_FRAME))
		return &ni->drop_badlen;
	uint32_t src = RT_NONE; // a routed frame's origin
	if ((flags & WIRE_F_ROUTE) && relay_rx(f, len, &src))
		return NULL; // forwarded, or dropped and counted by the relay
	struct io *c = channel_of(nic, wire_get_channel(b));
	if (!c)
		return &ni->drop_nochan;
	if (!(flags & WIRE_F_STRIPE)) { // in order as it comes: straight to the sink
		c->st.link_rx[nic]++;
		io_take(c, f);
		return NULL;
	}
	int peer = src != RT_NONE ? peer_by_node(c, src) : peer_by_mac(c, b + WIRE_OFF_SRC);
	if (peer < 0) {
		c->st.drop_nopeer++; // no order to put it in
		demux_give_back(f);
		return NULL;
	}
	c->x.ops->input(c, nic, f, peer);
	return NULL;
}

// Adds one receive buffer to the frame being assembled; on EOP dispatches
// it. Buffers past PKT_MAX_BUFS go straight back: the frame is too long.
static void take_fragment(int nic, const struct rxfrag *r)
{
	struct demux_nic *ni = &demux_nics[nic];
	struct pkt *f = &ni->partial;
	f->nic = (uint8_t)nic;
	if (f->nbuf < PKT_MAX_BUFS) {
		f->buf[f->nbuf++] = r->pa;
		f->len = (uint16_t)(f->len + r->len);
	} else {
		demux_refill_add(nic, r->pa);
		ni->overlong = true;
	}
	if (!r->eop)
		return;
	uint64_t *drop = ni->overlong ? &ni->drop_toolong : dispatch(nic, f, r->error);
	if (drop) {
		(*drop)++;
		demux_give_back(f);
	}
	*f = (struct pkt){ 0 };
	ni->overlong = false;
}

static bool someone_waits(int nic)
{
	for (int i = 0; i < NIO; i++)
		if (ios[i].h.used && (ios[i].nicmask & (1u << nic)) && io_waiting(&ios[i]))
			return true;
	return false;
}

uint64_t demux_taken;

// Takes up to max buffers from the NIC; returns how many it had.
static int drain_some(int nic, int max)
{
	struct netdev *d = netdev_at(nic);
	struct rxfrag fr[64];
	int n = d->ops->rx_poll(d, fr, max < 64 ? max : 64);
	demux_taken += (uint64_t)n;
	for (int i = 0; i < n; i++)
		take_fragment(nic, &fr[i]);
	relay_flush(); // what the relay forwarded from them: one doorbell per NIC
	maybe_refill(nic);
	return n;
}

// Takes up to budget buffers from the NIC; true when it may have more.
static bool drain(int nic, int budget)
{
	for (int n; budget > 0; budget -= n)
		if ((n = drain_some(nic, budget < 64 ? budget : 64)) == 0)
			return false;
	return true;
}

static void set_polling(int nic, bool on)
{
	demux_nics[nic].polling = on;
	netdev_at(nic)->ops->rx_irq(netdev_at(nic), !on);
}

bool demux_irq_wait;

// Counted for each channel whose batch waits on nic (io_stats.rx_rearms).
static void count_rearm(int nic)
{
	for (int i = 0; i < NIO; i++)
		if (ios[i].h.used && (ios[i].nicmask & (1u << nic)) && io_waiting(&ios[i]))
			ios[i].st.rx_rearms++;
}

// A budget that ran out leaves the NIC polled (its interrupt masked) for
// the worker's next run, as NAPI keeps a device on its poll list. An empty
// ring ends polling once no batch waits (poll=irq: at once): the interrupt
// is unmasked and the ring drained once more, so a frame that came in
// between is not left waiting for the next one.
bool demux_poll_nic_budget(int nic, int budget)
{
	if (drain(nic, budget)) {
		if (!demux_nics[nic].polling)
			set_polling(nic, true);
		return true;
	}
	bool waits = someone_waits(nic);
	if (waits && !demux_irq_wait)
		return demux_nics[nic].polling;
	if (!waits)
		demux_flush_refill(nic); // between batches the ring gets everything back
	if (!demux_nics[nic].polling)
		return false;
	if (waits)
		count_rearm(nic);
	set_polling(nic, false);
	if (drain(nic, budget)) {
		set_polling(nic, true);
		return true;
	}
	if (!waits)
		demux_flush_refill(nic);
	return false;
}

void demux_poll_nic(int nic) { demux_poll_nic_budget(nic, INT32_MAX); }

// The NIC's receive interrupt: poll from here on until the batches that
// wait are complete.
void demux_rx_ready(struct netdev *d, void *arg)
{
	(void)arg;
	int nic = d->index;
	// Counted for a batch still collecting; a cause latched while masked
	// fires once more after a batch completes (the NIC counts it: nic_irqs).
	for (int i = 0; i < NIO; i++)
		if (ios[i].h.used && (ios[i].nicmask & (1u << nic)) && io_waiting(&ios[i]))
			ios[i].st.rx_irqs++;
	d->ops->rx_irq(d, false);
	demux_nics[nic].polling = true; // the worker polls it (worker.c)
}

// A striped channel's links are drained in turns of a few buffers each,
// so frames striped over them come nearly in order (the reorder window
// then holds few), then each NIC as demux_poll_nic does.
void demux_poll_channel(struct io *c)
{
	if (stripe_active(c)) {
		for (int any = 1; any;) {
			any = 0;
			IO_FOR_EACH_NIC(c, n)
				any |= drain_some(n, 8) > 0;
		}
	}
	IO_FOR_EACH_NIC(c, n)
		demux_poll_nic(n);
}

void demux_flush_idle(uint32_t nicmask)
{
	for (int n = 0; n < netdev_count(); n++)
		if ((nicmask & (1u << n)) && demux_nics[n].nrefill && !someone_waits(n))
			demux_flush_refill(n);
}

bool demux_poll_polling(int budget)
{
	bool polling = false;
	for (int n = 0; n < netdev_count(); n++)
		if (demux_nics[n].polling)
			polling |= demux_poll_nic_budget(n, budget);
	return polling;
}
