// The I/O manager's data path. Send: headers in the channel's header frames,
// payload straight from the user's output frames, one doorbell per batch.
// Receive: frames are parsed in the buffers the NIC filled; a frame longer
// than the copy threshold is exchanged into the waiting process's slot (its
// buffers become the slot's pages, the slot's old frames refill the ring),
// a shorter one is copied. Malformed frames are dropped and counted by cause.
#include "io_priv.h"
#include "io_relay.h"
#include "../net/shaper.h"
#include "vregion.h"
#include "pmem.h"
#include "proc.h"
#include "../kprintf.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

uint64_t io_copy_threshold = 256;

// ---------------------------------------------------------------- send

// A packet's cookie names its channel with the slot's generation: a channel
// closed while its packets were still queued (a stalled transmitter) must
// not have them counted against the next channel in its slot.
static uint64_t cookie_of(const struct io *c) { return (uint64_t)c->h.gen << 8 | (uint64_t)(c - ios); }

static void tx_done(uint64_t cookie, void *arg)
{
	(void)arg;
	if (io_relay_cookie(cookie))
		return io_relay_done(cookie);
	struct io *c = (cookie & 0xff) < NIO ? &ios[cookie & 0xff] : NULL;
	if (!c || !c->h.used)
		return;
	if (io_rel_cookie(cookie)) { // a reliable channel's header slot
		if (c->h.gen == (uint32_t)(cookie >> 24))
			io_rel_slot_done(c, (uint32_t)(cookie >> 8) & 0xffff);
	} else if (c->h.gen == (uint32_t)(cookie >> 8) && c->inflight) {
		c->inflight--;
	}
}

int io_reclaim_nic(int nic)
{
	struct netdev *nd = netdev_get(nic);
	return nd->ops->tx_reclaim(nd, tx_done, NULL);
}

// Every NIC of c (a NIC's completions, whichever channels they are).
static int reclaim_all(struct io *c)
{
	int n = 0;
	IO_FOR_EACH_NIC(c, k)
		n += io_reclaim_nic(k);
	return n;
}

void io_reclaim(struct io *c) { reclaim_all(c); }

static uint8_t *hdr_slot(struct io *c, uint32_t i, paddr_t *pa)
{
	uint64_t off = (uint64_t)i * IO_HDR_SLOT;
	*pa = c->hdr[off / PAGE_SIZE] + off % PAGE_SIZE;
	return arch_p2v(*pa);
}

// The 30 header bytes common to a call's packets to one peer on one link;
// per packet only the flags, sequence number and length differ.
static void header_template(struct io *c, uint8_t *t, int nic, uint64_t peer)
{
	wire_put_eth(t, c->peer[peer][nic], netdev_get(nic)->mac);
	wire_put_hdr(t, &(struct wire_fields){ .channel = c->channel, .batch = (uint16_t)c->n_out,
					       .link = (uint16_t)nic });
}

static void build_header(struct io *c, uint8_t *h, const uint8_t *tmpl, uint64_t peer,
			 uint64_t size, uint16_t flags)
{
	__builtin_memcpy(h, tmpl, WIRE_FRAME_HLEN);
	wire_set_flags(h, flags);
	wire_set_seq(h, c->seq[peer]++);
	wire_set_len(h, (uint32_t)size);
}

// Gather list: the header (none for a raw frame), then the payload cut at
// page boundaries, in the frames looked up when the send was checked.
static void build_packet(struct io *c, struct netpkt *p, paddr_t hdr, uint64_t pos, uint64_t size,
			 const struct io_pktframes *pf)
{
	p->nseg = 0;
	if (hdr)
		p->seg[p->nseg++] = (struct netseg){ hdr, WIRE_FRAME_HLEN };
	for (int k = 0; size > 0; k++) {
		uint64_t in_page = PAGE_SIZE - pos % PAGE_SIZE;
		uint32_t len = (uint32_t)(size < in_page ? size : in_page);
		p->seg[p->nseg++] = (struct netseg){ pf->f[k] + pos % PAGE_SIZE, len };
		pos += len;
		size -= len;
	}
	p->cookie = cookie_of(c);
}

