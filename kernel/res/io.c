// I/O resource manager (Tender Table 3): a channel is one channel number on
// one NIC, with n_input receive slots and n_output send slots per call, the
// regions they live in, and peer addresses. The sink is io_slot.c; the
// transports below (send, receive, order, reliability) are in kernel/net/.
#include "io_priv.h"
#include "../net/relay.h"
#include "../net/balance.h"
#include "vregion.h"
#include "pmem.h"
#include "tlb.h"
#include "proc.h"
#include "../kprintf.h"
#include "../uaccess.h"
#include "../heap.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

struct io ios[NIO];
struct spinlock io_locks[NIO];
int io_nopen; // channels open (ios[] slots in use): the idle CPU's quick test

bool io_sleep(struct io *c, const void *chan, uint64_t deadline)
{
	io_unlock(c);
	bool woken = proc_sleep(chan, deadline);
	io_lock(c);
	return woken;
}

static const struct res_table table = RES_TABLE(RES_IO, ios, 0);

static struct io *get(long id) { return res_lookup(&table, id); }

// The channel, if caller owns it: else NULL and *err says why.
static struct io *mine(int caller, long id, long *err)
{
	struct io *c = get(id);
	*err = !c ? -E_BADID : (caller && c->owner != caller) ? -E_NOTOWNER : 0;
	return *err ? NULL : c;
}

long io_live(void) { return res_count(&table); }

static long decode_dev(uint64_t dev_no, uint8_t *mask, uint16_t *chan, bool *raw)
{
	uint64_t kind = dev_no >> 24;
	*mask = dev_no & 0xff;
	*chan = (uint16_t)(dev_no >> 8);
	*raw = kind == IO_KIND_RAW;
	if ((kind != IO_KIND_ETHER && kind != IO_KIND_RAW) || *mask == 0)
		return -E_NODEV;
	for (int n = 0; n < 8; n++)
		if ((*mask & (1u << n)) && !demux_nic_usable(n))
			return -E_NODEV; // none, or one io_init left unused
	// A raw channel only sends, on one NIC: it names no channel, so it can
	// neither squat on one nor take another's frames.
	if (*raw && (*mask & (*mask - 1)))
		return -E_INVAL;
	return *raw == !*chan ? 0 : -E_INVAL;
}

static long get_io(int caller, uint64_t dev_no, uint64_t n_in, uint64_t n_out)
{
	uint8_t mask;
	uint16_t chan;
	bool raw;
	long e = decode_dev(dev_no, &mask, &chan, &raw);
	if (e)
		return e;
	if (n_in > IO_MAX_BATCH || n_out > IO_MAX_BATCH || (n_in | n_out) == 0 || (raw && n_in))
		return -E_INVAL;
	for (int i = 0; i < NIO; i++) // one channel of a number per NIC
		if (ios[i].h.used && chan && (ios[i].nicmask & mask) && ios[i].channel == chan)
			return -E_EXIST;
	if (pmem_free_count() < IO_HDR_PAGES)
		return -E_NOMEM;
	struct io *c = res_alloc(&table);
	if (!c)
		return -E_NOMEM;
	if ((e = proc_charge(caller, LIM_CHANNELS, 1))) {
		res_free(c);
		return e;
	}
	// The receive path finds a channel by its NICs and number (nicmask 0
	// in a fresh slot): they are set under its lock, with the rest.
	io_lock(c);
	c->owner = caller, c->nicmask = mask, c->nic = __builtin_ctz(mask), c->channel = chan;
	c->dev = netdev_get(c->nic);
	c->n_in = (uint32_t)n_in, c->n_out = (uint32_t)n_out;
	if ((e = xport_open(c, raw))) {
		c->nicmask = 0, c->channel = 0;
		io_unlock(c);
		proc_uncharge(caller, LIM_CHANNELS, 1);
		res_free(c);
		return e;
	}
	io_nopen++;
	io_unlock(c);
	return res_name(&table, c);
}

// Lets go of the registered regions (they may be deleted again).
static void unhold_regions(struct io *c)
{
	if (!c->rg.set)
		return;
	if (c->n_in)
		vregion_unhold(c->rg.in_vr);
	if (c->n_out)
		vregion_unhold(c->rg.out_vr);
	c->rg.set = false;
}

// c's lock held; the slot is free, and nothing finds it, when it is let go.
static void free_channel(struct io *c)
{
	xport_free(c);
	io_drop_pending(c);
	unhold_regions(c);
	proc_uncharge(c->owner, LIM_CHANNELS, 1);
	c->nicmask = 0, c->channel = 0;
	res_free(c);
	io_nopen--;
}

