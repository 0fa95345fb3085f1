// The reliable transport's receiving side and its timers: acknowledgements
// taken (what they settle, what they show lost), control frames (a peer's
// restart, its goodbye), data heard on a link, and the tick that sends
// heartbeats, suspects and buries silent links and retransmits on time.
#include "reliable_priv.h"
#include <err.h>
#include <string.h>

// ---------------------------------------------------- control frames out

// A control frame to peer p on link n: our acknowledgement of what p sent
// us, and a heartbeat when hb. Skipped when no slot is free (the next one
// says the same).
void rel_send_ctrl(struct io *c, int p, int n, bool hb, uint8_t cflags)
{
	struct rel_peer *rp = c->x.rp[p];
	struct rel_link *l = &rp->l[n];
	if (!xport_may_send()) { // the receive path without the kernel lock
		rp->ack_due = arch_rdtsc(); // rel_settle sends it as the round ends
		return;
	}
	if (!rel_free_slots(c))
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
	uint8_t *h = rel_slot_at(c, slot, &pa);
	uint32_t len = wire_put_ctrl(h + WIRE_FRAME_HLEN, &(struct wire_ctrl){
		.session = c->x.session, .your_session = rp->session, .hb = hb ? ++l->hb : 0,
		.echo = l->echo, .cum = cum, .cflags = cflags, .sack_bytes = sb, .sack = sack });
	rel_put_header(c, h, p, n, WIRE_F_STRIPE | WIRE_F_ACK | (hb ? WIRE_F_HBEAT : 0), 0, len);
	uint32_t bytes = WIRE_FRAME_HLEN + len;
	if (relay_flag(c, (uint64_t)p)) { // the route trailer right after the payload
		struct netpkt tmp = { .nseg = 0 };
		relay_trailer(c, (uint64_t)p, h + bytes, pa + bytes, &tmp);
		bytes += WIRE_RTLEN;
	}
	struct netpkt pkt = { .seg = { { pa, bytes < WIRE_MIN_FRAME ? WIRE_MIN_FRAME : bytes } }, .nseg = 1,
			      .cookie = txb_cookie_rel(c, slot) };
	struct netdev *nd = netdev_get(n);
	txb_lock(n);
	bool sent = nd->ops->tx_batch(nd, &pkt, 1) == 1;
	if (sent)
		shaper_charge(n, bytes);
	txb_unlock(n);
	if (!sent) {
		rel_slot_done(c, slot);
		return;
	}
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
void rel_ack_now(struct io *c, int p)
{
	struct rel_peer *rp = c->x.rp[p];
	for (int k = 0; k < NETDEV_MAX; k++) {
		int n = (rp->ack_rr + k) % NETDEV_MAX;
		if (known(c, p, n) && rp->l[n].state == IO_LINK_UP) {
			rp->ack_rr = (uint8_t)(n + 1);
			rel_send_ctrl(c, p, n, false, 0);
			return;
		}
	}
	for (int n = 0; n < NETDEV_MAX; n++)
		if (known(c, p, n) && nic_up(n))
			rel_send_ctrl(c, p, n, false, 0);
}

// -------------------------------------------------------- a packet in

// A reliable channel's packet: its control packets to the protocol, its
// data (of the peer's current session) into the peer's order, then the
// acknowledgement it makes due.
void rel_input(struct io *c, int nic, const struct pkt *f, int peer)
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
		rel_unpin_tx(t);
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
			rel_link_suspect(c, p, n, lag);
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
			rel_unpin_tx(&rp->tx[s % IO_SND_WIN]);
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
bool rel_bye_settled(struct io *c, int p, uint64_t now)
{
	struct rel_peer *rp = c->x.rp[p];
	if (!rp->closed || (rp->una != c->x.seq[p] && now - rp->bye_at < us_tsc(c->x.rs.dead_us)))
		return false;
	for (; rp->una != c->x.seq[p]; rp->una++) {
		struct rel_tx *t = &rp->tx[rp->una % IO_SND_WIN];
		if (t->state != REL_FREE) {
			rel_unpin_tx(t);
			c->st.tx_bye_lost++;
		}
	}
	rp->todo = rp->una;
	return true;
}

// When input_io must report peer p (0: not now): every link dead for
// dead_us; or its goodbye, once settled (bye_settled) and every frame it
// sent is delivered (a hole in them first: stripe_gap_deadline).
uint64_t rel_report_at(struct io *c, int p)
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
		rel_link_up_again(c, p, n);
	if ((w.cflags & WIRE_C_BYE) && !rp->closed)
		peer_bye(c, p);
	if (w.cflags & WIRE_C_PROBE)
		rel_send_ctrl(c, p, n, true, 0); // the answer
	if (!w.your_session || w.your_session == c->x.session)
		take_ack(c, p, &w);
	if (rp->closed)
		proc_wakeup(c); // input_io: the goodbye, or its deadline, may be due
	rel_pump(c);
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
			rel_send_ctrl(c, p, n, true, 0);
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
		rel_ack_now(c, p);
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

void rel_settle(struct io *c)
{
	uint64_t now = arch_rdtsc();
	for (int p = 0; c->x.rel && p < IO_MAX_PEERS; p++) {
		struct rel_peer *rp = c->x.rp[p];
		if (rp && !rp->closed && rp->ack_due && now >= rp->ack_due)
			rel_ack_now(c, p);
	}
}

void rel_tick(struct io *c)
{
	uint64_t now = arch_rdtsc(), hb = us_tsc(c->x.rs.hb_us), miss = hb * c->x.rs.hb_miss;
	bool todo = false;
	for (int p = 0; p < IO_MAX_PEERS; p++) {
		struct rel_peer *rp = c->x.rp[p];
		if (rp && rp->closed) { // no links to judge, nothing to send again
			rel_bye_settled(c, p, now);
			uint64_t at = rel_report_at(c, p);
			if (at && now >= at) {
				proc_wakeup(c); // input_io reports it
				rp->woke_for = at;
			}
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
				rel_link_dead(c, p, n, 0);
			else if (l->state == IO_LINK_UP && rp->session && now - l->last_rx > (peer_quiet ? 4 * miss : miss))
				rel_link_dead(c, p, n, 1);
			else if (l->state == IO_LINK_SUSPECT && now - l->probe_at > miss)
				rel_link_dead(c, p, n, 2);
			if (up && rp->session && now - l->last_tx >= hb) // once the peer was heard
				rel_send_ctrl(c, p, n, true, l->state == IO_LINK_UP ? 0 : WIRE_C_PROBE);
			live |= l->state == IO_LINK_UP;
		}
		if (!live && !rp->all_dead_since)
			rp->all_dead_since = now;
		if (rp->ack_due && now >= rp->ack_due)
			rel_ack_now(c, p);
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
		if (rp->all_dead_since && now - rp->all_dead_since >= us_tsc(c->x.rs.dead_us) && !rp->reported) {
			proc_wakeup(c); // input_io reports it
			rp->woke_for = rel_report_at(c, p);
		}
	}
	if (todo) // the worker's share: what is left goes with the next tick or acknowledgement
		rel_pump_upto(c, REL_TICK_BUDGET);
	if (todo || c->x.call_left)
		proc_wakeup(c->x.tx);
}

static uint64_t earlier(uint64_t a, uint64_t b) { return a < b ? a : b; }

// When rel_tick next has something to do, for a tickless idle: each of its
// tests above, read as the time it turns true (now: at the next tick). A
// time before the real one costs only an early wake-up; none is later.
uint64_t rel_next(struct io *c, uint64_t now)
{
	uint64_t hb = us_tsc(c->x.rs.hb_us), miss = hb * c->x.rs.hb_miss, dead = us_tsc(c->x.rs.dead_us);
	uint64_t at = c->x.call_left ? now : UINT64_MAX;
	for (int p = 0; p < IO_MAX_PEERS && at > now; p++) {
		struct rel_peer *rp = c->x.rp[p];
		if (!rp)
			continue;
		if (rp->closed) {
			uint64_t r = rel_report_at(c, p);
			if (r && r != rp->woke_for) // once woken, input_io's own deadline has it
				at = earlier(at, r);
			if (rp->una != c->x.seq[p])
				at = earlier(at, rp->bye_at + dead);
			continue;
		}
		if (rp->una != c->x.seq[p] || (rp->ack_due && rp->ack_due <= now))
			return now; // in flight: its pump and timeouts run every tick
		if (rp->ack_due)
			at = earlier(at, rp->ack_due);
		uint64_t heard = 0;
		bool live = false;
		for (int n = 0; n < NETDEV_MAX; n++)
			if (known(c, p, n) && rp->l[n].state == IO_LINK_UP && rp->l[n].last_rx > heard)
				heard = rp->l[n].last_rx;
		uint64_t quiet = now - heard > miss ? 4 * miss : miss;
		for (int n = 0; n < NETDEV_MAX; n++) {
			if (!known(c, p, n))
				continue;
			struct rel_link *l = &rp->l[n];
			bool up = nic_up(n);
			live |= l->state == IO_LINK_UP;
			if (!up && l->state != IO_LINK_DEAD)
				return now;
			if (l->state == IO_LINK_UP && rp->session)
				at = earlier(at, l->last_rx + quiet + 1); // rel_tick's tests are strict
			else if (l->state == IO_LINK_SUSPECT)
				at = earlier(at, l->probe_at + miss + 1);
			if (up && rp->session)
				at = earlier(at, l->last_tx + hb);
		}
		if (!live && !rp->all_dead_since)
			return now;
		if (rp->all_dead_since && !rp->reported && rp->all_dead_since + dead != rp->woke_for)
			at = earlier(at, rp->all_dead_since + dead);
	}
	return at;
}

void rel_link_change(int nic, bool up)
{
	if (up)
		return; // back only when a heartbeat is answered on it
	for (int i = 0; i < NIO; i++) {
		struct io *c = &ios[i];
		if (!c->h.used || !c->x.rel || !(c->nicmask & (1u << nic)))
			continue;
		io_lock(c);
		for (int p = 0; c->h.used && p < IO_MAX_PEERS; p++)
			if (c->x.rp[p] && known(c, p, nic) && c->x.rp[p]->l[nic].state != IO_LINK_DEAD)
				rel_link_dead(c, p, nic, 0);
		if (c->h.used)
			rel_pump(c);
		io_unlock(c);
	}
}
