// The transport's entry points for the channel resource: open and close,
// peers, the decode checks and the send through the channel's ops table,
// deadlines, the timer's protocol work, statistics, and the setup of the
// network path. Which transport runs is the table c->x.ops points to
// (transport.h); this file and the transports alone look inside x.
#include "transport.h"
#include "demux.h"
#include "txbatch.h"
#include "plain.h"
#include "stripe.h"
#include "reliable.h"
#include "balance.h"
#include "relay.h"
#include "shaper.h"
#include "worker.h"
#include "../res/io_priv.h"
#include "../res/pmem.h"
#include "../res/proc.h"
#include "../heap.h"
#include "../lock.h"
#include "../kprintf.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

void *xport_kzalloc(struct io *c, size_t n, long *err)
{
	if ((*err = proc_charge(c->owner, LIM_KHEAP, n)))
		return NULL;
	void *p = kzalloc(n);
	if (!p) {
		proc_uncharge(c->owner, LIM_KHEAP, n);
		*err = -E_NOMEM;
	}
	return p;
}

void xport_kfree(struct io *c, void *p, size_t n)
{
	if (!p)
		return;
	kfree(p);
	proc_uncharge(c->owner, LIM_KHEAP, n);
}

long xport_add_peer_state(struct io *c, int peer)
{
	if (c->x.raw)
		return 0; // sends only: no order, no protocol
	bool fresh = !c->x.ro[peer];
	long e = stripe_add_peer(c, peer);
	if (!e && (e = rel_add_peer(c, peer)) && fresh)
		stripe_drop_window(c, peer);
	return e;
}

long xport_open(struct io *c, bool raw)
{
	struct xport *x = &c->x;
	long e;
	if (!(x->tx = xport_kzalloc(c, sizeof(*x->tx), &e)))
		return e;
	x->raw = raw;
	x->ops = raw ? &xport_raw : &xport_plain;
	x->gap_us = IO_GAP_US;
	x->lb_slot = -1;
	for (int i = 0; i < IO_HDR_PAGES; i++)
		x->hdr[i] = pmem_take();
	e = stripe_active(c) ? rel_enable(c, true) : 0; // striped channels are reliable
	if (e) {
		for (int i = 0; i < IO_HDR_PAGES; i++)
			pmem_free(x->hdr[i]);
		xport_kfree(c, x->tx, sizeof(*x->tx));
		x->tx = NULL;
	}
	return e;
}

void xport_free(struct io *c)
{
	lb_free(c);
	txb_idle(c);
	rel_free(c);
	stripe_free(c);
	for (int i = 0; i < IO_HDR_PAGES; i++)
		pmem_free(c->x.hdr[i]);
	xport_kfree(c, c->x.tx, sizeof(*c->x.tx));
	c->x.tx = NULL;
}

long xport_close(struct io *c)
{
	if (xport_inflight(&c->x)) {
		txb_reclaim(c);
		if (xport_inflight(&c->x))
			return -E_BUSY;
	}
	if (c->x.ops->close)
		c->x.ops->close(c);
	return 0;
}

long xport_set_peer(struct io *c, uint64_t peer, uint64_t nic, const uint8_t mac[6])
{
	long e = xport_add_peer_state(c, (int)peer);
	if (e)
		return e;
	memcpy(c->x.peer[peer][nic], mac, 6);
	c->x.peer_links[peer] |= (uint8_t)(1u << nic);
	c->x.peer_valid |= 1u << peer;
	c->x.routed &= ~(1u << peer); // a MAC: a neighbour
	return 0;
}

long xport_set_gapwait(struct io *c, uint64_t us)
{
	if (us == 0)
		return -E_INVAL;
	c->x.gap_us = us;
	return 0;
}

long xport_held(struct io *c)
{
	txb_reclaim(c);
	return xport_inflight(&c->x) + (c->x.rel ? IO_REL_SLOTS - rel_free_slots(c) : 0);
}

uint32_t xport_check(struct io *c, const uint64_t *peers, const uint64_t *sizes, uint32_t n, long *err)
{
	return c->x.ops->check(c, peers, sizes, n, err);
}
long xport_check_call(struct io *c) { return c->x.ops->check_call(c); }

long xport_send(struct io *c, const uint64_t *peers, const uint64_t *sizes, const uint64_t *pos,
		const struct io_pktpages *pages)
{
	lb_on_send(c);
	return c->x.ops->send(c, peers, sizes, pos, pages);
}

void xport_settle(struct io *c)
{
	if (c->x.ops->settle)
		c->x.ops->settle(c);
}

