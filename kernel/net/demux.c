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
#include "../lock.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

struct demux_nic demux_nics[NETDEV_MAX];

#define REFILL_GROUP 64

void demux_set_irq_cpu(int nic, int cpu) { demux_nics[nic].irq_cpu = cpu; }

void demux_init(void)
{
	for (int n = 0; n < NETDEV_MAX; n++) {
		spin_init(&demux_nics[n].rx, "nicrx", LK_NICRX);
		spin_init(&demux_nics[n].refl, "refill", LK_REFILL);
	}
}

// Into nic's refill list, the frame's origin mark as it is.
static void refill_add(int nic, paddr_t pa)
{
	// In the list another CPU may post it (its poll, with the NIC's lock;
	// rxlock=fine): this CPU's batch of shootdowns goes first, so no
	// translation of the page into a region it left is live anywhere once
	// the NIC writes it. Under the kernel lock alone the CPU that posts it
	// is this one, or one that runs after this one's batch was sent.
	if (demux_fine)
		tlb_batch_sync();
	struct demux_nic *ni = &demux_nics[nic];
	nl_lock(&ni->refl);
	bool full = ni->nrefill == IO_RING_MAX + PKT_MAX_BUFS;
	if (!full)
		ni->refill[ni->nrefill++] = pa;
	nl_unlock(&ni->refl);
	if (full)
		pmem_free(pa); // the ring cannot take more (pmem_free syncs the TLB)
}

// Whatever the frame held (a frame another channel took, a copied or
// dropped one), it may be anybody's: no origin mark.
void demux_refill_add(int nic, paddr_t pa)
{
	pmem_set_origin(pa, 0);
	refill_add(nic, pa);
}

void demux_give_back_marked(const struct pkt *f, uint64_t mark)
{
	for (int i = 0; i < f->nbuf; i++) {
		pmem_set_origin(f->buf[i], mark);
		refill_add(f->nic, f->buf[i]);
	}
}

void demux_give_back(const struct pkt *f) { demux_give_back_marked(f, 0); }

// Posts the collected frames to the ring; what the ring cannot take (it
// was refilled from the reserve while frames were held) goes back to pmem.
// The NIC's receive lock held.
static void flush_refill(int nic)
{
	tlb_batch_sync(); // a NIC writes into these: no stale translation left
	struct demux_nic *ni = &demux_nics[nic];
	struct netdev *nd = netdev_at(nic);
	nl_lock(&ni->refl);
	int taken = ni->nrefill ? nd->ops->rx_refill(nd, ni->refill, ni->nrefill) : 0;
	if (taken < 0)
		taken = 0;
	for (int i = taken; i < ni->nrefill; i++)
		pmem_free(ni->refill[i]);
	ni->nrefill = 0;
	nl_unlock(&ni->refl);
}

// From a channel (whose lock ranks above the NIC's): only when no other
// CPU polls the NIC, which posts them itself as its poll ends.
void demux_flush_refill(int nic)
{
	struct demux_nic *ni = &demux_nics[nic];
	if (!nl_trylock(&ni->rx))
		return;
	flush_refill(nic);
	nl_unlock(&ni->rx);
}

