// Reliable channels: a sequenced channel (striped by default, or one NIC
// with IO_OP_RELIABLE) whose receiver acknowledges and whose sender keeps
// every packet's frames pinned until acknowledged, sending the same frames
// again, on a live link, when one is lost. input_io then delivers every
// packet exactly once and in order (stripe.c restores the order), or
// -E_LINK once a peer's every link has been dead for dead_us.
//
// A peer that closes its channel says goodbye (WIRE_C_BYE). Nothing more
// goes to it: output_io to it returns -E_LINK once what was sent to it is
// settled, every packet acknowledged (acknowledgements on other links may
// come after the goodbye) or dead_us after the goodbye, when what is still
// unacknowledged is let go (tx_bye_lost). input_io says -E_LINK once, after
// the frames the peer sent; a hole in them that its sender will now never
// fill is reported gap_us on (-E_GAP), as on an unreliable channel.
//
// Acknowledgements are control frames (WIRE_F_ACK): the cumulative
// sequence number and a bitmap of what the receiver holds beyond a hole.
// Loss is found three ways (RI2N section 2.2, with the channel's own
// acknowledgements in place of TCP's):
// - link order: each link delivers in order, so a packet still unacknowledged
//   when a later one on the same link was acknowledged is lost: sent again;
// - skew: a packet on link L unacknowledged while one sent skew_us after it
//   on another link was acknowledged: L lags (or died silently). L is
//   suspected: no new packets, its unacknowledged ones go on other links,
//   and a probe (a heartbeat asking for an answer) is sent on it;
// - heartbeats: every link to every peer carries a heartbeat when it has
//   carried nothing for hb_us; hb_miss periods with nothing heard on a link
//   (or a probe unanswered that long) mark it dead for that peer only; a
//   visible link-down marks it dead for every peer at once (silence counts
//   only once the peer was heard: before, every link is presumed up). A dead link
//   keeps its heartbeats; the peer's echo of one sent after the death brings
//   it back ("recovered").
// The retransmission timeout (rto_us, doubled per retry) catches the rest.
// Link state is per (channel, peer, link): node A's link 1 dead towards B
// stays up towards C.
//
// Flow control: a sender may have `window` packets unacknowledged per peer
// (at most IO_SND_WIN = 512, below the receiver's 1024 reorder slots); the
// receiver acknowledges a frame once it holds it, and holds it until
// input_io has room, so a slow reader stops the sender (output_io sleeps
// for the window) and nothing is dropped for want of room.
//
// Three files: this one (the session, the window, sending and the links'
// state), reliable_ack.c (what comes back, and the timers) and
// reliable_call.c (the system calls' side); reliable_priv.h is theirs.
#include "reliable_priv.h"
#include "slotbits.h"
#include <err.h>
#include <string.h>

static const struct rel_settings rel_defaults = {
	.hb_us = 10000, .hb_miss = 3, .skew_us = 10000, .rto_us = 200000, .dead_us = 1000000,
	.ack_every = 32, .ack_us = 1000, .window = IO_SND_WIN,
};

// ------------------------------------------------------- setup, teardown

long rel_enable(struct io *c, bool on)
{
	if (c->x.raw)
		return -E_INVAL;
	if (c->x.rel_used)
		return -E_BUSY;
	if (on && !c->x.rel) {
		if (pmem_free_count() < IO_REL_PAGES)
			return -E_NOMEM;
		for (int i = 0; i < IO_REL_PAGES; i++)
			c->x.rhdr[i] = pmem_take();
		c->x.nrfree = IO_REL_SLOTS;
		for (int i = 0; i < IO_REL_SLOTS; i++)
			c->x.rfree[i] = (uint16_t)(IO_REL_SLOTS - 1 - i);
		memset(c->x.rret, 0, sizeof(c->x.rret));
		c->x.rs = rel_defaults;
		c->x.session = (uint32_t)(arch_rdtsc() * 2654435761u) ^ (uint32_t)(c - ios);
		if (!c->x.session)
			c->x.session = 1;
		c->x.rel = true;
		c->x.ops = &xport_reliable;
		for (int p = 0; p < IO_MAX_PEERS; p++) {
			long e = c->x.peer_valid & (1u << p) ? rel_add_peer(c, p) : 0;
			if (e) {
				rel_free(c);
				return e;
			}
		}
	} else if (!on && c->x.rel) {
		rel_free(c);
	}
	return 0;
}