// Waits for the NIC: first spinning (interrupts are off meanwhile), at most
// IO_TX_WAIT_US; then, from a system call (may_sleep), sleeping a timer
// tick at a time between tries, up to IO_TX_SLEEP_US more, while other
// processes run and timers fire. QEMU's e1000 finishes a batch inside the
// doorbell write; its virtio-net later, from its main loop, which a busy
// host can delay for many milliseconds; a real NIC at 1 Gbit/s sends a
// 128-packet batch of 8960 bytes in about 9 ms.
static bool tx_wait(struct io *c, bool (*done)(struct io *c, int reclaimed), bool may_sleep)
{
	uint64_t now = arch_rdtsc(), spin_end = now + timer_us_to_tsc(IO_TX_WAIT_US);
	uint64_t end = may_sleep ? spin_end + timer_us_to_tsc(IO_TX_SLEEP_US) : spin_end;
	for (;;) {
		if (done(c, reclaim_all(c)))
			return true;
		now = arch_rdtsc();
		if (now > end)
			return false;
		if (now < spin_end) {
			arch_pause();
		} else {
			c->st.tx_ring_sleeps++;
			proc_sleep(&io_nics, now + 1); // the next tick
		}
	}
}

static bool idle(struct io *c, int reclaimed) { return (void)reclaimed, c->inflight == 0; }
static bool room(struct io *c, int reclaimed) { return (void)c, reclaimed > 0; }

// Header slots are reused per call: wait (bounded) until the NIC is done
// with the previous batch. Spins only: also called as a process exits.
bool io_tx_idle(struct io *c) { return tx_wait(c, idle, false); }

// ------------------------------------------------------------- send

// A call's packets for one NIC: p[done..n) still to go.
struct txgroup {
	struct netpkt *p;
	int n, done;
	bool stuck; // the driver refused, or its ring stayed full
	int err;
};

// Queues what nic's wire takes now of g; false when it took nothing.
static bool send_some(struct io *c, int nic, struct txgroup *g)
{
	struct netdev *nd = netdev_get(nic);
	int k = shaper_take(nic, g->p + g->done, g->n - g->done);
	if (!k)
		return false;
	int r = nd->ops->tx_batch(nd, g->p + g->done, k);
	if (r < 0) {
		g->stuck = true, g->err = r;
		return false;
	}
	for (int i = r; i < k; i++) // the ring was full: what it did not take is not on the wire
		shaper_undo(nic, &g->p[g->done + i]);
	c->inflight += (uint32_t)r;
	g->done += r;
	c->st.link_tx[nic] += (uint64_t)r;
	for (int i = 0; c->lb_slot >= 0 && i < r; i++) // a balanced channel's volume
		for (int k = 0; k < g->p[g->done - r + i].nseg; k++)
			io_lb_sent(c, nic, g->p[g->done - r + i].seg[k].len);
	if (r > 0)
		c->st.tx_doorbells++;
	else if (!tx_wait(c, room, true)) // the ring is full (of any channel's packets)
		g->stuck = true;
	return r > 0;
}

// Sends every group, the NICs in turns: each takes what its (paced) wire
// takes now, with one doorbell; when no NIC can take more, the sender
// sleeps until the first paced queue has room. Unpaced, one turn does it.
static void send_groups(struct io *c, struct txgroup *g)
{
	for (;;) {
		bool left = false, moved = false;
		uint64_t wake = 0;
		for (int n = 0; n < NETDEV_MAX; n++) {
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
			proc_sleep(&io_nics, wake);
		}
	}
}

static void account(struct io *c, const struct io_txcall *t, long *ret);

