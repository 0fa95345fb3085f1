// Boot self-test of the e1000 driver with real frames (kernel command line
// e1000test=MODE[,MODE...]):
//   loop   NICs 0-1 (and 2-3) wired to each other: gathered batches of
//          60/1500/4126/8990 bytes and 64 jumbo frames both ways, every
//          byte checked, counters; a long segment split; an overrun
//          counted; interrupt masking; bad input refused; frame balance;
//   loopsmall the same with frames up to 1514 bytes (Bochs' socket module);
//   oneway NIC 0 -> NIC 1 only, frames up to 1514 bytes;
//   basic  one NIC: MAC, broadcast batch sent and reclaimed, frame balance;
//   link   waits for a link-down and a link-up interrupt (the harness runs
//          set_link in QEMU's monitor when it reads "waiting for link");
//   detach every frame back to pmem, then attached again;
//   msi    MSI delivery through the PCI layer (QEMU -device edu).
// Prints "TEST name ... ok|FAIL"; returns the number of failures. Batches,
// the byte check and the TEST lines are ../nettest.c's, shared with
// virtio-net, over each NIC's netdev (e1000_netdev).
#include "e1000.h"
#include "e1000_regs.h"
#include "../nettest.h"
#include <wire.h>
#include "arch/x86_64/timer.h"
#include "kprintf.h"
#include "dma.h"
#include <err.h>
#include <fmt.h>
#include <string.h>

#define BATCH_MAX NETTEST_BATCH_MAX
#define RX_WAIT_US 10000000 // the first frames wait out the RCTL stall (~1 s)
#define LINK_WAIT_US 60000000

// Packets from -> to (broadcast when to is NULL), through their netdevs.
static bool build_batch(struct nettest_batch *b, struct e1000_dev *from, struct e1000_dev *to,
			const uint32_t *sizes, int n, uint32_t seq0)
{
	return nettest_build_batch(b, e1000_netdev(from), to ? e1000_netdev(to) : NULL, sizes, n,
				   seq0);
}

// Polls until the whole batch arrived; idles (interrupts on) between polls.
static bool receive_batch(struct e1000_dev *d, struct nettest_rx *c)
{
	uint64_t t0 = timer_now_us();
	while (c->next < c->b->n && timer_now_us() - t0 < RX_WAIT_US) {
		int n = nettest_receive(e1000_netdev(d), c, 32);
		if (n < 0)
			return false;
		if (n == 0)
			arch_idle();
	}
	return c->next == c->b->n && !c->bad;
}

// Reclaims until every packet of the batch is reported, in order.
static bool reclaim_all(struct e1000_dev *d, const struct nettest_batch *b)
{
	uint64_t next = b->seq0, t0 = timer_now_us();
	int got = 0;
	while (got < b->n && timer_now_us() - t0 < RX_WAIT_US) {
		got += e1000_tx_reclaim(d, nettest_done_in_order, &next);
		if (got < b->n)
			arch_pause();
	}
	return got == b->n && next == b->seq0 + (uint64_t)b->n;
}

// Sends one batch from `from` to `to` and checks it arrived intact.
static bool send_and_check(struct e1000_dev *from, struct e1000_dev *to, const uint32_t *sizes,
			   int n, uint32_t seq0, int *max_segs)
{
	static struct nettest_batch b;
	struct nettest_rx c = { .b = &b };
	bool ok = build_batch(&b, from, to, sizes, n, seq0);
	ok = ok && e1000_tx_batch(from, b.pkt, n) == n;
	ok = ok && receive_batch(to, &c);
	ok = reclaim_all(from, &b) && ok;
	if (b.max_segs > *max_segs)
		*max_segs = b.max_segs;
	if (!ok)
		kprintf("  batch seq %u: %d of %d received, %d bad bytes/frames\n", seq0, c.next, n,
			c.bad);
	nettest_free_batch(&b);
	return ok;
}

static const uint32_t mix[4] = { 60, 1500, 4096 + 30, 8990 };

// Batches of the four sizes, then one batch of 64 jumbo frames.
static bool one_direction(struct e1000_dev *a, struct e1000_dev *b, int batches, uint32_t *seq,
			  int *max_segs, bool jumbo)
{
	uint32_t sizes[BATCH_MAX];
	int per = jumbo ? 8 : 4;
	for (int k = 0; k < batches; k++) {
		for (int i = 0; i < per; i++)
			sizes[i] = jumbo ? mix[i % 4] : mix[i % 2];
		if (!send_and_check(a, b, sizes, per, *seq, max_segs))
			return false;
		*seq += (uint32_t)per;
	}
	if (!jumbo)
		return true;
	for (int i = 0; i < BATCH_MAX; i++)
		sizes[i] = 8990;
	bool ok = send_and_check(a, b, sizes, BATCH_MAX, *seq, max_segs);
	*seq += BATCH_MAX;
	return ok;
}

