// Fake NICs for the I/O manager's tests: netdev_ops over the fake page
// pool (see fake_netdev.h), and the driver table's entries (e1000,
// virtio-net, e1000e), which find no NIC on a host without a PCI bus.
#include "fake_netdev.h"
#include "fake_arch.h"
#include "res/pmem.h"
#include "net/worker.h"
#include "err.h"
#include "host.h"
#include <setjmp.h>
#include <string.h>

struct fake_nic fake_nics[FAKE_NIC_MAX];
static const struct netdev_ops fake_ops;

static struct fake_nic *of(struct netdev *nd) { return (struct fake_nic *)nd; }

static struct fake_nic *nic(int i)
{
	if (i < 0 || i >= FAKE_NIC_MAX || !fake_nics[i].attached)
		fake_fatal("fake NIC %d is not attached", i);
	return &fake_nics[i];
}

// What dma_check asks: every page of [pa, pa+len) is an allocated frame.
static bool dma_ok(paddr_t pa, uint64_t len)
{
	if (len == 0 || pa < FAKE_PHYS_BASE || pa >= pmem_top() || len > pmem_top() - pa)
		return false;
	for (paddr_t pg = PAGE_ROUND_DOWN(pa); pg < pa + len; pg += PAGE_SIZE)
		if (!pmem_is_allocated(pg))
			return false;
	return true;
}

static void pin_range(paddr_t pa, uint64_t len, bool pin)
{
	for (paddr_t pg = PAGE_ROUND_DOWN(pa); pg < pa + len; pg += PAGE_SIZE)
		pin ? pmem_pin(pg) : pmem_unpin(pg);
}

// ---- transmit

static int pkt_check(const struct netdev *nd, const struct netpkt *p)
{
	if (p->nseg <= 0)
		return -E_INVAL;
	if (p->nseg > NETDEV_MAX_SEGS)
		return -E_2BIG;
	uint64_t total = 0;
	for (int s = 0; s < p->nseg; s++) {
		if (p->seg[s].len > nd->max_frame)
			return -E_2BIG;
		if (!dma_ok(p->seg[s].pa, p->seg[s].len))
			return -E_INVAL;
		total += p->seg[s].len;
	}
	if (total > nd->max_frame)
		return -E_2BIG;
	return total < nd->min_frame ? -E_INVAL : 0;
}

static void tx_queue(struct fake_nic *f, const struct netpkt *p)
{
	if (f->ntx == FAKE_TX_LOG)
		fake_fatal("fake NIC %d: transmit log full", f->nd.index);
	struct fake_tx *t = &f->tx[f->ntx++];
	*t = (struct fake_tx){ .pkt = *p, .doorbell = (int)f->st.doorbells + 1 };
	for (int s = 0; s < p->nseg; s++) {
		const struct netseg *g = &p->seg[s];
		pin_range(g->pa, g->len, true);
		uint32_t room = t->len < FAKE_TX_SNAP ? FAKE_TX_SNAP - t->len : 0;
		if (room)
			memcpy(t->bytes + t->len, arch_p2v(g->pa), g->len < room ? g->len : room);
		t->len += g->len;
	}
}

static int tx_batch(struct netdev *nd, const struct netpkt *pkts, int n)
{
	struct fake_nic *f = of(nd);
	if (f->tx_fail) {
		int r = f->tx_fail;
		f->tx_fail = 0;
		f->st.tx_rejected++;
		return r;
	}
	if (n < 0 || (n > 0 && !pkts))
		return f->st.tx_rejected++, -E_INVAL;
	for (int i = 0; i < n; i++) {
		int r = pkt_check(nd, &pkts[i]);
		if (r < 0)
			return f->st.tx_rejected++, r;
	}
	int q = 0;
	while (q < n && f->ntx - f->tx_reclaimed < nd->tx_slots)
		tx_queue(f, &pkts[q++]);
	if (q < n)
		f->st.tx_ring_full++;
	f->tx_full_streak = q == 0 && n > 0 ? f->tx_full_streak + 1 : 0;
	if (f->tx_full_streak == FAKE_TX_SPIN)
		fake_fatal("fake NIC %d: tx_batch found the ring full %d times in a row and nobody "
			   "reclaimed: the caller spins forever", nd->index, FAKE_TX_SPIN);
	if (q > 0)
		f->st.doorbells++;
	if (f->autocomplete)
		f->tx_done = f->ntx;
	if (f->tx_hook)
		f->tx_hook(f, q);
	return q;
}