static long free_io(int caller, long id)
{
	long e;
	struct io *c = mine(caller, id, &e);
	if (!c)
		return e;
	io_lock(c);
	if (!(e = xport_close(c))) // a reliable channel's sends settle (bounded), then goodbye
		free_channel(c);
	io_unlock(c);
	return e;
}

// One direction's region: ours (or granted), in our space, big enough.
static long check_region(int caller, long vs, long vr, uint64_t size)
{
	long e = vregion_access(caller, vr);
	if (e)
		return e;
	if (vs && caller && vs != proc_vspace(caller))
		return -E_NOTOWNER;
	return size > vregion_pages(vr) * PAGE_SIZE ? -E_RANGE : 0;
}

static long set_regions(struct io *c, int caller, const struct io_regions *r)
{
	long e = 0;
	if (c->n_in && (e = check_region(caller, r->in_vs, r->in_vr, r->in_size)))
		return e;
	if (c->n_out && (e = check_region(caller, r->out_vs, r->out_vr, r->out_size)))
		return e;
	uint64_t slot = c->n_in ? PAGE_ROUND_DOWN(r->in_size / c->n_in) : 0;
	if (c->n_in && slot == 0)
		return -E_INVAL; // a slot holds at least one page
	// Held from here on: the ids keep naming these regions until
	// free_io or the next registration, whatever their owners do.
	if (c->n_in)
		vregion_hold(caller, r->in_vr);
	if (c->n_out)
		vregion_hold(caller, r->out_vr);
	unhold_regions(c);
	c->rg.in_vr = r->in_vr, c->rg.in_addr = r->in_addr, c->rg.in_size = r->in_size;
	c->rg.out_vr = r->out_vr, c->rg.out_addr = r->out_addr, c->rg.out_size = r->out_size;
	c->rg.slot_size = slot;
	c->rg.in_serial = c->n_in ? vregion_serial(r->in_vr) : 0;
	c->rg.set = true;
	return 0;
}

static void fill_stats(struct io *c, struct io_stats *s)
{
	struct netdev_stats es;
	c->dev->ops->get_stats(c->dev, &es);
	*s = c->st;
	s->copy_threshold = io_copy_threshold;
	s->slot_size = c->rg.slot_size;
	s->frames_held = c->pend.n;
	s->frames_held_max = c->st.frames_held_max;
	s->nic_frames = es.frames_owned, s->nic_irqs = es.irqs, s->nic_doorbells = es.doorbells;
	s->nic_rx_no_buf = es.rx_no_buf;
	memcpy(s->mac, c->dev->mac, 6);
	s->link_up = c->dev->ops->link_up(c->dev);
	xport_stats(c, s);
}

static long ctrl_op(struct io *c, int caller, uint64_t op, const uint64_t *a);

static long ctrl_io(int caller, long id, uint64_t op, const uint64_t *a)
{
	long e;
	struct io *c = mine(caller, id, &e);
	if (!c)
		return e;
	io_lock(c);
	e = ctrl_op(c, caller, op, a);
	io_unlock(c);
	return e;
}

static long ctrl_op(struct io *c, int caller, uint64_t op, const uint64_t *a)
{
	long e;
	switch (op) {
	case IO_OP_REGIONS: {
		struct io_regions r;
		if ((e = copy_from_user(&r, a[0], sizeof(r))))
			return e;
		return set_regions(c, caller, &r);
	}
	case IO_OP_TIMEOUT:
		c->timeout_us = a[0];
		return 0;
	case IO_OP_RELIABLE:
		return rel_enable(c, a[0] != 0);
	case IO_OP_SET:
		return rel_set(c, a[0], a[1]);
	case IO_OP_LINKSTATS: {
		struct io_linkstats ls;
		long r = rel_linkstats(c, a[0], &ls);
		if (r)
			return r;
		return copy_to_user(a[1], &ls, sizeof(ls));
	}
	case IO_OP_GAPWAIT:
		return xport_set_gapwait(c, a[0]);
	case IO_OP_PEER: {
		uint8_t mac[6];
		if (a[1] >= IO_MAX_PEERS || a[2] >= NETDEV_MAX || !(c->nicmask & (1u << a[2])))
			return -E_INVAL;
		if ((e = copy_from_user(mac, a[0], 6)))
			return e;
		return xport_set_peer(c, a[1], a[2], mac);
	}
	case IO_OP_NODE:
		return relay_set_peer(c, a[0], a[1], a[2]);
	case IO_OP_RELAYSTATS:
		return relay_stats(a[0]);
	case IO_OP_STATS: {
		struct io_stats s;
		fill_stats(c, &s);
		return copy_to_user(a[0], &s, sizeof(s));
	}
	case IO_OP_BALANCE:
		return lb_set(c, a[0], a[1], a[2]);
	case IO_OP_LBSTATS: {
		struct io_lbstats ls;
		lb_stats(c, &ls);
		return copy_to_user(a[0], &ls, sizeof(ls));
	}
	case IO_OP_RECLAIM: // what the NICs still hold of the channel's
		return xport_held(c);
	default:
		return -E_INVAL;
	}
}