static bool mac_ok(struct e1000_dev *d)
{
	uint8_t m[6], z[6] = { 0 };
	e1000_get_mac(d, m);
	return memcmp(m, z, 6) && !(m[0] & 1);
}

// Every NIC has a usable address of its own.
static void test_macs(void)
{
	uint8_t m[E1000_MAX_NICS][6];
	int n = e1000_count();
	bool ok = n >= 2;
	for (int i = 0; i < n; i++) {
		e1000_get_mac(e1000_get(i), m[i]);
		ok = ok && mac_ok(e1000_get(i));
		for (int j = 0; j < i; j++)
			ok = ok && memcmp(m[i], m[j], 6);
	}
	nettest_report("e1000_nics_distinct_macs", ok);
}

struct snap {
	struct e1000_stats s[2];
};

static void snap_take(struct snap *s, struct e1000_dev *a, struct e1000_dev *b)
{
	e1000_get_stats(a, &s->s[0]);
	e1000_get_stats(b, &s->s[1]);
}

// Counters of one direction: every batch one doorbell, every packet one
// frame each side, no errors or drops.
static bool counters_ok(const struct e1000_stats *tx0, const struct e1000_stats *tx1,
			const struct e1000_stats *rx0, const struct e1000_stats *rx1,
			uint64_t batches, uint64_t pkts, uint64_t bytes)
{
	bool ok = tx1->doorbells - tx0->doorbells == batches &&
		  tx1->tx_frames - tx0->tx_frames == pkts && tx1->tx_bytes - tx0->tx_bytes == bytes &&
		  rx1->rx_frames - rx0->rx_frames == pkts && rx1->rx_bytes - rx0->rx_bytes == bytes &&
		  rx1->rx_errors == 0 && rx1->rx_no_buf == 0 && rx1->hw_mpc == 0 &&
		  tx1->tx_errors == 0 && rx1->rx_overruns == 0;
	kprintf("  doorbells %lu (batches %lu) tx %lu frames %lu bytes, rx %lu frames %lu bytes "
		"%lu buffers, errors %lu, mpc %lu rnbc %lu roc %lu, irqs tx-side %lu rx-side %lu\n",
		tx1->doorbells - tx0->doorbells, batches, tx1->tx_frames - tx0->tx_frames,
		tx1->tx_bytes - tx0->tx_bytes, rx1->rx_frames - rx0->rx_frames,
		rx1->rx_bytes - rx0->rx_bytes, rx1->rx_descs - rx0->rx_descs, rx1->rx_errors,
		rx1->hw_mpc, rx1->hw_rnbc, rx1->hw_roc, tx1->irqs, rx1->irqs);
	return ok;
}

static uint64_t batch_bytes(int batches, bool jumbo)
{
	uint64_t per = jumbo ? 2 * (60 + 1500 + 4126 + 8990) : 2 * (60 + 1500);
	return batches * per + (jumbo ? BATCH_MAX * 8990ull : 0);
}

// NIC a -> NIC b, `batches` mixed batches (+ one of 64 jumbo frames).
static void test_direction(const char *name, struct e1000_dev *a, struct e1000_dev *b,
			   int batches, uint32_t *seq, bool jumbo)
{
	struct snap s0, s1;
	int max_segs = 0;
	snap_take(&s0, a, b);
	uint64_t t0 = timer_now_us();
	bool ok = one_direction(a, b, batches, seq, &max_segs, jumbo);
	uint64_t us = timer_now_us() - t0;
	snap_take(&s1, a, b);
	uint64_t nb = (uint64_t)batches + (jumbo ? 1 : 0);
	uint64_t np = (uint64_t)batches * (jumbo ? 8 : 4) + (jumbo ? BATCH_MAX : 0);
	kprintf("  %s: %lu packets in %lu batches, up to %d segments per packet, %lu us\n", name,
		np, nb, max_segs, us);
	ok = counters_ok(&s0.s[0], &s1.s[0], &s0.s[1], &s1.s[1], nb, np, batch_bytes(batches, jumbo)) &&
	     ok;
	nettest_report(name, ok);
}

