// Virtio network device driver (virtio 1.1, 5.1) over the modern PCI
// transport (virtio_pci.c) with split virtqueues (virtqueue.c). Each NIC
// is a struct netdev in the registry (kernel/net/netdev.h) and is driven
// only through its netdev_ops:
//
// Send: a packet's descriptor chain is the shared all-zero virtio_net_hdr
// (no offloads) followed by the caller's segments as they are (zero-copy);
// one notification (kick) per tx_batch, left out when the device says it
// is already processing the queue (VIRTQ_USED_F_NO_NOTIFY). Transmit
// completions raise no interrupt: tx_reclaim polls the used ring.
//
// Receive: mergeable receive buffers (VIRTIO_NET_F_MRG_RXBUF). Every
// buffer is a two-descriptor chain: a 12-byte header slot of the driver's
// and the caller's page, of which the device writes the first 4084 bytes.
// The first buffer's slot takes the header, a later buffer's slot the
// frame's next 12 bytes, which rx_poll copies to the end of the previous
// page. So every page holds its 4096 bytes of the frame from its first
// byte, as struct rxfrag promises, and 12 bytes per page are all that is
// ever copied.
//
// Interrupts: INTx, the ISR byte acknowledges; receive interrupts are
// suppressed with VIRTQ_AVAIL_F_NO_INTERRUPT; link changes arrive as
// configuration-change interrupts.
#ifndef VIRTIO_NET_H
#define VIRTIO_NET_H
#include "net/netdev.h"

// Attaches every virtio-net function not yet attached (modern 1af4:1041,
// transitional 1af4:1000 through its modern interface) while the registry
// has room, and registers each. Returns the number attached now.
int virtio_net_probe_all(void);

// Details for the self-test and messages.
struct virtio_net_info {
	uint64_t features;            // negotiated
	bool rx_filter;               // the device filters: our MAC and broadcast only
	uint16_t rxq_size, txq_size;  // queue entries
	int vector;                   // -1: polling only
	uint64_t tx_kicks_skipped;    // tx_batch notifications the device declined
	uint64_t rx_kicks_skipped;    // receive notifications the device declined
	uint64_t rx_tail_copies;      // page tails completed from a later buffer's slot
	uint64_t rx_recycled;         // buffers that held only slot bytes, posted again
	int rx_used_pending;          // receive buffers used by the device, not handed out yet
	int tx_queued;                // packets queued and not yet reclaimed
	int tx_free_descs;            // transmit descriptors free
	int pairs;                    // queue pairs in use (the fields above: pair 0's)
	uint64_t tx_moves;            // sends moved to another pair's transmit queue
};
// false when nd is not a virtio-net NIC.
bool virtio_net_info(struct netdev *nd, struct virtio_net_info *out);

// Boot self-test (virtio_net_test.c), kernel command line
// virtiotest=MODE[,MODE...]: "loop", "basic", "link", "detach".
// Prints TEST lines; returns the number of failed tests.
int virtio_net_selftest(const char *modes);
#endif
