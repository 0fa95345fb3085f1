// The transmit batch: a send's packets for one NIC go to its ring with one
// doorbell (more when the shaper holds them back or the ring fills), and the
// NICs' completions come back here (reclaim), whichever channel or the
// relay they belong to. The packet cookie's one layout is here
// (txbatch.h).
#include "txbatch.h"
#include "shaper.h"
#include "balance.h"
#include "relay.h"
#include "reliable.h"
#include "../res/io_priv.h"
#include "../res/pmem.h"
#include "../res/proc.h"
#include "../kprintf.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

static int txb_sleep; // what a sender waiting for a ring or the wire sleeps on


_Static_assert(NIO < TXB_RELAY_TAG, "a channel index is never the relay's tag");

uint64_t txb_cookie(const struct io *c) { return (uint64_t)c->h.gen << 8 | (uint64_t)(c - ios); }

uint64_t txb_cookie_rel(const struct io *c, uint32_t slot)
{
	return 1ull << 63 | (uint64_t)c->h.gen << 24 | (uint64_t)slot << 8 | (uint64_t)(c - ios);
}

uint64_t txb_cookie_relay(uint32_t slot) { return (uint64_t)slot << 8 | TXB_RELAY_TAG; }

static void tx_done(uint64_t cookie, void *arg)
{
	(void)arg;
	bool rel = cookie >> 63;
	if (!rel && (cookie & 0xff) == TXB_RELAY_TAG)
		return relay_done((uint32_t)(cookie >> 8));
	struct io *c = (cookie & 0xff) < NIO ? &ios[cookie & 0xff] : NULL;
	if (!c || !c->h.used)
		return;
	if (rel) { // a reliable channel's header slot
		if (c->h.gen == (uint32_t)(cookie >> 24))
			rel_slot_done(c, (uint32_t)(cookie >> 8) & 0xffff);
	} else if (c->h.gen == (uint32_t)(cookie >> 8) && c->x.inflight) {
		c->x.inflight--;
	}
}

// Packets each NIC has reported finished, whoever collected them: a
// sender waiting for room, or another CPU's idle loop (xport_idle) while
// that sender sleeps.
static uint64_t nic_done[NETDEV_MAX];

int txb_reclaim_nic(int nic)
{
	struct netdev *nd = netdev_at(nic);
	int n = nd->ops->tx_reclaim(nd, tx_done, NULL);
	if (n > 0)
		nic_done[nic] += (uint64_t)n;
	return n;
}

// Every NIC of c (a NIC's completions, whichever channels they are).
static int reclaim_all(struct io *c)
{
	int n = 0;
	IO_FOR_EACH_NIC(c, k)
		n += txb_reclaim_nic(k);
	return n;
}

void txb_reclaim(struct io *c) { reclaim_all(c); }

// What a sender waits for: nothing of c in flight (idle), or room in
// nic's ring, which any completion there since `since` (nic_done before
// the send that found the ring full) made, whoever collected it.
struct txwait {
	bool (*done)(struct io *c, const struct txwait *w);
	int nic;
	uint64_t since;
};

// Waits for the NIC: first spinning (interrupts are off meanwhile), at most
// IO_TX_WAIT_US; then, from a system call (may_sleep), sleeping a timer
// tick at a time between tries, up to IO_TX_SLEEP_US more, while other
// processes run and timers fire. QEMU's e1000 finishes a batch inside the
// doorbell write; its virtio-net later, from its main loop, which a busy
// host can delay for many milliseconds; a real NIC at 1 Gbit/s sends a
// 128-packet batch of 8960 bytes in about 9 ms. While the sender sleeps,
// another CPU's idle loop may collect the completions it waits for: what
// it waits for is read from the channel and the ring's count, never from
// what its own reclaim found.
static bool tx_wait(struct io *c, const struct txwait *w, bool may_sleep)
{
	uint64_t now = arch_rdtsc(), spin_end = now + timer_us_to_tsc(IO_TX_WAIT_US);
	uint64_t end = may_sleep ? spin_end + timer_us_to_tsc(IO_TX_SLEEP_US) : spin_end;
	for (;;) {
		reclaim_all(c);
		if (w->done(c, w))
			return true;
		now = arch_rdtsc();
		if (now > end)
			return false;
		if (now < spin_end) {
			arch_pause();
		} else {
			c->st.tx_ring_sleeps++;
			io_sleep(c, &txb_sleep, now + 1); // the next tick
		}
	}
}

static bool idle(struct io *c, const struct txwait *w) { return (void)w, c->x.inflight == 0; }
static bool room(struct io *c, const struct txwait *w) { return (void)c, nic_done[w->nic] != w->since; }

// Header slots are reused per call: wait (bounded) until the NIC is done
// with the previous batch. Spins only: also called as a process exits.
bool txb_idle(struct io *c) { return tx_wait(c, &(struct txwait){ .done = idle }, false); }

// Queues what nic's wire takes now of g; false when it took nothing.
static bool send_some(struct io *c, int nic, struct txgroup *g)
{
	struct netdev *nd = netdev_at(nic);
	int k = shaper_take(nic, g->p + g->done, g->n - g->done);
	if (!k)
		return false;
	struct txwait w = { .done = room, .nic = nic, .since = nic_done[nic] };
	int r = nd->ops->tx_batch(nd, g->p + g->done, k);
	if (r < 0) {
		g->stuck = true, g->err = r;
		return false;
	}
	for (int i = r; i < k; i++) // the ring was full: what it did not take is not on the wire
		shaper_undo(nic, &g->p[g->done + i]);
	c->x.inflight += (uint32_t)r;
	g->done += r;
	c->st.link_tx[nic] += (uint64_t)r;
	for (int i = 0; c->x.lb_slot >= 0 && i < r; i++) // a balanced channel's volume
		for (int k = 0; k < g->p[g->done - r + i].nseg; k++)
			lb_sent(c, nic, g->p[g->done - r + i].seg[k].len);
	if (r > 0)
		c->st.tx_doorbells++;
	else if (!tx_wait(c, &w, true)) // the ring is full (of any channel's packets)
		g->stuck = true;
	return r > 0;
}

// Sends every group, the NICs in turns: each takes what its (paced) wire
// takes now, with one doorbell; when no NIC can take more, the sender
// sleeps until the first paced queue has room. Unpaced, one turn does it.
void txb_send_groups(struct io *c, struct txgroup *g)
{
	for (;;) {
		bool left = false, moved = false;
		uint64_t wake = 0;
		for (int n = 0; n < io_nic_top(c); n++) {
			if (g[n].done == g[n].n || g[n].stuck)
				continue;
			moved |= send_some(c, n, &g[n]);
			if (g[n].done == g[n].n || g[n].stuck)
				continue;
			left = true;
			if (shaper_paced(n) && (!wake || shaper_room_at(n) < wake))
				wake = shaper_room_at(n);
		}
		if (!left)
			return;
		if (!moved && wake) {
			c->st.tx_pace_waits++;
			io_sleep(c, &txb_sleep, wake);
		}
	}
}

// A send's header slots are free again: the NIC is done with the previous
// batch (spinning, then from a system call sleeping; bounded).
bool txb_wait_idle(struct io *c) { return tx_wait(c, &(struct txwait){ .done = idle }, true); }
