// Boot self-test of the virtio-net driver through its netdev_ops, on the
// bare driver before the I/O manager (kernel command line
// virtiotest=MODE[,MODE...]):
//   loop   virtio NICs 0-1 (and 2-3) wired to each other: gathered batches
//          of 60/1514/4126/9018 bytes, a batch of the sizes around page and
//          header-slot boundaries, and 64 jumbo frames (more descriptors
//          than the transmit ring has: one call with indirect tables),
//          both ways; every byte and every buffer
//          boundary checked; counters (kicks per batch, no transmit
//          interrupts); receive-interrupt masking; bad input refused;
//          frame balance;
//   basic  one NIC: MAC, a broadcast batch sent and reclaimed, one kick;
//   link   waits for a link-down and a link-up interrupt (the harness runs
//          set_link in QEMU's monitor when it reads "waiting for link");
//   detach sends in flight unpinned, every frame back, attached again.
// Prints "TEST name ... ok|FAIL"; returns the number of failures. Batches,
// the byte check and the TEST lines are ../nettest.c's, shared with e1000.
// The frame balance comes from dma_free_frames (kernel/dma.h).
#include "virtio_net.h"
#include "../nettest.h"
#include "virtqueue.h"
#include "dma.h"
#include "arch/x86_64/timer.h"
#include "kprintf.h"
#include <err.h>
#include <fmt.h>
#include <string.h>

#define BATCH_MAX NETTEST_BATCH_MAX
#define WAIT_US 10000000

static uint64_t kicks_tx_gone, kicks_rx_gone; // of NICs detached by the test
static uint64_t tx_calls; // tx_batch calls that queued something, all modes

// The registered virtio-net NICs, in registry order.
static int vnics(struct netdev **out) { return nettest_family("virtio-net", out); }
static struct netdev_stats stats(struct netdev *nd) { return nettest_stats(nd); }

static struct virtio_net_info info(struct netdev *nd)
{
	struct virtio_net_info i = { 0 };
	virtio_net_info(nd, &i);
	return i;
}

// ---- transfers ----

// One batch from tx to rx: sends what the ring takes, reclaims, polls
// the receiver, until every packet arrived and was reported sent.
struct xfer {
	struct netdev *tx, *rx;
	struct nettest_batch *b;
	struct nettest_rx c;
	int sent, reclaimed, calls; // calls: tx_batch calls that queued something
	uint64_t next_cookie;
	unsigned polls;
};

// Polls the receiver once, for 32, 1, 2 or 3 buffers in turn (so frames
// are also handed out across calls); returns the buffers checked, or -1.
static int receive_some(struct xfer *x)
{
	static const int maxes[4] = { 32, 1, 2, 3 };
	return nettest_receive(x->rx, &x->c, maxes[x->polls++ % 4]);
}

static int xfer_step(struct xfer *x)
{
	int progress = 0;
	if (x->sent < x->b->n) {
		int r = x->tx->ops->tx_batch(x->tx, &x->b->pkt[x->sent], x->b->n - x->sent);
		if (r < 0)
			return -1;
		x->calls += r > 0;
		tx_calls += r > 0;
		x->sent += r;
		progress += r;
	}
	int r = x->tx->ops->tx_reclaim(x->tx, nettest_done_in_order, &x->next_cookie);
	x->reclaimed += r;
	progress += r;
	r = receive_some(x);
	return r < 0 ? -1 : progress + r;
}

static bool transfer(struct xfer *x)
{
	uint64_t t0 = timer_now_us();
	int n = x->b->n;
	x->next_cookie = x->b->seq0;
	while ((x->c.next < n || x->reclaimed < n) && timer_now_us() - t0 < WAIT_US) {
		int r = xfer_step(x);
		if (r < 0)
			return false;
		if (r == 0)
			arch_idle(); // an interrupt or the 1 ms tick
	}
	return x->c.next == n && x->reclaimed == n && !x->c.bad &&
	       x->next_cookie == x->b->seq0 + (uint64_t)n;
}

// What one direction of the loop adds up to, for the counter checks.
struct tally {
	uint64_t pkts, bytes, calls;
	int max_segs;
};

static bool send_and_check(struct netdev *a, struct netdev *b, const uint32_t *sizes, int n,
			   uint32_t *seq, struct tally *t)
{
	static struct nettest_batch bt;
	struct xfer x = { .tx = a, .rx = b, .b = &bt, .c = { .b = &bt } };
	bool ok = nettest_build_batch(&bt, a, b, sizes, n, *seq) && transfer(&x);
	if (!ok)
		kprintf("  batch seq %u: %d of %d sent, %d reclaimed, %d received, %d bad\n", *seq,
			x.sent, n, x.reclaimed, x.c.next, x.c.bad);
	for (int i = 0; i < n; i++)
		t->bytes += sizes[i];
	t->pkts += (uint64_t)n;
	t->calls += (uint64_t)x.calls;
	t->max_segs = bt.max_segs > t->max_segs ? bt.max_segs : t->max_segs;
	nettest_free_batch(&bt);
	*seq += (uint32_t)n;
	return ok;
}

