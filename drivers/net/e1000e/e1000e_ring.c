// e1000e rings: descriptor rings in contiguous frames, one-page receive
// buffers, the zero-copy gather send (one TDT write per batch), the
// receive hand-off and refill. Descriptor formats: e1000e_desc.c.
#include "e1000e_dev.h"
#include "dma.h"
#include "../netpkt.h"
#include <err.h>

static void rx_post(struct e1000e_dev *d, paddr_t pa)
{
	union e1000e_rx_desc r;
	e1000e_rx_post(&r, pa);
	d->rx[d->rx_fill] = r;
	d->rxbuf[d->rx_fill] = pa;
	d->rx_fill = e1000e_ring_add(d->rx_fill, 1, E1000E_RX_DESC);
	d->rx_posted++;
}

// Unpins n descriptors' pieces from tx_clean on; returns their bytes.
static uint32_t tx_release(struct e1000e_dev *d, uint32_t n)
{
	uint32_t bytes = 0;
	for (; n > 0; n--, d->tx_used--) {
		struct e1000e_txslot *s = &d->txs[d->tx_clean];
		dma_unpin(s->pa, s->len);
		bytes += s->len;
		*s = (struct e1000e_txslot){ 0 };
		d->tx_clean = e1000e_ring_add(d->tx_clean, 1, E1000E_TX_DESC);
	}
	return bytes;
}

// Frees the ring at *pa (npages frames), if any; returns the frames freed.
static uint64_t ring_free(paddr_t *pa, uint64_t npages)
{
	if (!*pa)
		return 0;
	dma_free_contig(*pa, (int)npages);
	*pa = 0;
	return npages;
}

uint64_t e1000e_rings_free(struct e1000e_dev *d)
{
	uint64_t n = d->rx_posted;
	tx_release(d, d->tx_used);
	for (uint32_t i = d->rx_next; d->rx_posted; d->rx_posted--, i = e1000e_ring_add(i, 1, E1000E_RX_DESC))
		dma_free_buf(d->rxbuf[i]), d->rxbuf[i] = 0;
	return n + ring_free(&d->tx_ring_pa, E1000E_TX_RING_FRAMES) +
	       ring_free(&d->rx_ring_pa, E1000E_RX_RING_FRAMES);
}

// Rings zeroed, every receive slot but one given a zeroed page (a
// buffer's tail may reach user space).
int e1000e_rings_alloc(struct e1000e_dev *d)
{
	d->tx_ring_pa = dma_alloc_contig(E1000E_TX_RING_FRAMES);
	d->rx_ring_pa = dma_alloc_contig(E1000E_RX_RING_FRAMES);
	bool ok = d->tx_ring_pa && d->rx_ring_pa;
	if (ok) {
		d->tx = arch_p2v(d->tx_ring_pa);
		d->rx = arch_p2v(d->rx_ring_pa);
	}
	for (int i = 0; ok && i < E1000E_RX_DESC - 1; i++) {
		paddr_t pa = dma_alloc_buf();
		if (pa)
			rx_post(d, pa);
		ok = pa != 0;
	}
	if (!ok)
		e1000e_rings_free(d);
	return ok ? 0 : -E_NOMEM;
}

uint64_t e1000e_frames_owned(struct e1000e_dev *d)
{
	return d->rx_posted + (d->tx_ring_pa ? E1000E_TX_RING_FRAMES : 0) +
	       (d->rx_ring_pa ? E1000E_RX_RING_FRAMES : 0);
}

// ---- send ----

static uint32_t pkt_descs(const struct netpkt *p)
{
	uint32_t n = 0;
	for (int i = 0; i < p->nseg; i++)
		n += e1000e_tx_descs(p->seg[i].len);
	return n;
}

// One descriptor per E1000E_TXD_MAX bytes of each segment, its pages
// pinned until tx_release; the packet's first slot keeps the cookie.
static void tx_queue(struct e1000e_dev *d, const struct netpkt *p)
{
	uint32_t first = d->tx_tail, ndesc = pkt_descs(p), k = 0;
	for (int i = 0; i < p->nseg; i++) {
		for (uint32_t off = 0; off < p->seg[i].len; off += E1000E_TXD_MAX) {
			uint32_t left = p->seg[i].len - off;
			uint32_t len = left < E1000E_TXD_MAX ? left : E1000E_TXD_MAX;
			struct e1000e_tx_desc t;
			e1000e_tx_build(&t, p->seg[i].pa + off, len, ++k == ndesc);
			dma_pin(p->seg[i].pa + off, len);
			d->tx[d->tx_tail] = t;
			d->txs[d->tx_tail] = (struct e1000e_txslot){ .pa = p->seg[i].pa + off, .len = len };
			d->tx_tail = e1000e_ring_add(d->tx_tail, 1, E1000E_TX_DESC);
		}
	}
	d->txs[first].ndesc = (uint16_t)ndesc;
	d->txs[first].cookie = p->cookie;
	d->tx_used += ndesc;
	d->in.tx_descs += ndesc;
}

