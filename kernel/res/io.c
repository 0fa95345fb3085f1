// I/O resource manager (Tender Table 3): a channel is one channel number on
// one NIC, with n_input receive slots and n_output send slots per call, the
// regions they live in, and peer addresses. The sink is io_slot.c; the
// transports below (send, receive, order, reliability) are in kernel/net/.
#include "io_priv.h"
#include "../net/shaper.h"
#include "../net/relay.h"
#include "../net/plain.h"
#include "../net/txbatch.h"
#include "../net/stripe.h"
#include "../net/balance.h"
#include "vregion.h"
#include "pmem.h"
#include "proc.h"
#include "../kprintf.h"
#include "../uaccess.h"
#include "../heap.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

struct io ios[NIO];
struct demux_nic demux_nics[NETDEV_MAX];

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
		if (ios[i].h.used && !raw && !ios[i].raw && (ios[i].nicmask & mask) && ios[i].channel == chan)
			return -E_EXIST;
	if (pmem_free_count() < IO_HDR_FRAMES)
		return -E_NOMEM;
	struct io *c = res_alloc(&table);
	if (!c)
		return -E_NOMEM;
	if ((e = proc_charge(caller, LIM_CHANNELS, 1))) {
		res_free(c);
		return e;
	}
	if (!(c->tx = kmalloc(sizeof(*c->tx)))) {
		proc_uncharge(caller, LIM_CHANNELS, 1);
		res_free(c);
		return -E_NOMEM;
	}
	c->owner = caller, c->nicmask = mask, c->nic = __builtin_ctz(mask), c->channel = chan;
	c->dev = netdev_get(c->nic);
	c->raw = raw, c->n_in = (uint32_t)n_in, c->n_out = (uint32_t)n_out;
	c->gap_us = IO_GAP_US;
	c->lb_slot = -1;
	for (int i = 0; i < IO_HDR_FRAMES; i++)
		c->hdr[i] = pmem_take();
	if (io_striped(c) && (e = rel_enable(c, true))) { // striped channels are reliable
		for (int i = 0; i < IO_HDR_FRAMES; i++)
			pmem_free(c->hdr[i]);
		kfree(c->tx);
		proc_uncharge(caller, LIM_CHANNELS, 1);
		res_free(c);
		return e;
	}
	return res_name(&table, c);
}

// Lets go of the registered regions (they may be deleted again).
static void unhold_regions(struct io *c)
{
	if (!c->regions)
		return;
	if (c->n_in)
		vregion_unhold(c->in_vr);
	if (c->n_out)
		vregion_unhold(c->out_vr);
	c->regions = false;
}

static void free_channel(struct io *c)
{
	lb_free(c);
	txb_idle(c);
	rel_free(c);
	io_drop_pending(c);
	unhold_regions(c);
	for (int i = 0; i < IO_HDR_FRAMES; i++)
		pmem_free(c->hdr[i]);
	kfree(c->tx);
	proc_uncharge(c->owner, LIM_CHANNELS, 1);
	res_free(c);
}

static long free_io(int caller, long id)
{
	long e;
	struct io *c = mine(caller, id, &e);
	if (!c)
		return e;
	if (c->inflight) {
		txb_reclaim(c);
		if (c->inflight)
			return -E_BUSY;
	}
	rel_linger(c); // what was sent is acknowledged (bounded), then goodbye
	free_channel(c);
	return 0;
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
	c->in_vr = r->in_vr, c->in_addr = r->in_addr, c->in_size = r->in_size;
	c->out_vr = r->out_vr, c->out_addr = r->out_addr, c->out_size = r->out_size;
	c->slot_size = slot;
	c->regions = true;
	return 0;
}

static void fill_stats(struct io *c, struct io_stats *s)
{
	struct demux_nic *ni = &demux_nics[c->nic];
	struct netdev_stats es;
	c->dev->ops->get_stats(c->dev, &es);
	*s = c->st;
	s->drop_short = ni->drop_short, s->drop_ethertype = ni->drop_ethertype;
	s->drop_badlen = ni->drop_badlen, s->drop_nochan = ni->drop_nochan;
	s->drop_rxerr = ni->drop_rxerr, s->drop_notme = ni->drop_notme;
	s->drop_toolong = c->st.drop_toolong + ni->drop_toolong;
	s->copy_threshold = io_copy_threshold;
	s->slot_size = c->slot_size;
	s->frames_held = c->pend_n;
	s->frames_held_max = c->st.frames_held_max;
	s->nic_frames = es.frames_owned, s->nic_irqs = es.irqs, s->nic_doorbells = es.doorbells;
	s->nic_rx_no_buf = es.rx_no_buf;
	memcpy(s->mac, c->dev->mac, 6);
	s->link_up = c->dev->ops->link_up(c->dev);
	s->reliable = c->rel;
	s->links_up = 0;
	IO_FOR_EACH_NIC(c, n)
		if (netdev_get(n)->ops->link_up(netdev_get(n)))
			s->links_up |= (uint8_t)(1u << n);
}