// Posts only a full group, or when the ring runs below half its buffers.
static void maybe_refill(int nic)
{
	struct netdev *nd = netdev_at(nic);
	if (demux_nics[nic].nrefill >= REFILL_GROUP || nd->ops->rx_free_slots(nd) >= nd->rx_slots / 2)
		flush_refill(nic);
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
		for (int j = 0; j < k; j++) { // zeroed: no byte of anybody's in them
			pmem_set_origin(f[j], PMEM_ORIGIN_ZEROED);
			refill_add(nic, f[j]);
		}
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

// The receive path runs without the kernel lock on a further CPU's idle
// poll (demux_poll_nolock): what needs the lock is put off to the end of
// the poll round (settle): a reliable channel's control frame (it settles
// sends, wakes senders), the
// remap of held packets into a waiting batch and the acknowledgements made
// due. Per CPU: the channels handed packets, the NICs with frames put off.
static uint32_t settle_chans[MAXCPU];
static uint8_t settle_nics[MAXCPU];

uint64_t demux_unlocked, demux_settles;

// Keeps f for settle; false when the list is full (the frame is dropped).
static bool put_off(int nic, const struct pkt *f)
{
	struct demux_nic *ni = &demux_nics[nic];
	if (ni->nlater == DEMUX_LATER)
		return false;
	ni->later[ni->nlater++] = *f;
	settle_nics[arch_cpu_id()] |= (uint8_t)(1u << nic);
	return true;
}

// The channel of a frame, locked; NULL when none is (or no longer).
static struct io *channel_locked(int nic, uint16_t chan)
{
	struct io *c = channel_of(nic, chan);
	if (!c)
		return NULL;
	io_lock(c);
	if (c->h.used && !c->x.raw && (c->nicmask & (1u << nic)) && c->channel == chan)
		return c;
	io_unlock(c);
	return NULL;
}

// Checks a whole frame and hands it to its channel. Returns the drop
// counter to bump, or NULL when the frame was taken (or put off).
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
	bool nolock = !nl_klocked();
	if (nolock)
		__atomic_add_fetch(&demux_unlocked, 1, __ATOMIC_RELAXED);
	uint32_t src = RT_NONE; // a routed frame's origin
	if ((flags & WIRE_F_ROUTE) && relay_rx(f, len, &src))
		return NULL; // forwarded, or dropped and counted by the relay
	struct io *c = channel_locked(nic, wire_get_channel(b));
	if (!c)
		return &ni->drop_nochan;
	if (nolock && c->x.rel && (flags & (WIRE_F_ACK | WIRE_F_HBEAT))) {
		io_unlock(c);
		return put_off(nic, f) ? NULL : &ni->drop_later;
	}
	if (nolock && io_settles(c))
		settle_chans[arch_cpu_id()] |= 1u << (c - ios);
	if (!(flags & WIRE_F_STRIPE)) { // in order as it comes: straight to the sink
		c->st.link_rx[nic]++;
		io_take(c, f);
		io_unlock(c);
		return NULL;
	}
	int peer = src != RT_NONE ? peer_by_node(c, src) : peer_by_mac(c, b + WIRE_OFF_SRC);
	if (peer < 0) {
		c->st.drop_nopeer++; // no order to put it in
		io_unlock(c);
		demux_give_back(f);
		return NULL;
	}
	c->x.ops->input(c, nic, f, peer);
	io_unlock(c);
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

// Takes up to max buffers from the NIC; returns how many it had. The
// NIC's receive lock held.
static int drain_some(int nic, int max)
{
	struct netdev *d = netdev_at(nic);
	struct rxfrag fr[64];
	int n = d->ops->rx_poll(d, fr, max < 64 ? max : 64);
	__atomic_add_fetch(&demux_taken, (uint64_t)n, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		take_fragment(nic, &fr[i]);
	relay_flush(); // what the relay forwarded from them: one doorbell per NIC
	maybe_refill(nic);
	return n;
}

// The end of a lock-free poll round, under the kernel lock: the frames put
// off, then each channel handed packets (io_settle). No lock held.
static void settle(void)
{
	int me = arch_cpu_id();
	uint32_t chans = settle_chans[me];
	uint8_t nics = settle_nics[me];
	if (!chans && !nics)
		return;
	settle_chans[me] = 0, settle_nics[me] = 0;
	tlb_batch_sync(); // what its remaps changed is flushed before any wake-up
	klock_lock();
	demux_settles++;
	for (uint32_t m = nics; m; m &= m - 1) {
		int nic = __builtin_ctz(m);
		struct demux_nic *ni = &demux_nics[nic];
		nl_lock(&ni->rx);
		for (int i = 0; i < ni->nlater; i++) {
			uint64_t *drop = dispatch(nic, &ni->later[i], false);
			if (drop) {
				(*drop)++;
				demux_give_back(&ni->later[i]);
			}
		}
		ni->nlater = 0;
		relay_flush();
		nl_unlock(&ni->rx);
	}
	for (uint32_t m = chans; m; m &= m - 1) {
		struct io *c = &ios[__builtin_ctz(m)];
		io_lock(c);
		if (c->h.used)
			io_settle(c);
		io_unlock(c);
	}
	klock_unlock();
}

// Takes up to budget buffers from the NIC; true when it may have more.
// The NIC's receive lock held; without the kernel lock, each 64 buffers'
// round is settled before the next (the lock let go meanwhile), so what
// is held for a waiting batch stays within a round's.
static bool drain(int nic, int budget)
{
	for (int n; budget > 0; budget -= n) {
		n = drain_some(nic, budget < 64 ? budget : 64);
		if (!nl_klocked()) {
			nl_unlock(&demux_nics[nic].rx);
			settle();
			nl_lock(&demux_nics[nic].rx);
		}
		if (n == 0)
			return false;
	}
	return true;
}

static void set_polling(int nic, bool on)
{
	demux_nics[nic].polling = on;
	netdev_at(nic)->ops->rx_irq(netdev_at(nic), !on);
}

bool demux_irq_wait;
bool demux_fine;

__attribute__((noinline, cold)) void nl_lock_fine(struct spinlock *l) { spin_lock(l); }
__attribute__((noinline, cold)) void nl_unlock_fine(struct spinlock *l) { spin_unlock(l); }

// Counted for each channel whose batch waits on nic (io_stats.rx_rearms).
static void count_rearm(int nic)
{
	for (int i = 0; i < NIO; i++)
		if (ios[i].h.used && (ios[i].nicmask & (1u << nic)) && io_waiting(&ios[i]))
			__atomic_add_fetch(&ios[i].st.rx_rearms, 1, __ATOMIC_RELAXED);
}

// A budget that ran out leaves the NIC polled (its interrupt masked) for
// the worker's next run, as NAPI keeps a device on its poll list. An empty
// ring ends polling once no batch waits (poll=irq: at once): the interrupt
// is unmasked and the ring drained once more, so a frame that came in
// between is not left waiting for the next one. The NIC's receive lock held.
static bool poll_budget(int nic, int budget)
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
		flush_refill(nic); // between batches the ring gets everything back
	if (!demux_nics[nic].polling)
		return false;
	if (waits)
		count_rearm(nic);
	set_polling(nic, false);
	// A driver that finds frames pending as it unmasks (virtio-net) has
	// signalled them from inside: masked again and polled (demux_rx_ready).
	// Then it stays polled even when this drain empties the ring, for its
	// interrupt is off: said "not polling", the idle CPU would halt with
	// nothing to wake it for the next frame.
	if (drain(nic, budget) || demux_nics[nic].polling) {
		if (!demux_nics[nic].polling)
			set_polling(nic, true);
		return true;
	}
	if (!waits)
		flush_refill(nic);
	return false;
}

bool demux_poll_nic_budget(int nic, int budget)
{
	nl_lock(&demux_nics[nic].rx);
	bool more = poll_budget(nic, budget);
	nl_unlock(&demux_nics[nic].rx);
	return more;
}

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
			__atomic_add_fetch(&ios[i].st.rx_irqs, 1, __ATOMIC_RELAXED);
	// A driver that finds frames pending as it unmasks (virtio-net) calls
	// this from set_polling, the NIC's lock held already.
	struct spinlock *l = &demux_nics[nic].rx;
	bool mine = !demux_fine || spin_held_by_me(l);
	if (!mine)
		spin_lock(l);
	d->ops->rx_irq(d, false);
	demux_nics[nic].polling = true; // the worker polls it (worker.c)
	if (!mine)
		spin_unlock(l);
}

