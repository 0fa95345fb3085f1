// The channel's sink: a received packet goes into the slot of the batch an
// input_io is collecting (copied when short, else its buffers exchanged for
// the slot's pages), or is held for the next input_io.
#include "io_priv.h"
#include "vregion.h"
#include "pmem.h"
#include "proc.h"
#include "../net/demux.h"
#include "../net/stripe.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

uint64_t io_copy_threshold = 256;

bool io_rx_scrub = true;

// Copies f buffer by buffer into the slot's pages from `page` on: every
// buffer but the last is full, and each lands in a page of the slot.
static void copy_in(struct io *c, const struct pkt *f, uint64_t page)
{
	uint32_t left = f->len;
	for (int i = 0; i < f->nbuf; i++) {
		uint32_t n = left < PAGE_SIZE ? left : PAGE_SIZE;
		memcpy(arch_p2v(vregion_frame(c->rg.in_vr, page + i)), arch_p2v(f->buf[i]), n);
		left -= n;
	}
}

// A ring buffer may have been another process's slot page: past the
// frame's last byte it still holds that process's data. Zero it before
// the page becomes this process's (the frame's own bytes are not touched).
// Unless the page was this very region's slot page when it went to the
// ring (its origin mark is the region's serial, demux_give_back_marked):
// then it holds the frame's bytes and the region's own old ones, nothing
// the region's readers could not read, and the NIC wrote nothing else into
// it since (any other way back into a ring clears the mark, and so does
// every allocation and free). The common case of one receiver per NIC.
// Nor when it was a zeroed frame put in the ring for one kept out of it
// (demux_replenish): past the frame it holds zeros.
static void scrub_tail(struct io *c, const struct pkt *f)
{
	paddr_t last = f->buf[f->nbuf - 1];
	uint32_t used = f->len - (uint32_t)(f->nbuf - 1) * PAGE_SIZE;
	if (!io_rx_scrub)
		return;
	uint64_t mark = pmem_origin(last);
	if (mark == PMEM_ORIGIN_ZEROED || (c->rg.in_serial && mark == c->rg.in_serial)) {
		c->st.rx_scrubs_skipped++;
		return;
	}
	pmem_zero_tail(last, used);
	c->st.rx_scrubs++;
}

// May this CPU remap into c's waiting batch now? Under the kernel lock;
// or, the region being its caller's alone (b.priv, set for every batch an
// unlocked input_io collects: io.c says why), under the channel's lock,
// which every remap into it holds, on whichever CPU.
static bool may_fill(const struct io *c) { return nl_klocked() || c->b.priv; }

bool io_settles(const struct io *c)
{
	return c->fast != arch_cpu_id() + 1 || c->x.rel;
}

// The batch's process is woken: not by its own call (awake), and without
// the kernel lock, which a wake-up takes, by io_settle later.
static void wake(struct io *c)
{
	if (c->fast != arch_cpu_id() + 1 && nl_klocked())
		proc_wakeup(c);
}

// Puts frame f (payload len) into slot c->b.got: copied when short, else its
// buffers are exchanged for the slot's first pages (all but a short last
// one, which is copied).
static void into_slot(struct io *c, const struct pkt *f, uint32_t len)
{
	uint64_t off = c->b.got * c->rg.slot_size, pages = f->nbuf;
	bool copy = f->len <= io_copy_threshold;
	if (pages * PAGE_SIZE > c->rg.slot_size) {
		c->st.drop_toolong++;
		demux_give_back(f);
		return;
	}
	if (vregion_check_range(c->rg.in_vr, off, pages * PAGE_SIZE) < 0) {
		c->st.drop_badslot++; // the process freed or pinned its slot pages
		demux_give_back(f);
		return;
	}
	if (copy) {
		copy_in(c, f, off / PAGE_SIZE);
		demux_give_back(f);
		c->st.rx_copied++;
		c->st.rx_bytes_copied += f->len;
	} else {
		// A last buffer holding no more than the threshold is copied into
		// the slot's own page (its bytes past the frame are the process's
		// already: no scrub) and goes back to the ring; the rest is
		// exchanged. A jumbo frame's last page often holds 30 bytes.
		uint32_t tail = f->len - (uint32_t)(f->nbuf - 1) * PAGE_SIZE;
		uint64_t swap = tail <= io_copy_threshold ? pages - 1 : pages;
		struct pkt old = { .nbuf = (uint8_t)swap, .nic = f->nic };
		if (swap < pages) {
			memcpy(arch_p2v(vregion_frame(c->rg.in_vr, off / PAGE_SIZE + swap)), arch_p2v(f->buf[swap]), tail);
			demux_refill_add(f->nic, f->buf[swap]);
			c->st.rx_bytes_copied += tail;
		} else {
			scrub_tail(c, f);
		}
		vregion_replace(c->rg.in_vr, off / PAGE_SIZE, swap, f->buf, old.buf);
		demux_give_back_marked(&old, c->rg.in_serial);
		c->st.rx_exchanged++;
		c->st.rx_pages_exchanged += swap;
	}
	if (c->b.got == 0)
		c->st.batch_first_tsc = arch_rdtsc();
	c->b.sizes[c->b.got] = len;
	c->b.pos[c->b.got] = off + WIRE_FRAME_HLEN;
	c->st.rx_packets++;
	if (++c->b.got == c->n_in)
		wake(c);
}

