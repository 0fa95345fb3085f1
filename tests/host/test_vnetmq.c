// drivers/net/virtio/virtio_net_ring.c with several queue pairs: the
// bookkeeping that makes one multiqueue NIC one ring to the stack. A
// struct vnet_dev is built by hand over real virtqueues (virtqueue.c) in
// frames from pmem; the test plays the device, taking available buffers
// and writing used entries as QEMU's virtio-net does (5.1.6.4: one
// buffer per frame here, num_buffers in the header slot).
#include "host.h"
#include "fake_arch.h"
#include "fake_proc.h"
#include "res/pmem.h"
#include "dma.h"
#include "arch/x86_64/smp.h"
#include "arch/x86_64/timer.h"
#include "../../drivers/net/virtio/virtio_net_dev.h"
#include <CUnit/CUnit.h>
#include <string.h>

#define QSIZE 16 // entries per receive queue: 8 buffers

static struct vnet_dev dev;
static uint16_t doorbell;               // every queue's notify register
static uint16_t dev_avail[VNET_PAIRS_MAX]; // the device's next available index per receive queue

// Two (or n) queue pairs, every receive buffer posted; transmit on pair
// 0, receive interrupts on CPUs 0 and 1 (LAPIC IDs as fake smp_apic_id).
static struct vnet_dev *dev_new(int n)
{
	struct vnet_dev *d = &dev;
	memset(d, 0, sizeof(*d));
	memset(dev_avail, 0, sizeof(dev_avail));
	d->pairs = n;
	for (int i = 0; i < n; i++) {
		struct vnet_rx *r = &d->rx[i];
		CU_ASSERT_FATAL(virtq_alloc(&r->q, VNET_RXQ(i), QSIZE) == 0);
		CU_ASSERT_FATAL(virtq_alloc(&d->txq[i], VNET_TXQ(i), QSIZE) == 0);
		r->q.notify = &doorbell;
		r->q.used->flags = VIRTQ_USED_F_NO_NOTIFY; // QEMU with buffers enough
		d->txq[i].notify = &doorbell;
		r->d = d;
		r->base = d->rx_bufs;
		r->n = QSIZE / 2;
		r->apic_id = smp_apic_id(i);
		d->rx_bufs += r->n;
	}
	d->hdr_frames = 1;
	d->hdr_pa = dma_alloc_contig(1);
	CU_ASSERT_FATAL(d->hdr_pa != 0);
	d->hdr = arch_p2v(d->hdr_pa);
	CU_ASSERT_FATAL(vnet_rx_init(d) == 0);
	d->nd.rx_slots = d->rx_bufs;
	d->nd.rx_queues = n;
	d->tx_cur = d->rx_seen = d->rx_first = -1; // as attach leaves them
	return d;
}

static void dev_free(struct vnet_dev *d)
{
	vnet_tx_drop(d);
	vnet_rx_free_all(d);
	for (int i = 0; i < d->pairs; i++) {
		virtq_free(&d->rx[i].q);
		virtq_free(&d->txq[i]);
	}
	dma_free_contig(d->hdr_pa, d->hdr_frames);
}

// The device receives a frame of len bytes (at most a page's data) into
// queue q's next available buffer, its first byte `mark`.
static void dev_rx(struct vnet_dev *d, int q, uint32_t len, uint8_t mark)
{
	struct vnet_rx *r = &d->rx[q];
	CU_ASSERT_FATAL(dev_avail[q] != r->q.avail->idx);
	uint16_t head = r->q.avail->ring[dev_avail[q]++ % r->q.size];
	uint8_t *slot = d->hdr + VNET_SLOT * (r->base + head / 2);
	memset(slot, 0, VNET_HDR_LEN);
	slot[VNET_HDR_NUM_BUFFERS] = 1;
	memset(arch_p2v(r->q.desc[head + 1].addr), mark, len);
	volatile struct virtq_used *u = r->q.used;
	u->ring[u->idx % r->q.size] = (struct virtq_used_elem){ head, VNET_HDR_LEN + len };
	u->idx++;
}