// A call's packets, grouped by the link each goes on (a packet's link is
// round-robin over its peer's live links on a striped channel), each
// group sent with one doorbell (more when paced or the ring fills).
long io_send(struct io *c, const uint64_t *peers, const uint64_t *sizes, const uint64_t *pos,
	     const struct io_pktframes *frames)
{
	uint8_t tmpl[NETDEV_MAX][WIRE_FRAME_HLEN];
	uint64_t tmpl_peer[NETDEV_MAX];
	int first[NETDEV_MAX + 1] = { 0 }, at[NETDEV_MAX];
	struct io_txcall *t = c->tx;
	uint16_t stripe = io_striped(c) ? WIRE_F_STRIPE : 0;
	if (!tx_wait(c, idle, true))
		return -E_BUSY;
	for (uint32_t i = 0; i < c->n_out; i++) {
		int nic = stripe ? io_next_link(c, peers[i]) : c->nic;
		t->peer[i] = peers[i], t->size[i] = sizes[i], t->nic[i] = (int8_t)nic, t->sent[i] = 0;
		if (nic >= 0) // else every link of the peer went down since the check
			first[nic + 1]++;
	}
	for (int n = 0; n < NETDEV_MAX; n++) {
		first[n + 1] += first[n];
		at[n] = first[n];
	}
	memset(tmpl_peer, 0xff, sizeof(tmpl_peer));
	for (uint32_t i = 0; i < c->n_out; i++) { // in call order: sequence numbers too
		int nic = t->nic[i];
		if (nic < 0)
			continue;
		paddr_t hpa = 0;
		if (!c->raw) {
			uint8_t *h = hdr_slot(c, i, &hpa);
			if (peers[i] != tmpl_peer[nic])
				header_template(c, tmpl[nic], nic, tmpl_peer[nic] = peers[i]);
			build_header(c, h, tmpl[nic], peers[i], sizes[i],
				     (uint16_t)((i + 1 == c->n_out ? WIRE_F_LAST : 0) | stripe |
						io_relay_flag(c, peers[i])));
		}
		t->idx[at[nic]] = (uint8_t)i;
		build_packet(c, &t->pkts[at[nic]], hpa, pos[i], sizes[i], &frames[i]);
		if (hpa && io_relay_flag(c, peers[i])) // the route trailer, after the header in its slot
			io_relay_trailer(c, peers[i], arch_p2v(hpa + IO_HDR_SLOT / 2), hpa + IO_HDR_SLOT / 2,
					 &t->pkts[at[nic]]);
		at[nic]++;
	}
	struct txgroup g[NETDEV_MAX];
	for (int n = 0; n < NETDEV_MAX; n++)
		g[n] = (struct txgroup){ .p = t->pkts + first[n], .n = first[n + 1] - first[n] };
	send_groups(c, g);
	long ret = -E_BUSY;
	for (int n = 0; n < NETDEV_MAX; n++) {
		if (g[n].err && !g[n].done)
			ret = g[n].err;
		for (int k = 0; k < g[n].done; k++)
			t->sent[t->idx[first[n] + k]] = 1;
	}
	account(c, t, &ret);
	return ret;
}

// Counts what left. Sequence numbers of a peer's packets that never left
// and were the last to it are given back (the receiver sees no gap); one
// that did not leave before one that did is a hole the receiver will
// report (-E_GAP): those after it are counted as stranded.
// *ret becomes how many left, or stays the error when none did.
static void account(struct io *c, const struct io_txcall *t, long *ret)
{
	uint32_t sent = 0;
	uint32_t later_sent = 0; // bit p: a packet to peer p left after this point
	for (uint32_t i = c->n_out; i-- > 0;) {
		uint32_t pb = 1u << (t->peer[i] % 32);
		if (t->sent[i]) {
			sent++;
			later_sent |= pb;
			c->st.tx_bytes += t->size[i];
		} else if (!c->raw && !(later_sent & pb)) {
			c->seq[t->peer[i]]--;
		} else if (!c->raw) {
			c->st.tx_stranded++;
		}
	}
	c->st.tx_packets += sent;
	c->st.tx_batches += sent > 0;
	if (sent)
		*ret = sent;
}

// ------------------------------------------------------------- receive

#define REFILL_GROUP 64

void io_refill_add(int nic, paddr_t pa)
{
	struct io_nic *ni = &io_nics[nic];
	if (ni->nrefill == IO_RING_MAX + IO_MAX_BUFS)
		pmem_free(pa); // the ring cannot take more than its slots anyway
	else
		ni->refill[ni->nrefill++] = pa;
}

void io_give_back(const struct frame *f)
{
	for (int i = 0; i < f->nbuf; i++)
		io_refill_add(f->nic, f->buf[i]);
}

// Posts the collected frames to the ring; what the ring cannot take (it
// was refilled from the reserve while frames were held) goes back to pmem.
static void flush_refill(int nic)
{
	struct io_nic *ni = &io_nics[nic];
	struct netdev *nd = netdev_get(nic);
	int taken = ni->nrefill ? nd->ops->rx_refill(nd, ni->refill, ni->nrefill) : 0;
	if (taken < 0)
		taken = 0;
	for (int i = taken; i < ni->nrefill; i++)
		pmem_free(ni->refill[i]);
	ni->nrefill = 0;
}