static const uint32_t mix[4] = { 60, 1514, 4096 + 30, 9018 };
// Around the boundaries of the receive scheme: a page holds 4084 bytes
// by DMA, 12 more from the next buffer's slot; frames ending in a slot.
static const uint32_t edges[] = { 4083, 4084, 4085, 4090, 4095, 4096, 4097,
				  8179, 8180, 8181, 8191, 8192, 8193 };
#define NEDGES (int)(sizeof(edges) / sizeof(edges[0]))

static bool one_direction(struct netdev *a, struct netdev *b, int batches, uint32_t *seq,
			  struct tally *t)
{
	uint32_t sizes[BATCH_MAX];
	for (int k = 0; k < batches; k++) {
		for (int i = 0; i < 4; i++)
			sizes[i] = mix[(i + k) % 4];
		if (!send_and_check(a, b, sizes, 4, seq, t))
			return false;
	}
	if (!send_and_check(a, b, edges, NEDGES, seq, t))
		return false;
	for (int i = 0; i < BATCH_MAX; i++)
		sizes[i] = 9018;
	return send_and_check(a, b, sizes, BATCH_MAX, seq, t);
}

// Every packet one frame each side, every byte counted, no errors; every
// tx_batch call that queued one kick or one the device declined; no
// interrupt on the sending side (completions are polled).
static bool counters_ok(struct netdev *a, struct netdev *b, const struct netdev_stats s0[2],
			const struct virtio_net_info i0[2], const struct tally *t)
{
	struct netdev_stats ta = stats(a), rb = stats(b);
	struct virtio_net_info ia = info(a), ib = info(b);
	uint64_t kicks = ta.doorbells - s0[0].doorbells;
	uint64_t skipped = ia.tx_kicks_skipped - i0[0].tx_kicks_skipped;
	kprintf("  tx_batch calls %lu: kicks %lu + declined %lu; tx %lu frames %lu bytes, "
		"rx %lu frames %lu bytes, errors %lu; irqs tx-side %lu rx-side %lu; rx notifies %lu "
		"(declined %lu), tails copied %lu, slot-only buffers %lu\n",
		t->calls, kicks, skipped, ta.tx_frames - s0[0].tx_frames, ta.tx_bytes - s0[0].tx_bytes,
		rb.rx_frames - s0[1].rx_frames, rb.rx_bytes - s0[1].rx_bytes, rb.rx_errors,
		ta.irqs - s0[0].irqs, rb.irqs - s0[1].irqs, rb.rx_refills - s0[1].rx_refills,
		ib.rx_kicks_skipped - i0[1].rx_kicks_skipped, ib.rx_tail_copies - i0[1].rx_tail_copies,
		ib.rx_recycled - i0[1].rx_recycled);
	return kicks + skipped == t->calls && kicks >= 1 &&
	       ta.tx_frames - s0[0].tx_frames == t->pkts && ta.tx_bytes - s0[0].tx_bytes == t->bytes &&
	       rb.rx_frames - s0[1].rx_frames == t->pkts && rb.rx_bytes - s0[1].rx_bytes == t->bytes &&
	       rb.rx_errors == 0 && ta.irqs == s0[0].irqs &&
	       ib.rx_recycled > i0[1].rx_recycled && ib.rx_tail_copies > i0[1].rx_tail_copies;
}

static void test_direction(const char *name, struct netdev *a, struct netdev *b, uint32_t *seq)
{
	nettest_idle_us(50000); // receive interrupts still latched from the last test land first
	struct netdev_stats s0[2] = { stats(a), stats(b) };
	struct virtio_net_info i0[2] = { info(a), info(b) };
	struct tally t = { 0 };
	uint64_t t0 = timer_now_us();
	bool ok = one_direction(a, b, 10, seq, &t);
	kprintf("  %s: %lu packets, %lu bytes, up to %d segments per packet, %lu us\n", name, t.pkts,
		t.bytes, t.max_segs, timer_now_us() - t0);
	ok = counters_ok(a, b, s0, i0, &t) && ok;
	nettest_report(name, ok);
}

