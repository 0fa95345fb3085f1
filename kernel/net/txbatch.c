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

// A plain channel's: its header bank at bit 62 (a reliable one's has bit 63).
_Static_assert(IO_HDR_BANKS == 2, "one bit of the cookie names the bank");
uint64_t txb_cookie(const struct io *c)
{
	return (uint64_t)c->x.bank << 62 | (uint64_t)c->h.gen << 8 | (uint64_t)(c - ios);
}

uint64_t txb_cookie_rel(const struct io *c, uint32_t slot)
{
	return 1ull << 63 | (uint64_t)c->h.gen << 24 | (uint64_t)slot << 8 | (uint64_t)(c - ios);
}

uint64_t txb_cookie_relay(uint32_t slot) { return (uint64_t)slot << 8 | TXB_RELAY_TAG; }

// The live channel a plain channel's cookie names, else NULL.
static struct io *plain_of(uint64_t cookie)
{
	struct io *c = (cookie & 0xff) < NIO ? &ios[cookie & 0xff] : NULL;
	return c && !(cookie >> 63) && c->h.used && c->h.gen == (uint32_t)(cookie >> 8) ? c : NULL;
}

// A forwarded frame's (the relay's), not a channel's.
static bool relay_cookie(uint64_t cookie) { return !(cookie >> 63) && (cookie & 0xff) == TXB_RELAY_TAG; }

// The live reliable channel whose header slot a cookie names, else NULL.
static struct io *rel_of(uint64_t cookie)
{
	struct io *c = (cookie >> 63) && (cookie & 0xff) < NIO ? &ios[cookie & 0xff] : NULL;
	return c && c->h.used && c->h.gen == (uint32_t)(cookie >> 24) ? c : NULL;
}

// One packet of plain channel c less in flight, in the bank its cookie
// names (a reclaim under the kernel lock may count the same channel's as
// its unlocked sender).
static void plain_done(struct io *c, uint64_t cookie)
{
	uint32_t *n = &c->x.bank_inflight[(cookie >> 62) & 1];
	if (__atomic_load_n(n, __ATOMIC_RELAXED))
		__atomic_sub_fetch(n, 1, __ATOMIC_RELAXED);
}

// A completion, under the kernel lock: its channel's (plain: one packet
// less in flight; reliable: a header slot free), or the relay's.
static void done_locked(uint64_t cookie)
{
	if (relay_cookie(cookie))
		return relay_done((uint32_t)(cookie >> 8));
	if (!(cookie >> 63)) {
		struct io *p = plain_of(cookie);
		if (p)
			plain_done(p, cookie);
		return;
	}
	struct io *c = rel_of(cookie);
	if (c) // a reliable channel's header slot
		rel_slot_done(c, (uint32_t)(cookie >> 8) & 0xffff);
}

// Each NIC's transmit lock (LK_NICTX): its ring (tx_batch, tx_reclaim),
// its shaper, and the completions put off below. Taken only with
// rxlock=fine (nl_lock), as the receive side's: under the kernel lock
// alone the senders are one CPU's at a time.
static struct spinlock nic_tx[NETDEV_MAX];

void txb_lock(int nic) { nl_lock(&nic_tx[nic]); }
void txb_unlock(int nic) { nl_unlock(&nic_tx[nic]); }

// Completions a reclaim without the kernel lock found for another sender
// (another channel, a reliable channel's slot, the relay), kept per NIC
// for the next reclaim under the lock. A reclaim without it runs only
// while a whole ring's completions fit.
#define TXB_LATER 2048
static uint64_t later[NETDEV_MAX][TXB_LATER];
static int nlater[NETDEV_MAX];

struct reclaim {
	struct io *mine; // the channel whose call reclaims, its lock held (or NULL)
	int nic;
};

uint64_t txb_put_off;

static void tx_done(uint64_t cookie, void *arg)
{
	const struct reclaim *r = arg;
	if (nl_klocked())
		return done_locked(cookie);
	if (relay_cookie(cookie)) // the relay's: no lock of its own needed
		return relay_done((uint32_t)(cookie >> 8));
	if (r->mine && plain_of(cookie) == r->mine) { // the reclaiming call's own
		plain_done(r->mine, cookie);
		return;
	}
	if (r->mine && rel_of(cookie) == r->mine) { // its lock keeps it live; the slot's bit is atomic
		rel_slot_done(r->mine, (uint32_t)(cookie >> 8) & 0xffff);
		return;
	}
	later[r->nic][nlater[r->nic]++] = cookie;
	txb_put_off++;
}

// Packets each NIC has reported finished, whoever collected them: a
// sender waiting for room, or another CPU's idle loop (xport_idle) while
// that sender sleeps.
static uint64_t nic_done[NETDEV_MAX];

// The NIC's lock held.
static void settle_nic(int nic)
{
	for (int i = 0; i < nlater[nic]; i++)
		done_locked(later[nic][i]);
	nlater[nic] = 0;
}

