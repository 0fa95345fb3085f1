// virtio-net send and receive: the zero-copy gather send (one kick per
// batch), mergeable receive buffers handed out page by page, and refills.
#include "virtio_net_dev.h"
#include "dma.h"
#include "../netpkt.h"
#include "kprintf.h"
#include "arch/x86_64/smp.h"
#include "arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

// ---- receive ----

static uint8_t *rx_slot(struct vnet_dev *d, struct vnet_rx *r, uint16_t k)
{
	return d->hdr + VNET_SLOT * (r->base + k);
}

// Buffer k is the chain 2k -> 2k+1: its 12-byte header slot, then its page
// (5.1.6.3: a buffer may span descriptors). Built once; posting a buffer
// only sets the page's address. The queue's free list is not used.
static void rx_chains_init(struct vnet_dev *d, struct vnet_rx *r)
{
	for (int k = 0; k < r->n; k++) {
		volatile struct virtq_desc *s = &r->q.desc[2 * k], *p = s + 1;
		s->addr = d->hdr_pa + VNET_SLOT * (paddr_t)(r->base + k);
		s->len = VNET_HDR_LEN;
		s->flags = VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT;
		s->next = (uint16_t)(2 * k + 1);
		p->addr = 0;
		p->len = VNET_RX_DATA;
		p->flags = VIRTQ_DESC_F_WRITE;
		d->rx_free[r->base + k] = (uint16_t)(r->n - 1 - k); // popped in order 0, 1, ...
		d->rx_page[r->base + k] = 0;
	}
	r->nfree = r->n;
	r->q.nfree = 0;
}

// Puts a pinned page in an empty buffer and makes it available (not yet
// visible to the device: vnet_rx_notify).
static void rx_post(struct vnet_dev *d, struct vnet_rx *r, paddr_t page)
{
	uint16_t k = d->rx_free[r->base + --r->nfree];
	d->rx_page[r->base + k] = page;
	r->q.desc[2 * k + 1].addr = page;
	virtq_push(&r->q, (uint16_t)(2 * k));
}

void vnet_rx_notify(struct vnet_dev *d, struct vnet_rx *r)
{
	virtq_publish(&r->q);
	if (virtq_kick(&r->q))
		d->st.rx_refills++;
}

int vnet_rx_init(struct vnet_dev *d)
{
	for (int i = 0; i < d->pairs; i++) {
		struct vnet_rx *r = &d->rx[i];
		rx_chains_init(d, r);
		for (int k = 0; k < r->n; k++) {
			paddr_t pa = dma_alloc_buf(); // zeroed: a page's tail may reach user space
			if (!pa)
				return -E_NOMEM;
			rx_post(d, r, pa);
		}
		virtq_publish(&r->q);
	}
	return 0;
}

uint64_t vnet_rx_free_all(struct vnet_dev *d)
{
	uint64_t n = 0;
	for (int g = 0; g < d->rx_bufs; g++) {
		if (!d->rx_page[g])
			continue;
		dma_free_buf(d->rx_page[g]);
		d->rx_page[g] = 0;
		n++;
	}
	for (int i = 0; i < d->pairs; i++)
		d->rx[i].nfree = d->rx[i].n;
	return n;
}

// The used entry `ahead` places on: buffer number and bytes written.
// false when the device names a buffer it does not hold, or writes more
// than it was given: the device is broken and receive stops.
static bool rx_used(struct vnet_dev *d, struct vnet_rx *r, uint16_t ahead, uint16_t *k, uint32_t *len)
{
	struct virtq_used_elem e = virtq_used_peek(&r->q, ahead);
	*k = (uint16_t)(e.id / 2);
	*len = e.len;
	if (!(e.id & 1) && e.id / 2 < (uint32_t)r->n && d->rx_page[r->base + e.id / 2] &&
	    e.len <= VNET_HDR_LEN + VNET_RX_DATA)
		return true;
	if (!d->broken)
		kprintf("virtio-net %d: device used buffer %u (%u bytes) of queue %d it does not hold; "
			"receive stopped\n", d->nd.index, e.id, e.len, (int)(r - d->rx));
	d->broken = true;
	return false;
}