long rel_set(struct io *c, uint64_t key, uint64_t val)
{
	if (!c->x.rel)
		return -E_INVAL;
	uint64_t *f[] = { NULL, &c->x.rs.hb_us, &c->x.rs.hb_miss, &c->x.rs.skew_us, &c->x.rs.rto_us,
			  &c->x.rs.dead_us, &c->x.rs.ack_every, &c->x.rs.ack_us, &c->x.rs.window };
	if (key == 0 || key >= sizeof(f) / sizeof(f[0]) || val == 0 || val > 100000000)
		return -E_INVAL;
	if (key == IO_SET_WINDOW && val > IO_SND_WIN)
		return -E_RANGE;
	*f[key] = val;
	return 0;
}

long rel_add_peer(struct io *c, int p)
{
	if (!c->x.rel || c->x.rp[p])
		return 0;
	long e;
	struct rel_peer *rp = xport_kzalloc(c, sizeof(*rp), &e);
	if (!rp)
		return e;
	uint64_t now = arch_rdtsc();
	for (int n = 0; n < NETDEV_MAX; n++)
		rp->l[n].last_rx = now; // a grace period: as if heard when configured
	rp->una = rp->todo = c->x.seq[p];
	c->x.rp[p] = rp;
	return 0;
}

void rel_unpin_tx(struct rel_tx *t)
{
	for (int k = 0; k < t->npages; k++)
		pmem_unpin(t->f[k]);
	t->state = REL_FREE;
}

void rel_free(struct io *c)
{
	for (int p = 0; p < IO_MAX_PEERS; p++) {
		struct rel_peer *rp = c->x.rp[p];
		if (!rp)
			continue;
		for (uint32_t s = rp->una; s != c->x.seq[p]; s++)
			if (rp->tx[s % IO_SND_WIN].state != REL_FREE)
				rel_unpin_tx(&rp->tx[s % IO_SND_WIN]);
		xport_kfree(c, rp, sizeof(*rp));
		c->x.rp[p] = NULL;
	}
	if (c->x.rel) // a slot's page a NIC still reads stays pinned: freed after it
		for (int i = 0; i < IO_REL_PAGES; i++)
			pmem_free(c->x.rhdr[i]);
	c->x.rel = false;
	if (c->x.ops == &xport_reliable)
		c->x.ops = &xport_plain;
}

// ------------------------------------------------------------ sending

// A header slot the NIC is done with. A reclaim under the kernel lock
// gives back any channel's, without the channel's lock, while the
// channel's own send may run under that lock alone (rxlock=fine):
// slotbits.h.
void rel_slot_done(struct io *c, uint32_t slot)
{
	if (c->x.rel && slot < IO_REL_SLOTS)
		slotbits_give(c->x.rret, slot);
}

// The free slots, those given back taken onto the stack first (c's lock
// held).
uint32_t rel_free_slots(struct io *c)
{
	return c->x.nrfree = slotbits_take(c->x.rret, IO_REL_SLOTS / 64, c->x.rfree, c->x.nrfree, IO_REL_SLOTS);
}

uint8_t *rel_slot_at(struct io *c, uint32_t slot, paddr_t *pa)
{
	uint64_t off = (uint64_t)slot * IO_REL_SLOT;
	*pa = c->x.rhdr[off / PAGE_SIZE] + off % PAGE_SIZE;
	return arch_p2v(*pa);
}