static int tx_reclaim(struct netdev *nd, void (*done)(uint64_t, void *), void *arg)
{
	struct fake_nic *f = of(nd);
	int n = 0;
	f->reclaim_calls++;
	f->tx_full_streak = 0;
	while (f->tx_reclaimed < f->tx_done) {
		struct fake_tx *t = &f->tx[f->tx_reclaimed++];
		for (int s = 0; s < t->pkt.nseg; s++)
			pin_range(t->pkt.seg[s].pa, t->pkt.seg[s].len, false);
		t->reclaimed = true;
		f->st.tx_frames++;
		f->st.tx_bytes += t->len;
		n++;
		if (done)
			done(t->pkt.cookie, arg);
	}
	return n;
}

void fake_nic_tx_complete(int i, int n)
{
	struct fake_nic *f = nic(i);
	int left = f->ntx - f->tx_done;
	n = n < 0 || n > left ? left : n;
	for (int k = 0; k < n; k++)
		f->tx[f->tx_done++].done = true;
}

int fake_nic_tx_inflight(int i) { return nic(i)->ntx - nic(i)->tx_reclaimed; }

// ---- receive

static struct fake_rxslot *slot(struct fake_nic *f, int k)
{
	return &f->ring[(f->rx_head + k) % f->nd.rx_slots];
}

static int rx_poll(struct netdev *nd, struct rxfrag *out, int max)
{
	struct fake_nic *f = of(nd);
	int n = 0;
	f->poll_calls++;
	while (n < max && f->rx_filled) {
		struct fake_rxslot *s = slot(f, 0);
		out[n++] = (struct rxfrag){ .pa = s->pa, .len = s->len, .eop = s->eop,
					    .error = s->eop && s->error };
		f->st.rx_bytes += s->len;
		if (s->eop) {
			f->st.rx_frames++;
			f->st.rx_errors += s->error;
		}
		pmem_unpin(s->pa);
		*s = (struct fake_rxslot){ 0 };
		f->rx_head = (f->rx_head + 1) % nd->rx_slots;
		f->rx_posted--, f->rx_filled--;
	}
	f->st.frames_owned = (uint64_t)f->rx_posted;
	return n;
}

static int rx_free_slots(struct netdev *nd) { return nd->rx_slots - of(nd)->rx_posted; }

// As e1000: a page listed twice is pinned the second time (-E_BUSY).
static int rx_refill(struct netdev *nd, const paddr_t *pages, int n)
{
	struct fake_nic *f = of(nd);
	f->refill_calls++;
	if (n < 0 || (n > 0 && !pages))
		return f->st.rx_refill_rejected++, -E_INVAL;
	int k = n < rx_free_slots(nd) ? n : rx_free_slots(nd);
	for (int i = 0; i < k; i++) {
		int r = (pages[i] & (PAGE_SIZE - 1)) || !dma_ok(pages[i], PAGE_SIZE) ? -E_INVAL
			: pmem_is_pinned(pages[i])                                   ? -E_BUSY
												      : 0;
		if (r < 0) {
			while (i-- > 0)
				pmem_unpin(pages[i]);
			return f->st.rx_refill_rejected++, r;
		}
		pmem_pin(pages[i]);
	}
	for (int i = 0; i < k; i++)
		*slot(f, f->rx_posted++) = (struct fake_rxslot){ .pa = pages[i] };
	if (k > 0)
		f->st.rx_refills++;
	f->st.frames_owned = (uint64_t)f->rx_posted;
	return k;
}

int fake_nic_rx(int i, const void *bytes, uint32_t len, bool error)
{
	struct fake_nic *f = nic(i);
	int need = len ? (int)((len + PAGE_SIZE - 1) / PAGE_SIZE) : 1;
	if (f->rx_posted - f->rx_filled < need) {
		f->st.rx_no_buf++;
		return -1;
	}
	const uint8_t *b = bytes;
	for (int k = 0; k < need; k++) {
		struct fake_rxslot *s = slot(f, f->rx_filled++);
		uint32_t n = len - (uint32_t)k * PAGE_SIZE;
		n = n < PAGE_SIZE ? n : PAGE_SIZE;
		memcpy(arch_p2v(s->pa), b + (size_t)k * PAGE_SIZE, n);
		s->len = (uint16_t)n;
		s->filled = true;
		s->eop = k == need - 1;
		s->error = s->eop && error;
	}
	return need;
}

paddr_t fake_nic_rx_next(int i, int k)
{
	struct fake_nic *f = nic(i);
	return f->rx_filled + k < f->rx_posted ? slot(f, f->rx_filled + k)->pa : 0;
}

bool fake_nic_rx_has(int i, paddr_t pa)
{
	struct fake_nic *f = nic(i);
	for (int k = 0; k < f->rx_posted; k++)
		if (slot(f, k)->pa == pa)
			return true;
	return false;
}

static void rx_irq(struct netdev *nd, bool enable)
{
	struct fake_nic *f = of(nd);
	f->rx_irq_on = enable;
	f->rx_irq_calls++;
	if (enable && f->unmask_hook)
		f->unmask_hook(f);
	if (enable && f->ready_on_unmask && f->rx_filled) {
		f->st.irqs++;
		netdev_rx_ready(&f->nd);
	}
}

