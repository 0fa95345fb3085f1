// The check every NIC driver's tx_batch makes of a whole batch before it
// queues any of it (kernel/net/netdev.h): what gather lists must be for a
// device to be pointed at them.
#ifndef NETPKT_H
#define NETPKT_H
#include "net/netdev.h"

// 0 when n >= 0 and each of pkts[0..n) has 1..NETDEV_MAX_SEGS segments,
// each non-empty and in memory a device may read (dma_check: allocated or
// the kernel image, not the first MiB), making a frame of
// min_frame..max_frame bytes. Otherwise, for the first packet that fails,
// -E_2BIG (too many segments, or a segment or the frame longer than
// max_frame) or -E_INVAL (and -E_INVAL for n < 0 or no pkts).
int netpkt_check_batch(const struct netpkt *pkts, int n, uint32_t min_frame, uint32_t max_frame);

// rx_refill's check: pins pages[0..n) when every one may become a
// receive buffer (dma_check_buf: handed out, page-aligned, not pinned,
// so a page listed twice fails the second time) and returns 0; otherwise
// pins none and returns the first refusal (-E_INVAL or -E_BUSY).
int netpkt_pin_pages(const paddr_t *pages, int n);
#endif
