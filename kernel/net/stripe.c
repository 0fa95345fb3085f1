// Striped channels: a channel whose dev_no names several NICs sends each
// batch round-robin over the links its peer is known on (HXB section 3.1,
// RI2N section 3) and hands what it receives to input_io in the sender's
// order, per peer, whatever link each frame came by (HXB section 3.2).
//
// Every striped frame carries WIRE_F_STRIPE and a sequence number counted
// per (channel, peer) from 0. A frame that comes ahead of the next in order
// waits in the peer's reorder window, in the slot of its number modulo the
// window (empty = no buffers): its buffers are kept as they are and the ring
// gets reserve frames, so no byte is copied; when the hole before it fills,
// the run of frames that follows goes to input_io in order, each still
// exchanged into its slot. On a reliable channel (reliable.c) a hole is filled
// by retransmission. Otherwise a hole that stays open for gap_us (a frame
// lost, which nothing brings back) is reported: the
// batch being collected ends before it, the next input_io returns -E_GAP
// once, and the frames after it follow. Nothing is skipped silently. A
// reliable channel's hole is reported so once its sender said goodbye: it
// will never fill it.
// Frames held in the window count against the channel owner's frame limit
// (a hole a sender never fills holds no more than that); one past it is
// dropped (drop_limit): a reliable sender sends it again, else a gap.
#include "stripe.h"
#include "demux.h"
#include "balance.h"
#include "reliable.h"
#include "relay.h"
#include "transport.h"
#include "../res/io_priv.h"
#include "../res/pmem.h"
#include "../res/proc.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

bool stripe_active(const struct io *c) { return c->nicmask & (c->nicmask - 1); }

int stripe_next_link(struct io *c, uint64_t peer)
{
	for (int k = 0; k < NETDEV_MAX; k++) {
		int n = (c->x.rr[peer] + k) % NETDEV_MAX;
		struct netdev *nd = (c->x.peer_links[peer] & (1u << n)) && !lb_skip(c, (int)peer, n) ? netdev_get(n) : NULL;
		if (nd && nd->ops->link_up(nd)) {
			c->x.rr[peer] = (uint8_t)(n + 1);
			return n;
		}
	}
	return -1;
}

// A hole: frames wait in the window but the next in order is not there.
static void note_hole(struct io *c, int peer)
{
	struct reorder *r = c->x.ro[peer];
	bool hole = r->held && !r->f[c->x.rx_next[peer] % IO_RO_WIN].nbuf;
	if (hole && !r->hole)
		r->since = arch_rdtsc();
	r->hole = hole;
}

// Slot s of peer's window lets go of its frame (taken, or given back).
static void unhold(struct io *c, struct reorder *r, struct pkt *s)
{
	proc_uncharge(c->owner, LIM_FRAMES, s->nbuf);
	s->nbuf = 0;
	r->held--;
}

// Hands the frames that are in order now to the channel, oldest first,
// while it has room for them (else they stay: flow control, not loss).
static void release_run(struct io *c, int peer)
{
	struct reorder *r = c->x.ro[peer];
	if (!r)
		return;
	uint32_t from = c->x.rx_next[peer];
	while (r->held) {
		struct pkt *s = &r->f[c->x.rx_next[peer] % IO_RO_WIN];
		if (!s->nbuf || !io_can_take(c, s))
			break;
		struct pkt f = *s;
		unhold(c, r, s);
		c->x.rx_next[peer]++;
		io_take(c, &f);
	}
	note_hole(c, peer);
	if (c->x.rx_next[peer] != from)
		rel_rx_moved(c, peer); // a reliable sender's window opens
}

void stripe_release(struct io *c)
{
	for (int p = 0; p < IO_MAX_PEERS; p++)
		release_run(c, p);
}

// Keeps f in the window (demux_replenish keeps the ring fed).
static void hold_ahead(struct io *c, int peer, uint32_t seq, const struct pkt *f)
{
	struct reorder *r = c->x.ro[peer];
	if (!r) { // a peer's window comes with the peer (stripe_add_peer)
		c->st.drop_noslot++;
		demux_give_back(f);
		return;
	}
	struct pkt *s = &r->f[seq % IO_RO_WIN];
	if (s->nbuf) {
		c->st.rx_dup++;
		demux_give_back(f);
		return;
	}
	if (pmem_free_count() < f->nbuf) {
		c->st.drop_noslot++;
		demux_give_back(f);
		return;
	}
	if (proc_charge(c->owner, LIM_FRAMES, f->nbuf)) {
		c->st.drop_limit++;
		demux_give_back(f);
		return;
	}
	*s = *f;
	demux_replenish(f->nic, f->nbuf);
	if (!r->held || (int32_t)(seq + 1 - r->hi) > 0)
		r->hi = seq + 1;
	r->held++;
	if (seq != c->x.rx_next[peer])
		c->st.rx_reordered++;
	note_hole(c, peer);
}