static int tx_expect(void *arg, struct netpkt *p, int n, int want)
{
	struct e1000_dev *d = arg;
	struct e1000_stats s0, s1;
	e1000_get_stats(d, &s0);
	int free0 = e1000_tx_free_descs(d);
	int r = e1000_tx_batch(d, p, n);
	e1000_get_stats(d, &s1);
	bool ok = r == want && s1.doorbells == s0.doorbells && e1000_tx_free_descs(d) == free0;
	if (!ok)
		kprintf("  tx_batch returned %d (%s), want %s\n", r, err_name(r), err_name(want));
	return ok ? 0 : 1;
}

// Bad gather lists are refused whole: nothing queued, no doorbell.
static void test_tx_reject(struct e1000_dev *d)
{
	paddr_t f = dma_alloc_page();
	int bad = nettest_tx_bad_input(e1000_netdev(d), f, tx_expect, d);
	bool pinned = dma_pinned(f);
	dma_free_page(f);
	nettest_report("e1000_tx_reject_bad_input", bad == 0 && !pinned);
}

// Sends one 60-byte frame a -> b and polls b until it is there; the buffer
// handed out becomes the caller's.
static bool one_packet(struct e1000_dev *a, struct e1000_dev *b, uint32_t seq, struct rxfrag *out)
{
	static struct nettest_batch bt;
	uint32_t size = 60;
	int n = 0;
	bool ok = build_batch(&bt, a, b, &size, 1, seq) && e1000_tx_batch(a, bt.pkt, 1) == 1;
	uint64_t t0 = timer_now_us();
	while (ok && n == 0 && timer_now_us() - t0 < RX_WAIT_US) {
		n = e1000_rx_poll(b, out, 1);
		if (n == 0)
			arch_idle();
	}
	ok = reclaim_all(a, &bt) && ok;
	nettest_free_batch(&bt);
	return ok && n == 1 && out->eop && out->len == 60;
}

// Written by the interrupt handler: volatile, or the compiler keeps them in
// registers across the idle loop.
static volatile uint32_t seen_icr;
static volatile int seen_calls;

static void on_irq(struct e1000_dev *d, uint32_t icr, void *arg)
{
	(void)d, (void)arg;
	seen_icr |= icr;
	seen_calls++;
}

static uint64_t irqs_of(struct e1000_dev *d)
{
	struct e1000_stats s;
	e1000_get_stats(d, &s);
	return s.irqs;
}

// "First interrupt switches to polling": a frame interrupts; with the
// receive causes masked it does not; unmasking with it pending does at once.
static void test_irq_mask(struct e1000_dev *a, struct e1000_dev *b, uint32_t *seq,
			  struct rxfrag got[2])
{
	e1000_set_handler(b, on_irq, NULL);
	seen_icr = 0;
	uint64_t i0 = irqs_of(b);
	bool ok1 = one_packet(a, b, (*seq)++, &got[0]);
	nettest_idle_us(20000);
	uint64_t i1 = irqs_of(b);
	ok1 = ok1 && i1 > i0 && (seen_icr & E1000_INT_RXT0);
	e1000_rx_irq(b, false);
	bool ok2 = one_packet(a, b, (*seq)++, &got[1]);
	nettest_idle_us(20000);
	uint64_t i2 = irqs_of(b);
	ok2 = ok2 && i2 == i1;
	seen_icr = 0;
	e1000_rx_irq(b, true);
	nettest_idle_us(20000);
	uint64_t i3 = irqs_of(b);
	bool ok3 = i3 == i2 + 1 && (seen_icr & E1000_INT_RXT0);
	e1000_set_handler(b, NULL, NULL);
	kprintf("  irqs: %lu -> %lu (frame) -> %lu (masked frame) -> %lu (unmasked, causes %x), "
		"handler calls %d\n",
		i0, i1, i2, i3, seen_icr, seen_calls);
	nettest_report("e1000_rx_irq_on_frame", ok1);
	nettest_report("e1000_rx_irq_masked", ok2);
	nettest_report("e1000_rx_irq_unmask_pending", ok3);
}