static int reclaim_nic(int nic, struct io *mine)
{
	struct netdev *nd = netdev_at(nic);
	txb_lock(nic);
	if (nl_klocked()) {
		settle_nic(nic);
	} else if (nlater[nic] + nd->tx_slots > TXB_LATER) {
		txb_unlock(nic); // no room to keep what it may find: left to the lock
		return 0;
	}
	int n = nd->ops->tx_reclaim(nd, tx_done, &(struct reclaim){ .mine = mine, .nic = nic });
	if (n > 0)
		nic_done[nic] += (uint64_t)n;
	txb_unlock(nic);
	return n;
}

int txb_reclaim_nic(int nic) { return reclaim_nic(nic, NULL); }

// Every NIC of c (a NIC's completions, whichever channels they are).
static int reclaim_all(struct io *c)
{
	int n = 0;
	IO_FOR_EACH_NIC(c, k)
		n += reclaim_nic(k, c);
	return n;
}

void txb_reclaim(struct io *c) { reclaim_all(c); }

bool txb_later(const struct io *c)
{
	IO_FOR_EACH_NIC(c, n)
		if (__atomic_load_n(&nlater[n], __ATOMIC_RELAXED))
			return true;
	return false;
}

void txb_settle(uint32_t nicmask)
{
	klock_lock();
	for (int n = 0; n < netdev_count(); n++)
		if (nicmask & (1u << n)) {
			txb_lock(n);
			settle_nic(n);
			txb_unlock(n);
		}
	klock_unlock();
}

void txb_init(void)
{
	for (int n = 0; n < NETDEV_MAX; n++) {
		spin_init(&nic_tx[n], "nictx", LK_NICTX);
		nlater[n] = 0;
		nic_done[n] = 0;
	}
}

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
		} else if (io_relock(c)) { // a call without the kernel lock sleeps under it
			c->st.tx_relocked_calls++;
		} else {
			c->st.tx_ring_sleeps++;
			io_sleep(c, &txb_sleep, now + 1); // the next tick
		}
	}
}

static bool idle(struct io *c, const struct txwait *w)
{
	return (void)w, xport_inflight(&c->x) == 0;
}
static bool room(struct io *c, const struct txwait *w) { return (void)c, nic_done[w->nic] != w->since; }
static bool bank_free(struct io *c, const struct txwait *w)
{
	return (void)w, __atomic_load_n(&c->x.bank_inflight[c->x.bank], __ATOMIC_RELAXED) == 0;
}

// Nothing of c on a NIC, in either header bank (bounded; spins only: also
// called as a process exits, when the channel goes).
bool txb_idle(struct io *c) { return tx_wait(c, &(struct txwait){ .done = idle }, false); }

// Queues what nic's wire takes now of g; false when it took nothing.
static bool send_some(struct io *c, int nic, struct txgroup *g)
{
	struct netdev *nd = netdev_at(nic);
	txb_lock(nic);
	int k = shaper_take(nic, g->p + g->done, g->n - g->done);
	if (!k) {
		txb_unlock(nic);
		return false;
	}
	struct txwait w = { .done = room, .nic = nic, .since = nic_done[nic] };
	// In flight before the NIC has them: it may finish one at once, and
	// another CPU's reclaim report it before this one counts it.
	uint32_t *bank = &c->x.bank_inflight[c->x.bank];
	__atomic_add_fetch(bank, (uint32_t)k, __ATOMIC_RELAXED);
	int r = nd->ops->tx_batch(nd, g->p + g->done, k);
	__atomic_sub_fetch(bank, (uint32_t)(k - (r < 0 ? 0 : r)), __ATOMIC_RELAXED);
	for (int i = r; r >= 0 && i < k; i++) // what the ring did not take is not on the wire
		shaper_undo(nic, &g->p[g->done + i]);
	txb_unlock(nic);
	if (r < 0) {
		g->stuck = true, g->err = r;
		return false;
	}
	g->done += r;
	c->st.link_tx[nic] += (uint64_t)r;
	if (c->x.lb_slot >= 0) { // a balanced channel's volume, counted once a doorbell
		uint64_t bytes = 0;
		for (int i = 0; i < r; i++)
			for (int k = 0; k < g->p[g->done - r + i].nseg; k++)
				bytes += g->p[g->done - r + i].seg[k].len;
		if (bytes)
			lb_sent(c, nic, bytes);
	}
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
			if (io_relock(c)) { // the sleep is the kernel lock's
				c->st.tx_relocked_calls++;
				continue;
			}
			c->st.tx_pace_waits++;
			io_sleep(c, &txb_sleep, wake);
		}
	}
}

// The header bank the next call builds in is free again: the NIC is done
// with the call before the last (spinning, then from a system call
// sleeping; bounded).
bool txb_wait_bank(struct io *c) { return tx_wait(c, &(struct txwait){ .done = bank_free }, true); }