// With indirect descriptors (negotiated on every NIC) each packet takes
// one entry of the transmit ring: 64 jumbo frames, each the virtio-net
// header and up to 5 segments (more descriptors than the ring's 256 in
// all), go in one tx_batch call.
static void test_tx_indirect(struct netdev *a, struct netdev *b, uint32_t *seq)
{
	static uint32_t sizes[BATCH_MAX];
	struct tally t = { 0 };
	for (int i = 0; i < BATCH_MAX; i++)
		sizes[i] = 9018;
	bool ok = (info(a).features & VIRTIO_RING_F_INDIRECT_DESC) &&
		  (info(b).features & VIRTIO_RING_F_INDIRECT_DESC);
	ok = send_and_check(a, b, sizes, BATCH_MAX, seq, &t) && ok;
	kprintf("  %lu jumbo frames of up to %d segments in %lu tx_batch calls, ring of %d\n", t.pkts,
		t.max_segs, t.calls, info(a).txq_size);
	nettest_report("virtio_tx_indirect_one_call", ok && t.calls == 1);
}

// ---- receive interrupts ----

// One 60-byte frame a -> b, reclaimed (../nettest.c), counted as a call.
static bool send_one(struct netdev *a, struct netdev *b, uint32_t seq)
{
	bool ok = nettest_send_one(a, b, seq, 60);
	tx_calls += ok;
	return ok;
}

static bool poll_one(struct netdev *b, paddr_t *page) { return nettest_poll_one(b, page, 60); }

// Idles until the device has used a receive buffer of b (not handed out).
static bool wait_used(struct netdev *b)
{
	uint64_t t0 = timer_now_us();
	while (info(b).rx_used_pending == 0 && timer_now_us() - t0 < WAIT_US)
		arch_idle();
	return info(b).rx_used_pending > 0;
}

// A frame interrupts; masked, one does not; unmasking with it pending
// signals at once; unmasking with nothing pending signals nothing.
static void test_irq(struct netdev *a, struct netdev *b, uint32_t *seq, paddr_t kept[2])
{
	void (*saved)(struct netdev *, void *) = b->rx_ready;
	b->rx_ready = nettest_on_ready;
	int c0 = nettest_ready_calls();
	uint64_t i0 = stats(b).irqs;
	bool ok1 = send_one(a, b, (*seq)++) && nettest_wait_ready(c0 + 1) && poll_one(b, &kept[0]);
	uint64_t i1 = stats(b).irqs;
	b->ops->rx_irq(b, false);
	int c1 = nettest_ready_calls();
	bool ok2 = send_one(a, b, (*seq)++) && wait_used(b);
	nettest_idle_us(20000);
	ok2 = ok2 && nettest_ready_calls() == c1 && stats(b).irqs == i1;
	b->ops->rx_irq(b, true);
	bool ok3 = nettest_ready_calls() == c1 + 1 && stats(b).irqs == i1 + 1 && poll_one(b, &kept[1]);
	b->ops->rx_irq(b, false);
	b->ops->rx_irq(b, true);
	bool ok4 = nettest_ready_calls() == c1 + 1;
	b->rx_ready = saved;
	kprintf("  irqs %lu -> %lu (frame) -> %lu (masked frame, then unmasked); rx_ready calls %d\n",
		i0, i1, stats(b).irqs, nettest_ready_calls());
	nettest_report("virtio_rx_irq_on_frame", ok1 && i1 > i0);
	nettest_report("virtio_rx_irq_masked", ok2);
	nettest_report("virtio_rx_irq_unmask_pending", ok3);
	nettest_report("virtio_rx_irq_unmask_idle", ok4);
}

// ---- bad input ----

// Unaligned, freed, kernel-image, repeated and pinned pages are refused
// whole (../nettest.c); then the two pages test_irq kept go back.
static void test_refill_reject(struct netdev *b, const paddr_t kept[2])
{
	nettest_report("virtio_rx_refill_reject_bad_pages", nettest_refill_reject(b, kept) == 0);
}

static int tx_expect(void *arg, struct netpkt *p, int n, int want)
{
	struct netdev *d = arg;
	struct netdev_stats s0 = stats(d);
	int free0 = info(d).tx_free_descs, r = d->ops->tx_batch(d, p, n);
	struct netdev_stats s1 = stats(d);
	bool ok = r == want && s1.doorbells == s0.doorbells && info(d).tx_free_descs == free0 &&
		  info(d).tx_queued == 0;
	if (!ok)
		kprintf("  tx_batch returned %d (%s), want %s\n", r, err_name(r), err_name(want));
	return !ok;
}

// Bad gather lists are refused whole: nothing queued, no kick, no pin.
static void test_tx_reject(struct netdev *d)
{
	paddr_t f = dma_alloc_page();
	int bad = nettest_tx_bad_input(d, f, tx_expect, d);
	bad += dma_check_buf(f) != 0;
	dma_free_page(f);
	nettest_report("virtio_tx_reject_bad_input", bad == 0);
}

// ---- modes ----