// A frame starts at the next used entry; num_buffers in its header slot
// says how many buffers it spans (5.1.6.4). The device makes them used
// together; they are handed out only once all are visible.
static bool rx_frame_start(struct vnet_dev *d, struct vnet_rx *r)
{
	uint16_t avail = virtq_used_count(&r->q), k;
	uint32_t len;
	if (avail == 0 || !rx_used(d, r, 0, &k, &len))
		return false;
	const uint8_t *h = rx_slot(d, r, k);
	uint16_t nb = (uint16_t)(h[VNET_HDR_NUM_BUFFERS] | h[VNET_HDR_NUM_BUFFERS + 1] << 8);
	r->err = nb == 0 || nb > vnet_rxq_posted(r) || len < VNET_HDR_LEN;
	if (r->err)
		nb = 1;
	if (avail < nb)
		return false;
	r->left = nb;
	r->first = true;
	return true;
}

// Consumes the frame's next used buffer; its page becomes the caller's
// unless it held nothing, then it is posted again (returns false).
static bool rx_release(struct vnet_dev *d, struct vnet_rx *r, uint16_t k, uint32_t page_len)
{
	paddr_t page = d->rx_page[r->base + k];
	virtq_used_consume(&r->q, 1);
	r->left--;
	r->first = false;
	d->rx_page[r->base + k] = 0;
	d->rx_free[r->base + r->nfree++] = k;
	if (page_len > 0) {
		dma_unpin(page, PAGE_SIZE);
		return true;
	}
	rx_post(d, r, page);
	d->rx_recycled++;
	return false;
}

// The next buffer of the frame as a fragment. The device filled its page
// from byte 0 (its slot took the header, or in a later buffer the frame's
// 12 bytes before the page: they end the previous page). The buffer after
// it, already used, completes this page from its slot. Returns 1 with *f
// filled, 0 for a page that held nothing (posted again), -1 broken.
static int rx_take(struct vnet_dev *d, struct vnet_rx *r, struct rxfrag *f)
{
	uint16_t k, k2;
	uint32_t len, len2;
	if (!rx_used(d, r, 0, &k, &len))
		return -1;
	uint32_t slot = r->first ? VNET_HDR_LEN : (len < VNET_HDR_LEN ? len : VNET_HDR_LEN);
	uint32_t m = len > slot ? len - slot : 0;
	bool eop = r->left == 1;
	paddr_t page = d->rx_page[r->base + k];
	if (!eop) {
		if (!rx_used(d, r, 1, &k2, &len2))
			return -1;
		uint32_t tail = len2 < VNET_HDR_LEN ? len2 : VNET_HDR_LEN;
		r->err |= m < VNET_RX_DATA; // all but the last buffer must be full (5.1.6.4)
		memcpy((uint8_t *)arch_p2v(page) + m, rx_slot(d, r, k2), tail);
		d->rx_tail_copies++;
		m += tail;
		eop = r->left == 2 && len2 <= VNET_HDR_LEN; // the last buffer holds only slot bytes
	}
	*f = (struct rxfrag){ .pa = page, .len = (uint16_t)m, .eop = eop, .error = eop && r->err };
	return rx_release(d, r, k, m) ? 1 : 0;
}

// Counters of a handed-out buffer: bytes; frames and errors at the eop.
static void rx_account(struct vnet_dev *d, int q, const struct rxfrag *f)
{
	d->st.rx_bytes += f->len;
	if (!f->eop)
		return;
	d->st.rx_frames++;
	d->st.rxq_frames[q]++;
	d->rx_seen = q;
	d->rx_first = d->rx_first < 0 ? q : d->rx_first;
	d->st.rx_errors += f->error;
}