// Sleeps until the batch is full, a gap ends it, or the deadline (0:
// none). A striped channel's hole that stays open for gap_us is declared
// while it waits, whatever the deadline; a reliable channel's peer that
// died or left ends the wait when input_io is to report it.
static void wait_batch(struct io *c, uint64_t deadline)
{
	while (c->b.got < c->n_in && !c->b.cut) {
		uint64_t t = xport_deadline(c), d = deadline;
		if (t && (!d || t < d))
			d = t;
		if (io_sleep(c, c, d))
			continue;
		int due = xport_expire(c);
		if (due != XPORT_GAP && (d == deadline || due == XPORT_REPORT))
			return; // the deadline, or a dead or departed peer (input_io says so)
	}
}

static long input_batch(struct io *c, int caller, uptr_t usizes, uptr_t upos, bool priv);

// With rxlock=fine, an input_io whose receive region is the caller's alone
// (vregion_private: its own, granted to nobody, registered by this channel
// only) runs without the kernel lock. Only the caller's own calls could
// change that region (its frames, pins, attachments, grants), and the
// caller is here: the channel's lock alone keeps the remaps into its
// batch one CPU's at a time, whichever CPU makes them, and the shootdown
// needs no lock (tlb.c). Anything else takes the kernel lock first, as
// every other call: a region shared with another process, and a call that
// has to sleep (io_relock). docs/design.md, "Locks and their order".
static bool input_unlocked(const struct io *c, int caller)
{
	if (!demux_fine || !c->rg.set || !c->n_in)
		return false;
	uint32_t holds = 1u + (c->n_out && c->rg.out_vr == c->rg.in_vr);
	return vregion_private(caller, c->rg.in_vr, holds);
}

// The kernel lock too, for a call that holds c's lock only: c's lock is
// let go first (it ranks below) and taken again.
static void also_klock(struct io *c)
{
	io_unlock(c);
	klock_lock();
	io_lock(c);
}

bool io_relock(struct io *c)
{
	if (!c->fast)
		return false;
	c->fast = 0;
	also_klock(c);
	return true;
}

static void input_lock(struct io *c)
{
	if (io_relock(c))
		c->st.rx_relocked_calls++;
}

static long input_io(int caller, long id, uptr_t usizes, uptr_t upos)
{
	long e;
	// Without the kernel lock, a slot that names the caller's channel is
	// stable: only the caller frees it.
	struct io *c = mine(caller, id, &e);
	if (!c)
		return e;
	io_lock(c);
	bool priv = input_unlocked(c, caller);
	if (!nl_klocked() && !priv)
		also_klock(c);
	e = input_batch(c, caller, usizes, upos, priv);
	io_unlock(c);
	return e;
}

