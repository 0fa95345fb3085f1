// e1000 rings: descriptor rings in contiguous DMA frames, receive buffers of
// one frame each, the zero-copy gather send (one doorbell per batch) and
// the receive hand-off and refill.
#include "e1000_dev.h"
#include "dma.h"
#include "../netpkt.h"
#include <err.h>

// Bytes behind one transmit descriptor. The SDM allows 16288 (3.3.3);
// Linux's e1000 never gives one more than 4 KiB (E1000_MAX_DATA_PER_TXD)
// and neither do we: a longer segment takes several descriptors.
#define TXD_MAX 4096u

// Puts a pinned frame in the next empty receive slot (not yet told to the NIC).
static void rx_post(struct e1000_dev *d, paddr_t pa)
{
	uint32_t i = d->rx_fill;
	d->rx[i].addr = pa;
	d->rx[i].status = 0;
	d->rxbuf[i] = pa;
	d->rx_fill = (i + 1) % E1000_RX_DESC;
	d->rx_posted++;
}

static int rx_fill_initial(struct e1000_dev *d)
{
	for (int i = 0; i < E1000_RX_DESC - 1; i++) {
		paddr_t pa = dma_alloc_buf(); // zeroed: a buffer's tail may reach user space
		if (!pa)
			return -E_NOMEM;
		rx_post(d, pa);
	}
	return 0;
}

static uint64_t rx_free_bufs(struct e1000_dev *d)
{
	uint64_t n = 0;
	for (int i = 0; i < E1000_RX_DESC; i++) {
		if (!d->rxbuf[i])
			continue;
		dma_free_buf(d->rxbuf[i]);
		d->rxbuf[i] = 0;
		n++;
	}
	d->rx_posted = 0;
	return n;
}

uint64_t e1000_rings_free(struct e1000_dev *d)
{
	uint64_t n = rx_free_bufs(d);
	if (d->tx_ring_pa)
		dma_free_contig(d->tx_ring_pa, TX_RING_FRAMES), n += TX_RING_FRAMES;
	if (d->rx_ring_pa)
		dma_free_contig(d->rx_ring_pa, RX_RING_FRAMES), n += RX_RING_FRAMES;
	d->tx_ring_pa = d->rx_ring_pa = 0;
	return n;
}

int e1000_rings_alloc(struct e1000_dev *d)
{
	d->tx_ring_pa = dma_alloc_contig(TX_RING_FRAMES);
	d->rx_ring_pa = dma_alloc_contig(RX_RING_FRAMES);
	if (!d->tx_ring_pa || !d->rx_ring_pa) {
		e1000_rings_free(d);
		return -E_NOMEM;
	}
	d->tx = arch_p2v(d->tx_ring_pa);
	d->rx = arch_p2v(d->rx_ring_pa);
	int r = rx_fill_initial(d);
	if (r < 0)
		e1000_rings_free(d);
	return r;
}

// Frees n descriptors from tx_clean, unpinning their frames; returns bytes.
static uint32_t tx_release(struct e1000_dev *d, uint32_t n)
{
	uint32_t bytes = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct txslot *s = &d->txs[d->tx_clean];
		dma_unpin(s->pa, s->len);
		bytes += s->len;
		*s = (struct txslot){ 0 };
		d->tx_clean = (d->tx_clean + 1) % E1000_TX_DESC;
	}
	d->tx_used -= n;
	return bytes;
}

void e1000_tx_drop(struct e1000_dev *d) { tx_release(d, d->tx_used); }

// ---- send ----

// Descriptors a packet takes: a segment longer than TXD_MAX is split.
static int pkt_descs(const struct netpkt *p)
{
	int n = 0;
	for (int i = 0; i < p->nseg; i++)
		n += (int)((p->seg[i].len + TXD_MAX - 1) / TXD_MAX);
	return n;
}

// One descriptor in two stores (SDM 3.3.3: the address; then length, CSO
// 0, command, status 0, CSS 0, special 0); its pages stay pinned until
// tx_release unpins the same range.
_Static_assert(__builtin_offsetof(struct e1000_tx_desc, cmd) == 11 && sizeof(struct e1000_tx_desc) == 16,
	       "legacy descriptor layout");
static void tx_desc(struct e1000_dev *d, paddr_t pa, uint32_t len, bool last)
{
	uint32_t t = d->tx_tail;
	dma_pin(pa, len);
	volatile uint64_t *w = (volatile uint64_t *)&d->tx[t];
	w[0] = pa;
	w[1] = len | (uint64_t)(E1000_TXD_IFCS | (last ? E1000_TXD_EOP | E1000_TXD_RS : 0)) << 24;
	d->txs[t] = (struct txslot){ .pa = pa, .len = len };
	d->tx_tail = (t + 1) % E1000_TX_DESC;
}

// Legacy descriptors (SDM 3.3.3): IFCS on each, EOP and RS on the last,
// so the NIC writes DD back once per packet.
static void tx_queue(struct e1000_dev *d, const struct netpkt *p)
{
	uint32_t first = d->tx_tail, ndesc = 0;
	for (int i = 0; i < p->nseg; i++) {
		paddr_t pa = p->seg[i].pa;
		uint32_t left = p->seg[i].len;
		while (left) {
			uint32_t n = left < TXD_MAX ? left : TXD_MAX;
			left -= n;
			tx_desc(d, pa, n, i == p->nseg - 1 && left == 0);
			pa += n;
			ndesc++;
		}
	}
	d->txs[first].ndesc = (uint8_t)ndesc;
	d->txs[first].cookie = p->cookie;
	d->tx_used += ndesc;
	d->st.tx_descs += ndesc;
}