// Up to max buffers of one queue; stops at a frame's end only when out
// of room (the frame's rest comes first next time: rx_poll).
static int rxq_poll(struct vnet_dev *d, struct vnet_rx *r, struct rxfrag *out, int max)
{
	int n = 0, ret = 0;
	bool reposted = false;
	while (n < max && !d->broken) {
		if (r->left == 0 && !rx_frame_start(d, r))
			break;
		bool first = r->first;
		ret = rx_take(d, r, &out[n]);
		if (ret < 0)
			break;
		if (ret == 0 && first) // nothing in the frame at all
			d->st.rx_errors++;
		if (ret > 0)
			rx_account(d, (int)(r - d->rx), &out[n++]);
		reposted |= ret == 0;
	}
	if (reposted)
		vnet_rx_notify(d, r);
	return n;
}

// Queue by queue, a frame cut short by max first (buffers of two queues
// never interleave within a frame), then the queues other than the
// current transmit queue's pair, that pair's last. The host's tap sends
// every frame of the wire format to the queue this NIC last sent from
// (docs/design.md, "Multiqueue NICs"): frames on another queue came
// before it moved there, so they go first. For VNET_MOVE_HOLD_US after a
// move, and as long as frames keep coming in on the other queues (up to
// VNET_MOVE_HOLD_MAX_US), the current queue is not taken at all: a frame
// the peer sent just before the move can reach the host's old tap queue a
// moment before the first one after it reaches the new one, and QEMU's
// main loop, busy or descheduled on a loaded host, may hand the new one
// over first. Before the first send (tx_cur -1), in index order.
int vnet_rx_poll(struct netdev *nd, struct rxfrag *out, int max)
{
	struct vnet_dev *d = vnet(nd);
	int n = 0, cur = d->tx_cur;
	for (int i = 0; i < d->pairs; i++)
		if (d->rx[i].left)
			n += rxq_poll(d, &d->rx[i], out + n, max - n);
	int old = n;
	for (int i = 0; i < d->pairs && n < max; i++)
		if (i != cur)
			n += rxq_poll(d, &d->rx[i], out + n, max - n);
	if (d->hold_until) {
		uint64_t now = timer_now_us();
		if (n > old) // the old queues still bring frames: wait on, within bounds
			d->hold_until = now + VNET_MOVE_HOLD_US < d->hold_last ? now + VNET_MOVE_HOLD_US
										   : d->hold_last;
		if (now < d->hold_until)
			return n;
		d->hold_until = 0;
	}
	if (n < max && cur >= 0)
		n += rxq_poll(d, &d->rx[cur], out + n, max - n);
	return n;
}

int vnet_rx_free_slots(struct netdev *nd)
{
	struct vnet_dev *d = vnet(nd);
	int n = 0;
	for (int i = 0; i < d->pairs; i++)
		n += d->rx[i].nfree;
	return n;
}

// The queue with the most empty buffers.
static struct vnet_rx *rx_emptiest(struct vnet_dev *d)
{
	struct vnet_rx *best = &d->rx[0];
	for (int i = 1; i < d->pairs; i++)
		if (d->rx[i].nfree > best->nfree)
			best = &d->rx[i];
	return best;
}

// Pages go to the emptiest queue one by one; one notification per queue
// given any.
int vnet_rx_refill(struct netdev *nd, const paddr_t *pages, int n)
{
	struct vnet_dev *d = vnet(nd);
	if (n < 0 || (n > 0 && !pages))
		return d->st.rx_refill_rejected++, -E_INVAL;
	int free = vnet_rx_free_slots(nd);
	int k = n < free ? n : free;
	for (int i = 0; i < k; i++) {
		long r = dma_check_buf(pages[i]); // a page listed twice is pinned the second time
		if (r < 0) {
			while (i-- > 0)
				dma_unpin(pages[i], PAGE_SIZE);
			return d->st.rx_refill_rejected++, (int)r;
		}
		dma_pin(pages[i], PAGE_SIZE);
	}
	uint32_t given = 0;
	for (int i = 0; i < k; i++) {
		struct vnet_rx *r = rx_emptiest(d);
		rx_post(d, r, pages[i]);
		given |= 1u << (r - d->rx);
	}
	for (int i = 0; i < d->pairs; i++)
		if (given & (1u << i))
			vnet_rx_notify(d, &d->rx[i]);
	return k;
}