bool fake_nic_irq(int i)
{
	struct fake_nic *f = nic(i);
	if (!f->rx_irq_on || !f->rx_filled)
		return false;
	f->st.irqs++;
	netdev_rx_ready(&f->nd);
	worker_run(); // the interrupt's way out: the network worker runs (kernel/main.c)
	return true;
}

// ---- the rest

static bool link_up(struct netdev *nd) { return of(nd)->link; }

void fake_nic_set_link(int i, bool up)
{
	struct fake_nic *f = nic(i);
	if (f->link == up)
		return;
	f->link = up;
	f->st.link_changes++;
	netdev_link_change(&f->nd, up);
}

static void get_stats(struct netdev *nd, struct netdev_stats *s)
{
	of(nd)->st.frames_owned = (uint64_t)of(nd)->rx_posted;
	*s = of(nd)->st;
}

// Stops the device: packets in flight are dropped (unpinned, unreported),
// posted buffers unpinned and freed.
static void detach(struct netdev *nd)
{
	struct fake_nic *f = of(nd);
	if (!f->attached)
		return;
	for (int t = f->tx_reclaimed; t < f->ntx; t++)
		for (int s = 0; s < f->tx[t].pkt.nseg; s++)
			pin_range(f->tx[t].pkt.seg[s].pa, f->tx[t].pkt.seg[s].len, false);
	f->tx_reclaimed = f->tx_done = f->ntx;
	while (f->rx_posted) {
		struct fake_rxslot *s = slot(f, 0);
		pmem_unpin(s->pa);
		pmem_free(s->pa);
		f->rx_head = (f->rx_head + 1) % nd->rx_slots;
		f->rx_posted--;
	}
	f->rx_filled = 0;
	f->st.frames_owned = 0;
	f->attached = false;
	netdev_unregister(nd);
}

static const struct netdev_ops fake_ops = {
	.tx_batch = tx_batch, .tx_reclaim = tx_reclaim, .rx_poll = rx_poll,
	.rx_refill = rx_refill, .rx_free_slots = rx_free_slots, .rx_irq = rx_irq,
	.link_up = link_up, .get_stats = get_stats, .detach = detach,
};

void fake_netdev_reset(void)
{
	while (netdev_count())
		netdev_unregister(netdev_get(0));
	for (int i = 0; i < FAKE_NIC_MAX; i++) {
		struct fake_nic *f = &fake_nics[i];
		f->attached = false;
		f->ntx = f->tx_done = f->tx_reclaimed = 0;
		f->rx_head = f->rx_posted = f->rx_filled = 0;
	}
}

int fake_nic_attach(int i, int rx_slots, int tx_slots)
{
	if (i < 0 || i >= FAKE_NIC_MAX || fake_nics[i].attached || rx_slots < 1 ||
	    rx_slots > FAKE_NIC_RING_MAX || tx_slots < 1)
		fake_fatal("fake_nic_attach(%d, %d, %d): bad arguments", i, rx_slots, tx_slots);
	struct fake_nic *f = &fake_nics[i];
	memset(f, 0, sizeof(*f));
	f->nd = (struct netdev){ .ops = &fake_ops, .family = "fake", .model = "fake-nic",
				 .mac = { 0x02, 0, 0, 0, 0, (uint8_t)i },
				 .min_frame = FAKE_MIN_FRAME, .max_frame = FAKE_MAX_FRAME,
				 .rx_slots = rx_slots, .tx_slots = tx_slots };
	f->attached = true;
	f->link = true;
	f->rx_irq_on = true;
	for (int k = 0; k < rx_slots; k++) {
		paddr_t pa = pmem_alloc();
		if (!pa)
			fake_fatal("fake_nic_attach: out of frames");
		pmem_pin(pa);
		*slot(f, f->rx_posted++) = (struct fake_rxslot){ .pa = pa };
	}
	f->st.frames_owned = (uint64_t)f->rx_posted;
	int idx = netdev_register(&f->nd);
	if (idx < 0)
		fake_fatal("fake_nic_attach: registry full");
	return idx;
}

void fake_nic_tx_complete_all(void)
{
	for (int i = 0; i < FAKE_NIC_MAX; i++)
		if (fake_nics[i].attached)
			fake_nic_tx_complete(i, -1);
}

void fake_io_teardown(void)
{
	res_machine_teardown();
	jmp_buf jb;
	if (setjmp(jb) == 0) {
		fake_fatal_env = &jb;
		netdev_detach_all();
	}
	fake_fatal_env = NULL;
}

void io_tick(void)
{
	worker_note_tick();
	worker_run();
}
