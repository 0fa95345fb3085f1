// netpkt_check_batch (netpkt.h), shared by the NIC drivers' send paths.
#include "netpkt.h"
#include "dma.h"
#include <err.h>

static int seg_check(const struct netseg *s, uint32_t max_frame)
{
	if (s->len == 0)
		return -E_INVAL;
	if (s->len > max_frame)
		return -E_2BIG;
	return dma_check(s->pa, s->len) < 0 ? -E_INVAL : 0;
}

static int pkt_check(const struct netpkt *p, uint32_t min_frame, uint32_t max_frame)
{
	if (p->nseg <= 0)
		return -E_INVAL;
	if (p->nseg > NETDEV_MAX_SEGS)
		return -E_2BIG;
	uint32_t total = 0;
	for (int i = 0; i < p->nseg; i++) {
		int r = seg_check(&p->seg[i], max_frame);
		if (r < 0)
			return r;
		total += p->seg[i].len;
	}
	if (total > max_frame)
		return -E_2BIG;
	return total < min_frame ? -E_INVAL : 0;
}

int netpkt_check_batch(const struct netpkt *pkts, int n, uint32_t min_frame, uint32_t max_frame)
{
	if (n < 0 || (n > 0 && !pkts))
		return -E_INVAL;
	for (int i = 0; i < n; i++) {
		int r = pkt_check(&pkts[i], min_frame, max_frame);
		if (r < 0)
			return r;
	}
	return 0;
}

int netpkt_pin_pages(const paddr_t *pages, int n)
{
	for (int i = 0; i < n; i++) {
		long r = dma_check_buf(pages[i]);
		if (r < 0) {
			while (i-- > 0)
				dma_unpin(pages[i], PAGE_SIZE);
			return (int)r;
		}
		dma_pin(pages[i], PAGE_SIZE);
	}
	return 0;
}