static long ctrl_io(int caller, long id, uint64_t op, const uint64_t *a)
{
	long e;
	struct io *c = mine(caller, id, &e);
	if (!c)
		return e;
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
		if (a[0] == 0)
			return -E_INVAL;
		c->gap_us = a[0];
		return 0;
	case IO_OP_PEER:
		if (a[1] >= IO_MAX_PEERS || a[2] >= NETDEV_MAX || !(c->nicmask & (1u << a[2])))
			return -E_INVAL;
		if ((e = copy_from_user(c->peer[a[1]][a[2]], a[0], 6)))
			return e;
		if ((e = rel_add_peer(c, (int)a[1])))
			return e;
		c->peer_links[a[1]] |= (uint8_t)(1u << a[2]);
		c->peer_valid |= 1u << a[1];
		c->routed &= ~(1u << a[1]); // a MAC: a neighbour
		return 0;
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
		txb_reclaim(c);
		return c->inflight + (c->rel ? IO_REL_SLOTS - c->nrfree : 0);
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
	while (c->got < c->n_in && !c->cut) {
		uint64_t gap = stripe_gap_deadline(c), dead = rel_dead_deadline(c), d = deadline;
		if (gap && (!d || gap < d))
			d = gap;
		if (dead && (!d || dead < d))
			d = dead;
		if (proc_sleep(c, d))
			continue;
		if (gap && arch_rdtsc() >= gap)
			stripe_gap_expire(c);
		else if (d == deadline || ((dead = rel_dead_deadline(c)) && arch_rdtsc() >= dead))
			return; // the deadline, or a dead or departed peer (input_io says so)
	}
}

static long input_io(int caller, long id, uptr_t usizes, uptr_t upos)
{
	long e;
	struct io *c = mine(caller, id, &e);
	if (!c)
		return e;
	if (!c->regions || !c->n_in)
		return -E_INVAL;
	if ((e = vregion_access(caller, c->in_vr)))
		return e; // its owner exited: the region has no name any more
	long vs = proc_vspace(caller);
	if ((e = uaccess_check(vs, usizes, c->n_in * 8ul, true)) ||
	    (e = uaccess_check(vs, upos, c->n_in * 8ul, true)))
		return e;
	c->got = 0;
	c->cut = false;
	c->waiting = true;
	c->st.rx_batches++;
	if ((e = io_deliver_pending(c))) {
		c->waiting = false;
		return e; // a gap came first: reported once, the packets after it follow
	}
	demux_poll_channel(c);
	wait_batch(c, c->timeout_us ? timer_deadline(c->timeout_us) : 0);
	c->waiting = false;
	copy_to_user(usizes, c->sizes, c->got * 8ul);
	copy_to_user(upos, c->pos, c->got * 8ul);
	if (c->got)
		return (long)c->got;
	if (c->pend_n && !c->pend[c->pend_head].nbuf) {
		c->pend_head = (c->pend_head + 1) % IO_PEND_RING, c->pend_n--;
		return -E_GAP; // the marker a hole left; the packets after it follow
	}
	if ((e = rel_dead_report(c)))
		return e; // every link to a peer dead for dead_us (io_stats.dead_peer), once
	return -E_TIMEOUT;
}

// One output_io's arguments and the frames under its payloads, the
// caller's own for the whole call: plain_send and rel_send may sleep (a
// busy ring, a full window) and read them after, while other processes'
// calls run. One per process slot, like the kernel stacks: a process makes
// one system call at a time. Never shared across processes.
struct out_call {
	uint64_t peer[IO_MAX_BATCH], size[IO_MAX_BATCH], pos[IO_MAX_BATCH];
	struct io_pktpages pf[IO_MAX_BATCH];
};
static struct out_call out_calls[NPROC];

// The frames under [pos, pos+size) of the output region, all backed.
static long payload_frames(struct io *c, uint64_t pos, uint64_t size, struct io_pktpages *pf)
{
	if (!size)
		return 0;
	uint64_t first = pos / PAGE_SIZE, n = (pos + size - 1) / PAGE_SIZE - first + 1;
	long e = vregion_frames(c->out_vr, first, n, pf->f);
	for (uint64_t p = 0; !e && p < n; p++)
		if (!pf->f[p])
			e = -E_NOTBACKED;
	return e;
}