// The device has sent the chain at the head of transmit queue q's
// available ring `k` places on (in whatever order the test chooses).
static void dev_tx_done(struct vnet_dev *d, int q, uint16_t k)
{
	struct virtq *vq = &d->txq[q];
	uint16_t head = vq->avail->ring[k % vq->size];
	volatile struct virtq_used *u = vq->used;
	u->ring[u->idx % vq->size] = (struct virtq_used_elem){ head, 0 };
	u->idx++;
}

static uint8_t first_byte(const struct rxfrag *f) { return *(uint8_t *)arch_p2v(f->pa); }

static void give_back(struct vnet_dev *d, struct rxfrag *f, int n)
{
	paddr_t p[64];
	for (int i = 0; i < n; i++)
		p[i] = f[i].pa;
	CU_ASSERT_EQUAL(vnet_rx_refill(&d->nd, p, n), n);
}

// The queues other than the current transmit pair's come first: frames
// there came before the host's tap moved this NIC's frames to that pair.
static void test_poll_order(void)
{
	struct vnet_dev *d = dev_new(2);
	struct rxfrag f[8];
	dev_rx(d, 1, 100, 0xb1);
	dev_rx(d, 0, 100, 0xa1);
	dev_rx(d, 1, 100, 0xb2);
	d->tx_cur = 0; // pair 0 current: queue 1 holds the older frames
	CU_ASSERT_EQUAL_FATAL(vnet_rx_poll(&d->nd, f, 8), 3);
	CU_ASSERT_EQUAL(first_byte(&f[0]), 0xb1);
	CU_ASSERT_EQUAL(first_byte(&f[1]), 0xb2);
	CU_ASSERT_EQUAL(first_byte(&f[2]), 0xa1);
	CU_ASSERT(f[0].eop && f[2].eop && f[0].len == 100);
	give_back(d, f, 3);
	dev_rx(d, 0, 60, 0xa2);
	dev_rx(d, 1, 60, 0xb3);
	d->tx_cur = 1;
	CU_ASSERT_EQUAL_FATAL(vnet_rx_poll(&d->nd, f, 8), 2);
	CU_ASSERT_EQUAL(first_byte(&f[0]), 0xa2);
	CU_ASSERT_EQUAL(first_byte(&f[1]), 0xb3);
	CU_ASSERT_EQUAL(d->st.rxq_frames[0], 2);
	CU_ASSERT_EQUAL(d->st.rxq_frames[1], 3);
	CU_ASSERT_EQUAL(d->st.rx_frames, 5);
	give_back(d, f, 2);
	dev_free(d);
}

// A frame of several buffers cut short by max is finished first, before
// any other queue's: the stack assembles one frame at a time per NIC.
static void test_frame_whole(void)
{
	struct vnet_dev *d = dev_new(2);
	struct rxfrag f[4];
	// a 2-buffer frame on queue 1: the first buffer full, the second 100 bytes
	struct vnet_rx *r = &d->rx[1];
	for (int b = 0; b < 2; b++) {
		uint16_t head = r->q.avail->ring[dev_avail[1]++ % r->q.size];
		uint8_t *slot = d->hdr + VNET_SLOT * (r->base + head / 2);
		memset(slot, 0, VNET_HDR_LEN);
		slot[VNET_HDR_NUM_BUFFERS] = b == 0 ? 2 : 0;
		memset(arch_p2v(r->q.desc[head + 1].addr), 0xc0 + b, VNET_RX_DATA);
		uint32_t len = b == 0 ? VNET_HDR_LEN + VNET_RX_DATA : 100;
		r->q.used->ring[r->q.used->idx % r->q.size] = (struct virtq_used_elem){ head, len };
		r->q.used->idx++;
	}
	dev_rx(d, 0, 80, 0xa1);
	d->tx_cur = 0;
	CU_ASSERT_EQUAL_FATAL(vnet_rx_poll(&d->nd, f, 1), 1); // queue 1 first: the frame's first page
	CU_ASSERT(!f[0].eop);
	CU_ASSERT_EQUAL(f[0].len, PAGE_SIZE);
	CU_ASSERT_EQUAL(first_byte(&f[0]), 0xc0);
	d->tx_cur = 1; // even with queue 1 now last in order, its frame's rest comes first
	CU_ASSERT_EQUAL_FATAL(vnet_rx_poll(&d->nd, &f[1], 3), 2);
	CU_ASSERT(f[1].eop);
	CU_ASSERT_EQUAL(f[1].len, 100 - VNET_HDR_LEN);
	CU_ASSERT_EQUAL(first_byte(&f[2]), 0xa1);
	give_back(d, f, 3);
	dev_free(d);
}