// c's lock held (let go while the NICs are polled and while it sleeps);
// priv: its region is the caller's alone (input_unlocked).
static long input_batch(struct io *c, int caller, uptr_t usizes, uptr_t upos, bool priv)
{
	long e;
	if (!c->rg.set || !c->n_in)
		return -E_INVAL;
	if ((e = vregion_access(caller, c->rg.in_vr)))
		return e; // its owner exited: the region has no name any more
	long vs = proc_vspace(caller);
	if ((e = uaccess_check(vs, usizes, c->n_in * 8ul, true)) ||
	    (e = uaccess_check(vs, upos, c->n_in * 8ul, true)))
		return e;
	c->b.got = 0;
	c->b.cut = false;
	c->b.waiting = true;
	c->b.priv = priv;
	c->fast = nl_klocked() ? 0 : (uint8_t)(arch_cpu_id() + 1);
	c->st.rx_batches++;
	if (c->fast)
		c->st.rx_unlocked_calls++;
	if ((e = io_deliver_pending(c))) {
		c->b.waiting = false;
		c->b.priv = false;
		c->fast = 0;
		return e; // a gap came first: reported once, the packets after it follow
	}
	io_unlock(c); // a NIC's lock ranks below a channel's
	demux_poll_channel(c);
	io_lock(c);
	if (io_waiting(c)) {
		io_deliver_held(c); // what other CPUs held meanwhile
		if (io_waiting(c))
			input_lock(c); // it may sleep
	}
	wait_batch(c, c->timeout_us ? timer_deadline(c->timeout_us) : 0);
	c->b.waiting = false;
	c->b.priv = false;
	uint32_t nics = c->nicmask;
	io_unlock(c);
	demux_flush_idle(nics); // between batches the rings get everything back
	io_lock(c);
	copy_to_user(usizes, c->b.sizes, c->b.got * 8ul);
	copy_to_user(upos, c->b.pos, c->b.got * 8ul);
	if (c->b.got) {
		c->fast = 0;
		return (long)c->b.got;
	}
	input_lock(c); // nothing came: what the transport reports is the lock's
	if (c->pend.n && !c->pend.q[c->pend.head].nbuf) {
		c->pend.head = (c->pend.head + 1) % IO_PEND_RING, c->pend.n--;
		return -E_GAP; // the marker a hole left; the packets after it follow
	}
	if ((e = xport_report(c)))
		return e; // every link to a peer dead for dead_us (io_stats.dead_peer), once
	return -E_TIMEOUT;
}

// The frames under [pos, pos+size) of the output region (its frame table
// fr, np pages), all backed.
static long payload_pages(const paddr_t *fr, uint64_t np, uint64_t pos, uint64_t size,
			  struct io_pktpages *pf)
{
	if (!size)
		return 0;
	uint64_t first = pos / PAGE_SIZE, n = (pos + size - 1) / PAGE_SIZE - first + 1;
	if (first > np || n > np - first)
		return -E_RANGE;
	for (uint64_t p = 0; p < n; p++)
		if (!(pf->f[p] = fr[first + p]))
			return -E_NOTBACKED;
	return 0;
}

// Every packet's peer is known, its size fits a frame, and its bytes lie
// in backed pages of the output region (whose frames go to oc->pf).
static long check_sends(struct io *c, struct io_outcall *oc)
{
	const uint64_t *size = oc->size, *pos = oc->pos;
	long e = 0, refused = 0;
	// The transport's checks (the peer, its links, the size) come first
	// for each packet, so a packet before the first it refuses may still
	// fail here first, as in one loop.
	uint32_t k = xport_check(c, oc->peer, size, c->n_out, &refused);
	const paddr_t *fr;
	uint64_t np;
	if (k && (e = vregion_frame_table(c->rg.out_vr, &fr, &np)))
		return e; // one lookup of the region for the whole call
	for (uint32_t i = 0; i < k; i++) {
		if (pos[i] > c->rg.out_size || size[i] > c->rg.out_size - pos[i])
			return -E_RANGE;
		if ((e = payload_pages(fr, np, pos[i], size[i], &oc->pf[i])))
			return e;
	}
	return k < c->n_out ? refused : xport_check_call(c);
}

static long output_batch(struct io *c, int caller, const uint64_t *a);

// With rxlock=fine, an output_io runs without the kernel lock when its
// output region is the caller's alone (as input_unlocked says for the
// input region) and its transport's state is the channel's alone, or
// under its own lock: a plain, raw or reliable channel (a reliable one's
// acknowledgements, timers and link changes take the channel's lock too,
// and its header slots come back by atomic bit, rel_slot_done), balanced
// or not (the balancer's domains are under LK_LB), its peers neighbours
// or routed (a routed peer's trailer is the channel's own state and the
// topology, fixed at boot; only forwarding uses the relay's slots). It
// then holds
// its channel's lock and, while it hands packets to a NIC or collects the
// NIC's completions, that NIC's transmit lock (txbatch.c); it takes the
// kernel lock only to sleep (a full ring, a paced wire, a full window).
static bool output_unlocked(const struct io *c, int caller)
{
	if (!demux_fine || !c->rg.set || !c->n_out)
		return false;
	uint32_t holds = 1u + (c->n_in && c->rg.in_vr == c->rg.out_vr);
	return vregion_private(caller, c->rg.out_vr, holds);
}