// A peer named by node beyond a relay (relay.c) gets the route flag here
// and the trailer after the payload: the first relay's MACs are its.
void rel_put_header(struct io *c, uint8_t *h, int p, int n, uint16_t flags, uint32_t seq, uint32_t len)
{
	wire_put_eth(h, c->x.peer[p][n], netdev_get(n)->mac);
	flags |= relay_flag(c, (uint64_t)p);
	wire_put_hdr(h, &(struct wire_fields){ .channel = c->channel, .flags = flags, .seq = seq,
					       .batch = session_tag(c->x.session), .link = (uint16_t)n,
					       .len = len });
}

static uint32_t wire_bytes(const struct rel_tx *t) { return WIRE_FRAME_HLEN + t->size; }

// The next live link to peer p whose paced wire still has budget[n] for
// `bytes` now; -1 when none.
static int pick_link(struct io *c, int p, int64_t *budget, uint32_t bytes)
{
	struct rel_peer *rp = c->x.rp[p];
	for (int k = 0; k < NETDEV_MAX; k++) {
		int n = (c->x.rr[p] + k) % NETDEV_MAX;
		if (!known(c, p, n) || rp->l[n].state != IO_LINK_UP || lb_skip(c, p, n))
			continue;
		int64_t cost = (int64_t)shaper_cost(n, bytes);
		if (budget[n] < cost)
			continue;
		budget[n] -= cost;
		c->x.rr[p] = (uint8_t)(n + 1);
		return n;
	}
	return -1;
}

struct relq {
	uint8_t peer, nic;
	uint16_t slot;
	uint32_t seq;
};

// pump's scratch, a CPU's: pump runs under its channel's lock (or the
// kernel lock), so with interrupts off, and neither sleeps nor nests.
static struct relq q_of[MAXCPU][IO_MAX_BATCH], order_of[MAXCPU][IO_MAX_BATCH];