// Posts only a full group, or when the ring runs below half its buffers.
static void maybe_refill(int nic)
{
	struct netdev *nd = netdev_get(nic);
	if (io_nics[nic].nrefill >= REFILL_GROUP || nd->ops->rx_free_slots(nd) >= nd->rx_slots / 2)
		flush_refill(nic);
}

static struct io *channel_of(int nic, uint16_t chan)
{
	for (int i = 0; i < NIO; i++)
		if (ios[i].h.used && !ios[i].raw && (ios[i].nicmask & (1u << nic)) && ios[i].channel == chan)
			return &ios[i];
	return NULL;
}

bool io_rx_scrub = true;

// Copies f buffer by buffer into the slot's pages from `page` on: every
// buffer but the last is full, and each lands in a page of the slot.
static void copy_in(struct io *c, const struct frame *f, uint64_t page)
{
	uint32_t left = f->len;
	for (int i = 0; i < f->nbuf; i++) {
		uint32_t n = left < PAGE_SIZE ? left : PAGE_SIZE;
		memcpy(arch_p2v(vregion_frame(c->in_vr, page + i)), arch_p2v(f->buf[i]), n);
		left -= n;
	}
}

// A ring buffer may have been another process's slot page: past the
// frame's last byte it still holds that process's data. Zero it before
// the page becomes this process's (the frame's own bytes are not touched).
static void scrub_tail(const struct frame *f)
{
	uint32_t used = f->len - (uint32_t)(f->nbuf - 1) * PAGE_SIZE;
	if (io_rx_scrub)
		pmem_zero_tail(f->buf[f->nbuf - 1], used);
}

// Puts frame f (payload len) into slot c->got: copied when short, else its
// buffers are exchanged for the slot's first pages (all but a short last
// one, which is copied).
static void into_slot(struct io *c, const struct frame *f, uint32_t len)
{
	uint64_t off = c->got * c->slot_size, pages = f->nbuf;
	bool copy = f->len <= io_copy_threshold;
	if (pages * PAGE_SIZE > c->slot_size) {
		c->st.drop_toolong++;
		io_give_back(f);
		return;
	}
	if (vregion_check_range(c->in_vr, off, pages * PAGE_SIZE) < 0) {
		c->st.drop_badslot++; // the process freed or pinned its slot pages
		io_give_back(f);
		return;
	}
	if (copy) {
		copy_in(c, f, off / PAGE_SIZE);
		io_give_back(f);
		c->st.rx_copied++;
		c->st.rx_bytes_copied += f->len;
	} else {
		// A last buffer holding no more than the threshold is copied into
		// the slot's own page (its bytes past the frame are the process's
		// already: no scrub) and goes back to the ring; the rest is
		// exchanged. A jumbo frame's last page often holds 30 bytes.
		uint32_t tail = f->len - (uint32_t)(f->nbuf - 1) * PAGE_SIZE;
		uint64_t swap = tail <= io_copy_threshold ? pages - 1 : pages;
		struct frame old = { .nbuf = (uint8_t)swap, .nic = f->nic };
		if (swap < pages) {
			memcpy(arch_p2v(vregion_frame(c->in_vr, off / PAGE_SIZE + swap)), arch_p2v(f->buf[swap]), tail);
			io_refill_add(f->nic, f->buf[swap]);
			c->st.rx_bytes_copied += tail;
		} else {
			scrub_tail(f);
		}
		vregion_replace(c->in_vr, off / PAGE_SIZE, swap, f->buf, old.buf);
		io_give_back(&old);
		c->st.rx_exchanged++;
		c->st.rx_pages_exchanged += swap;
	}
	if (c->got == 0)
		c->st.batch_first_tsc = arch_rdtsc();
	c->sizes[c->got] = len;
	c->pos[c->got] = off + WIRE_FRAME_HLEN;
	c->st.rx_packets++;
	if (++c->got == c->n_in)
		proc_wakeup(c);
}