static bool peer_reachable(struct io *c, uint64_t peer)
{
	IO_FOR_EACH_NIC(c, n)
		if ((c->peer_links[peer] & (1u << n)) && netdev_get(n)->ops->link_up(netdev_get(n)))
			return true;
	return false;
}

// Every packet's peer is known, its size fits a frame, and its bytes lie
// in backed pages of the output region (whose frames go to oc->pf).
static long check_sends(struct io *c, struct out_call *oc)
{
	const uint64_t *peer = oc->peer, *size = oc->size, *pos = oc->pos;
	for (uint32_t i = 0; i < c->n_out; i++) {
		if (!c->raw && (peer[i] >= IO_MAX_PEERS || !(c->peer_valid & (1u << peer[i]))))
			return -E_NOENT;
		if (io_striped(c) && !c->rel && !peer_reachable(c, peer[i]))
			return -E_LINK; // every link the peer is known on is down
		if (c->raw ? size[i] < c->dev->min_frame || size[i] > c->dev->max_frame
			   : size[i] > WIRE_MAX_PAYLOAD)
			return c->raw && size[i] < c->dev->min_frame ? -E_INVAL : -E_2BIG;
		if (pos[i] > c->out_size || size[i] > c->out_size - pos[i])
			return -E_RANGE;
		long e = payload_frames(c, pos[i], size[i], &oc->pf[i]);
		if (e)
			return e;
	}
	return io_striped(c) || c->rel || c->dev->ops->link_up(c->dev) ? 0 : -E_LINK;
}

static long output_io(int caller, long id, const uint64_t *a)
{
	long e;
	struct io *c = mine(caller, id, &e);
	if (!c)
		return e;
	if (!c->regions || !c->n_out)
		return -E_INVAL;
	if ((e = vregion_access(caller, c->out_vr)))
		return e;
	int slot = proc_slot(caller);
	if (slot < 0)
		return -E_SRCH;
	struct out_call *oc = &out_calls[slot];
	uint64_t *vals[3] = { oc->peer, oc->size, oc->pos };
	for (int k = 0; k < 3; k++)
		if ((e = copy_from_user(vals[k], a[k], c->n_out * 8ul)))
			return e;
	if ((e = check_sends(c, oc)))
		return e;
	lb_on_send(c);
	if (c->rel)
		return rel_send(c, oc->peer, oc->size, oc->pos, oc->pf);
	return plain_send(c, oc->peer, oc->size, oc->pos, oc->pf);
}

bool io_poll_halts; // poll=timer: halt between polls, woken by a fast tick

// NICs in polling mode are polled; true while any still is.
static bool poll_polling(void)
{
	bool polling = false;
	for (int n = 0; n < netdev_count(); n++)
		if (demux_nics[n].polling) {
			demux_poll_nic(n);
			polling |= demux_nics[n].polling;
		}
	return polling;
}

void io_tick(void)
{
	poll_polling();
	uint32_t drained = 0;
	for (int i = 0; i < NIO; i++) {
		struct io *c = &ios[i];
		if (!c->h.used || !c->rel)
			continue;
		// What came while this machine did not run is heard before any
		// silence is judged.
		IO_FOR_EACH_NIC(c, n)
			if (!(drained & (1u << n))) {
				demux_poll_nic(n);
				drained |= 1u << n;
			}
		rel_tick(c);
	}
}

static void link_change(struct netdev *nd, bool up, void *arg)
{
	(void)arg;
	demux_nics[nd->index].link_up = up;
	rel_link_change(nd->index, up);
}

// The idle CPU's work: reclaim finished sends; poll NICs in polling mode.
// Returns true to be called again at once (spinning), false to let the
// CPU halt until the next interrupt (the fast tick while polling).
bool io_idle_poll(void)
{
	for (int n = 0; n < netdev_count(); n++)
		txb_reclaim_nic(n); // a NIC's completions, whichever channels they are
	bool polling = poll_polling();
	if (!io_poll_halts)
		return polling;
	timer_fast(polling ? IO_POLL_US : 0);
	return false;
}

// A frame is copied buffer by buffer, so any threshold is safe; one above
// the longest frame says nothing more than "copy everything".
void io_init(const struct io_options *o)
{
	io_poll_halts = o->poll_halts;
	io_rx_scrub = o->rx_scrub;
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
		if (ios[i].h.used && ios[i].owner == owner)
			free_channel(&ios[i]);
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
long sys_input_io(const uint64_t *a) { return input_io(proc_self(), (long)a[0], a[1], a[2]); }
long sys_output_io(const uint64_t *a) { return output_io(proc_self(), (long)a[0], a + 1); }
long sys_free_io(const uint64_t *a) { return free_io(proc_self(), (long)a[0]); }
