// The NIC self-tests' shared part (nettest.h): TEST lines, modes, batches
// of wire-format packets and the byte-for-byte receive check, through
// struct netdev. Payload pages come from dma_alloc_page (unpinned; the
// frame balance of a test counts them with dma_free_frames).
#include "nettest.h"
#include "dma.h"
#include "kprintf.h"
#include "arch/x86_64/timer.h"
#include <err.h>
#include <fmt.h>
#include <string.h>
#include <wire.h>

#define HDR_SLOT 64 // bytes between headers in the shared header page

// ---- TEST lines ----

static int failures, passes;

bool nettest_report(const char *name, bool ok)
{
	kprintf("TEST %s ... %s\n", name, ok ? "ok" : "FAIL");
	failures += !ok;
	passes += ok;
	return ok;
}

void nettest_run(const char *modes, const struct nettest_mode *tab, int n, const char *unknown)
{
	char buf[64];
	const char *p = modes;
	failures = passes = 0;
	while (*p) {
		size_t len = 0;
		while (p[len] && p[len] != ',')
			len++;
		strlcpy(buf, p, len + 1 < sizeof(buf) ? len + 1 : sizeof(buf));
		int k = 0;
		while (k < n && strcmp(tab[k].name, buf))
			k++;
		if (k < n)
			tab[k].fn();
		else
			nettest_report(unknown, false);
		p += len + (p[len] == ',');
	}
}

int nettest_summary(const char *who)
{
	kprintf("%s: %d passed, %d failed\n", who, passes, failures);
	return failures;
}

void nettest_idle_us(uint64_t us)
{
	uint64_t t0 = timer_now_us();
	while (timer_now_us() - t0 < us)
		arch_idle();
}

// ---- batches ----

static void put_header(uint8_t *h, const uint8_t dst[6], const uint8_t src[6], uint32_t seq,
		       uint32_t size, uint16_t n)
{
	wire_put_eth(h, dst, src);
	wire_put_hdr(h, &(struct wire_fields){ .seq = seq, .batch = n, .len = size - WIRE_FRAME_HLEN });
}

// Payload of packet `seq` from offset `off` of fresh pages, one segment
// per page piece. Returns false when out of memory.
static bool put_payload(struct nettest_batch *b, struct netpkt *p, uint32_t seq, uint32_t len,
			uint32_t off)
{
	uint32_t done = 0;
	while (done < len) {
		paddr_t f = dma_alloc_page();
		if (!f)
			return false;
		b->frames[b->nframes++] = f;
		uint32_t piece = len - done < PAGE_SIZE - off ? len - done : (uint32_t)PAGE_SIZE - off;
		uint8_t *v = (uint8_t *)arch_p2v(f) + off;
		for (uint32_t i = 0; i < piece; i++)
			v[i] = wire_pattern(seq, done + i);
		p->seg[p->nseg++] = (struct netseg){ f + off, piece };
		done += piece;
		off = 0;
	}
	return true;
}

bool nettest_build_batch(struct nettest_batch *b, const struct netdev *from,
			 const struct netdev *to, const uint32_t *sizes, int n, uint32_t seq0)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	*b = (struct nettest_batch){ .n = n, .seq0 = seq0, .hdr = dma_alloc_page() };
	if (!b->hdr)
		return false;
	for (int i = 0; i < n; i++) {
		uint32_t seq = seq0 + (uint32_t)i, off = 1 + (seq * 997u) % (PAGE_SIZE - 1);
		struct netpkt *p = &b->pkt[i];
		b->size[i] = sizes[i];
		*p = (struct netpkt){ .cookie = seq };
		paddr_t h = b->hdr + (paddr_t)(i % (PAGE_SIZE / HDR_SLOT)) * HDR_SLOT + 2;
		put_header(arch_p2v(h), to ? to->mac : bcast, from->mac, seq, sizes[i], (uint16_t)n);
		p->seg[p->nseg++] = (struct netseg){ h, WIRE_FRAME_HLEN };
		if (!put_payload(b, p, seq, sizes[i] - WIRE_FRAME_HLEN, off))
			return false;
		b->max_segs = p->nseg > b->max_segs ? p->nseg : b->max_segs;
	}
	return true;
}

void nettest_free_batch(struct nettest_batch *b)
{
	for (int i = 0; i < b->nframes; i++)
		dma_free_page(b->frames[i]);
	if (b->hdr)
		dma_free_page(b->hdr);
	b->nframes = 0;
	b->hdr = 0;
}

void nettest_done_in_order(uint64_t cookie, void *arg)
{
	uint64_t *next = arg;
	*next = cookie == *next ? *next + 1 : ~0ull;
}

