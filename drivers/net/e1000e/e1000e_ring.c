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

uint64_t e1000e_rings_free(struct e1000e_dev *d)
{
	uint64_t n = 0;
	tx_release(d, d->tx_used);
	for (int i = 0; i < E1000E_RX_DESC; i++)
		if (d->rxbuf[i])
			dma_free_buf(d->rxbuf[i]), d->rxbuf[i] = 0, n++;
	d->rx_posted = 0;
	if (d->tx_ring_pa)
		dma_free_contig(d->tx_ring_pa, E1000E_TX_RING_FRAMES), n += E1000E_TX_RING_FRAMES;
	if (d->rx_ring_pa)
		dma_free_contig(d->rx_ring_pa, E1000E_RX_RING_FRAMES), n += E1000E_RX_RING_FRAMES;
	d->tx_ring_pa = d->rx_ring_pa = 0;
	return n;
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

int e1000e_tx_batch(struct e1000e_dev *d, const struct netpkt *pkts, int n)
{
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

// Packets whose EOP descriptor has DD, oldest first.
int e1000e_tx_reclaim(struct e1000e_dev *d, void (*done)(uint64_t, void *), void *arg)
{
	int n = 0;
	while (d->tx_used) {
		const struct e1000e_txslot *s = &d->txs[d->tx_clean];
		uint32_t sta = d->tx[e1000e_ring_add(d->tx_clean, s->ndesc - 1u, E1000E_TX_DESC)].sta;
		if (!(sta & E1000E_TXS_DD))
			break;
		uint64_t cookie = s->cookie;
		d->in.tx_errors += (sta & (E1000E_TXS_EC | E1000E_TXS_LC)) != 0;
		d->st.tx_bytes += tx_release(d, s->ndesc);
		d->st.tx_frames++;
		n++;
		if (done)
			done(cookie, arg);
	}
	return n;
}

// ---- receive ----

int e1000e_rx_poll(struct e1000e_dev *d, struct rxfrag *out, int max)
{
	int n = 0;
	for (; n < max && d->rx_posted; n++) {
		uint32_t i = d->rx_next;
		union e1000e_rx_desc r = d->rx[i];
		struct e1000e_rx_wb w = e1000e_rx_parse(&r);
		if (!w.done)
			break;
		out[n] = (struct rxfrag){ .pa = d->rxbuf[i], .len = w.len, .eop = w.eop, .error = w.error };
		d->st.rx_bytes += w.len;
		d->st.rx_frames += w.eop;
		d->st.rx_errors += w.error;
		d->in.rx_descs++;
		dma_unpin(d->rxbuf[i], PAGE_SIZE);
		d->rxbuf[i] = 0;
		d->rx[i].rd.zero = 0; // DD clear until the slot is posted again
		d->rx_next = e1000e_ring_add(i, 1, E1000E_RX_DESC);
		d->rx_posted--;
	}
	return n;
}

int e1000e_rx_free_slots(struct e1000e_dev *d) { return E1000E_RX_DESC - 1 - (int)d->rx_posted; }

// Checks every page before taking any: a refused call changes nothing.
int e1000e_rx_refill(struct e1000e_dev *d, const paddr_t *pages, int n)
{
	if (n < 0 || (n > 0 && !pages))
		return d->st.rx_refill_rejected++, -E_INVAL;
	int k = n < e1000e_rx_free_slots(d) ? n : e1000e_rx_free_slots(d);
	for (int i = 0; i < k; i++) {
		long r = dma_check_buf(pages[i]); // a page listed twice is pinned by then
		if (r < 0) {
			while (i-- > 0)
				dma_unpin(pages[i], PAGE_SIZE);
			return d->st.rx_refill_rejected++, (int)r;
		}
		dma_pin(pages[i], PAGE_SIZE);
	}
	for (int i = 0; i < k; i++)
		rx_post(d, pages[i]);
	if (k > 0) {
		arch_wmb();
		e1000e_wr(d, E1000E_RDT, d->rx_fill);
		d->st.rx_refills++;
	}
	return k;
}