// Sends what waits to be sent (never sent, or lost), oldest first per
// peer, on the peer's live links in turn, as much as each paced wire and
// ring take now, one doorbell per NIC, at most max packets. Never sleeps.
void rel_pump_upto(struct io *c, int max)
{
	int64_t budget[NETDEV_MAX];
	int cnt[NETDEV_MAX] = { 0 }, nq = 0;
	uint64_t now = arch_rdtsc();
	struct relq *q = q_of[arch_cpu_id()], *order = order_of[arch_cpu_id()];
	rel_free_slots(c);
	for (int n = 0; n < NETDEV_MAX; n++)
		budget[n] = shaper_budget(n, now);
	for (int p = 0; p < IO_MAX_PEERS && nq < max; p++) {
		struct rel_peer *rp = c->x.rp[p];
		if (!rp || rp->closed) // nobody there to take it
			continue;
		bool prefix = true;
		for (uint32_t s = rp->todo; s != c->x.seq[p] && nq < max && c->x.nrfree > (uint32_t)nq; s++) {
			struct rel_tx *t = &rp->tx[s % IO_SND_WIN];
			if (t->state != REL_TODO) {
				if (prefix)
					rp->todo = s + 1;
				continue;
			}
			prefix = false;
			int n = pick_link(c, p, budget, wire_bytes(t));
			if (n < 0)
				break;
			q[nq++] = (struct relq){ .peer = (uint8_t)p, .nic = (uint8_t)n, .seq = s };
			cnt[n]++;
		}
	}
	if (!nq)
		return;
	int first[NETDEV_MAX + 1] = { 0 }, at[NETDEV_MAX];
	for (int n = 0; n < NETDEV_MAX; n++)
		first[n + 1] = first[n] + cnt[n], at[n] = first[n];
	struct netpkt *pk = c->x.tx->pkts;
	for (int i = 0; i < nq; i++) {
		struct relq *e = &q[i];
		struct rel_tx *t = &c->x.rp[e->peer]->tx[e->seq % IO_SND_WIN];
		paddr_t hpa;
		e->slot = c->x.rfree[--c->x.nrfree];
		rel_put_header(c, rel_slot_at(c, e->slot, &hpa), e->peer, e->nic, (uint16_t)(WIRE_F_STRIPE | t->flags),
			   e->seq, t->size);
		struct netpkt *p = &pk[at[e->nic]];
		order[at[e->nic]++] = *e;
		p->nseg = 0;
		p->seg[p->nseg++] = (struct netseg){ hpa, WIRE_FRAME_HLEN };
		uint32_t left = t->size, off = t->off;
		for (int k = 0; left; k++) {
			uint32_t len = PAGE_SIZE - off < left ? PAGE_SIZE - off : left;
			p->seg[p->nseg++] = (struct netseg){ t->f[k] + off, len };
			left -= len, off = 0;
		}
		if (relay_flag(c, e->peer)) // the route trailer, in the slot's second half
			relay_trailer(c, e->peer, arch_p2v(hpa + IO_REL_SLOT / 2), hpa + IO_REL_SLOT / 2, p);
		p->cookie = txb_cookie_rel(c, e->slot);
	}
	for (int n = 0; n < NETDEV_MAX; n++) {
		if (!cnt[n])
			continue;
		txb_lock(n);
		int k = shaper_take(n, pk + first[n], cnt[n]), r = 0;
		if (k > 0) {
			struct netdev *nd = netdev_get(n);
			r = nd->ops->tx_batch(nd, pk + first[n], k);
			if (r < 0)
				r = 0;
			if (r > 0)
				c->st.tx_doorbells++;
		}
		for (int i = r; i < k; i++) // not on the wire
			shaper_undo(n, &pk[first[n] + i]);
		txb_unlock(n);
		uint64_t lb_bytes = 0;
		for (int i = 0; i < cnt[n]; i++) {
			struct relq *e = &order[first[n] + i];
			struct rel_peer *rp = c->x.rp[e->peer];
			struct rel_tx *t = &rp->tx[e->seq % IO_SND_WIN];
			if (i >= r) { // not on the wire: stays to be sent
				rel_slot_done(c, e->slot);
				if (seq_before(e->seq, rp->todo))
					rp->todo = e->seq;
				continue;
			}
			struct rel_link *l = &rp->l[n];
			t->state = REL_FLIGHT, t->link = (uint8_t)n, t->lsn = l->lsn_next++, t->sent = now;
			l->last_tx = now;
			l->sent++;
			c->st.link_tx[n]++;
			lb_bytes += wire_bytes(t);
			if (t->first) {
				t->first = 0;
				if (c->x.call_left)
					c->x.call_left--;
			} else {
				t->rtx++;
				l->retransmitted++;
				c->st.tx_retransmits++;
			}
		}
		if (lb_bytes) // a balanced channel's volume, counted once a doorbell
			lb_sent(c, n, lb_bytes);
	}
}

void rel_pump(struct io *c) { rel_pump_upto(c, IO_MAX_BATCH); }

// Whatever was in flight on link n to p goes to the other links.
static void requeue_link(struct io *c, int p, int n)
{
	struct rel_peer *rp = c->x.rp[p];
	for (uint32_t s = rp->una; s != c->x.seq[p]; s++) {
		struct rel_tx *t = &rp->tx[s % IO_SND_WIN];
		if (t->state == REL_FLIGHT && t->link == n) {
			t->state = REL_TODO;
			if (seq_before(s, rp->todo))
				rp->todo = s;
		}
	}
}

// From the first packet link n lost (the oldest in flight on it), or from
// the last frame heard on it when nothing was in flight.
static uint64_t lost_since(struct io *c, int p, int n)
{
	struct rel_peer *rp = c->x.rp[p];
	for (uint32_t s = rp->una; s != c->x.seq[p]; s++) {
		struct rel_tx *t = &rp->tx[s % IO_SND_WIN];
		if (t->state == REL_FLIGHT && t->link == n)
			return t->sent;
	}
	return rp->l[n].last_rx;
}

// Link and session lines: a process's channels and a peer's frames cause
// them, so they are limited (a cut of a few links stays well within).
struct klimit rel_log = KLIMIT("rel", 64, 20);