int nettest_tx_bad_input(struct netdev *nd, paddr_t f,
			 int (*expect)(void *arg, struct netpkt *p, int n, int want), void *arg)
{
	struct netpkt p[2];
	paddr_t gone = dma_alloc_page();
	dma_free_page(gone);
	int bad = 0;
	struct netpkt good = { .nseg = 1, .seg = { { f, 60 } } };
	p[0] = good, p[0].nseg = 0;
	bad += expect(arg, p, 1, -E_INVAL);
	p[0] = good, p[0].nseg = NETDEV_MAX_SEGS + 1;
	bad += expect(arg, p, 1, -E_2BIG);
	p[0] = good, p[0].seg[0].len = 0;
	bad += expect(arg, p, 1, -E_INVAL);
	p[0] = good, p[0].seg[0].pa = 0;
	bad += expect(arg, p, 1, -E_INVAL);
	p[0] = good, p[0].seg[0].pa = gone;
	bad += expect(arg, p, 1, -E_INVAL);
	p[0] = good, p[0].seg[0].len = 10;
	bad += expect(arg, p, 1, -E_INVAL);
	p[0] = good, p[0].nseg = NETDEV_MAX_SEGS;
	for (int i = 0; i < NETDEV_MAX_SEGS; i++)
		p[0].seg[i] = (struct netseg){ f, 1600 }; // 9600 bytes in all
	bad += expect(arg, p, 1, -E_2BIG);
	p[0] = good, p[1] = good, p[1].seg[0].len = nd->max_frame + 1;
	bad += expect(arg, p, 2, -E_2BIG);
	bad += expect(arg, p, -1, -E_INVAL);
	return bad;
}

// ---- receiving and checking ----

static uint8_t expect_byte(const struct nettest_batch *b, int i, uint32_t k)
{
	if (k < WIRE_FRAME_HLEN)
		return ((const uint8_t *)arch_p2v(b->pkt[i].seg[0].pa))[k];
	return wire_pattern(b->seq0 + (uint32_t)i, k - WIRE_FRAME_HLEN);
}

static void check_bytes(struct nettest_rx *c, const struct rxfrag *f)
{
	const uint8_t *v = arch_p2v(f->pa);
	int i = c->next;
	for (uint32_t k = 0; k < f->len; k++) {
		uint8_t want = expect_byte(c->b, i, c->got + k);
		if (v[k] != want && c->bad++ == 0)
			kprintf("  packet %d byte %u: got %02x want %02x\n", i, c->got + k, v[k], want);
	}
}

static void check_frag(struct nettest_rx *c, const struct rxfrag *f)
{
	int i = c->next;
	if (i >= c->b->n || (f->pa & (PAGE_SIZE - 1)) || (!f->eop && f->len != NETDEV_RX_BUF) ||
	    f->len == 0 || c->got + f->len > c->b->size[i]) {
		if (c->bad++ == 0)
			kprintf("  unexpected buffer: packet %d len %u eop %d\n", i, f->len, f->eop);
		return;
	}
	check_bytes(c, f);
	c->got += f->len;
	if (!f->eop)
		return;
	if ((c->got != c->b->size[i] || f->error) && c->bad++ == 0)
		kprintf("  packet %d: %u bytes (want %u), error %d\n", i, c->got, c->b->size[i],
			f->error);
	c->next++;
	c->got = 0;
}

static bool swap_pages(struct netdev *nd, const struct rxfrag *f, int n)
{
	paddr_t fresh[32];
	for (int i = 0; i < n; i++) {
		fresh[i] = dma_alloc_page();
		dma_free_page(f[i].pa);
		if (!fresh[i])
			return false;
	}
	return nd->ops->rx_refill(nd, fresh, n) == n;
}

int nettest_receive(struct netdev *nd, struct nettest_rx *c, int max)
{
	struct rxfrag f[32];
	int n = nd->ops->rx_poll(nd, f, max < 32 ? max : 32);
	for (int i = 0; i < n; i++)
		check_frag(c, &f[i]);
	return n > 0 && !swap_pages(nd, f, n) ? -1 : n;
}

// ---- test steps every driver runs alike ----

int nettest_family(const char *family, struct netdev **out)
{
	int n = 0;
	for (int i = 0; i < netdev_count() && n < NETDEV_MAX; i++)
		if (!strcmp(netdev_get(i)->family, family))
			out[n++] = netdev_get(i);
	return n;
}

struct netdev_stats nettest_stats(struct netdev *nd)
{
	struct netdev_stats s;
	nd->ops->get_stats(nd, &s);
	return s;
}