bool io_waiting(const struct io *c) { return c->b.waiting && c->b.got < c->n_in && !c->b.cut; }

bool io_can_take(const struct io *c, const struct pkt *f)
{
	if (io_waiting(c) && may_fill(c))
		return true;
	return c->pend.n < IO_PEND && pmem_free_count() >= f->nbuf;
}


// Keeps a frame (or a gap marker) for the next input_io.
static void hold(struct io *c, const struct pkt *f)
{
	if (f->nbuf && !io_can_take(c, f)) {
		c->st.drop_noslot++;
		demux_give_back(f);
		return;
	}
	c->pend.q[(c->pend.head + c->pend.n++) % IO_PEND_RING] = *f;
	demux_replenish(f->nic, f->nbuf);
	if (c->pend.n > c->st.frames_held_max)
		c->st.frames_held_max = c->pend.n;
}

static long deliver_held(struct io *c, bool report);

void io_take(struct io *c, const struct pkt *f)
{
	// Remapping into the batch's slots takes the kernel lock (the region's
	// spaces, their TLBs), unless the region is its caller's alone
	// (may_fill): else the packet is held, and io_settle moves it in. What
	// was held so goes in first: the order is kept.
	if (f->nbuf && io_waiting(c) && may_fill(c)) {
		deliver_held(c, false);
		if (io_waiting(c) && !c->pend.n) {
			into_slot(c, f, wire_get_len(arch_p2v(f->buf[0])));
			return;
		}
	}
	if (!f->nbuf && c->b.waiting) { // a gap: the batch ends before it
		c->b.cut = true;
		wake(c);
	}
	hold(c, f);
}

static void pend_pop(struct io *c)
{
	c->pend.head = (c->pend.head + 1) % IO_PEND_RING;
	c->pend.n--;
}

// Held frames into the batch, oldest first, up to a gap marker: the batch
// ends before it, or with nothing delivered yet the marker is taken and
// -E_GAP returned (report: input_io's call; else it stays for that).
static long deliver_held(struct io *c, bool report)
{
	long e = 0;
	while (c->pend.n && c->b.got < c->n_in && !c->b.cut) {
		struct pkt f = c->pend.q[c->pend.head];
		if (!f.nbuf) {
			if (c->b.got) {
				c->b.cut = true;
				wake(c); // the batch ends here (settle: its process sleeps)
			} else if (report)
				pend_pop(c), e = -E_GAP;
			break;
		}
		pend_pop(c);
		into_slot(c, &f, wire_get_len(arch_p2v(f.buf[0])));
	}
	return e;
}

// Then striped frames that waited for room follow, and the rings get the
// buffers back.
static long deliver(struct io *c, bool report)
{
	long e = deliver_held(c, report);
	stripe_release(c);
	IO_FOR_EACH_NIC(c, n)
		demux_flush_refill(n);
	return e;
}

long io_deliver_pending(struct io *c) { return deliver(c, true); }

void io_deliver_held(struct io *c)
{
	if (io_waiting(c) && c->pend.n)
		deliver(c, false);
}

void io_settle(struct io *c)
{
	io_deliver_held(c);
	if (c->b.waiting && !io_waiting(c))
		proc_wakeup(c); // filled or cut without the kernel lock (wake)
	xport_settle(c);
}

// The channel's held frames go back to their rings (which they were kept
// out of); what a ring cannot take is freed.
void io_drop_pending(struct io *c)
{
	for (; c->pend.n; c->pend.n--, c->pend.head = (c->pend.head + 1) % IO_PEND_RING)
		demux_give_back(&c->pend.q[c->pend.head]);
	for (int n = 0; n < netdev_count(); n++)
		demux_flush_refill(n);
}