// Refills go to the emptiest queue; the stack sees one ring of every
// queue's buffers.
static void test_refill_spread(void)
{
	struct vnet_dev *d = dev_new(2);
	struct rxfrag f[8];
	CU_ASSERT_EQUAL(vnet_rx_free_slots(&d->nd), 0);
	for (int i = 0; i < 4; i++)
		dev_rx(d, 0, 64, (uint8_t)i);
	dev_rx(d, 1, 64, 9);
	CU_ASSERT_EQUAL_FATAL(vnet_rx_poll(&d->nd, f, 8), 5);
	CU_ASSERT_EQUAL(vnet_rx_free_slots(&d->nd), 5);
	CU_ASSERT_EQUAL(d->rx[0].nfree, 4);
	CU_ASSERT_EQUAL(d->rx[1].nfree, 1);
	paddr_t p[3] = { f[0].pa, f[1].pa, f[2].pa };
	CU_ASSERT_EQUAL(vnet_rx_refill(&d->nd, p, 3), 3); // queue 0 was emptiest each time
	CU_ASSERT_EQUAL(d->rx[0].nfree, 1);
	CU_ASSERT_EQUAL(d->rx[1].nfree, 1);
	paddr_t q[2] = { f[3].pa, f[4].pa };
	CU_ASSERT_EQUAL(vnet_rx_refill(&d->nd, q, 2), 2); // one each
	CU_ASSERT_EQUAL(d->rx[0].nfree + d->rx[1].nfree, 0);
	CU_ASSERT_EQUAL(vnet_rx_posted(d), d->rx_bufs);
	dev_free(d);
}

static uint64_t reported[16];
static int nreported;
static void done(uint64_t cookie, void *arg)
{
	(void)arg;
	reported[nreported++] = cookie;
}

static void send_one(struct vnet_dev *d, paddr_t page, uint64_t cookie)
{
	struct netpkt p = { .seg = { { page, 64 } }, .nseg = 1, .cookie = cookie };
	CU_ASSERT_EQUAL(vnet_tx_batch(&d->nd, &p, 1), 1);
}

// Sends follow the CPU to its pair only once the device has used every
// chain of the old queue and the new pair's receive queue is empty; the
// reclaim reports every queue's packets in the order they were queued.
static void test_tx_follows_cpu(void)
{
	struct vnet_dev *d = dev_new(2);
	paddr_t page = pmem_alloc();
	CU_ASSERT_FATAL(page != 0);
	nreported = 0;
	fake_set_cpu(0);
	send_one(d, page, 1); // queue 0
	fake_set_cpu(1);
	send_one(d, page, 2); // queue 0 still busy: stays
	CU_ASSERT_EQUAL(d->tx_cur, 0);
	CU_ASSERT_EQUAL(d->tx_moves, 0);
	dev_tx_done(d, 0, 0);
	send_one(d, page, 3); // packet 2 not sent yet: stays
	CU_ASSERT_EQUAL(d->tx_cur, 0);
	dev_tx_done(d, 0, 2);
	dev_tx_done(d, 0, 1);
	dev_rx(d, 1, 64, 7); // a frame waits on pair 1's receive queue: not yet
	send_one(d, page, 4);
	CU_ASSERT_EQUAL(d->tx_cur, 0);
	struct rxfrag f[2];
	CU_ASSERT_EQUAL_FATAL(vnet_rx_poll(&d->nd, f, 2), 1);
	give_back(d, f, 1);
	dev_tx_done(d, 0, 3);
	send_one(d, page, 5); // queue 0 drained, receive queue 1 empty: moves
	CU_ASSERT_EQUAL(d->tx_cur, 1);
	CU_ASSERT_EQUAL(d->tx_moves, 1);
	CU_ASSERT_EQUAL(d->txq[1].avail->idx, 1);
	send_one(d, page, 6);
	dev_tx_done(d, 1, 1); // the device finishes 6 before 5
	CU_ASSERT_EQUAL(vnet_tx_reclaim(&d->nd, done, NULL), 4);
	dev_tx_done(d, 1, 0);
	CU_ASSERT_EQUAL(vnet_tx_reclaim(&d->nd, done, NULL), 2);
	CU_ASSERT_EQUAL_FATAL(nreported, 6);
	for (int i = 0; i < 6; i++)
		CU_ASSERT_EQUAL(reported[i], (uint64_t)i + 1);
	CU_ASSERT_EQUAL(d->tx_n, 0);
	CU_ASSERT(!dma_pinned(page));
	fake_set_cpu(3); // a CPU no pair's interrupt goes to: pair 0, pair 1 drained
	send_one(d, page, 7);
	CU_ASSERT_EQUAL(d->tx_cur, 0);
	CU_ASSERT_EQUAL(d->tx_moves, 2);
	CU_ASSERT_EQUAL(d->tx_busy[0], 1);
	CU_ASSERT_EQUAL(vnet_tx_drop(d), 1); // forgotten unsent: unpinned, not busy
	CU_ASSERT_EQUAL(d->tx_busy[0], 0);
	CU_ASSERT(!dma_pinned(page));
	fake_set_cpu(0);
	pmem_free(page);
	dev_free(d);
}