// Refill refuses unaligned, freed, pinned and repeated frames whole, then
// takes back the two buffers test_irq_mask kept (as a relay would).
static void test_refill_reject(struct e1000_dev *b, const struct rxfrag got[2])
{
	paddr_t x = dma_alloc_page(), gone = dma_alloc_page(), twice[2];
	dma_free_page(gone);
	int bad = 0;
	paddr_t p = x + 8;
	bad += e1000_rx_refill(b, &p, 1) != -E_INVAL;
	bad += e1000_rx_refill(b, &gone, 1) != -E_INVAL;
	p = PAGE_ROUND_DOWN(arch_v2p(mix)); // kernel image: not the allocator's
	bad += e1000_rx_refill(b, &p, 1) != -E_INVAL;
	twice[0] = twice[1] = x;
	bad += e1000_rx_refill(b, twice, 2) != -E_BUSY;
	bad += dma_pinned(x);
	dma_pin(x, PAGE_SIZE);
	bad += e1000_rx_refill(b, &x, 1) != -E_BUSY;
	dma_unpin(x, PAGE_SIZE);
	dma_free_page(x);
	bad += e1000_rx_free_slots(b) != 2;
	twice[0] = got[0].pa, twice[1] = got[1].pa;
	bad += e1000_rx_refill(b, twice, 2) != 2;
	bad += e1000_rx_free_slots(b) != 0;
	nettest_report("e1000_rx_refill_reject_bad_frames", bad == 0);
}

static bool balance(uint64_t free0, uint64_t owned0)
{
	uint64_t free1 = dma_free_frames(), owned1 = e1000_frames_owned_all();
	bool ok = free1 == free0 && owned1 == owned0;
	for (int i = 0; i < e1000_count(); i++)
		ok = ok && e1000_rx_free_slots(e1000_get(i)) == 0 &&
		     e1000_tx_free_descs(e1000_get(i)) == E1000_TX_DESC - 1;
	kprintf("  frames: free %lu -> %lu, driver holds %lu -> %lu\n", free0, free1, owned0,
		owned1);
	return ok;
}

// A payload in one physically contiguous 8960-byte segment (kernel image
// memory) goes out behind three descriptors (the driver's 4 KiB limit).
static void test_long_segment(struct e1000_dev *a, struct e1000_dev *b, uint32_t *seq)
{
	static uint8_t buf[WIRE_MAX_PAYLOAD + 8];
	static struct nettest_batch bt;
	uint32_t size = WIRE_FRAME_HLEN + WIRE_MAX_PAYLOAD;
	struct nettest_rx c = { .b = &bt };
	struct e1000_stats s0, s1;
	bool ok = build_batch(&bt, a, b, &size, 1, *seq);
	for (uint32_t i = 0; i < WIRE_MAX_PAYLOAD; i++)
		buf[5 + i] = wire_pattern(*seq, i);
	bt.pkt[0].nseg = 2;
	bt.pkt[0].seg[1] = (struct netseg){ arch_v2p(buf + 5), WIRE_MAX_PAYLOAD };
	e1000_get_stats(a, &s0);
	ok = ok && e1000_tx_batch(a, bt.pkt, 1) == 1 && receive_batch(b, &c);
	ok = reclaim_all(a, &bt) && ok;
	e1000_get_stats(a, &s1);
	nettest_free_batch(&bt);
	(*seq)++;
	kprintf("  long segment: %lu descriptors for 30 + %u bytes\n", s1.tx_descs - s0.tx_descs,
		WIRE_MAX_PAYLOAD);
	nettest_report("e1000_tx_long_segment_split", ok && s1.tx_descs - s0.tx_descs == 4);
}

// Sends n 60-byte frames a -> b in batches; b's buffers are handed out
// and kept in held[] (not refilled). Returns how many were kept.
static int fill_and_hold(struct e1000_dev *a, struct e1000_dev *b, int n, uint32_t *seq,
			 paddr_t *held)
{
	static struct nettest_batch bt;
	uint32_t sizes[BATCH_MAX];
	struct rxfrag f[BATCH_MAX];
	int kept = 0;
	for (int i = 0; i < BATCH_MAX; i++)
		sizes[i] = 60;
	while (kept < n) {
		int k = n - kept < BATCH_MAX ? n - kept : BATCH_MAX, got = 0;
		bool ok = build_batch(&bt, a, b, sizes, k, *seq) && e1000_tx_batch(a, bt.pkt, k) == k;
		uint64_t t0 = timer_now_us();
		while (ok && got < k && timer_now_us() - t0 < RX_WAIT_US) {
			int r = e1000_rx_poll(b, f, k - got);
			for (int i = 0; i < r; i++)
				held[kept + got + i] = f[i].pa;
			got += r;
			if (r == 0)
				arch_idle();
		}
		reclaim_all(a, &bt);
		nettest_free_batch(&bt);
		*seq += (uint32_t)k;
		kept += got;
		if (got < k)
			break;
	}
	return kept;
}