static uint32_t tx_free(struct e1000e_dev *d) { return E1000E_TX_DESC - 1 - d->tx_used; }

int e1000e_tx_batch(struct netdev *nd, const struct netpkt *pkts, int n)
{
	struct e1000e_dev *d = e1000e_of(nd);
	int r = netpkt_check_batch(pkts, n, E1000E_MIN_FRAME, E1000E_MAX_FRAME);
	if (r < 0)
		return d->st.tx_rejected++, r;
	int q = 0;
	for (; q < n && pkt_descs(&pkts[q]) <= tx_free(d); q++)
		tx_queue(d, &pkts[q]);
	d->st.tx_ring_full += q < n;
	if (q == 0)
		return 0;
	arch_wmb(); // the descriptors are in memory before the NIC looks
	e1000e_wr(d, E1000E_TDT, d->tx_tail);
	d->st.doorbells++;
	return q;
}

// The written-back status of the oldest queued packet's EOP descriptor
// (RS is set there only); 0 when nothing is queued.
static uint32_t oldest_sta(struct e1000e_dev *d)
{
	if (!d->tx_used)
		return 0;
	uint32_t eop = e1000e_ring_add(d->tx_clean, d->txs[d->tx_clean].ndesc - 1u, E1000E_TX_DESC);
	return d->tx[eop].sta;
}

// Packets whose EOP descriptor has DD, oldest first.
int e1000e_tx_reclaim(struct netdev *nd, void (*done)(uint64_t, void *), void *arg)
{
	struct e1000e_dev *d = e1000e_of(nd);
	int n = 0;
	for (uint32_t sta; (sta = oldest_sta(d)) & E1000E_TXS_DD; n++) {
		const struct e1000e_txslot first = d->txs[d->tx_clean];
		d->in.tx_errors += (sta & (E1000E_TXS_EC | E1000E_TXS_LC)) != 0;
		d->st.tx_bytes += tx_release(d, first.ndesc);
		d->st.tx_frames++;
		if (done)
			done(first.cookie, arg);
	}
	return n;
}

// ---- receive ----

// Hands out the buffer at rx_next if the NIC has written it back: the
// page becomes the caller's, the slot waits for a refill.
static bool rx_take(struct e1000e_dev *d, struct rxfrag *out)
{
	uint32_t i = d->rx_next;
	union e1000e_rx_desc r = d->rx[i];
	struct e1000e_rx_wb w = e1000e_rx_parse(&r);
	if (!w.done)
		return false;
	*out = (struct rxfrag){ .pa = d->rxbuf[i], .len = w.len, .eop = w.eop, .error = w.error };
	dma_unpin(d->rxbuf[i], PAGE_SIZE);
	d->rxbuf[i] = 0;
	d->rx[i].rd.zero = 0; // DD clear until the slot is posted again
	d->rx_next = e1000e_ring_add(i, 1, E1000E_RX_DESC);
	d->rx_posted--;
	d->st.rx_bytes += w.len;
	d->st.rx_frames += w.eop;
	d->st.rx_errors += w.error;
	d->in.rx_descs++;
	return true;
}

int e1000e_rx_poll(struct netdev *nd, struct rxfrag *out, int max)
{
	struct e1000e_dev *d = e1000e_of(nd);
	int n = 0;
	while (n < max && d->rx_posted && rx_take(d, &out[n]))
		n++;
	return n;
}

int e1000e_rx_free_slots(struct netdev *nd)
{
	return E1000E_RX_DESC - 1 - (int)e1000e_of(nd)->rx_posted;
}

// Checks every page before taking any (netpkt_pin_pages): a refused call
// changes nothing. One RDT write for all it took.
int e1000e_rx_refill(struct netdev *nd, const paddr_t *pages, int n)
{
	struct e1000e_dev *d = e1000e_of(nd);
	int k = n < e1000e_rx_free_slots(nd) ? n : e1000e_rx_free_slots(nd);
	int r = n < 0 || (n > 0 && !pages) ? -E_INVAL : netpkt_pin_pages(pages, k);
	if (r < 0)
		return d->st.rx_refill_rejected++, r;
	for (int i = 0; i < k; i++)
		rx_post(d, pages[i]);
	if (k == 0)
		return 0;
	arch_wmb();
	e1000e_wr(d, E1000E_RDT, d->rx_fill);
	d->st.rx_refills++;
	return k;
}