// ---- send ----

// 5.1.6.2: the header (all zero: no checksum or segmentation offload) in
// a descriptor of its own, then the segments as they are (VIRTIO_F_VERSION_1
// lets the device take any framing, 2.6.4). Segments stay pinned until
// the chain is released.
static void tx_queue(struct vnet_dev *d, int q, const struct netpkt *p)
{
	struct virtq_buf b[1 + NETDEV_MAX_SEGS];
	uint32_t bytes = 0;
	b[0] = (struct virtq_buf){ d->hdr_pa + VNET_SLOT * (paddr_t)d->rx_bufs, VNET_HDR_LEN, false };
	for (int i = 0; i < p->nseg; i++) {
		b[1 + i] = (struct virtq_buf){ p->seg[i].pa, p->seg[i].len, false };
		dma_pin(p->seg[i].pa, p->seg[i].len);
		bytes += p->seg[i].len;
	}
	uint16_t head = virtq_add(&d->txq[q], b, 1 + p->nseg);
	d->txp[q][head] = (struct vnet_txp){ .cookie = p->cookie, .bytes = bytes, .busy = true };
	d->tx_fifo[(d->tx_head + d->tx_n++) % (VNET_PAIRS_MAX * VNET_TXQ_MAX)] = VNET_TXF(q, head);
	d->tx_busy[q]++;
}

static void tx_collect(struct vnet_dev *d, int q);

// A receive queue with nothing handed out or waiting.
static bool rxq_idle(struct vnet_rx *r) { return r->left == 0 && virtq_used_count(&r->q) == 0; }

// Whether the NIC's frames may move from queue `from` to `to`: the device
// has sent every chain of `from` (Linux's ooo_okay: no later packet can
// overtake one), both receive queues are idle, and `from` has half its
// buffers posted while the device does not ask to be told of new ones
// (VIRTQ_USED_F_NO_NOTIFY: QEMU clears it when a frame finds too few
// buffers and stops reading that queue's tap until it has them again).
// A frame held back there could come in after the first ones on `to`.
static bool flow_may_move(struct vnet_dev *d, int from, int to)
{
	if (d->tx_cur >= 0)
		tx_collect(d, from);
	struct vnet_rx *f = &d->rx[from];
	return d->tx_busy[from] == 0 && rxq_idle(&d->rx[to]) && rxq_idle(f) &&
	       vnet_rxq_posted(f) >= f->n / 2 && (f->q.used->flags & VIRTQ_USED_F_NO_NOTIFY);
}

// The new queue waits (vnet_rx_poll) VNET_MOVE_HOLD_US from now, longer
// while the old ones bring frames, but never past VNET_MOVE_HOLD_MAX_US.
static void hold(struct vnet_dev *d)
{
	uint64_t now = timer_now_us();
	d->hold_until = now + VNET_MOVE_HOLD_US;
	d->hold_last = now + VNET_MOVE_HOLD_MAX_US;
}

// Sends go to the queue pair whose receive interrupt this CPU takes
// (pair 0 when none is), so that the host's tap, which remembers the
// queue a NIC's frames last came from (docs/design.md, "Multiqueue
// NICs"), steers what comes back to that CPU. Sending on another queue
// than the one the frames come in on now moves them: until that is safe
// (flow_may_move) sends stay on the current queue, before the first send
// the one frames last came in on (the tap's own choice, by hash).
static int tx_pick(struct vnet_dev *d)
{
	if (d->pairs == 1)
		return d->tx_cur = 0;
	uint32_t me = smp_apic_id(arch_cpu_id());
	int want = 0, cur = d->tx_cur >= 0 ? d->tx_cur : d->rx_seen;
	for (int i = 0; i < d->pairs; i++)
		if (d->rx[i].apic_id == me) {
			want = i;
			break;
		}
	if (cur < 0) { // nothing sent or received yet: frames may be on their way to the hash's queue
		cur = want;
		hold(d);
	} else if (want != cur && flow_may_move(d, cur, want)) {
		cur = want;
		d->tx_moves++;
		hold(d);
	}
	return d->tx_cur = cur;
}