bool io_can_take(const struct io *c, const struct frame *f)
{
	if (c->waiting && c->got < c->n_in && !c->cut)
		return true;
	return c->pend_n < IO_PEND && pmem_free_count() >= f->nbuf;
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
	struct netdev *nd = netdev_get(nic);
	int have = nd->rx_slots - nd->ops->rx_free_slots(nd) + io_nics[nic].nrefill;
	int low = nd->rx_slots * 3 / 4 - have;
	return low <= 0 ? 0 : low < n ? low : n;
}

// All or nothing: every frame needed is free (pmem_free_count counts the
// reserve pmem_take draws on first), or none is taken and -E_NOMEM says
// so. Never a frame 0 into a ring's refill list: the driver would refuse
// the whole list and flush_refill hand each entry to pmem_free.
long io_replenish(int nic, int n)
{
	int need = replenish_need(nic, n);
	if (pmem_free_count() < (uint64_t)need)
		return -E_NOMEM;
	for (int i = 0; i < need; i++)
		io_refill_add(nic, pmem_take());
	return 0;
}

// Keeps a frame (or a gap marker) for the next input_io.
static void hold(struct io *c, const struct frame *f)
{
	if (f->nbuf && !io_can_take(c, f)) {
		c->st.drop_noslot++;
		io_give_back(f);
		return;
	}
	c->pend[(c->pend_head + c->pend_n++) % IO_PEND_RING] = *f;
	io_replenish(f->nic, f->nbuf);
	if (c->pend_n > c->st.frames_held_max)
		c->st.frames_held_max = c->pend_n;
}

void io_take(struct io *c, const struct frame *f)
{
	if (f->nbuf && c->waiting && c->got < c->n_in && !c->cut) {
		into_slot(c, f, wire_get_len(arch_p2v(f->buf[0])));
		return;
	}
	if (!f->nbuf && c->waiting) { // a gap: the batch ends before it
		c->cut = true;
		proc_wakeup(c);
	}
	hold(c, f);
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
	return memcmp(b + WIRE_OFF_DST, netdev_get(nic)->mac, 6) == 0;
}

// Checks a whole frame and hands it to its channel. Returns the drop
// counter to bump, or NULL when the frame was taken.
static uint64_t *dispatch(int nic, const struct frame *f, bool error)
{
	struct io_nic *ni = &io_nics[nic];
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
	uint32_t src = RT_NONE; // a routed frame's origin
	if ((flags & WIRE_F_ROUTE) && io_relay_rx(f, len, &src))
		return NULL; // forwarded, or dropped and counted by the relay
	struct io *c = channel_of(nic, wire_get_channel(b));
	if (!c)
		return &ni->drop_nochan;
	if (!(flags & WIRE_F_STRIPE)) {
		c->st.link_rx[nic]++;
		io_take(c, f);
		return NULL;
	}
	int peer = src != RT_NONE ? io_relay_peer_of(c, src) : io_peer_of(c, b + WIRE_OFF_SRC);
	if (peer < 0) {
		c->st.drop_nopeer++; // no order to put it in
		io_give_back(f);
		return NULL;
	}
	if (flags & (WIRE_F_ACK | WIRE_F_HBEAT)) { // the channel's own control frame
		io_rel_ctrl(c, peer, nic, b + WIRE_FRAME_HLEN, len);
		io_give_back(f);
		return NULL;
	}
	if (!io_rel_data(c, peer, nic, wire_get_batch(b))) {
		io_give_back(f); // an earlier session's
		return NULL;
	}
	c->st.link_rx[nic]++;
	io_order(c, peer, wire_get_seq(b), f);
	io_rel_rx_progress(c, peer, flags & WIRE_F_LAST);
	return NULL;
}

// Adds one receive buffer to the frame being assembled; on EOP dispatches
// it. Buffers past IO_MAX_BUFS go straight back: the frame is too long.
static void take_fragment(int nic, const struct rxfrag *r)
{
	struct io_nic *ni = &io_nics[nic];
	struct frame *f = &ni->partial;
	f->nic = (uint8_t)nic;
	if (f->nbuf < IO_MAX_BUFS) {
		f->buf[f->nbuf++] = r->pa;
		f->len = (uint16_t)(f->len + r->len);
	} else {
		io_refill_add(nic, r->pa);
		ni->overlong = true;
	}
	if (!r->eop)
		return;
	uint64_t *drop = ni->overlong ? &ni->drop_toolong : dispatch(nic, f, r->error);
	if (drop) {
		(*drop)++;
		io_give_back(f);
	}
	*f = (struct frame){ 0 };
	ni->overlong = false;
}