// Before its first send a NIC's frames come in on the queue the tap's
// hash chose; the first sends stay there until the queue is drained and
// half refilled (else the device could be holding frames back in the
// host, which would come in after the first ones on the new queue).
static void test_flow_from_hash(void)
{
	struct vnet_dev *d = dev_new(2);
	struct rxfrag f[8];
	paddr_t page = pmem_alloc();
	nreported = 0;
	for (int i = 0; i < 5; i++)
		dev_rx(d, 1, 64, (uint8_t)i);
	CU_ASSERT_EQUAL_FATAL(vnet_rx_poll(&d->nd, f, 8), 5);
	CU_ASSERT_EQUAL(d->rx_seen, 1);
	CU_ASSERT_EQUAL(d->rx_first, 1);
	fake_set_cpu(0);
	send_one(d, page, 1); // queue 1 has 3 of 8 buffers posted: stay
	CU_ASSERT_EQUAL(d->tx_cur, 1);
	CU_ASSERT_EQUAL(d->txq[1].avail->idx, 1);
	give_back(d, f, 5); // to queue 1, the emptiest
	CU_ASSERT_EQUAL(vnet_rxq_posted(&d->rx[1]), 8);
	send_one(d, page, 2); // packet 1 not sent yet: stay
	CU_ASSERT_EQUAL(d->tx_cur, 1);
	dev_tx_done(d, 1, 0);
	dev_tx_done(d, 1, 1);
	d->rx[1].q.used->flags = 0; // QEMU ran short of buffers on queue 1 and waits for a kick
	send_one(d, page, 3); // it may hold frames back in the host: stay
	CU_ASSERT_EQUAL(d->tx_cur, 1);
	dev_tx_done(d, 1, 2);
	d->rx[1].q.used->flags = VIRTQ_USED_F_NO_NOTIFY; // it took frames again
	send_one(d, page, 3); // now it moves
	CU_ASSERT_EQUAL(d->tx_cur, 0);
	CU_ASSERT_EQUAL(d->tx_moves, 1);
	dev_tx_done(d, 0, 0);
	CU_ASSERT_EQUAL(vnet_tx_reclaim(&d->nd, done, NULL), 4);
	CU_ASSERT_EQUAL(nreported, 4);
	pmem_free(page);
	dev_free(d);
}