static const char *const why_name[] = { "link down", "silent: heartbeats missed", "probe unanswered" };

void rel_link_dead(struct io *c, int p, int n, int why)
{
	struct rel_peer *rp = c->x.rp[p];
	struct rel_link *l = &rp->l[n];
	uint64_t now = arch_rdtsc(), since = lost_since(c, p, n);
	l->last_detect_us = since < now ? tsc_us(now - since) : 0;
	l->state = IO_LINK_DEAD;
	l->dead_at = now;
	l->probe = l->hb + 1; // an echo of a heartbeat sent from now on
	l->dead++;
	c->st.link_deaths++;
	requeue_link(c, p, n);
	if (klimit_take(&rel_log, 1))
		pr_info("io: chan %u peer %d link %d dead (%s), detected in %lu us, tsc_ms=%lu\n", c->channel, p,
			n, why_name[why], l->last_detect_us, tsc_ms());
}

void rel_link_suspect(struct io *c, int p, int n, uint64_t lag)
{
	struct rel_link *l = &c->x.rp[p]->l[n];
	uint64_t now = arch_rdtsc(), since = lost_since(c, p, n);
	l->last_detect_us = since < now ? tsc_us(now - since) : 0;
	l->state = IO_LINK_SUSPECT;
	l->suspected++;
	l->probe = l->hb + 1;
	l->probe_at = arch_rdtsc();
	c->st.link_suspects++;
	requeue_link(c, p, n);
	if (klimit_take(&rel_log, 1))
		pr_info("io: chan %u peer %d link %d suspected (lags %lu us), detected in %lu us, tsc_ms=%lu\n",
			c->channel, p, n, tsc_us(lag), l->last_detect_us, tsc_ms());
	rel_send_ctrl(c, p, n, true, WIRE_C_PROBE);
}

void rel_link_up_again(struct io *c, int p, int n)
{
	struct rel_peer *rp = c->x.rp[p];
	struct rel_link *l = &rp->l[n];
	uint64_t now = arch_rdtsc();
	if (l->state == IO_LINK_DEAD) {
		l->recovered++;
		c->st.link_recoveries++;
		l->last_down_us = tsc_us(now - l->dead_at);
		if (l->last_down_us > l->max_down_us)
			l->max_down_us = l->last_down_us;
		if (klimit_take(&rel_log, 1))
			pr_info("io: chan %u peer %d link %d alive again after %lu ms, tsc_ms=%lu\n", c->channel, p,
				n, l->last_down_us / 1000, tsc_ms());
	}
	l->state = IO_LINK_UP;
	l->last_rx = now;
	rp->all_dead_since = 0;
	rp->reported = false;
}

// ------------------------------------------------------- the ops table

static uint32_t rel_check(struct io *c, const uint64_t *peers, const uint64_t *sizes, uint32_t n, long *err)
{
	for (uint32_t i = 0; i < n; i++) {
		*err = peers[i] >= IO_MAX_PEERS || !(c->x.peer_valid & (1u << peers[i])) ? -E_NOENT
		       : sizes[i] > WIRE_MAX_PAYLOAD ? -E_2BIG : 0;
		if (*err)
			return i;
	}
	return n;
}

// Whatever links are up: the window waits for one (rel_send).
static long rel_check_call(struct io *c) { return (void)c, 0; }

static uint64_t rel_deadline(struct io *c)
{
	uint64_t gap = stripe_gap_deadline(c), dead = rel_dead_deadline(c);
	return gap && (!dead || gap < dead) ? gap : dead;
}

static void rel_stats(struct io *c, struct io_stats *s) { s->reliable = c->x.rel; }

const struct xport_ops xport_reliable = {
	.name = "reliable", .check = rel_check, .check_call = rel_check_call, .send = rel_send,
	.input = rel_input, .tick = rel_tick, .settle = rel_settle, .next = rel_next,
	.deadline = rel_deadline, .report = rel_dead_report, .close = rel_linger, .stats = rel_stats,
};
