// virtio-net send and receive: the zero-copy gather send (one kick per
// batch), mergeable receive buffers handed out page by page, and refills.
#include "virtio_net_dev.h"
#include "dma.h"
#include "../netpkt.h"
#include "kprintf.h"
#include <err.h>
#include <string.h>

// ---- receive ----

static uint8_t *rx_slot(struct vnet_dev *d, uint16_t k) { return d->hdr + VNET_SLOT * k; }

// Buffer k is the chain 2k -> 2k+1: its 12-byte header slot, then its page
// (5.1.6.3: a buffer may span descriptors). Built once; posting a buffer
// only sets the page's address. The queue's free list is not used.
static void rx_chains_init(struct vnet_dev *d)
{
	for (int k = 0; k < d->rx_bufs; k++) {
		volatile struct virtq_desc *s = &d->rxq.desc[2 * k], *p = s + 1;
		s->addr = d->hdr_pa + VNET_SLOT * (paddr_t)k;
		s->len = VNET_HDR_LEN;
		s->flags = VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT;
		s->next = (uint16_t)(2 * k + 1);
		p->addr = 0;
		p->len = VNET_RX_DATA;
		p->flags = VIRTQ_DESC_F_WRITE;
		d->rx_free[k] = (uint16_t)(d->rx_bufs - 1 - k); // popped in order 0, 1, ...
		d->rx_page[k] = 0;
	}
	d->rx_nfree = d->rx_bufs;
	d->rxq.nfree = 0;
}

// Puts a pinned page in an empty buffer and makes it available (not yet
// visible to the device: vnet_rx_notify).
static void rx_post(struct vnet_dev *d, paddr_t page)
{
	uint16_t k = d->rx_free[--d->rx_nfree];
	d->rx_page[k] = page;
	d->rxq.desc[2 * k + 1].addr = page;
	virtq_push(&d->rxq, (uint16_t)(2 * k));
}

void vnet_rx_notify(struct vnet_dev *d)
{
	virtq_publish(&d->rxq);
	if (virtq_kick(&d->rxq))
		d->st.rx_refills++;
}

int vnet_rx_init(struct vnet_dev *d)
{
	rx_chains_init(d);
	for (int i = 0; i < d->rx_bufs; i++) {
		paddr_t pa = dma_alloc_buf(); // zeroed: a page's tail may reach user space
		if (!pa)
			return -E_NOMEM;
		rx_post(d, pa);
	}
	virtq_publish(&d->rxq);
	return 0;
}

uint64_t vnet_rx_free_all(struct vnet_dev *d)
{
	uint64_t n = 0;
	for (int k = 0; k < d->rx_bufs; k++) {
		if (!d->rx_page[k])
			continue;
		dma_free_buf(d->rx_page[k]);
		d->rx_page[k] = 0;
		n++;
	}
	d->rx_nfree = d->rx_bufs;
	return n;
}

// The used entry `ahead` places on: buffer number and bytes written.
// false when the device names a buffer it does not hold, or writes more
// than it was given: the device is broken and receive stops.
static bool rx_used(struct vnet_dev *d, uint16_t ahead, uint16_t *k, uint32_t *len)
{
	struct virtq_used_elem e = virtq_used_peek(&d->rxq, ahead);
	*k = (uint16_t)(e.id / 2);
	*len = e.len;
	if (!(e.id & 1) && e.id / 2 < (uint32_t)d->rx_bufs && d->rx_page[e.id / 2] &&
	    e.len <= VNET_HDR_LEN + VNET_RX_DATA)
		return true;
	if (!d->broken)
		kprintf("virtio-net %d: device used buffer %u (%u bytes) it does not hold; "
			"receive stopped\n", d->nd.index, e.id, e.len);
	d->broken = true;
	return false;
}