// A jumbo frame that finds fewer free buffers than it needs is dropped
// and counted: RXO interrupt, RNBC and MPC (docs/design.md, "What the code relies on in the emulated hardware").
static void test_overrun(struct e1000_dev *a, struct e1000_dev *b, uint32_t *seq)
{
	static paddr_t held[E1000_RX_DESC];
	static struct nettest_batch bt;
	struct e1000_stats s0, s1;
	uint32_t size = 8990;
	int want = E1000_RX_DESC - 1 - 2; // leave two buffers: a 8990-byte frame needs three
	int kept = fill_and_hold(a, b, want, seq, held);
	e1000_get_stats(b, &s0);
	bool ok = kept == want && build_batch(&bt, a, b, &size, 1, (*seq)++) &&
		  e1000_tx_batch(a, bt.pkt, 1) == 1;
	ok = reclaim_all(a, &bt) && ok;
	nettest_free_batch(&bt);
	nettest_idle_us(50000);
	e1000_get_stats(b, &s1);
	struct rxfrag f[4];
	int stray = e1000_rx_poll(b, f, 4); // nothing may have arrived
	ok = ok && stray == 0 && e1000_rx_refill(b, held, kept) == kept;
	kprintf("  overrun: %d buffers held, then rx_overruns +%lu rnbc +%lu mpc +%lu, %d stray\n",
		kept, s1.rx_overruns - s0.rx_overruns, s1.hw_rnbc - s0.hw_rnbc, s1.hw_mpc - s0.hw_mpc,
		stray);
	nettest_report("e1000_rx_overrun_counted", ok && s1.rx_overruns > s0.rx_overruns &&
						   s1.hw_rnbc == s0.hw_rnbc + 1 && s1.hw_mpc == s0.hw_mpc + 1);
}

// NICs 0-1 (and 2-3 when there are four) are wired to each other. Without
// jumbo, frames stay within 1514 bytes (Bochs' socket module).
static void loop_pairs(bool jumbo)
{
	if (!nettest_report("e1000_loop_has_two_nics", e1000_count() >= 2))
		return;
	struct e1000_dev *a = e1000_get(0), *b = e1000_get(1);
	struct rxfrag got[2];
	char name[2][40];
	test_macs();
	uint64_t free0 = dma_free_frames(), owned0 = e1000_frames_owned_all();
	uint32_t seq = 1;
	for (int i = 0; i + 1 < e1000_count(); i += 2) {
		fmt_snprintf(name[0], sizeof(name[0]), "e1000_loop_%d_to_%d", i, i + 1);
		fmt_snprintf(name[1], sizeof(name[1]), "e1000_loop_%d_to_%d", i + 1, i);
		test_direction(name[0], e1000_get(i), e1000_get(i + 1), 40, &seq, jumbo);
		test_direction(name[1], e1000_get(i + 1), e1000_get(i), 40, &seq, jumbo);
	}
	if (jumbo) {
		test_long_segment(a, b, &seq);
		test_overrun(a, b, &seq);
	}
	test_irq_mask(a, b, &seq, got);
	test_refill_reject(b, got);
	test_tx_reject(a);
	nettest_report("e1000_loop_frames_balance", balance(free0, owned0));
}

static void mode_loop(void) { loop_pairs(true); }
static void mode_loopsmall(void) { loop_pairs(false); }

// Frames up to 1514 bytes NIC 0 -> NIC 1 (Bochs: one socket direction).
static void mode_oneway(void)
{
	if (!nettest_report("e1000_oneway_has_two_nics", e1000_count() >= 2))
		return;
	test_macs();
	uint64_t free0 = dma_free_frames(), owned0 = e1000_frames_owned_all();
	uint32_t seq = 1;
	test_direction("e1000_oneway_0_to_1", e1000_get(0), e1000_get(1), 10, &seq, false);
	nettest_report("e1000_oneway_frames_balance", balance(free0, owned0));
}