// Without the kernel lock, a NIC whose interrupt goes to another CPU
// running no process is that CPU's: it takes the NIC's frames in its idle
// loop, and into a batch whose region its caller alone has it puts them
// itself, so each NIC's receive work stays on its own CPU (one core per
// NIC). The NIC is not the caller's to drain as well.
static bool left_to_its_cpu(int nic)
{
	int c = demux_nics[nic].irq_cpu;
	return !nl_klocked() && c != arch_cpu_id() && proc_cpu_free(c);
}

// A striped channel's links are drained in turns of a few buffers each,
// so frames striped over them come nearly in order (the reorder window
// then holds few), then each NIC until it is empty. A NIC another
// CPU is polling is left to it: its frames come in from there (the caller
// would only wait for that CPU's round, holding the kernel lock that the
// round ends with); so is one whose interrupt goes to another free CPU
// when the caller runs without the kernel lock (left_to_its_cpu). c's
// lock not held.
void demux_poll_channel(struct io *c)
{
	if (stripe_active(c)) {
		for (int any = 1; any;) {
			any = 0;
			IO_FOR_EACH_NIC(c, n) {
				if (left_to_its_cpu(n) || !nl_trylock(&demux_nics[n].rx))
					continue;
				any |= drain_some(n, 8) > 0;
				nl_unlock(&demux_nics[n].rx);
			}
		}
	}
	IO_FOR_EACH_NIC(c, n) {
		if (left_to_its_cpu(n) || !nl_trylock(&demux_nics[n].rx))
			continue;
		poll_budget(n, INT32_MAX);
		nl_unlock(&demux_nics[n].rx);
	}
}

void demux_flush_idle(uint32_t nicmask)
{
	for (int n = 0; n < netdev_count(); n++)
		if ((nicmask & (1u << n)) && demux_nics[n].nrefill && !someone_waits(n)) {
			nl_lock(&demux_nics[n].rx);
			flush_refill(n);
			nl_unlock(&demux_nics[n].rx);
		}
}

// Each polled NIC no other CPU is polling now (that one takes its frames).
// True while any NIC stays polled, the busy ones included: their interrupt
// is masked, and the CPU polling one now may leave it polled and sleep
// (a system call's poll): this CPU must not halt meanwhile.
bool demux_poll_polling(int budget)
{
	bool polling = false;
	for (int n = 0; n < netdev_count(); n++) {
		struct demux_nic *ni = &demux_nics[n];
		if (!ni->polling)
			continue;
		if (!nl_trylock(&ni->rx)) {
			polling = true;
			continue;
		}
		polling |= poll_budget(n, budget);
		nl_unlock(&ni->rx);
	}
	return polling;
}

bool demux_poll_nolock(int budget)
{
	int depth = klock_release_all();
	tlb_batch_begin(); // remaps into regions their owners alone have (io_slot.c)
	bool polling = demux_poll_polling(budget);
	tlb_batch_end();
	settle();
	klock_reacquire(depth);
	return polling;
}
