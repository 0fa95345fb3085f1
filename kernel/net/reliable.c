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
#include "reliable.h"
#include "shaper.h"
#include "demux.h"
#include "txbatch.h"
#include "stripe.h"
#include "balance.h"
#include "plain.h"
#include "transport.h"
#include "relay.h"
#include "../res/io_priv.h"
#include "../res/pmem.h"
#include "../res/proc.h"
#include "../kprintf.h"
#include "../klimit.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

enum { REL_FREE, REL_TODO, REL_FLIGHT, REL_SACKED };

static const struct rel_settings rel_defaults = {
	.hb_us = 10000, .hb_miss = 3, .skew_us = 10000, .rto_us = 200000, .dead_us = 1000000,
	.ack_every = 32, .ack_us = 1000, .window = IO_SND_WIN,
};

static uint64_t us_tsc(uint64_t us) { return timer_us_to_tsc(us); }
static uint64_t tsc_us(uint64_t t) { return t / (tsc_hz / 1000000 ? tsc_hz / 1000000 : 1); }
// Milliseconds of the TSC (a user program's rdtsc() on the same basis).
static uint64_t tsc_ms(void) { return arch_rdtsc() / (tsc_hz / 1000 ? tsc_hz / 1000 : 1); }
// The link as the NIC's link-change interrupts last said (io.c keeps it):
// the timer tick asks it per peer and link, and a register read there is
// a device access every millisecond.
static bool nic_up(int n) { return demux_nics[n].link_up; }
static bool known(const struct io *c, int p, int n) { return c->x.peer_links[p] & (1u << n); }
static bool seq_before(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }
static uint16_t session_tag(uint32_t s) { return (uint16_t)(s | 1); }

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

static void unpin_tx(struct rel_tx *t)
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
				unpin_tx(&rp->tx[s % IO_SND_WIN]);
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

void rel_slot_done(struct io *c, uint32_t slot)
{
	if (c->x.rel && slot < IO_REL_SLOTS && c->x.nrfree < IO_REL_SLOTS)
		c->x.rfree[c->x.nrfree++] = (uint16_t)slot;
}

static uint8_t *slot_at(struct io *c, uint32_t slot, paddr_t *pa)
{
	uint64_t off = (uint64_t)slot * IO_REL_SLOT;
	*pa = c->x.rhdr[off / PAGE_SIZE] + off % PAGE_SIZE;
	return arch_p2v(*pa);
}

// A peer named by node beyond a relay (relay.c) gets the route flag here
// and the trailer after the payload: the first relay's MACs are its.
static void put_header(struct io *c, uint8_t *h, int p, int n, uint16_t flags, uint32_t seq, uint32_t len)
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

// pump's scratch (one CPU, and pump neither sleeps nor nests).
static struct relq q[IO_MAX_BATCH], order[IO_MAX_BATCH];

