// Boot self-test of the e1000e driver through its netdev ops, before the
// I/O manager (kernel command line e1000etest=MODE[,MODE...]):
//   loop   e1000e NICs 0-1 (and 2-3) wired to each other: batches of
//          60/1514/4126/9018 bytes and 64 jumbo frames both ways, every
//          byte and buffer boundary checked, one TDT write per batch; a
//          9020-byte contiguous piece split at 8 KiB; a jumbo frame that
//          finds too few buffers counted (RXO) and nothing handed out;
//          receive-interrupt masking; bad input refused; frame balance;
//   basic  one NIC: MAC, a broadcast batch sent and reclaimed;
//   link   waits for a link-down and a link-up interrupt (the harness runs
//          set_link in QEMU's monitor when it reads "waiting for link");
//   detach a batch in flight unpinned, every frame back, attached again.
// Batches, the byte check and the TEST lines are ../nettest.c's.
#include "e1000e.h"
#include "../nettest.h"
#include "dma.h"
#include "arch/x86_64/timer.h"
#include "kprintf.h"
#include <wire.h>
#include <err.h>
#include <fmt.h>
#include <string.h>

#define WAIT_US 10000000
#define BATCH_MAX NETTEST_BATCH_MAX

static int enics(struct netdev **out) { return nettest_family("e1000e", out); }
static struct netdev_stats stats(struct netdev *nd) { return nettest_stats(nd); }

static struct e1000e_info info(struct netdev *nd)
{
	struct e1000e_info i = { 0 };
	e1000e_info(nd, &i);
	return i;
}

// Until every packet of b reached `rx` and was reclaimed by `tx`, in order.
static bool deliver(struct netdev *tx, struct netdev *rx, struct nettest_batch *b,
		    struct nettest_rx *c)
{
	uint64_t next = b->seq0, t0 = timer_now_us();
	int reclaimed = 0;
	while ((c->next < b->n || reclaimed < b->n) && timer_now_us() - t0 < WAIT_US) {
		reclaimed += tx->ops->tx_reclaim(tx, nettest_done_in_order, &next);
		int r = c->next < b->n ? nettest_receive(rx, c, 32) : 0;
		if (r < 0)
			return false;
		if (r == 0)
			arch_idle();
	}
	return c->next == b->n && reclaimed == b->n && !c->bad && next == b->seq0 + (uint64_t)b->n;
}

// One batch a -> b in one tx_batch call; every byte checked.
static bool send_batch(struct netdev *a, struct netdev *b, const uint32_t *sizes, int n,
		       uint32_t *seq)
{
	static struct nettest_batch bt;
	struct nettest_rx c = { .b = &bt };
	bool ok = nettest_build_batch(&bt, a, b, sizes, n, *seq) && a->ops->tx_batch(a, bt.pkt, n) == n;
	ok = ok && deliver(a, b, &bt, &c);
	if (!ok)
		kprintf("  batch seq %u: %d of %d received, %d bad\n", *seq, c.next, n, c.bad);
	nettest_free_batch(&bt);
	*seq += (uint32_t)n;
	return ok;
}

static const uint32_t mix[4] = { 60, 1514, 4096 + 30, 9018 };

// 20 batches of the four sizes, then 64 jumbo frames; the counters say
// one doorbell a batch, every frame and byte once, no error.
static void test_direction(const char *name, struct netdev *a, struct netdev *b, uint32_t *seq)
{
	uint32_t sizes[BATCH_MAX];
	uint64_t bytes = 0, pkts = 0, batches = 0;
	struct netdev_stats ta = stats(a), rb = stats(b);
	bool ok = true;
	for (int k = 0; ok && k < 21; k++, batches++) {
		int n = k < 20 ? 4 : BATCH_MAX;
		for (int i = 0; i < n; i++)
			sizes[i] = k < 20 ? mix[(i + k) % 4] : 9018, bytes += sizes[i];
		pkts += (uint64_t)n;
		ok = send_batch(a, b, sizes, n, seq);
	}
	struct netdev_stats ta1 = stats(a), rb1 = stats(b);
	kprintf("  %s: %lu packets %lu bytes in %lu batches: doorbells %lu, tx %lu/%lu, "
		"rx %lu/%lu, rx errors %lu, irqs rx-side %lu\n",
		name, pkts, bytes, batches, ta1.doorbells - ta.doorbells, ta1.tx_frames - ta.tx_frames,
		ta1.tx_bytes - ta.tx_bytes, rb1.rx_frames - rb.rx_frames, rb1.rx_bytes - rb.rx_bytes,
		rb1.rx_errors, rb1.irqs - rb.irqs);
	ok = ok && ta1.doorbells - ta.doorbells == batches && ta1.tx_frames - ta.tx_frames == pkts &&
	     ta1.tx_bytes - ta.tx_bytes == bytes && rb1.rx_frames - rb.rx_frames == pkts &&
	     rb1.rx_bytes - rb.rx_bytes == bytes && rb1.rx_errors == 0;
	nettest_report(name, ok);
}