bool nettest_mac_ok(const struct netdev *d)
{
	static const uint8_t z[6];
	return memcmp(d->mac, z, 6) && !(d->mac[0] & 1);
}

static int refill_expect(struct netdev *b, const paddr_t *p, int n, int want)
{
	int free0 = b->ops->rx_free_slots(b), r = b->ops->rx_refill(b, p, n);
	bool ok = r == want && b->ops->rx_free_slots(b) == free0;
	if (!ok)
		kprintf("  rx_refill returned %d (%s), want %s\n", r, err_name(r), err_name(want));
	return !ok;
}

int nettest_refill_reject(struct netdev *b, const paddr_t kept[2])
{
	extern char __image_start[];
	paddr_t x = dma_alloc_page(), gone = dma_alloc_page(), twice[2] = { x, x };
	dma_free_page(gone);
	paddr_t odd = x + 8, image = PAGE_ROUND_UP(arch_v2p(__image_start));
	int bad = refill_expect(b, &odd, 1, -E_INVAL) + refill_expect(b, &gone, 1, -E_INVAL) +
		  refill_expect(b, &image, 1, -E_INVAL) + refill_expect(b, twice, 2, -E_BUSY) +
		  refill_expect(b, &x, -1, -E_INVAL);
	bad += dma_check_buf(x) != 0; // not left pinned by the refused calls
	dma_pin(x, PAGE_SIZE);
	bad += refill_expect(b, &x, 1, -E_BUSY);
	dma_unpin(x, PAGE_SIZE);
	dma_free_page(x);
	bad += b->ops->rx_free_slots(b) != 2;
	bad += b->ops->rx_refill(b, kept, 2) != 2;
	bad += b->ops->rx_free_slots(b) != 0;
	return bad;
}

static volatile int link_calls; // written in the interrupt

static void on_link(struct netdev *nd, bool up, void *arg)
{
	(void)nd, (void)up, (void)arg;
	link_calls++;
}

static uint64_t link_changes(struct netdev *nd) { return nettest_stats(nd).link_changes; }

// The NIC whose link is `up` after a change counted since base[], or -1
// after LINK_WAIT_US; base[] then holds the counts of now.
#define LINK_WAIT_US 60000000
static int wait_link(struct netdev **v, int n, bool up, uint64_t *base)
{
	int found = -1;
	uint64_t t0 = timer_now_us();
	while (found < 0 && timer_now_us() - t0 < LINK_WAIT_US) {
		for (int i = 0; i < n && found < 0; i++)
			if (link_changes(v[i]) > base[i] && v[i]->ops->link_up(v[i]) == up)
				found = i;
		if (found < 0)
			arch_idle();
	}
	kprintf("  link %s on NIC %d after %lu ms\n", up ? "up" : "down", found,
		(timer_now_us() - t0) / 1000);
	for (int i = 0; i < n; i++)
		base[i] = link_changes(v[i]);
	return found;
}

void nettest_link(struct netdev **v, int n, const char *who)
{
	uint64_t base[NETDEV_MAX];
	char name[40];
	int calls0 = link_calls;
	for (int i = 0; i < n; i++)
		v[i]->link_change = on_link, base[i] = link_changes(v[i]);
	kprintf("%stest: waiting for link down\n", who);
	int down = n ? wait_link(v, n, false, base) : -1;
	fmt_snprintf(name, sizeof(name), "%s_link_down_irq", who);
	nettest_report(name, down >= 0);
	kprintf("%stest: waiting for link up\n", who);
	int up = down >= 0 ? wait_link(v, n, true, base) : -1;
	kprintf("  %d link_change calls\n", link_calls - calls0);
	fmt_snprintf(name, sizeof(name), "%s_link_up_irq", who);
	nettest_report(name, up == down && up >= 0 && link_calls - calls0 >= 2);
	for (int i = 0; i < n; i++)
		v[i]->link_change = NULL;
}

void nettest_each_way(struct netdev **v, int n, const char *who,
		      void (*dir)(const char *name, struct netdev *a, struct netdev *b, uint32_t *seq),
		      uint32_t *seq)
{
	char name[40];
	for (int i = 0; i + 1 < n; i += 2) {
		for (int k = 0; k < 2; k++) {
			fmt_snprintf(name, sizeof(name), "%s_loop_%d_to_%d", who, i + k, i + 1 - k);
			dir(name, v[i + k], v[i + 1 - k], seq);
		}
	}
}

#define WAIT_ONE_US 10000000