int vnet_tx_batch(struct netdev *nd, const struct netpkt *pkts, int n)
{
	struct vnet_dev *d = vnet(nd);
	int r = netpkt_check_batch(pkts, n, VNET_MIN_FRAME, VNET_MAX_FRAME);
	if (r < 0)
		return d->st.tx_rejected++, r;
	int tq = tx_pick(d), q = 0;
	struct virtq *vq = &d->txq[tq];
	while (q < n && virtq_need(vq, 1 + pkts[q].nseg) <= vq->nfree)
		tx_queue(d, tq, &pkts[q++]);
	if (q < n)
		d->st.tx_ring_full++;
	if (q > 0) {
		virtq_publish(vq);
		if (virtq_kick(vq))
			d->st.doorbells++;
	}
	return q;
}

// Marks the chains the device has used, in whatever order it used them.
static void tx_collect(struct vnet_dev *d, int q)
{
	struct virtq *vq = &d->txq[q];
	uint16_t n = virtq_used_count(vq);
	for (uint16_t i = 0; i < n; i++) {
		struct virtq_used_elem e = virtq_used_peek(vq, i);
		if (e.id < vq->size && d->txp[q][e.id].busy && !d->txp[q][e.id].done) {
			d->txp[q][e.id].done = true; // anything else: not ours, ignored
			d->tx_busy[q]--;
		}
	}
	virtq_used_consume(vq, n);
}

// Unpins a chain's segments (not the header) and frees its descriptors.
static void tx_release(struct vnet_dev *d, uint16_t f)
{
	int q = VNET_TXF_Q(f);
	uint16_t head = VNET_TXF_HEAD(f);
	struct virtq_buf b[1 + NETDEV_MAX_SEGS];
	int n = virtq_chain(&d->txq[q], head, b, 1 + NETDEV_MAX_SEGS);
	for (int i = 1; i < n; i++)
		dma_unpin(b[i].pa, b[i].len);
	virtq_free_chain(&d->txq[q], head);
	if (!d->txp[q][head].done)
		d->tx_busy[q]--;
	d->txp[q][head] = (struct vnet_txp){ 0 };
}

static uint16_t tx_pop(struct vnet_dev *d)
{
	uint16_t f = d->tx_fifo[d->tx_head];
	d->tx_head = (uint16_t)((d->tx_head + 1) % (VNET_PAIRS_MAX * VNET_TXQ_MAX));
	d->tx_n--;
	return f;
}

static struct vnet_txp *txp_of(struct vnet_dev *d, uint16_t f)
{
	return &d->txp[VNET_TXF_Q(f)][VNET_TXF_HEAD(f)];
}

// Packets are reported in the order queued, over every queue, whatever
// order the device used them in.
int vnet_tx_reclaim(struct netdev *nd, void (*done)(uint64_t cookie, void *arg), void *arg)
{
	struct vnet_dev *d = vnet(nd);
	int n = 0;
	for (int q = 0; q < d->pairs; q++)
		tx_collect(d, q);
	while (d->tx_n && txp_of(d, d->tx_fifo[d->tx_head])->done) {
		uint16_t f = tx_pop(d);
		struct vnet_txp p = *txp_of(d, f);
		tx_release(d, f);
		d->st.tx_frames++;
		d->st.tx_bytes += p.bytes;
		n++;
		if (done)
			done(p.cookie, arg);
	}
	return n;
}

int vnet_tx_drop(struct vnet_dev *d)
{
	int n = d->tx_n;
	while (d->tx_n)
		tx_release(d, tx_pop(d));
	return n;
}