// A 9020-byte frame whose payload is one contiguous 8990-byte piece of the
// kernel image: 1 descriptor for the header, 2 for the piece (8192 + 798).
static void test_long_piece(struct netdev *a, struct netdev *b, uint32_t *seq)
{
	static uint8_t buf[WIRE_MAX_PAYLOAD + 8];
	static struct nettest_batch bt;
	uint32_t size = WIRE_FRAME_HLEN + WIRE_MAX_PAYLOAD;
	struct nettest_rx c = { .b = &bt };
	uint64_t d0 = info(a).tx_descs;
	bool ok = nettest_build_batch(&bt, a, b, &size, 1, *seq);
	for (uint32_t i = 0; i < WIRE_MAX_PAYLOAD; i++)
		buf[5 + i] = wire_pattern(*seq, i);
	bt.pkt[0].nseg = 2;
	bt.pkt[0].seg[1] = (struct netseg){ arch_v2p(buf + 5), WIRE_MAX_PAYLOAD };
	ok = ok && a->ops->tx_batch(a, bt.pkt, 1) == 1 && deliver(a, b, &bt, &c);
	uint64_t descs = info(a).tx_descs - d0;
	nettest_free_batch(&bt);
	(*seq)++;
	kprintf("  long piece: %lu descriptors for %u + %u bytes\n", descs, WIRE_FRAME_HLEN,
		WIRE_MAX_PAYLOAD);
	nettest_report("e1000e_tx_long_piece_split", ok && descs == 3);
}

// Keeps all but `leave` of b's buffers out of the ring (in held[]), by
// receiving 60-byte frames; returns how many it holds.
static int hold_buffers(struct netdev *a, struct netdev *b, int leave, uint32_t *seq, paddr_t *held)
{
	int kept = 0, want = b->rx_slots - b->ops->rx_free_slots(b) - leave;
	while (kept < want && nettest_send_one(a, b, (*seq)++, 60) && nettest_poll_one(b, &held[kept], 60))
		kept++;
	return kept;
}

// Polls b for the n buffers of one frame of `len` bytes and posts them
// again; true when they came as 4 KiB buffers, the last marked eop.
static bool take_frame(struct netdev *b, uint32_t len, int n)
{
	struct rxfrag f[4];
	paddr_t pages[4];
	int got = 0;
	uint32_t bytes = 0;
	bool ok = true;
	for (uint64_t t0 = timer_now_us(); got < n && timer_now_us() - t0 < WAIT_US;) {
		int r = b->ops->rx_poll(b, &f[got], n - got);
		for (int i = got; i < got + r; i++)
			pages[i] = f[i].pa, bytes += f[i].len,
			ok = ok && f[i].eop == (i == n - 1) && (f[i].eop || f[i].len == PAGE_SIZE);
		got += r;
		if (r == 0)
			arch_idle();
	}
	return b->ops->rx_refill(b, pages, got) == got && ok && got == n && bytes == len;
}

// A 9018-byte frame finds two buffers where it needs three: RXO, nothing
// handed out. QEMU keeps such a frame queued (the wire has back-pressure)
// and delivers it whole once the buffers are back; a real 82574 drops it
// (MPC).
static void test_overrun(struct netdev *a, struct netdev *b, uint32_t *seq)
{
	static paddr_t held[E1000E_RX_DESC];
	int kept = hold_buffers(a, b, 2, seq, held);
	uint64_t o0 = info(b).rx_overruns, mpc0 = info(b).hw_mpc;
	bool ok = nettest_send_one(a, b, (*seq)++, 9018);
	nettest_idle_us(50000);
	struct rxfrag f[4];
	int stray = b->ops->rx_poll(b, f, 4);
	uint64_t o1 = info(b).rx_overruns;
	ok = ok && stray == 0 && b->ops->rx_refill(b, held, kept) == kept;
	uint64_t dropped = info(b).hw_mpc - mpc0;
	bool later = !dropped && take_frame(b, 9018, 3);
	kprintf("  overrun: %d buffers held, rx_overruns +%lu, %d handed out; then %s\n", kept,
		o1 - o0, stray, dropped ? "dropped (mpc)" : later ? "delivered whole" : "LOST");
	nettest_report("e1000e_rx_overrun_counted", ok && o1 > o0 && (dropped || later));
}

// A frame interrupts; masked, one does not; unmasking with it pending
// interrupts at once. The two pages received are kept for the refill test.
static void test_irq(struct netdev *a, struct netdev *b, uint32_t *seq, paddr_t kept[2])
{
	void (*saved)(struct netdev *, void *) = b->rx_ready;
	b->rx_ready = nettest_on_ready;
	int c0 = nettest_ready_calls();
	bool ok1 = nettest_send_one(a, b, (*seq)++, 60) && nettest_wait_ready(c0 + 1) && nettest_poll_one(b, &kept[0], 60);
	b->ops->rx_irq(b, false);
	int c1 = nettest_ready_calls();
	bool ok2 = nettest_send_one(a, b, (*seq)++, 60);
	nettest_idle_us(20000);
	ok2 = ok2 && nettest_ready_calls() == c1;
	b->ops->rx_irq(b, true);
	bool ok3 = nettest_wait_ready(c1 + 1) && nettest_poll_one(b, &kept[1], 60);
	b->rx_ready = saved;
	kprintf("  rx_ready calls: %d -> %d (frame), masked frame: %d, unmasked: %d\n", c0, c1, c1,
		nettest_ready_calls());
	nettest_report("e1000e_rx_irq_on_frame", ok1);
	nettest_report("e1000e_rx_irq_masked", ok2);
	nettest_report("e1000e_rx_irq_unmask_pending", ok3);
}