// A frame starts at the next used entry; num_buffers in its header slot
// says how many buffers it spans (5.1.6.4). The device makes them used
// together; they are handed out only once all are visible.
static bool rx_frame_start(struct vnet_dev *d)
{
	uint16_t avail = virtq_used_count(&d->rxq), k;
	uint32_t len;
	if (avail == 0 || !rx_used(d, 0, &k, &len))
		return false;
	const uint8_t *h = rx_slot(d, k);
	uint16_t nb = (uint16_t)(h[VNET_HDR_NUM_BUFFERS] | h[VNET_HDR_NUM_BUFFERS + 1] << 8);
	d->rx_err = nb == 0 || nb > vnet_rx_posted(d) || len < VNET_HDR_LEN;
	if (d->rx_err)
		nb = 1;
	if (avail < nb)
		return false;
	d->rx_left = nb;
	d->rx_first = true;
	return true;
}

// Consumes the frame's next used buffer; its page becomes the caller's
// unless it held nothing, then it is posted again (returns false).
static bool rx_release(struct vnet_dev *d, uint16_t k, uint32_t page_len)
{
	paddr_t page = d->rx_page[k];
	virtq_used_consume(&d->rxq, 1);
	d->rx_left--;
	d->rx_first = false;
	d->rx_page[k] = 0;
	d->rx_free[d->rx_nfree++] = k;
	if (page_len > 0) {
		dma_unpin(page, PAGE_SIZE);
		return true;
	}
	rx_post(d, page);
	d->rx_recycled++;
	return false;
}

// The next buffer of the frame as a fragment. The device filled its page
// from byte 0 (its slot took the header, or in a later buffer the frame's
// 12 bytes before the page: they end the previous page). The buffer after
// it, already used, completes this page from its slot. Returns 1 with *f
// filled, 0 for a page that held nothing (posted again), -1 broken.
static int rx_take(struct vnet_dev *d, struct rxfrag *f)
{
	uint16_t k, k2;
	uint32_t len, len2;
	if (!rx_used(d, 0, &k, &len))
		return -1;
	uint32_t slot = d->rx_first ? VNET_HDR_LEN : (len < VNET_HDR_LEN ? len : VNET_HDR_LEN);
	uint32_t m = len > slot ? len - slot : 0;
	bool eop = d->rx_left == 1;
	if (!eop) {
		if (!rx_used(d, 1, &k2, &len2))
			return -1;
		uint32_t tail = len2 < VNET_HDR_LEN ? len2 : VNET_HDR_LEN;
		d->rx_err |= m < VNET_RX_DATA; // all but the last buffer must be full (5.1.6.4)
		memcpy((uint8_t *)arch_p2v(d->rx_page[k]) + m, rx_slot(d, k2), tail);
		d->rx_tail_copies++;
		m += tail;
		eop = d->rx_left == 2 && len2 <= VNET_HDR_LEN; // the last buffer holds only slot bytes
	}
	*f = (struct rxfrag){ .pa = d->rx_page[k], .len = (uint16_t)m, .eop = eop,
			      .error = eop && d->rx_err };
	return rx_release(d, k, m) ? 1 : 0;
}

// Counters of a handed-out buffer: bytes; frames and errors at the eop.
static void rx_account(struct vnet_dev *d, const struct rxfrag *f)
{
	d->st.rx_bytes += f->len;
	if (!f->eop)
		return;
	d->st.rx_frames++;
	d->st.rx_errors += f->error;
}

int vnet_rx_poll(struct netdev *nd, struct rxfrag *out, int max)
{
	struct vnet_dev *d = vnet(nd);
	int n = 0, r = 0;
	bool reposted = false;
	while (n < max && !d->broken) {
		if (d->rx_left == 0 && !rx_frame_start(d))
			break;
		bool first = d->rx_first;
		r = rx_take(d, &out[n]);
		if (r < 0)
			break;
		if (r == 0 && first) // nothing in the frame at all
			d->st.rx_errors++;
		if (r > 0)
			rx_account(d, &out[n++]);
		reposted |= r == 0;
	}
	if (reposted)
		vnet_rx_notify(d);
	return n;
}

int vnet_rx_free_slots(struct netdev *nd) { return vnet(nd)->rx_nfree; }