// After a move the new queue's frames wait until the old queues have
// been quiet for VNET_MOVE_HOLD_US: one the peer sent just before the move
// may still be on its way through the old queue.
static void test_move_hold(void)
{
	struct vnet_dev *d = dev_new(2);
	struct rxfrag f[8];
	paddr_t page = pmem_alloc();
	fake_set_cpu(0);
	send_one(d, page, 1); // first send: pair 0
	dev_tx_done(d, 0, 0);
	fake_set_cpu(1);
	send_one(d, page, 2); // everything idle: moves to pair 1, holds queue 1
	CU_ASSERT_EQUAL(d->tx_cur, 1);
	CU_ASSERT(d->hold_until != 0);
	dev_rx(d, 1, 64, 0xb1); // after the move
	CU_ASSERT_EQUAL(vnet_rx_poll(&d->nd, f, 8), 0);
	dev_rx(d, 0, 64, 0xa1); // sent before it, late
	CU_ASSERT_EQUAL_FATAL(vnet_rx_poll(&d->nd, f, 8), 1);
	CU_ASSERT_EQUAL(first_byte(&f[0]), 0xa1);
	fake.tsc += (VNET_MOVE_HOLD_US - 1) * FAKE_TSC_PER_US; // not yet: the late frame restarted it
	CU_ASSERT_EQUAL(vnet_rx_poll(&d->nd, &f[1], 7), 0);
	fake.tsc += 2 * FAKE_TSC_PER_US;
	CU_ASSERT_EQUAL_FATAL(vnet_rx_poll(&d->nd, &f[1], 7), 1);
	CU_ASSERT_EQUAL(first_byte(&f[1]), 0xb1);
	CU_ASSERT_EQUAL(d->hold_until, 0);
	give_back(d, f, 2);
	vnet_tx_reclaim(&d->nd, NULL, NULL);
	fake_set_cpu(0);
	pmem_free(page);
	dev_free(d);
}

// However often the old queue still brings a frame, the new one waits no
// longer than VNET_MOVE_HOLD_MAX_US after the move.
#define STEP (VNET_MOVE_HOLD_US * 3 / 4)
static void test_move_hold_bounded(void)
{
	struct vnet_dev *d = dev_new(2);
	struct rxfrag f[8];
	paddr_t page = pmem_alloc();
	fake_set_cpu(1);
	send_one(d, page, 1); // first send, pair 1: holds queue 1
	uint64_t t0 = timer_now_us();
	dev_rx(d, 1, 64, 0xb1);
	uint64_t got = 0; // when queue 1's frame came
	for (int i = 0; i < 40 && !got; i++) {
		dev_rx(d, 0, 64, (uint8_t)i); // a frame on queue 0 every 3/4 of the hold
		int n = vnet_rx_poll(&d->nd, f, 8);
		for (int k = 0; k < n; k++)
			if (first_byte(&f[k]) == 0xb1)
				got = timer_now_us();
		give_back(d, f, n);
		fake.tsc += STEP * FAKE_TSC_PER_US;
	}
	CU_ASSERT_FATAL(got != 0);
	CU_ASSERT(got - t0 >= VNET_MOVE_HOLD_MAX_US);
	CU_ASSERT(got - t0 < VNET_MOVE_HOLD_MAX_US + STEP);
	dev_tx_done(d, 1, 0);
	vnet_tx_reclaim(&d->nd, NULL, NULL);
	fake_set_cpu(0);
	pmem_free(page);
	dev_free(d);
}

// One pair: nothing moves, whichever CPU sends.
static void test_one_pair(void)
{
	struct vnet_dev *d = dev_new(1);
	paddr_t page = pmem_alloc();
	nreported = 0;
	fake_set_cpu(1);
	send_one(d, page, 1);
	CU_ASSERT_EQUAL(d->tx_cur, 0);
	dev_tx_done(d, 0, 0);
	CU_ASSERT_EQUAL(vnet_tx_reclaim(&d->nd, done, NULL), 1);
	fake_set_cpu(0);
	pmem_free(page);
	dev_free(d);
}