static bool waits(const struct io *c) { return c->waiting && c->got < c->n_in && !c->cut; }

static bool someone_waits(int nic)
{
	for (int i = 0; i < NIO; i++)
		if (ios[i].h.used && (ios[i].nicmask & (1u << nic)) && waits(&ios[i]))
			return true;
	return false;
}

// Takes up to max buffers from the NIC; returns how many it had.
static int drain_some(int nic, int max)
{
	struct netdev *d = netdev_get(nic);
	struct rxfrag fr[64];
	int n = d->ops->rx_poll(d, fr, max < 64 ? max : 64);
	for (int i = 0; i < n; i++)
		take_fragment(nic, &fr[i]);
	io_relay_flush(); // what the relay forwarded from them: one doorbell per NIC
	maybe_refill(nic);
	return n;
}

static void drain(int nic)
{
	while (drain_some(nic, 64) > 0)
		;
}

// Takes every frame the NIC has. While a channel on it still waits for
// packets the NIC stays in polling mode; then its interrupts come back
// ("poll until empty, unmask, poll once more": no wake-up is lost).
void io_poll_nic(int nic)
{
	drain(nic);
	if (someone_waits(nic))
		return;
	flush_refill(nic); // between batches the ring gets everything back
	if (!io_nics[nic].polling)
		return;
	io_nics[nic].polling = false;
	netdev_get(nic)->ops->rx_irq(netdev_get(nic), true);
	drain(nic);
	flush_refill(nic);
}

// The NIC's receive interrupt: poll from here on until the batches that
// wait are complete.
void io_rx_ready(struct netdev *d, void *arg)
{
	(void)arg;
	int nic = d->index;
	// Counted for a batch still collecting; a cause latched while masked
	// fires once more after a batch completes (the NIC counts it: nic_irqs).
	for (int i = 0; i < NIO; i++)
		if (ios[i].h.used && (ios[i].nicmask & (1u << nic)) && waits(&ios[i]))
			ios[i].st.rx_irqs++;
	d->ops->rx_irq(d, false);
	io_nics[nic].polling = true;
	io_poll_nic(nic);
}

// A striped channel's links are drained in turns of a few buffers each,
// so frames striped over them come nearly in order (the reorder window
// then holds few), then each NIC as io_poll_nic does.
void io_poll_channel(struct io *c)
{
	if (io_striped(c)) {
		for (int any = 1; any;) {
			any = 0;
			IO_FOR_EACH_NIC(c, n)
				any |= drain_some(n, 8) > 0;
		}
	}
	IO_FOR_EACH_NIC(c, n)
		io_poll_nic(n);
}

static void pend_pop(struct io *c)
{
	c->pend_head = (c->pend_head + 1) % IO_PEND_RING;
	c->pend_n--;
}

// Held frames go into the batch, oldest first, up to a gap marker: with
// nothing delivered yet the marker is taken and -E_GAP returned, else the
// batch ends before it. Then striped frames that waited for room follow.
long io_deliver_pending(struct io *c)
{
	long e = 0;
	while (c->pend_n && c->got < c->n_in && !c->cut) {
		struct frame f = c->pend[c->pend_head];
		if (!f.nbuf) {
			if (c->got)
				c->cut = true;
			else
				pend_pop(c), e = -E_GAP;
			break;
		}
		pend_pop(c);
		into_slot(c, &f, wire_get_len(arch_p2v(f.buf[0])));
	}
	io_release_waiting(c);
	IO_FOR_EACH_NIC(c, n)
		flush_refill(n);
	return e;
}

// The channel's held frames go back to their rings (which they were kept
// out of); what a ring cannot take is freed.
void io_drop_pending(struct io *c)
{
	io_order_free(c);
	for (; c->pend_n; c->pend_n--, c->pend_head = (c->pend_head + 1) % IO_PEND_RING)
		io_give_back(&c->pend[c->pend_head]);
	for (int n = 0; n < netdev_count(); n++)
		flush_refill(n);
}
