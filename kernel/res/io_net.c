// The I/O manager's data path. Send: headers in the channel's header frames,
// payload straight from the user's output frames, one doorbell per batch.
// Receive: frames are parsed in the buffers the NIC filled; a frame longer
// than the copy threshold is exchanged into the waiting process's slot (its
// buffers become the slot's pages, the slot's old frames refill the ring),
// a shorter one is copied. Malformed frames are dropped and counted by cause.
#include "io_priv.h"
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
	struct io *c = (cookie & 0xff) < NIO ? &ios[cookie & 0xff] : NULL;
	if (c && c->h.used && c->h.gen == (uint32_t)(cookie >> 8) && c->inflight)
		c->inflight--;
}

int io_reclaim_nic(int nic)
{
	struct netdev *nd = netdev_get(nic);
	return nd->ops->tx_reclaim(nd, tx_done, NULL);
}

void io_reclaim(struct io *c) { io_reclaim_nic(c->nic); }

static uint8_t *hdr_slot(struct io *c, uint32_t i, paddr_t *pa)
{
	uint64_t off = (uint64_t)i * IO_HDR_SLOT;
	*pa = c->hdr[off / PAGE_SIZE] + off % PAGE_SIZE;
	return arch_p2v(*pa);
}

// The 30 header bytes common to a call's packets to one peer; per packet
// only the flags, sequence number and length differ.
static void header_template(struct io *c, uint8_t *t, const uint8_t *src, uint64_t peer)
{
	wire_put_eth(t, c->peer[peer], src);
	wire_put_hdr(t, &(struct wire_fields){ .channel = c->channel, .batch = (uint16_t)c->n_out,
					       .link = (uint16_t)c->nic });
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

// Waits for the NIC, at most IO_TX_WAIT_US (interrupts are off meanwhile:
// a transmitter that stalls must not stop the machine for longer).
// QEMU finishes a batch inside the doorbell write; a real NIC at 1 Gbit/s
// sends a 128-packet batch of 8960 bytes in about 9 ms.
static bool tx_wait(struct io *c, bool (*done)(struct io *c, int reclaimed))
{
	uint64_t end = arch_rdtsc() + timer_us_to_tsc(IO_TX_WAIT_US);
	for (;;) {
		if (done(c, io_reclaim_nic(c->nic)))
			return true;
		if (arch_rdtsc() > end)
			return false;
		arch_pause();
	}
}

static bool idle(struct io *c, int reclaimed) { return (void)reclaimed, c->inflight == 0; }
static bool room(struct io *c, int reclaimed) { return (void)c, reclaimed > 0; }

// Header slots are reused per call: wait (bounded) until the NIC is done
// with the previous batch.
bool io_tx_idle(struct io *c) { return tx_wait(c, idle); }

static struct netpkt pkts[IO_MAX_BATCH];
static long sent_part(struct io *c, const uint64_t *peers, const uint64_t *sizes, uint32_t sent,
		      long err);

long io_send(struct io *c, const uint64_t *peers, const uint64_t *sizes, const uint64_t *pos,
	     const struct io_pktframes *frames)
{
	uint8_t mac[6], tmpl[WIRE_FRAME_HLEN];
	uint64_t tmpl_peer = ~0ull;
	if (!io_tx_idle(c))
		return -E_BUSY;
	memcpy(mac, c->dev->mac, 6);
	for (uint32_t i = 0; i < c->n_out; i++) {
		paddr_t hpa = 0;
		if (!c->raw) {
			uint8_t *h = hdr_slot(c, i, &hpa);
			if (peers[i] != tmpl_peer)
				header_template(c, tmpl, mac, tmpl_peer = peers[i]);
			build_header(c, h, tmpl, peers[i], sizes[i], i + 1 == c->n_out ? WIRE_F_LAST : 0);
		}
		build_packet(c, &pkts[i], hpa, pos[i], sizes[i], &frames[i]);
	}
	uint32_t sent = 0;
	long err = -E_BUSY;
	while (sent < c->n_out) {
		int r = c->dev->ops->tx_batch(c->dev, pkts + sent, (int)(c->n_out - sent));
		if (r < 0) {
			err = r;
			break;
		}
		c->inflight += (uint32_t)r;
		sent += (uint32_t)r;
		if (r > 0)
			c->st.tx_doorbells++;
		else if (!tx_wait(c, room)) // the ring is full (of any channel's packets)
			break;
	}
	return sent_part(c, peers, sizes, sent, err);
}

// Accounts for the first `sent` packets of the call; the rest never left,
// so their sequence numbers are given back (a receiver sees no gap).
// Returns how many left, or err when none did.
static long sent_part(struct io *c, const uint64_t *peers, const uint64_t *sizes, uint32_t sent,
		      long err)
{
	for (uint32_t i = c->n_out; !c->raw && i-- > sent;)
		c->seq[peers[i]]--;
	for (uint32_t i = 0; i < sent; i++)
		c->st.tx_bytes += sizes[i];
	c->st.tx_packets += sent;
	c->st.tx_batches += sent > 0;
	return sent ? (long)sent : err;
}

// ------------------------------------------------------------- receive

#define REFILL_GROUP 64

static void refill_add(int nic, paddr_t pa)
{
	struct io_nic *ni = &io_nics[nic];
	ni->refill[ni->nrefill++] = pa;
}

static void give_back(int nic, const struct frame *f)
{
	for (int i = 0; i < f->nbuf; i++)
		refill_add(nic, f->buf[i]);
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
		if (ios[i].h.used && !ios[i].raw && ios[i].nic == nic && ios[i].channel == chan)
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
		give_back(c->nic, f);
		return;
	}
	if (vregion_check_range(c->in_vr, off, pages * PAGE_SIZE) < 0) {
		c->st.drop_badslot++; // the process freed or pinned its slot pages
		give_back(c->nic, f);
		return;
	}
	if (copy) {
		copy_in(c, f, off / PAGE_SIZE);
		give_back(c->nic, f);
		c->st.rx_copied++;
		c->st.rx_bytes_copied += f->len;
	} else {
		// A last buffer holding no more than the threshold is copied into
		// the slot's own page (its bytes past the frame are the process's
		// already: no scrub) and goes back to the ring; the rest is
		// exchanged. A jumbo frame's last page often holds 30 bytes.
		uint32_t tail = f->len - (uint32_t)(f->nbuf - 1) * PAGE_SIZE;
		uint64_t swap = tail <= io_copy_threshold ? pages - 1 : pages;
		struct frame old = { .nbuf = (uint8_t)swap };
		if (swap < pages) {
			memcpy(arch_p2v(vregion_frame(c->in_vr, off / PAGE_SIZE + swap)), arch_p2v(f->buf[swap]), tail);
			refill_add(c->nic, f->buf[swap]);
			c->st.rx_bytes_copied += tail;
		} else {
			scrub_tail(f);
		}
		vregion_replace(c->in_vr, off / PAGE_SIZE, swap, f->buf, old.buf);
		give_back(c->nic, &old);
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

// Keeps a frame for the next input_io; the ring gets reserve frames instead.
static void hold(struct io *c, const struct frame *f)
{
	if (c->pend_n == IO_PEND || pmem_free_count() < f->nbuf) {
		c->st.drop_noslot++;
		give_back(c->nic, f);
		return;
	}
	c->pend[(c->pend_head + c->pend_n++) % IO_PEND] = *f;
	for (int i = 0; i < f->nbuf; i++)
		refill_add(c->nic, pmem_take());
	if (c->pend_n > c->st.frames_held_max)
		c->st.frames_held_max = c->pend_n;
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
	uint32_t need = WIRE_FRAME_HLEN + len;
	if (f->len < need || (f->len > need && f->len > WIRE_MIN_FRAME))
		return &ni->drop_badlen;
	struct io *c = channel_of(nic, wire_get_channel(b));
	if (!c)
		return &ni->drop_nochan;
	if (c->waiting && c->got < c->n_in)
		into_slot(c, f, len);
	else
		hold(c, f);
	return NULL;
}

// Adds one receive buffer to the frame being assembled; on EOP dispatches
// it. Buffers past IO_MAX_BUFS go straight back: the frame is too long.
static void take_fragment(int nic, const struct rxfrag *r)
{
	struct io_nic *ni = &io_nics[nic];
	struct frame *f = &ni->partial;
	if (f->nbuf < IO_MAX_BUFS) {
		f->buf[f->nbuf++] = r->pa;
		f->len = (uint16_t)(f->len + r->len);
	} else {
		refill_add(nic, r->pa);
		ni->overlong = true;
	}
	if (!r->eop)
		return;
	uint64_t *drop = ni->overlong ? &ni->drop_toolong : dispatch(nic, f, r->error);
	if (drop) {
		(*drop)++;
		give_back(nic, f);
	}
	*f = (struct frame){ 0 };
	ni->overlong = false;
}

static bool someone_waits(int nic)
{
	for (int i = 0; i < NIO; i++)
		if (ios[i].h.used && ios[i].nic == nic && ios[i].waiting && ios[i].got < ios[i].n_in)
			return true;
	return false;
}

static void drain(int nic)
{
	struct netdev *d = netdev_get(nic);
	struct rxfrag fr[64];
	int n;
	do {
		n = d->ops->rx_poll(d, fr, 64);
		for (int i = 0; i < n; i++)
			take_fragment(nic, &fr[i]);
		maybe_refill(nic);
	} while (n > 0);
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
		if (ios[i].h.used && ios[i].nic == nic && ios[i].waiting && ios[i].got < ios[i].n_in)
			ios[i].st.rx_irqs++;
	d->ops->rx_irq(d, false);
	io_nics[nic].polling = true;
	io_poll_nic(nic);
}

void io_deliver_pending(struct io *c)
{
	while (c->pend_n && c->got < c->n_in) {
		struct frame f = c->pend[c->pend_head];
		c->pend_head = (c->pend_head + 1) % IO_PEND;
		c->pend_n--;
		const uint8_t *b = arch_p2v(f.buf[0]);
		into_slot(c, &f, wire_get_len(b));
	}
	flush_refill(c->nic);
}

void io_drop_pending(struct io *c)
{
	for (; c->pend_n; c->pend_n--, c->pend_head = (c->pend_head + 1) % IO_PEND) {
		const struct frame *f = &c->pend[c->pend_head];
		for (int i = 0; i < f->nbuf; i++)
			pmem_free(f->buf[i]);
	}
}