// A packet of three buffers (the virtio-net header, a wire header, the
// payload) takes one entry of the transmit ring when the queue has
// indirect tables: a whole ring of packets goes in one call, where the
// ring alone takes QSIZE / 3 of them. The device reads each chain from
// the head's table as QEMU does (2.6.5.3.2): INDIRECT alone on the ring's
// descriptor, the table's length, the buffers chained by index within it.
static void test_tx_indirect(void)
{
	struct vnet_dev *d = dev_new(1);
	paddr_t hdr = pmem_alloc(), pay = pmem_alloc();
	CU_ASSERT_FATAL(hdr != 0 && pay != 0);
	struct netpkt p[QSIZE];
	for (int i = 0; i < QSIZE; i++)
		p[i] = (struct netpkt){ .seg = { { hdr + 64 * (paddr_t)i, 30 }, { pay, 100 + (uint32_t)i } },
					.nseg = 2, .cookie = (uint64_t)i + 1 };
	CU_ASSERT_EQUAL(vnet_tx_batch(&d->nd, p, QSIZE), QSIZE / 3); // the ring alone
	nreported = 0;
	for (uint16_t k = 0; k < QSIZE / 3; k++)
		dev_tx_done(d, 0, k);
	CU_ASSERT_EQUAL(vnet_tx_reclaim(&d->nd, done, NULL), QSIZE / 3);
	CU_ASSERT_EQUAL(d->txq[0].nfree, QSIZE);
	CU_ASSERT_FATAL(virtq_alloc_indirect(&d->txq[0]) == 0);
	CU_ASSERT_EQUAL(virtq_frames(&d->txq[0]), d->txq[0].frames + 1); // 16 tables of 128 bytes
	uint16_t base = d->txq[0].avail->idx;
	CU_ASSERT_EQUAL(vnet_tx_batch(&d->nd, p, QSIZE), QSIZE);
	CU_ASSERT_EQUAL(d->txq[0].nfree, 0);
	CU_ASSERT_EQUAL((uint16_t)(d->txq[0].avail->idx - base), QSIZE);
	for (int i = 0; i < QSIZE; i++) {
		struct virtq *vq = &d->txq[0];
		uint16_t head = vq->avail->ring[(uint16_t)(base + i) % vq->size];
		volatile struct virtq_desc *h = &vq->desc[head];
		CU_ASSERT_EQUAL(h->flags, VIRTQ_DESC_F_INDIRECT);
		CU_ASSERT_EQUAL(h->len, 3 * 16);
		volatile struct virtq_desc *t = arch_p2v(h->addr);
		CU_ASSERT_EQUAL(t[0].addr, d->hdr_pa + VNET_SLOT * (paddr_t)d->rx_bufs);
		CU_ASSERT_EQUAL(t[0].len, VNET_HDR_LEN);
		CU_ASSERT_EQUAL(t[0].flags, VIRTQ_DESC_F_NEXT);
		CU_ASSERT_EQUAL(t[t[0].next].addr, hdr + 64 * (paddr_t)i);
		CU_ASSERT_EQUAL(t[t[0].next].len, 30);
		CU_ASSERT_EQUAL(t[t[0].next].flags, VIRTQ_DESC_F_NEXT);
		volatile struct virtq_desc *last = &t[t[t[0].next].next];
		CU_ASSERT_EQUAL(last->addr, pay);
		CU_ASSERT_EQUAL(last->len, 100u + (uint32_t)i);
		CU_ASSERT_EQUAL(last->flags, 0);
	}
	CU_ASSERT(dma_pinned(pay));
	for (uint16_t k = QSIZE; k-- > 0;) // the device finishes them in reverse
		dev_tx_done(d, 0, (uint16_t)(base + k));
	nreported = 0;
	CU_ASSERT_EQUAL(vnet_tx_reclaim(&d->nd, done, NULL), QSIZE);
	CU_ASSERT_EQUAL_FATAL(nreported, QSIZE);
	for (int i = 0; i < QSIZE; i++)
		CU_ASSERT_EQUAL(reported[i], (uint64_t)i + 1);
	CU_ASSERT_EQUAL(d->txq[0].nfree, QSIZE);
	CU_ASSERT(!dma_pinned(pay));
	CU_ASSERT(!dma_pinned(hdr));
	pmem_free(hdr);
	pmem_free(pay);
	dev_free(d);
}

int register_vnetmq(void)
{
	static const struct test_case tests[] = {
		{ "poll_order", test_poll_order },
		{ "frame_whole", test_frame_whole },
		{ "refill_spread", test_refill_spread },
		{ "tx_follows_cpu", test_tx_follows_cpu },
		{ "flow_from_hash", test_flow_from_hash },
		{ "move_hold", test_move_hold },
		{ "move_hold_bounded", test_move_hold_bounded },
		{ "one_pair", test_one_pair },
		{ "tx_indirect", test_tx_indirect },
	};
	return add_suite("vnetmq", machine_setup, machine_teardown, tests, sizeof(tests) / sizeof(tests[0]));
}