bool nettest_send_one(struct netdev *a, const struct netdev *b, uint32_t seq, uint32_t size)
{
	static struct nettest_batch bt;
	uint64_t next = seq, t0 = timer_now_us();
	bool ok = nettest_build_batch(&bt, a, b, &size, 1, seq) && a->ops->tx_batch(a, bt.pkt, 1) == 1;
	int got = 0;
	while (ok && got == 0 && timer_now_us() - t0 < WAIT_ONE_US)
		if ((got = a->ops->tx_reclaim(a, nettest_done_in_order, &next)) == 0)
			arch_idle();
	nettest_free_batch(&bt);
	return ok && got == 1 && next == seq + 1;
}

bool nettest_poll_one(struct netdev *b, paddr_t *page, uint16_t len)
{
	struct rxfrag f;
	int n = 0;
	for (uint64_t t0 = timer_now_us(); n == 0 && timer_now_us() - t0 < WAIT_ONE_US;)
		if ((n = b->ops->rx_poll(b, &f, 1)) == 0)
			arch_idle();
	*page = n == 1 ? f.pa : 0;
	return n == 1 && f.eop && f.len == len;
}

static volatile int ready_calls; // written in the interrupt (or from rx_irq)

void nettest_on_ready(struct netdev *nd, void *arg)
{
	(void)nd, (void)arg;
	ready_calls++;
}

int nettest_ready_calls(void) { return ready_calls; }

bool nettest_wait_ready(int want)
{
	for (uint64_t t0 = timer_now_us(); ready_calls < want && timer_now_us() - t0 < WAIT_ONE_US;)
		arch_idle();
	return ready_calls >= want;
}

static const uint32_t four_sizes[4] = { 60, 1514, 4096 + 30, 9018 };

bool nettest_send_broadcast(struct netdev *nd, struct netdev_stats *s0, struct netdev_stats *s1)
{
	static struct nettest_batch bt;
	uint64_t next = 1, t0 = timer_now_us();
	*s0 = nettest_stats(nd);
	bool ok = nettest_build_batch(&bt, nd, NULL, four_sizes, 4, 1) &&
		  nd->ops->tx_batch(nd, bt.pkt, 4) == 4;
	int got = 0;
	while (ok && got < 4 && timer_now_us() - t0 < 10000000) {
		got += nd->ops->tx_reclaim(nd, nettest_done_in_order, &next);
		if (got < 4)
			arch_idle();
	}
	nettest_free_batch(&bt);
	*s1 = nettest_stats(nd);
	kprintf("  sent %lu frames, %lu bytes, %lu doorbell(s), %lu interrupt(s)\n",
		s1->tx_frames - s0->tx_frames, s1->tx_bytes - s0->tx_bytes,
		s1->doorbells - s0->doorbells, s1->irqs - s0->irqs);
	return ok && got == 4 && next == 5;
}

static int pinned_pages(const struct nettest_batch *b)
{
	int n = 0;
	for (int i = 0; i < b->nframes; i++)
		n += dma_check_buf(b->frames[i]) == -E_BUSY;
	return n;
}

void nettest_detach(struct netdev *nd, const char *who, void (*queued)(bool ok))
{
	static struct nettest_batch bt;
	char name[48];
	int regs = netdev_count();
	bool ok = nettest_build_batch(&bt, nd, NULL, four_sizes, 4, 1) &&
		  nd->ops->tx_batch(nd, bt.pkt, 4) == 4;
	if (queued)
		queued(ok);
	int pinned = pinned_pages(&bt);
	uint64_t free0 = dma_free_frames(), owned = netdev_frames_owned_all();
	int gone = netdev_detach_all();
	uint64_t free1 = dma_free_frames();
	int still = pinned_pages(&bt), npages = bt.nframes;
	nettest_free_batch(&bt);
	uint64_t free2 = dma_free_frames();
	netdev_probe_all();
	ok = ok && gone == regs && free1 == free0 + owned && netdev_count() == regs &&
	     netdev_frames_owned_all() == owned && dma_free_frames() == free2 - owned;
	kprintf("  detach: %d NIC(s), %lu frames freed (free %lu -> %lu), %d of %d send pages "
		"pinned before, %d after; attached again: %d NIC(s), %lu frames\n",
		gone, free1 - free0, free0, free1, pinned, npages, still, netdev_count(),
		netdev_frames_owned_all());
	fmt_snprintf(name, sizeof(name), "%s_detach_unpins_inflight", who);
	nettest_report(name, pinned == npages && npages > 0 && still == 0);
	fmt_snprintf(name, sizeof(name), "%s_detach_frees_all", who);
	nettest_report(name, ok);
}