void stripe_order(struct io *c, int peer, uint32_t seq, const struct pkt *f)
{
	uint32_t d = seq - c->x.rx_next[peer];
	if (d == 0 && (!c->x.ro[peer] || !c->x.ro[peer]->held) && io_can_take(c, f)) {
		c->x.rx_next[peer]++; // the common case: in order, nothing waiting
		io_take(c, f);
	} else if (d < IO_RO_WIN) {
		hold_ahead(c, peer, seq, f);
		release_run(c, peer);
	} else if (d >= 0x80000000u) {
		c->st.rx_dup++; // behind the order: taken already, or given up as lost
		demux_give_back(f);
	} else {
		c->st.drop_window++; // becomes a hole, reported like any other
		demux_give_back(f);
	}
}

// From when peer's hole counts towards gap_us (0: none, or a reliable
// channel's whose sender will still fill it).
static uint64_t hole_since(const struct io *c, int peer)
{
	const struct reorder *r = c->x.ro[peer];
	if (!r || !r->hole)
		return 0;
	return c->x.rel ? rel_hole_since(c, peer, r->since) : r->since;
}

uint64_t stripe_gap_deadline(const struct io *c)
{
	uint64_t first = 0, wait = timer_us_to_tsc(c->x.gap_us);
	for (int p = 0; p < IO_MAX_PEERS; p++) {
		uint64_t since = hole_since(c, p);
		if (since && (!first || since + wait < first))
			first = since + wait;
	}
	return first;
}

// Ends the hole before peer's first held frame: counted, marked in the
// channel's stream, then the frames after it follow in order. Not while
// the pend queue has no room for the marker (input_io drains it first).
static void declare_gap(struct io *c, int peer)
{
	if (c->pend.n >= IO_PEND_RING)
		return;
	struct reorder *r = c->x.ro[peer];
	uint32_t lost = 1;
	while (!r->f[(c->x.rx_next[peer] + lost) % IO_RO_WIN].nbuf)
		lost++;
	c->st.rx_gaps++;
	c->st.rx_gap_lost += lost;
	c->st.gap_peer = (uint64_t)peer, c->st.gap_seq = c->x.rx_next[peer], c->st.gap_len = lost;
	c->x.rx_next[peer] += lost;
	io_take(c, &(struct pkt){ .nbuf = 0 }); // the marker
	release_run(c, peer);
}

void stripe_gap_expire(struct io *c)
{
	uint64_t now = arch_rdtsc(), wait = timer_us_to_tsc(c->x.gap_us);
	for (int p = 0; p < IO_MAX_PEERS; p++) {
		uint64_t since = hole_since(c, p);
		if (since && now >= since + wait)
			declare_gap(c, p);
	}
}

uint32_t stripe_drop_peer(struct io *c, int peer)
{
	struct reorder *r = c->x.ro[peer];
	uint32_t n = 0;
	for (int i = 0; r && r->held && i < IO_RO_WIN; i++)
		if (r->f[i].nbuf) {
			demux_give_back(&r->f[i]); // the caller posts or frees them (demux_flush_refill)
			unhold(c, r, &r->f[i]);
			n++;
		}
	if (r)
		r->hole = false, r->hi = 0;
	return n;
}

long stripe_add_peer(struct io *c, int peer)
{
	long e = 0;
	if (!c->x.ro[peer])
		c->x.ro[peer] = xport_kzalloc(c, sizeof(struct reorder), &e);
	return e;
}

void stripe_drop_window(struct io *c, int peer)
{
	stripe_drop_peer(c, peer);
	xport_kfree(c, c->x.ro[peer], sizeof(struct reorder));
	c->x.ro[peer] = NULL;
}

void stripe_free(struct io *c)
{
	for (int p = 0; p < IO_MAX_PEERS; p++)
		stripe_drop_window(c, p);
}