// Sends what waits to be sent (never sent, or lost), oldest first per
// peer, on the peer's live links in turn, as much as each paced wire and
// ring take now, one doorbell per NIC, at most max packets. Never sleeps.
static void pump_upto(struct io *c, int max)
{
	int64_t budget[NETDEV_MAX];
	int cnt[NETDEV_MAX] = { 0 }, nq = 0;
	uint64_t now = arch_rdtsc();
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
		put_header(c, slot_at(c, e->slot, &hpa), e->peer, e->nic, (uint16_t)(WIRE_F_STRIPE | t->flags),
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
		int k = cnt[n] ? shaper_take(n, pk + first[n], cnt[n]) : 0, r = 0;
		if (k > 0) {
			struct netdev *nd = netdev_get(n);
			r = nd->ops->tx_batch(nd, pk + first[n], k);
			if (r < 0)
				r = 0;
			if (r > 0)
				c->st.tx_doorbells++;
		}
		for (int i = 0; i < cnt[n]; i++) {
			struct relq *e = &order[first[n] + i];
			struct rel_peer *rp = c->x.rp[e->peer];
			struct rel_tx *t = &rp->tx[e->seq % IO_SND_WIN];
			if (i >= r) { // not on the wire: stays to be sent
				if (i < k)
					shaper_undo(n, &pk[first[n] + i]);
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
			lb_sent(c, n, wire_bytes(t));
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
	}
}

static void pump(struct io *c) { pump_upto(c, IO_MAX_BATCH); }

// A control frame to peer p on link n: our acknowledgement of what p sent
// us, and a heartbeat when hb. Skipped when no slot is free (the next one
// says the same).
static void send_ctrl(struct io *c, int p, int n, bool hb, uint8_t cflags)
{
	struct rel_peer *rp = c->x.rp[p];
	struct rel_link *l = &rp->l[n];
	if (!c->x.nrfree)
		return;
	uint8_t sack[WIRE_CTRL_SACK];
	uint16_t sb = 0;
	struct reorder *r = c->x.ro[p];
	uint32_t cum = c->x.rx_next[p];
	if (r && r->held) {
		memset(sack, 0, sizeof(sack));
		uint32_t span = seq_before(cum, r->hi) ? r->hi - cum : 0;
		if (span > WIRE_CTRL_SACK * 8)
			span = WIRE_CTRL_SACK * 8;
		for (uint32_t i = 0; i < span; i++) // cum itself too: held while input_io has no room
			if (r->f[(cum + i) % IO_RO_WIN].nbuf)
				sack[i / 8] |= (uint8_t)(1u << (i % 8)), sb = (uint16_t)(i / 8 + 1);
	}
	uint32_t slot = c->x.rfree[--c->x.nrfree];
	paddr_t pa;
	uint8_t *h = slot_at(c, slot, &pa);
	uint32_t len = wire_put_ctrl(h + WIRE_FRAME_HLEN, &(struct wire_ctrl){
		.session = c->x.session, .your_session = rp->session, .hb = hb ? ++l->hb : 0,
		.echo = l->echo, .cum = cum, .cflags = cflags, .sack_bytes = sb, .sack = sack });
	put_header(c, h, p, n, WIRE_F_STRIPE | WIRE_F_ACK | (hb ? WIRE_F_HBEAT : 0), 0, len);
	uint32_t bytes = WIRE_FRAME_HLEN + len;
	if (relay_flag(c, (uint64_t)p)) { // the route trailer right after the payload
		struct netpkt tmp = { .nseg = 0 };
		relay_trailer(c, (uint64_t)p, h + bytes, pa + bytes, &tmp);
		bytes += WIRE_RTLEN;
	}
	struct netpkt pkt = { .seg = { { pa, bytes < WIRE_MIN_FRAME ? WIRE_MIN_FRAME : bytes } }, .nseg = 1,
			      .cookie = txb_cookie_rel(c, slot) };
	struct netdev *nd = netdev_get(n);
	if (nd->ops->tx_batch(nd, &pkt, 1) != 1) {
		rel_slot_done(c, slot);
		return;
	}
	shaper_charge(n, bytes);
	c->st.tx_acks++; // a doorbell of its own, counted here (not in tx_doorbells)
	l->last_tx = arch_rdtsc();
	l->acks_sent++;
	if (hb)
		l->hb_sent++;
	rp->rx_unacked = 0;
	rp->ack_due = 0;
}

// An acknowledgement now, on the peer's live links in turn (on every link
// whose NIC is up when none is live: the sender needs it most then).
static void ack_now(struct io *c, int p)
{
	struct rel_peer *rp = c->x.rp[p];
	for (int k = 0; k < NETDEV_MAX; k++) {
		int n = (rp->ack_rr + k) % NETDEV_MAX;
		if (known(c, p, n) && rp->l[n].state == IO_LINK_UP) {
			rp->ack_rr = (uint8_t)(n + 1);
			send_ctrl(c, p, n, false, 0);
			return;
		}
	}
	for (int n = 0; n < NETDEV_MAX; n++)
		if (known(c, p, n) && nic_up(n))
			send_ctrl(c, p, n, false, 0);
}

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
static struct klimit rel_log = KLIMIT("rel", 64, 20);

static const char *const why_name[] = { "link down", "silent: heartbeats missed", "probe unanswered" };

static void link_dead(struct io *c, int p, int n, int why)
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

static void link_suspect(struct io *c, int p, int n, uint64_t lag)
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
	send_ctrl(c, p, n, true, WIRE_C_PROBE);
}

static void link_up_again(struct io *c, int p, int n)
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

// ------------------------------------------------------ acknowledgements

// Packet s of p is known received: its link's order and the skew reference.
static void note_received(struct rel_peer *rp, struct rel_tx *t)
{
	struct rel_link *l = &rp->l[t->link];
	if (t->state != REL_FLIGHT)
		return;
	if ((int32_t)(t->lsn + 1 - l->lsn_acked) > 0)
		l->lsn_acked = t->lsn + 1;
	if (t->sent > rp->newest_acked)
		rp->newest_acked = t->sent;
}

static void take_ack(struct io *c, int p, const struct wire_ctrl *w)
{
	struct rel_peer *rp = c->x.rp[p];
	uint32_t end = c->x.seq[p];
	if (seq_before(end, w->cum)) {
		c->st.drop_badctrl++; // acknowledges what was never sent
		return;
	}
	for (; seq_before(rp->una, w->cum); rp->una++) { // none when it is an old one
		struct rel_tx *t = &rp->tx[rp->una % IO_SND_WIN];
		if (t->state == REL_TODO && t->first)
			break; // never sent: cannot be received (a confused peer)
		note_received(rp, t);
		unpin_tx(t);
		c->st.tx_acked++;
	}
	if (seq_before(rp->todo, rp->una))
		rp->todo = rp->una;
	for (uint32_t i = 0; i < (uint32_t)w->sack_bytes * 8; i++) {
		uint32_t s = w->cum + i;
		if (!(w->sack[i / 8] & (1u << (i % 8))) || !seq_before(s, end) || seq_before(s, rp->una))
			continue;
		struct rel_tx *t = &rp->tx[s % IO_SND_WIN];
		if (t->state == REL_FLIGHT || (t->state == REL_TODO && !t->first)) {
			note_received(rp, t);
			t->state = REL_SACKED;
		}
	}
	// Each link delivers in order: in flight before an acknowledged one on
	// the same link means lost. The oldest in flight on a link that lags a
	// later packet acknowledged elsewhere by skew_us: the link is suspected.
	uint64_t oldest[NETDEV_MAX] = { 0 };
	for (uint32_t s = rp->una; s != end; s++) {
		struct rel_tx *t = &rp->tx[s % IO_SND_WIN];
		if (t->state != REL_FLIGHT)
			continue;
		if ((int32_t)(t->lsn - rp->l[t->link].lsn_acked) < 0) {
			t->state = REL_TODO;
			if (seq_before(s, rp->todo))
				rp->todo = s;
		} else if (!oldest[t->link] || t->sent < oldest[t->link]) {
			oldest[t->link] = t->sent;
		}
	}
	uint64_t skew = us_tsc(c->x.rs.skew_us);
	for (int n = 0; n < NETDEV_MAX; n++) {
		struct rel_link *l = &rp->l[n];
		if (!oldest[n] || l->state != IO_LINK_UP || rp->newest_acked <= oldest[n])
			continue;
		uint64_t lag = rp->newest_acked - oldest[n];
		if (lag > skew)
			link_suspect(c, p, n, lag);
		else if (tsc_us(lag) > l->max_skew_us)
			l->max_skew_us = tsc_us(lag);
	}
	proc_wakeup(c->x.tx);
}

// A peer that restarted its channel: what we had for its old session is
// gone (counted as stale), both directions start again from 0.
static void peer_restart(struct io *c, int p, uint32_t session)
{
	struct rel_peer *rp = c->x.rp[p];
	for (uint32_t s = rp->una; s != c->x.seq[p]; s++)
		if (rp->tx[s % IO_SND_WIN].state != REL_FREE) {
			unpin_tx(&rp->tx[s % IO_SND_WIN]);
			c->st.drop_stale++;
		}
	c->x.seq[p] = rp->una = rp->todo = 0;
	c->x.rx_next[p] = 0;
	c->st.drop_stale += stripe_drop_peer(c, p);
	rp->session = session;
	rp->closed = false;
	rp->reported = false;
	if (klimit_take(&rel_log, 1))
		pr_info("io: chan %u peer %d: a new session of the peer\n", c->channel, p);
}

// Peer p closed its channel: it takes nothing more (pump skips it), and
// the waiting sender and receiver look again (rel_send, input_io).
static void peer_bye(struct io *c, int p)
{
	struct rel_peer *rp = c->x.rp[p];
	rp->closed = true;
	rp->bye_at = arch_rdtsc();
	rp->reported = false;
	c->st.rx_byes++;
	proc_wakeup(c->x.tx);
}

// Peer p said goodbye: true once what was sent to it is settled, every
// packet acknowledged or dead_us after the goodbye (acknowledgements the
// goodbye overtook on another link have come by then). What is still
// unacknowledged then never will be: its frames are let go, counted.
static bool bye_settled(struct io *c, int p, uint64_t now)
{
	struct rel_peer *rp = c->x.rp[p];
	if (!rp->closed || (rp->una != c->x.seq[p] && now - rp->bye_at < us_tsc(c->x.rs.dead_us)))
		return false;
	for (; rp->una != c->x.seq[p]; rp->una++) {
		struct rel_tx *t = &rp->tx[rp->una % IO_SND_WIN];
		if (t->state != REL_FREE) {
			unpin_tx(t);
			c->st.tx_bye_lost++;
		}
	}
	rp->todo = rp->una;
	return true;
}

// When input_io must report peer p (0: not now): every link dead for
// dead_us; or its goodbye, once settled (bye_settled) and every frame it
// sent is delivered (a hole in them first: stripe_gap_deadline).
static uint64_t report_at(struct io *c, int p)
{
	struct rel_peer *rp = c->x.rp[p];
	if (!rp || !rp->session || rp->reported)
		return 0;
	if (rp->closed) {
		if (c->x.ro[p] && c->x.ro[p]->held)
			return 0;
		return rp->una == c->x.seq[p] ? rp->bye_at | 1 : rp->bye_at + us_tsc(c->x.rs.dead_us);
	}
	return rp->all_dead_since ? rp->all_dead_since + us_tsc(c->x.rs.dead_us) : 0;
}

void rel_ctrl(struct io *c, int p, int n, const uint8_t *pl, uint32_t len)
{
	struct wire_ctrl w;
	struct rel_peer *rp = c->x.rel ? c->x.rp[p] : NULL;
	if (!rp || !known(c, p, n))
		return; // not reliable here: a peer's heartbeats are ignored
	if (wire_get_ctrl(pl, len, &w) < 0) {
		c->st.drop_badctrl++;
		return;
	}
	c->st.rx_acks++;
	if (w.session != rp->session) {
		if (rp->session)
			peer_restart(c, p, w.session);
		rp->session = w.session;
	}
	struct rel_link *l = &rp->l[n];
	l->last_rx = arch_rdtsc();
	l->acks_received++;
	if (w.hb) {
		l->hb_received++;
		if ((int32_t)(w.hb - l->echo) > 0)
			l->echo = w.hb;
	}
	if (l->state != IO_LINK_UP && w.echo && (int32_t)(w.echo - l->probe) >= 0 && nic_up(n))
		link_up_again(c, p, n);
	if ((w.cflags & WIRE_C_BYE) && !rp->closed)
		peer_bye(c, p);
	if (w.cflags & WIRE_C_PROBE)
		send_ctrl(c, p, n, true, 0); // the answer
	if (!w.your_session || w.your_session == c->x.session)
		take_ack(c, p, &w);
	if (rp->closed)
		proc_wakeup(c); // input_io: the goodbye, or its deadline, may be due
	pump(c);
}

bool rel_data(struct io *c, int p, int n, uint16_t tag)
{
	struct rel_peer *rp = c->x.rel ? c->x.rp[p] : NULL;
	if (!rp)
		return true;
	if (rp->session && tag != session_tag(rp->session)) {
		c->st.drop_stale++;
		// A peer that said goodbye and came back with a new channel
		// sends no control frame before it hears from us, and we send a
		// closed peer nothing: tell it who we are (at most once a
		// heartbeat period per link), so that its next control frame
		// starts the new session here (peer_restart).
		struct rel_link *l = &rp->l[n];
		if (rp->closed && nic_up(n) && arch_rdtsc() - l->last_tx >= us_tsc(c->x.rs.hb_us))
			send_ctrl(c, p, n, true, 0);
		return false;
	}
	rp->l[n].last_rx = arch_rdtsc();
	rp->l[n].received++;
	return true;
}

// A frame came from p: acknowledge every ack_every (and a batch's last
// packet at once: the sender's frames are pinned until then), else within
// ack_us.
void rel_rx_progress(struct io *c, int p, bool now)
{
	struct rel_peer *rp = c->x.rel ? c->x.rp[p] : NULL;
	if (!rp)
		return;
	if (++rp->rx_unacked >= c->x.rs.ack_every || now)
		ack_now(c, p);
	else if (!rp->ack_due)
		rp->ack_due = arch_rdtsc() + us_tsc(c->x.rs.ack_us);
}

// --------------------------------------------------------------- time

// rx_next of p moved as input_io made room: the sender's window opens
// with the next acknowledgement, due within ack_us.
void rel_rx_moved(struct io *c, int p)
{
	struct rel_peer *rp = c->x.rel ? c->x.rp[p] : NULL;
	if (rp && !rp->ack_due)
		rp->ack_due = arch_rdtsc() + us_tsc(c->x.rs.ack_us);
}

void rel_tick(struct io *c)
{
	uint64_t now = arch_rdtsc(), hb = us_tsc(c->x.rs.hb_us), miss = hb * c->x.rs.hb_miss;
	bool todo = false;
	for (int p = 0; p < IO_MAX_PEERS; p++) {
		struct rel_peer *rp = c->x.rp[p];
		if (rp && rp->closed) { // no links to judge, nothing to send again
			bye_settled(c, p, now);
			uint64_t at = report_at(c, p);
			if (at && now >= at)
				proc_wakeup(c); // input_io reports it
			continue;
		}
		if (!rp)
			continue;
		todo |= rp->una != c->x.seq[p];
		bool live = false;
		// Silence on one link while another still hears the peer: that
		// link is dead. Silence on all of them is as likely the peer (or
		// this machine) not being run for a while by a busy host: the
		// links die only after four times as long.
		uint64_t heard = 0;
		for (int n = 0; n < NETDEV_MAX; n++)
			if (known(c, p, n) && rp->l[n].state == IO_LINK_UP && rp->l[n].last_rx > heard)
				heard = rp->l[n].last_rx;
		bool peer_quiet = now - heard > miss;
		for (int n = 0; n < NETDEV_MAX; n++) {
			if (!known(c, p, n))
				continue;
			struct rel_link *l = &rp->l[n];
			bool up = nic_up(n);
			if (!up && l->state != IO_LINK_DEAD)
				link_dead(c, p, n, 0);
			else if (l->state == IO_LINK_UP && rp->session && now - l->last_rx > (peer_quiet ? 4 * miss : miss))
				link_dead(c, p, n, 1);
			else if (l->state == IO_LINK_SUSPECT && now - l->probe_at > miss)
				link_dead(c, p, n, 2);
			if (up && rp->session && now - l->last_tx >= hb) // once the peer was heard
				send_ctrl(c, p, n, true, l->state == IO_LINK_UP ? 0 : WIRE_C_PROBE);
			live |= l->state == IO_LINK_UP;
		}
		if (!live && !rp->all_dead_since)
			rp->all_dead_since = now;
		if (rp->ack_due && now >= rp->ack_due)
			ack_now(c, p);
		// The oldest packet in flight past its timeout (doubled per retry).
		for (uint32_t s = rp->una; s != c->x.seq[p]; s++) {
			struct rel_tx *t = &rp->tx[s % IO_SND_WIN];
			if (t->state != REL_FLIGHT)
				continue;
			uint64_t rto = us_tsc(c->x.rs.rto_us) << (t->rtx < 5 ? t->rtx : 5);
			if (now - t->sent > rto) {
				t->state = REL_TODO;
				c->st.tx_rto++;
				if (seq_before(s, rp->todo))
					rp->todo = s;
			}
			break;
		}
		if (rp->all_dead_since && now - rp->all_dead_since >= us_tsc(c->x.rs.dead_us) && !rp->reported)
			proc_wakeup(c); // input_io reports it
	}
	if (todo) // the worker's share: what is left goes with the next tick or acknowledgement
		pump_upto(c, REL_TICK_BUDGET);
	if (todo || c->x.call_left)
		proc_wakeup(c->x.tx);
}

void rel_link_change(int nic, bool up)
{
	if (up)
		return; // back only when a heartbeat is answered on it
	for (int i = 0; i < NIO; i++) {
		struct io *c = &ios[i];
		if (!c->h.used || !c->x.rel || !(c->nicmask & (1u << nic)))
			continue;
		for (int p = 0; p < IO_MAX_PEERS; p++)
			if (c->x.rp[p] && known(c, p, nic) && c->x.rp[p]->l[nic].state != IO_LINK_DEAD)
				link_dead(c, p, nic, 0);
		pump(c);
	}
}

// ------------------------------------------------- the system calls' side

static bool peer_live(struct io *c, int p)
{
	for (int n = 0; n < NETDEV_MAX; n++)
		if (known(c, p, n) && c->x.rp[p]->l[n].state == IO_LINK_UP)
			return true;
	return false;
}

// A peer of the call (need[p] packets to p) that said goodbye: -E_LINK
// (counted) once it is settled, 1 while it is not yet, else 0.
static long bye_check(struct io *c, const uint32_t *need)
{
	long r = 0;
	for (int p = 0; p < IO_MAX_PEERS; p++) {
		if (!need[p] || !c->x.rp[p]->closed)
			continue;
		if (!bye_settled(c, p, arch_rdtsc())) {
			r = 1;
			continue;
		}
		c->st.dead_peer = (uint64_t)p;
		c->st.bye_links++;
		return -E_LINK;
	}
	return r;
}

long rel_send(struct io *c, const uint64_t *peers, const uint64_t *sizes, const uint64_t *pos,
		 const struct io_pktpages *frames)
{
	uint32_t need[IO_MAX_PEERS] = { 0 };
	for (uint32_t i = 0; i < c->n_out; i++)
		need[peers[i]]++;
	// A call with more packets to one peer than its window would wait for
	// room that never comes.
	for (int p = 0; p < IO_MAX_PEERS; p++)
		if (need[p] > c->x.rs.window) {
			c->st.tx_over_window++;
			return -E_2BIG;
		}
	// Room in every peer's window, and a live link to it: else wait, up to
	// dead_us with no link alive.
	uint64_t t0 = arch_rdtsc(), dead = us_tsc(c->x.rs.dead_us);
	for (;;) {
		long bye = bye_check(c, need);
		if (bye < 0)
			return bye;
		bool wait = bye > 0;
		for (int p = 0; p < IO_MAX_PEERS; p++) {
			if (!need[p])
				continue;
			struct rel_peer *rp = c->x.rp[p];
			if (rp->closed)
				continue; // bye_check's
			if (c->x.seq[p] + need[p] - rp->una > c->x.rs.window || !peer_live(c, p)) {
				wait = true;
				rp->window_waits++;
				if (!peer_live(c, p) && arch_rdtsc() - t0 > dead) {
					c->st.dead_peer = (uint64_t)p;
					return -E_LINK;
				}
			}
		}
		if (!wait)
			break;
		proc_sleep(c->x.tx, arch_rdtsc() + us_tsc(1000));
	}
	c->x.rel_used = true;
	for (uint32_t i = 0; i < c->n_out; i++) {
		int p = (int)peers[i];
		struct rel_peer *rp = c->x.rp[p];
		uint32_t s = c->x.seq[p]++;
		struct rel_tx *t = &rp->tx[s % IO_SND_WIN];
		*t = (struct rel_tx){ .off = (uint16_t)(pos[i] % PAGE_SIZE), .size = (uint16_t)sizes[i],
				      .state = REL_TODO, .first = 1,
				      .flags = i + 1 == c->n_out ? WIRE_F_LAST : 0 };
		t->npages = sizes[i] ? (uint8_t)((pos[i] % PAGE_SIZE + sizes[i] - 1) / PAGE_SIZE + 1) : 0;
		for (int k = 0; k < t->npages; k++) {
			t->f[k] = frames[i].f[k];
			pmem_pin(t->f[k]);
		}
		c->st.tx_bytes += sizes[i];
	}
	c->x.call_left = c->n_out;
	// Until each has left once: the sender blocks on a full paced wire as
	// on a saturated card.
	uint64_t last = arch_rdtsc();
	for (uint32_t left = c->x.call_left;;) {
		pump(c);
		if (!c->x.call_left)
			break;
		if (bye_check(c, need) < 0)
			return -E_LINK; // what is left of the call went with the peer's queue
		if (c->x.call_left < left)
			left = c->x.call_left, last = arch_rdtsc();
		else if (arch_rdtsc() - last > dead)
			return -E_LINK; // they stay queued and go when a link comes back
		uint64_t wake = arch_rdtsc() + us_tsc(1000);
		for (int n = 0; n < NETDEV_MAX; n++)
			if ((c->nicmask & (1u << n)) && shaper_paced(n) && shaper_room_at(n) < wake)
				wake = shaper_room_at(n);
		c->st.tx_pace_waits++;
		proc_sleep(c->x.tx, wake);
		txb_reclaim(c);
	}
	c->st.tx_packets += c->n_out;
	c->st.tx_batches++;
	return c->n_out;
}

uint64_t rel_dead_deadline(struct io *c)
{
	uint64_t first = 0;
	for (int p = 0; c->x.rel && p < IO_MAX_PEERS; p++) {
		uint64_t at = report_at(c, p);
		if (at && (!first || at < first))
			first = at;
	}
	return first;
}

long rel_dead_report(struct io *c)
{
	uint64_t now = arch_rdtsc();
	for (int p = 0; c->x.rel && p < IO_MAX_PEERS; p++) {
		uint64_t at = report_at(c, p);
		if (!at || now < at)
			continue;
		struct rel_peer *rp = c->x.rp[p];
		rp->reported = true;
		c->st.dead_peer = (uint64_t)p;
		if (rp->closed) {
			bye_settled(c, p, now);
			c->st.bye_links++;
		}
		return -E_LINK;
	}
	return 0;
}

uint64_t rel_hole_since(const struct io *c, int p, uint64_t since)
{
	const struct rel_peer *rp = c->x.rp[p];
	if (!rp || !rp->closed)
		return 0; // sent again until acknowledged
	return since > rp->bye_at ? since : rp->bye_at;
}

static bool all_acked(struct io *c)
{
	for (int p = 0; p < IO_MAX_PEERS; p++)
		if (c->x.rp[p] && c->x.rp[p]->una != c->x.seq[p] && !c->x.rp[p]->closed && peer_live(c, p))
			return false;
	return true;
}

void rel_linger(struct io *c)
{
	if (!c->x.rel)
		return;
	uint64_t end = arch_rdtsc() + us_tsc(c->x.rs.dead_us);
	while (!all_acked(c) && arch_rdtsc() < end) {
		pump(c);
		proc_sleep(c->x.tx, arch_rdtsc() + us_tsc(1000));
	}
	for (int p = 0; p < IO_MAX_PEERS; p++)
		for (int n = 0; c->x.rp[p] && c->x.rp[p]->session && n < NETDEV_MAX; n++)
			if (known(c, p, n) && nic_up(n))
				send_ctrl(c, p, n, false, WIRE_C_BYE);
	// The goodbyes and the last acknowledgements leave before the header
	// pool is freed (a NIC that sends later, virtio-net, would otherwise
	// keep its pages pinned past the close: they would come back late).
	end = arch_rdtsc() + us_tsc(100000);
	for (txb_reclaim(c); c->x.nrfree < IO_REL_SLOTS && arch_rdtsc() < end; txb_reclaim(c))
		proc_sleep(c->x.tx, arch_rdtsc() + us_tsc(1000));
}

long rel_linkstats(struct io *c, uint64_t p, struct io_linkstats *s)
{
	if (p >= IO_MAX_PEERS)
		return -E_INVAL;
	memset(s, 0, sizeof(*s));
	struct rel_peer *rp = c->x.rel ? c->x.rp[p] : NULL;
	s->session = c->x.session;
	for (int n = 0; n < 4; n++)
		s->state[n] = IO_LINK_NONE;
	if (!rp)
		return c->x.rel ? -E_NOENT : -E_INVAL;
	s->peer_session = rp->session;
	s->unacked = c->x.seq[p] - rp->una;
	s->window_waits = rp->window_waits;
	for (int n = 0; n < NETDEV_MAX && n < 4; n++) {
		const struct rel_link *l = &rp->l[n];
		if (!known(c, (int)p, n))
			continue;
		s->state[n] = l->state;
		s->sent[n] = l->sent, s->received[n] = l->received, s->retransmitted[n] = l->retransmitted;
		s->suspected[n] = l->suspected, s->declared_dead[n] = l->dead, s->recovered[n] = l->recovered;
		s->hb_sent[n] = l->hb_sent, s->hb_received[n] = l->hb_received;
		s->acks_sent[n] = l->acks_sent, s->acks_received[n] = l->acks_received;
		s->last_detect_us[n] = l->last_detect_us, s->last_down_us[n] = l->last_down_us;
		s->max_down_us[n] = l->max_down_us;
		s->max_skew_us[n] = l->max_skew_us;
	}
	return 0;
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

// A reliable channel's packet: its control packets to the protocol, its
// data (of the peer's current session) into the peer's order, then the
// acknowledgement it makes due.
static void rel_input(struct io *c, int nic, const struct pkt *f, int peer)
{
	const uint8_t *b = arch_p2v(f->buf[0]);
	uint16_t flags = wire_get_flags(b);
	if (flags & (WIRE_F_ACK | WIRE_F_HBEAT)) { // the channel's own control packet
		rel_ctrl(c, peer, nic, b + WIRE_FRAME_HLEN, wire_get_len(b));
		demux_give_back(f);
		return;
	}
	if (!rel_data(c, peer, nic, wire_get_batch(b))) {
		demux_give_back(f); // an earlier session's
		return;
	}
	c->st.link_rx[nic]++;
	stripe_order(c, peer, wire_get_seq(b), f);
	rel_rx_progress(c, peer, flags & WIRE_F_LAST);
}

static uint64_t rel_deadline(struct io *c)
{
	uint64_t gap = stripe_gap_deadline(c), dead = rel_dead_deadline(c);
	return gap && (!dead || gap < dead) ? gap : dead;
}

static void rel_stats(struct io *c, struct io_stats *s) { s->reliable = c->x.rel; }

const struct xport_ops xport_reliable = {
	.name = "reliable", .check = rel_check, .check_call = rel_check_call, .send = rel_send,
	.input = rel_input, .tick = rel_tick, .deadline = rel_deadline, .report = rel_dead_report,
	.close = rel_linger, .stats = rel_stats,
};