static long output_io(int caller, long id, const uint64_t *a)
{
	long e;
	struct io *c = mine(caller, id, &e); // stable unlocked: see input_io
	if (!c)
		return e;
	io_lock(c);
	if (!nl_klocked() && !output_unlocked(c, caller))
		also_klock(c);
	if (!nl_klocked()) {
		c->fast = (uint8_t)(arch_cpu_id() + 1);
		c->st.tx_unlocked_calls++;
	}
	e = output_batch(c, caller, a);
	bool settle = c->fast && xport_tx_later(c);
	c->fast = 0;
	io_unlock(c);
	if (settle) // other senders' completions its reclaims put off
		xport_tx_settle(c->nicmask);
	return e;
}

static long output_batch(struct io *c, int caller, const uint64_t *a)
{
	long e;
	if (!c->rg.set || !c->n_out)
		return -E_INVAL;
	if ((e = vregion_access(caller, c->rg.out_vr)))
		return e;
	struct io_outcall *oc = &c->out;
	uint64_t *vals[3] = { oc->peer, oc->size, oc->pos };
	for (int k = 0; k < 3; k++)
		if ((e = copy_from_user(vals[k], a[k], c->n_out * 8ul)))
			return e;
	if ((e = check_sends(c, oc)))
		return e;
	return xport_send(c, oc->peer, oc->size, oc->pos, oc->pf);
}

bool io_poll_halts; // poll=timer: halt between polls, woken by a fast tick


// The idle CPU's work: reclaim finished sends; poll NICs in polling mode.
// Returns true to be called again at once (spinning), false to let the
// CPU halt until the next interrupt (the fast tick while polling).
bool io_idle_poll(void)
{
	bool polling = xport_idle();
	if (!io_poll_halts)
		return polling;
	timer_fast(polling ? IO_POLL_US : 0);
	return false;
}

// When the channels' protocol timers next need the tick (the idle CPU
// sleeps until then without it).
uint64_t io_next_event(uint64_t now) { return xport_next_all(now); }

bool io_idle_found(void)
{
	static uint64_t seen;
	uint64_t n = demux_taken;
	bool found = n != seen;
	seen = n;
	return found;
}

// A frame is copied buffer by buffer, so any threshold is safe; one above
// the longest frame says nothing more than "copy everything".
void io_init(const struct io_options *o)
{
	for (int i = 0; i < NIO; i++)
		spin_init(&io_locks[i], "chan", LK_CHAN);
	demux_init();
	io_poll_halts = o->poll_halts;
	demux_irq_wait = o->poll_irq;
	io_rx_scrub = o->rx_scrub;
	int n = xport_init(o);
	if (!n)
		return;
	io_copy_threshold = o->copy_threshold > IO_MAX_FRAME ? IO_MAX_FRAME : (uint64_t)o->copy_threshold;
	if (o->copy_threshold > IO_MAX_FRAME)
		pr_warn("io: copy_threshold=%ld is longer than any frame: %d\n", o->copy_threshold,
			IO_MAX_FRAME);
	pr_info("io: %d NIC(s); frames up to %lu bytes are copied, longer ones exchanged (%s)%s\n",
		n, io_copy_threshold, o->threshold_measured ? "measured" : "set on the command line",
		io_rx_scrub ? "" : "; receive tails NOT scrubbed (rxscrub=0)");
}

static void release(int owner)
{
	for (int i = 0; i < NIO; i++)
		if (ios[i].h.used && ios[i].owner == owner) {
			io_lock(&ios[i]);
			free_channel(&ios[i]);
			io_unlock(&ios[i]);
		}
}

const struct res_ops io_ops = { .name = "io", .release = release, .live = io_live };

// System calls (lib/syscalls.def).
long sys_get_io(const uint64_t *a)
{
	int pid = proc_self();
	long e = uaccess_check(proc_vspace(pid), a[3], sizeof(long), true);
	if (e)
		return e;
	long id = get_io(pid, a[0], a[1], a[2]);
	if (id < 0)
		return id;
	copy_to_user(a[3], &id, sizeof(id));
	return 0;
}

long sys_ctrl_io(const uint64_t *a) { return ctrl_io(proc_self(), (long)a[0], a[1], a + 2); }
// One shootdown per call for the packets it exchanges into a region live on
// other CPUs (tlb.h says why that is safe).
long sys_input_io(const uint64_t *a)
{
	tlb_batch_begin();
	long r = input_io(proc_self(), (long)a[0], a[1], a[2]);
	tlb_batch_end();
	return r;
}
long sys_output_io(const uint64_t *a) { return output_io(proc_self(), (long)a[0], a + 1); }
long sys_free_io(const uint64_t *a) { return free_io(proc_self(), (long)a[0]); }