bool xport_may_send(void) { return nl_klocked(); }

uint64_t xport_deadline(struct io *c) { return c->x.ops->deadline ? c->x.ops->deadline(c) : 0; }

int xport_expire(struct io *c)
{
	uint64_t now = arch_rdtsc(), gap = stripe_gap_deadline(c);
	if (gap && now >= gap) {
		stripe_gap_expire(c);
		return XPORT_GAP;
	}
	uint64_t at = xport_deadline(c);
	return at && now >= at ? XPORT_REPORT : 0;
}

long xport_report(struct io *c) { return c->x.ops->report ? c->x.ops->report(c) : 0; }

void xport_stats(struct io *c, struct io_stats *s)
{
	struct demux_nic *ni = &demux_nics[c->nic];
	s->drop_short = ni->drop_short, s->drop_ethertype = ni->drop_ethertype;
	s->drop_badlen = ni->drop_badlen, s->drop_nochan = ni->drop_nochan;
	s->drop_rxerr = ni->drop_rxerr, s->drop_notme = ni->drop_notme;
	s->drop_toolong = c->st.drop_toolong + ni->drop_toolong;
	s->reliable = false;
	s->tx_copy_max = c->x.raw || c->x.rel ? 0 : IO_TX_COPY; // what plain_send copies
	s->links_up = 0;
	IO_FOR_EACH_NIC(c, n)
		if (netdev_get(n)->ops->link_up(netdev_get(n)))
			s->links_up |= (uint8_t)(1u << n);
	if (c->x.ops->stats)
		c->x.ops->stats(c, s);
}

void xport_tick_all(void)
{
	uint32_t drained = 0;
	for (int i = 0; i < NIO; i++) {
		struct io *c = &ios[i];
		if (!c->h.used || !c->x.ops->tick)
			continue;
		// What came while this machine did not run is heard before any
		// silence is judged.
		IO_FOR_EACH_NIC(c, n)
			if (!(drained & (1u << n))) {
				demux_poll_nic_budget(n, DEMUX_BUDGET);
				drained |= 1u << n;
			}
		io_lock(c);
		if (c->h.used)
			c->x.ops->tick(c);
		io_unlock(c);
	}
}

uint64_t xport_next_all(uint64_t now)
{
	uint64_t at = worker_tick_due() ? now : UINT64_MAX;
	// The table's slots up to the last open channel (io_nopen of them).
	for (int i = 0, left = io_nopen; i < NIO && left > 0 && at > now; i++) {
		struct io *c = &ios[i];
		if (!c->h.used)
			continue;
		left--;
		if (!c->x.ops->tick)
			continue;
		io_lock(c);
		uint64_t t = !c->h.used ? UINT64_MAX : c->x.ops->next ? c->x.ops->next(c, now) : now;
		io_unlock(c);
		if (t < at)
			at = t;
	}
	return at;
}

bool xport_idle(void)
{
	for (int n = 0; n < netdev_count(); n++)
		txb_reclaim_nic(n); // a NIC's completions, whichever channels they are
	return worker_run_idle(); // the receive side without the kernel lock
}

static void link_change(struct netdev *nd, bool up, void *arg)
{
	(void)arg;
	demux_nics[nd->index].link_up = up;
	rel_link_change(nd->index, up);
}

bool xport_tx_later(const struct io *c) { return txb_later(c); }
void xport_tx_settle(uint32_t nicmask) { txb_settle(nicmask); }

int xport_init(const struct io_options *o)
{
	txb_init();
	netdev_set_upper(demux_rx_ready, link_change);
	struct rt_topo topo;
	if (rt_parse(&topo, o->node, o->nicdim, o->nb) < 0)
		pr_err("relay: node=%s nicdim=%s nb=%s: malformed, no relaying\n", o->node, o->nicdim ? o->nicdim : "",
		       o->nb ? o->nb : "");
	relay_init(&topo);
	int n = 0;
	for (int i = 0; i < netdev_count(); i++) {
		if (!demux_nic_usable(i)) {
			pr_err("io: NIC %d has %d receive slots, more than %d: not used\n", i,
			       netdev_get(i)->rx_slots, IO_RING_MAX);
			continue;
		}
		shaper_set(i, o->nic_mbps[i]);
		demux_nics[i].link_up = netdev_get(i)->ops->link_up(netdev_get(i));
		if (o->nic_mbps[i])
			pr_info("io: NIC %d paced at %u Mbit/s\n", i, o->nic_mbps[i]);
		n++;
	}
	return n;
}