int e1000_tx_free_descs(struct e1000_dev *d) { return E1000_TX_DESC - 1 - (int)d->tx_used; }

int e1000_tx_batch(struct e1000_dev *d, const struct netpkt *pkts, int n)
{
	int r = netpkt_check_batch(pkts, n, E1000_MIN_FRAME, E1000_MAX_FRAME);
	if (r < 0)
		return d->st.tx_rejected++, r;
	int q = 0;
	while (q < n && pkt_descs(&pkts[q]) <= e1000_tx_free_descs(d))
		tx_queue(d, &pkts[q++]);
	if (q < n)
		d->st.tx_ring_full++;
	if (q > 0) {
		arch_wmb(); // descriptors in memory before the NIC reads them
		e1000_wr(d, E1000_TDT, d->tx_tail);
		d->st.doorbells++;
	}
	return q;
}

int e1000_tx_reclaim(struct e1000_dev *d, void (*done)(uint64_t cookie, void *arg), void *arg)
{
	int n = 0;
	while (d->tx_used) {
		struct txslot *s = &d->txs[d->tx_clean];
		uint32_t eop = (d->tx_clean + s->ndesc - 1) % E1000_TX_DESC;
		uint8_t status = d->tx[eop].status;
		if (!(status & E1000_TXS_DD))
			break;
		if (status & (E1000_TXS_EC | E1000_TXS_LC))
			d->st.tx_errors++;
		uint64_t cookie = s->cookie;
		d->st.tx_bytes += tx_release(d, s->ndesc);
		d->st.tx_frames++;
		n++;
		if (done)
			done(cookie, arg);
	}
	return n;
}

// ---- receive ----

static void rx_account(struct e1000_dev *d, const struct rxfrag *f)
{
	d->st.rx_descs++;
	d->st.rx_bytes += f->len;
	if (!f->eop)
		return;
	d->st.rx_frames++;
	if (f->error)
		d->st.rx_errors++;
}

// Legacy receive descriptors (SDM 3.2.3): DD set by the NIC when written.
int e1000_rx_poll(struct e1000_dev *d, struct rxfrag *out, int max)
{
	int n = 0;
	while (n < max && d->rx_posted) {
		uint32_t i = d->rx_next;
		volatile struct e1000_rx_desc *r = &d->rx[i];
		uint8_t status = r->status;
		if (!(status & E1000_RXD_DD))
			break;
		out[n] = (struct rxfrag){ .pa = d->rxbuf[i], .len = r->len,
					  .eop = status & E1000_RXD_EOP,
					  .error = (status & E1000_RXD_EOP) && (r->errors & E1000_RXE_FRAME) };
		rx_account(d, &out[n]);
		dma_unpin(d->rxbuf[i], PAGE_SIZE);
		d->rxbuf[i] = 0;
		r->addr = 0;
		r->status = 0;
		d->rx_next = (i + 1) % E1000_RX_DESC;
		d->rx_posted--;
		n++;
	}
	return n;
}

int e1000_rx_free_slots(struct e1000_dev *d) { return E1000_RX_DESC - 1 - (int)d->rx_posted; }

int e1000_rx_refill(struct e1000_dev *d, const paddr_t *frames, int n)
{
	if (n < 0 || (n > 0 && !frames))
		return d->st.rx_refill_rejected++, -E_INVAL;
	int k = n < e1000_rx_free_slots(d) ? n : e1000_rx_free_slots(d);
	for (int i = 0; i < k; i++) {
		int r = (int)dma_check_buf(frames[i]); // a frame listed twice is pinned the second time
		if (r < 0) {
			while (i-- > 0)
				dma_unpin(frames[i], PAGE_SIZE);
			return d->st.rx_refill_rejected++, r;
		}
		dma_pin(frames[i], PAGE_SIZE);
	}
	for (int i = 0; i < k; i++)
		rx_post(d, frames[i]);
	if (k > 0) {
		arch_wmb();
		e1000_wr(d, E1000_RDT, d->rx_fill);
		d->st.rx_refills++;
	}
	return k;
}

// ---- the netdev seam's ring operations ----
// struct netdev is the device's first member: the cast is container_of.

static struct e1000_dev *dev_of(struct netdev *nd) { return (struct e1000_dev *)nd; }

int e1000_nd_tx_batch(struct netdev *nd, const struct netpkt *p, int n)
{
	return e1000_tx_batch(dev_of(nd), p, n);
}

int e1000_nd_tx_reclaim(struct netdev *nd, void (*done)(uint64_t, void *), void *arg)
{
	return e1000_tx_reclaim(dev_of(nd), done, arg);
}

int e1000_nd_rx_poll(struct netdev *nd, struct rxfrag *out, int max)
{
	return e1000_rx_poll(dev_of(nd), out, max);
}

int e1000_nd_rx_refill(struct netdev *nd, const paddr_t *pages, int n)
{
	return e1000_rx_refill(dev_of(nd), pages, n);
}

int e1000_nd_rx_free_slots(struct netdev *nd) { return e1000_rx_free_slots(dev_of(nd)); }