int vnet_rx_refill(struct netdev *nd, const paddr_t *pages, int n)
{
	struct vnet_dev *d = vnet(nd);
	if (n < 0 || (n > 0 && !pages))
		return d->st.rx_refill_rejected++, -E_INVAL;
	int k = n < d->rx_nfree ? n : d->rx_nfree;
	for (int i = 0; i < k; i++) {
		long r = dma_check_buf(pages[i]); // a page listed twice is pinned the second time
		if (r < 0) {
			while (i-- > 0)
				dma_unpin(pages[i], PAGE_SIZE);
			return d->st.rx_refill_rejected++, (int)r;
		}
		dma_pin(pages[i], PAGE_SIZE);
	}
	for (int i = 0; i < k; i++)
		rx_post(d, pages[i]);
	if (k > 0)
		vnet_rx_notify(d);
	return k;
}

// ---- send ----

// 5.1.6.2: the header (all zero: no checksum or segmentation offload) in
// a descriptor of its own, then the segments as they are (VIRTIO_F_VERSION_1
// lets the device take any framing, 2.6.4). Segments stay pinned until
// the chain is released.
static void tx_queue(struct vnet_dev *d, const struct netpkt *p)
{
	struct virtq_buf b[1 + NETDEV_MAX_SEGS];
	uint32_t bytes = 0;
	b[0] = (struct virtq_buf){ d->hdr_pa + VNET_SLOT * (paddr_t)d->rx_bufs, VNET_HDR_LEN, false };
	for (int i = 0; i < p->nseg; i++) {
		b[1 + i] = (struct virtq_buf){ p->seg[i].pa, p->seg[i].len, false };
		dma_pin(p->seg[i].pa, p->seg[i].len);
		bytes += p->seg[i].len;
	}
	uint16_t head = virtq_add(&d->txq, b, 1 + p->nseg);
	d->txp[head] = (struct vnet_txp){ .cookie = p->cookie, .bytes = bytes, .busy = true };
	d->tx_fifo[(d->tx_head + d->tx_n++) % VNET_TXQ_MAX] = head;
}

int vnet_tx_batch(struct netdev *nd, const struct netpkt *pkts, int n)
{
	struct vnet_dev *d = vnet(nd);
	int r = netpkt_check_batch(pkts, n, VNET_MIN_FRAME, VNET_MAX_FRAME);
	if (r < 0)
		return d->st.tx_rejected++, r;
	int q = 0;
	while (q < n && 1 + pkts[q].nseg <= d->txq.nfree)
		tx_queue(d, &pkts[q++]);
	if (q < n)
		d->st.tx_ring_full++;
	if (q > 0) {
		virtq_publish(&d->txq);
		if (virtq_kick(&d->txq))
			d->st.doorbells++;
	}
	return q;
}

// Marks the chains the device has used, in whatever order it used them.
static void tx_collect(struct vnet_dev *d)
{
	uint16_t n = virtq_used_count(&d->txq);
	for (uint16_t i = 0; i < n; i++) {
		struct virtq_used_elem e = virtq_used_peek(&d->txq, i);
		if (e.id < d->txq.size && d->txp[e.id].busy)
			d->txp[e.id].done = true; // anything else: not ours, ignored
	}
	virtq_used_consume(&d->txq, n);
}

// Unpins a chain's segments (not the header) and frees its descriptors.
static void tx_release(struct vnet_dev *d, uint16_t head)
{
	struct virtq_buf b[1 + NETDEV_MAX_SEGS];
	int n = virtq_chain(&d->txq, head, b, 1 + NETDEV_MAX_SEGS);
	for (int i = 1; i < n; i++)
		dma_unpin(b[i].pa, b[i].len);
	virtq_free_chain(&d->txq, head);
	d->txp[head] = (struct vnet_txp){ 0 };
}

static uint16_t tx_pop(struct vnet_dev *d)
{
	uint16_t head = d->tx_fifo[d->tx_head];
	d->tx_head = (uint16_t)((d->tx_head + 1) % VNET_TXQ_MAX);
	d->tx_n--;
	return head;
}

// Packets are reported in the order queued, whatever order the device
// used them in.
int vnet_tx_reclaim(struct netdev *nd, void (*done)(uint64_t cookie, void *arg), void *arg)
{
	struct vnet_dev *d = vnet(nd);
	int n = 0;
	tx_collect(d);
	while (d->tx_n && d->txp[d->tx_fifo[d->tx_head]].done) {
		uint16_t head = tx_pop(d);
		struct vnet_txp p = d->txp[head];
		tx_release(d, head);
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