// One NIC: broadcast frames of the four sizes are sent and reclaimed.
static void mode_basic(void)
{
	struct e1000_dev *d = e1000_get(0);
	if (!nettest_report("e1000_basic_attach_mac", d && mac_ok(d)))
		return;
	uint64_t free0 = dma_free_frames(), owned0 = e1000_frames_owned_all();
	static struct nettest_batch bt;
	struct e1000_stats s0, s1;
	e1000_get_stats(d, &s0);
	bool ok = build_batch(&bt, d, NULL, mix, 4, 1) && e1000_tx_batch(d, bt.pkt, 4) == 4;
	ok = reclaim_all(d, &bt) && ok;
	nettest_free_batch(&bt);
	e1000_get_stats(d, &s1);
	kprintf("  sent %lu frames, %lu bytes, %lu doorbell(s)\n", s1.tx_frames - s0.tx_frames,
		s1.tx_bytes - s0.tx_bytes, s1.doorbells - s0.doorbells);
	ok = ok && s1.doorbells - s0.doorbells == 1 && s1.tx_frames - s0.tx_frames == 4;
	nettest_report("e1000_basic_send", ok);
	nettest_report("e1000_basic_frames_balance", balance(free0, owned0));
}

static volatile int lsc_calls;

static void on_lsc(struct e1000_dev *d, uint32_t icr, void *arg)
{
	(void)d, (void)arg;
	lsc_calls += (icr & E1000_INT_LSC) != 0;
}

// The NIC whose link is `up` after a change counted since `base`, or -1.
static int wait_link(bool up, const uint64_t *base, uint64_t us)
{
	uint64_t t0 = timer_now_us();
	while (timer_now_us() - t0 < us) {
		for (int i = 0; i < e1000_count(); i++) {
			struct e1000_stats s;
			e1000_get_stats(e1000_get(i), &s);
			if (s.link_changes > base[i] && e1000_link_up(e1000_get(i)) == up)
				return i;
		}
		arch_idle();
	}
	return -1;
}

static void mode_link(void)
{
	uint64_t base[E1000_MAX_NICS];
	int n = e1000_count();
	for (int i = 0; i < n; i++) {
		struct e1000_stats s;
		e1000_get_stats(e1000_get(i), &s);
		base[i] = s.link_changes;
		e1000_set_handler(e1000_get(i), on_lsc, NULL);
	}
	kprintf("e1000test: waiting for link down\n");
	uint64_t t0 = timer_now_us();
	int down = n ? wait_link(false, base, LINK_WAIT_US) : -1;
	kprintf("  link down on NIC %d after %lu ms\n", down, (timer_now_us() - t0) / 1000);
	nettest_report("e1000_link_down_irq", down >= 0);
	for (int i = 0; i < n; i++) {
		struct e1000_stats s;
		e1000_get_stats(e1000_get(i), &s);
		base[i] = s.link_changes;
	}
	kprintf("e1000test: waiting for link up\n");
	t0 = timer_now_us();
	int up = down >= 0 ? wait_link(true, base, LINK_WAIT_US) : -1;
	kprintf("  link up on NIC %d after %lu ms, %d LSC handler calls\n", up,
		(timer_now_us() - t0) / 1000, lsc_calls);
	nettest_report("e1000_link_up_irq", up == down && up >= 0 && lsc_calls >= 2);
	for (int i = 0; i < n; i++)
		e1000_set_handler(e1000_get(i), NULL, NULL);
}

// Every frame goes back to pmem; attaching again takes the same number.
static void mode_detach(void)
{
	int n = e1000_count();
	uint64_t free0 = dma_free_frames(), owned = e1000_frames_owned_all();
	uint64_t freed = e1000_detach_all();
	uint64_t free1 = dma_free_frames();
	bool ok = freed == owned && free1 == free0 + owned && e1000_count() == 0;
	int again = e1000_probe_all();
	ok = ok && again == n && e1000_frames_owned_all() == owned && dma_free_frames() == free0;
	kprintf("  detach freed %lu of %lu frames (free %lu -> %lu), attach again: %d NIC(s), "
		"free %lu\n",
		freed, owned, free0, free1, again, dma_free_frames());
	nettest_report("e1000_detach_frees_all", ok);
}

int pci_selftest_msi(void); // drivers/pci/pci_test.c

static void mode_msi(void) { nettest_report("pci_msi_edu", pci_selftest_msi() == 0); }

int e1000_selftest(const char *modes)
{
	static const struct nettest_mode tab[] = {
		{ "loop", mode_loop },   { "loopsmall", mode_loopsmall }, { "oneway", mode_oneway },
		{ "basic", mode_basic }, { "link", mode_link },           { "detach", mode_detach },
		{ "msi", mode_msi },
	};
	kprintf("e1000test: modes %s, %d NIC(s)\n", modes, e1000_count());
	nettest_run(modes, tab, (int)(sizeof(tab) / sizeof(tab[0])), "e1000test_known_mode");
	return nettest_summary("e1000test");
}
