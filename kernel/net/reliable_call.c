// The reliable transport's system-call side: output_io's checks and send
// (a peer's goodbye, the window), input_io's reports (a dead peer, a
// hole), the linger at close, and the per-link counters.
#include "reliable_priv.h"
#include <err.h>
#include <string.h>

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
		if (!rel_bye_settled(c, p, arch_rdtsc())) {
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
		if (io_relock(c)) { // a call without the kernel lock sleeps under it: test again
			c->st.tx_relocked_calls++;
			continue;
		}
		io_sleep(c, c->x.tx, arch_rdtsc() + us_tsc(1000));
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
	// on a saturated card. Every packet is the channel's now (numbered,
	// pinned until acknowledged): a call whose NICs then take nothing for
	// dead_us returns its count all the same, the rest still queued, since
	// -E_LINK would tell the caller nothing was (and it would write their
	// slots again while they are still to go).
	uint64_t last = arch_rdtsc();
	for (uint32_t left = c->x.call_left;;) {
		rel_pump(c);
		if (!c->x.call_left)
			break;
		if (bye_check(c, need) < 0)
			return -E_LINK; // what is left of the call went with the peer's queue
		if (c->x.call_left < left)
			left = c->x.call_left, last = arch_rdtsc();
		else if (arch_rdtsc() - last > dead) {
			c->st.tx_stalled_calls++; // they go when a NIC or link comes back
			c->x.call_left = 0;
			break;
		}
		uint64_t wake = arch_rdtsc() + us_tsc(1000);
		for (int n = 0; n < NETDEV_MAX; n++)
			if ((c->nicmask & (1u << n)) && shaper_paced(n) && shaper_room_at(n) < wake)
				wake = shaper_room_at(n);
		if (io_relock(c)) { // as above
			c->st.tx_relocked_calls++;
			continue;
		}
		c->st.tx_pace_waits++;
		io_sleep(c, c->x.tx, wake);
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
		uint64_t at = rel_report_at(c, p);
		if (at && (!first || at < first))
			first = at;
	}
	return first;
}

long rel_dead_report(struct io *c)
{
	uint64_t now = arch_rdtsc();
	for (int p = 0; c->x.rel && p < IO_MAX_PEERS; p++) {
		uint64_t at = rel_report_at(c, p);
		if (!at || now < at)
			continue;
		struct rel_peer *rp = c->x.rp[p];
		rp->reported = true;
		c->st.dead_peer = (uint64_t)p;
		if (rp->closed) {
			rel_bye_settled(c, p, now);
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
		rel_pump(c);
		io_sleep(c, c->x.tx, arch_rdtsc() + us_tsc(1000));
	}
	for (int p = 0; p < IO_MAX_PEERS; p++)
		for (int n = 0; c->x.rp[p] && c->x.rp[p]->session && n < NETDEV_MAX; n++)
			if (known(c, p, n) && nic_up(n))
				rel_send_ctrl(c, p, n, false, WIRE_C_BYE);
	// The goodbyes and the last acknowledgements leave before the header
	// pool is freed (a NIC that sends later, virtio-net, would otherwise
	// keep its pages pinned past the close: they would come back late).
	end = arch_rdtsc() + us_tsc(100000);
	for (txb_reclaim(c); rel_free_slots(c) < IO_REL_SLOTS && arch_rdtsc() < end; txb_reclaim(c))
		io_sleep(c, c->x.tx, arch_rdtsc() + us_tsc(1000));
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