static bool balance(uint64_t free0, uint64_t owned0)
{
	struct netdev *v[NETDEV_MAX];
	int n = vnics(v);
	uint64_t free1 = dma_free_frames(), owned1 = netdev_frames_owned_all();
	bool ok = free1 == free0 && owned1 == owned0;
	for (int i = 0; i < n; i++) {
		struct virtio_net_info in = info(v[i]);
		ok = ok && v[i]->ops->rx_free_slots(v[i]) == 0 && in.tx_queued == 0 &&
		     in.tx_free_descs == in.txq_size;
	}
	kprintf("  frames: free %lu -> %lu, drivers hold %lu -> %lu\n", free0, free1, owned0, owned1);
	return ok;
}

static void test_attach(struct netdev **v, int n)
{
	bool ok = n >= 2;
	for (int i = 0; i < n; i++) {
		struct virtio_net_info in = info(v[i]);
		ok = ok && nettest_mac_ok(v[i]) && in.vector >= 0 && v[i]->ops->link_up(v[i]) &&
		     v[i]->max_frame == 9018 && v[i]->min_frame == 14 &&
		     v[i]->rx_slots == in.rxq_size / 2 && v[i]->tx_slots == in.txq_size;
		for (int j = 0; j < i; j++)
			ok = ok && memcmp(v[i]->mac, v[j]->mac, 6);
	}
	nettest_report("virtio_nics_attached", ok);
}

// NICs 0-1 (and 2-3) are wired to each other.
static void mode_loop(void)
{
	struct netdev *v[NETDEV_MAX];
	int n = vnics(v);
	test_attach(v, n);
	if (n < 2)
		return;
	uint64_t free0 = dma_free_frames(), owned0 = netdev_frames_owned_all();
	uint32_t seq = 1;
	paddr_t kept[2];
	nettest_each_way(v, n, "virtio", test_direction, &seq);
	test_tx_indirect(v[0], v[1], &seq);
	test_irq(v[0], v[1], &seq, kept);
	test_refill_reject(v[1], kept);
	test_tx_reject(v[0]);
	nettest_report("virtio_loop_frames_balance", balance(free0, owned0));
}

// One NIC, no peer: broadcast frames of the four sizes sent and reclaimed.
static void mode_basic(void)
{
	struct netdev *v[NETDEV_MAX];
	if (!nettest_report("virtio_basic_attach_mac", vnics(v) >= 1 && nettest_mac_ok(v[0])))
		return;
	uint64_t free0 = dma_free_frames(), owned0 = netdev_frames_owned_all();
	struct netdev_stats s0, s1;
	bool ok = nettest_send_broadcast(v[0], &s0, &s1);
	tx_calls += ok;
	nettest_report("virtio_basic_send",
		       ok && s1.doorbells - s0.doorbells == 1 && s1.irqs == s0.irqs); // no tx interrupt
	nettest_report("virtio_basic_frames_balance", balance(free0, owned0));
}

static void mode_link(void)
{
	struct netdev *v[NETDEV_MAX];
	nettest_link(v, vnics(v), "virtio");
}

static void kicks_gone(void)
{
	struct netdev *v[NETDEV_MAX];
	int n = vnics(v);
	for (int i = 0; i < n; i++) {
		kicks_tx_gone += stats(v[i]).doorbells;
		kicks_rx_gone += stats(v[i]).rx_refills;
	}
}

// The kicks of the NICs about to go, counted before the detach forgets them.
static void detach_queued(bool ok)
{
	tx_calls += ok;
	kicks_gone();
}

// A batch queued and never reclaimed is unpinned by detach; every frame
// goes back; probing again takes the same number (../nettest.c).
static void mode_detach(void)
{
	struct netdev *v[NETDEV_MAX];
	if (nettest_report("virtio_detach_has_nic", vnics(v) >= 1))
		nettest_detach(v[0], "virtio", detach_queued);
}

static void kicks_report(void)
{
	struct netdev *v[NETDEV_MAX];
	int n = vnics(v);
	uint64_t tx = kicks_tx_gone, rx = kicks_rx_gone;
	for (int i = 0; i < n; i++)
		tx += stats(v[i]).doorbells, rx += stats(v[i]).rx_refills;
	kprintf("virtiotest: notifications sent tx=%lu rx=%lu, tx_batch calls %lu\n", tx, rx,
		tx_calls);
}

int virtio_net_selftest(const char *modes)
{
	static const struct nettest_mode tab[] = { { "loop", mode_loop },
						   { "basic", mode_basic },
						   { "link", mode_link },
						   { "detach", mode_detach } };
	struct netdev *v[NETDEV_MAX];
	kprintf("virtiotest: modes %s, %d virtio NIC(s)\n", modes, vnics(v));
	nettest_run(modes, tab, (int)(sizeof(tab) / sizeof(tab[0])), "virtiotest_known_mode");
	kicks_report();
	return nettest_summary("virtiotest");
}