static void test_refill_reject(struct netdev *b, const paddr_t kept[2])
{
	nettest_report("e1000e_rx_refill_reject_bad_pages", nettest_refill_reject(b, kept) == 0);
}

static int tx_expect(void *arg, struct netpkt *p, int n, int want)
{
	struct netdev *d = arg;
	uint64_t db = stats(d).doorbells;
	int free0 = info(d).tx_free, r = d->ops->tx_batch(d, p, n);
	bool ok = r == want && stats(d).doorbells == db && info(d).tx_free == free0;
	if (!ok)
		kprintf("  tx_batch returned %d (%s), want %s\n", r, err_name(r), err_name(want));
	return !ok;
}

static void test_tx_reject(struct netdev *d)
{
	paddr_t f = dma_alloc_page();
	int bad = nettest_tx_bad_input(d, f, tx_expect, d) + (dma_check_buf(f) != 0);
	dma_free_page(f);
	nettest_report("e1000e_tx_reject_bad_input", bad == 0);
}

static bool balance(uint64_t free0, uint64_t owned0)
{
	struct netdev *v[NETDEV_MAX];
	int n = enics(v);
	uint64_t free1 = dma_free_frames(), owned1 = netdev_frames_owned_all();
	bool ok = free1 == free0 && owned1 == owned0;
	for (int i = 0; i < n; i++)
		ok = ok && v[i]->ops->rx_free_slots(v[i]) == 0 && info(v[i]).tx_queued == 0;
	kprintf("  frames: free %lu -> %lu, drivers hold %lu -> %lu\n", free0, free1, owned0, owned1);
	return ok;
}

static void mode_loop(void)
{
	struct netdev *v[NETDEV_MAX];
	int n = enics(v);
	bool ok = n >= 2;
	for (int i = 0; i < n; i++) {
		ok = ok && nettest_mac_ok(v[i]) && info(v[i]).vector >= 0 && v[i]->max_frame == 9018;
		for (int j = 0; j < i; j++)
			ok = ok && memcmp(v[i]->mac, v[j]->mac, 6);
	}
	if (!nettest_report("e1000e_nics_attached", ok))
		return;
	uint64_t free0 = dma_free_frames(), owned0 = netdev_frames_owned_all();
	uint32_t seq = 1;
	paddr_t kept[2];
	nettest_each_way(v, n, "e1000e", test_direction, &seq);
	test_long_piece(v[0], v[1], &seq);
	test_overrun(v[0], v[1], &seq);
	test_irq(v[0], v[1], &seq, kept);
	test_refill_reject(v[1], kept);
	test_tx_reject(v[0]);
	nettest_report("e1000e_loop_frames_balance", balance(free0, owned0));
}

// One NIC, no peer: broadcast frames of the four sizes sent and reclaimed.
static void mode_basic(void)
{
	struct netdev *v[NETDEV_MAX];
	if (!nettest_report("e1000e_basic_attach_mac", enics(v) >= 1 && nettest_mac_ok(v[0])))
		return;
	uint64_t free0 = dma_free_frames(), owned0 = netdev_frames_owned_all();
	struct netdev_stats s0, s1;
	bool ok = nettest_send_broadcast(v[0], &s0, &s1);
	nettest_report("e1000e_basic_send", ok && s1.doorbells - s0.doorbells == 1);
	nettest_report("e1000e_basic_frames_balance", balance(free0, owned0));
}

static void mode_link(void)
{
	struct netdev *v[NETDEV_MAX];
	nettest_link(v, enics(v), "e1000e");
}

// A batch queued and never reclaimed is unpinned by detach; every frame
// goes back; probing again takes the same number (../nettest.c).
static void mode_detach(void)
{
	struct netdev *v[NETDEV_MAX];
	if (nettest_report("e1000e_detach_has_nic", enics(v) >= 1))
		nettest_detach(v[0], "e1000e", NULL);
}

int e1000e_selftest(const char *modes)
{
	static const struct nettest_mode tab[] = { { "loop", mode_loop },
						   { "basic", mode_basic },
						   { "link", mode_link },
						   { "detach", mode_detach } };
	struct netdev *v[NETDEV_MAX];
	kprintf("e1000etest: modes %s, %d e1000e NIC(s)\n", modes, enics(v));
	nettest_run(modes, tab, (int)(sizeof(tab) / sizeof(tab[0])), "e1000etest_known_mode");
	return nettest_summary("e1000etest");
}
