// Private to the virtio-net driver: the per-NIC structure and what
// virtio_net.c (attach, interrupts, control, detach) and virtio_net_ring.c
// (send and receive) share.
#ifndef VIRTIO_NET_DEV_H
#define VIRTIO_NET_DEV_H
#include "virtio_net.h"
#include "virtio_pci.h"
#include "virtqueue.h"

#define VNET_RXQ_MAX 1024 // receive queue entries used at most, all queues together (two per buffer)
#define VNET_TXQ_MAX 256  // transmit queue entries used at most
#define VNET_QMIN 8       // smaller queues cannot hold a longest frame
#define VNET_RX_BUFS_MAX (VNET_RXQ_MAX / 2)
#define VNET_MAX_FRAME 9018 // 9014 + an 802.1Q tag, without FCS
#define VNET_MIN_FRAME 14   // an Ethernet header
// After sends move to another queue pair, frames on the new receive queue
// wait until the old queues have brought none for this long (virtio_net_ring.c).
#define VNET_MOVE_HOLD_US 20000
#define VNET_MOVE_HOLD_MAX_US 100000 // however often the old queues still bring one

// struct virtio_net_hdr (5.1.6): 12 bytes with VIRTIO_F_VERSION_1, the
// last two num_buffers.
#define VNET_HDR_LEN 12
#define VNET_HDR_NUM_BUFFERS 10
#define VNET_SLOT 16 // bytes between receive header slots
#define VNET_RX_DATA (NETDEV_RX_BUF - VNET_HDR_LEN) // page bytes the device writes

// Feature bits (5.1.3).
#define VIRTIO_NET_F_MAC (1ull << 5)
#define VIRTIO_NET_F_MRG_RXBUF (1ull << 15)
#define VIRTIO_NET_F_STATUS (1ull << 16)
#define VIRTIO_NET_F_CTRL_VQ (1ull << 17) // the control queue
#define VIRTIO_NET_F_CTRL_RX (1ull << 18) // its receive-mode commands
#define VIRTIO_NET_F_MQ (1ull << 22)      // several queue pairs (5.1.6.5.5)
// Device configuration (5.1.4): mac[6], le16 status, le16
// max_virtqueue_pairs (with VIRTIO_NET_F_MQ).
#define VNET_CFG_MAC 0
#define VNET_CFG_STATUS 6
#define VNET_CFG_MAX_PAIRS 8
#define VIRTIO_NET_S_LINK_UP 1
// Queues (5.1.2): receiveqN at 2(N-1), transmitqN at 2(N-1)+1, and
// controlq at 2 * max_virtqueue_pairs (2 without VIRTIO_NET_F_MQ) when
// VIRTIO_NET_F_CTRL_VQ is negotiated.
#define VNET_RXQ(i) (2 * (i))
#define VNET_TXQ(i) (2 * (i) + 1)
#define VNET_PAIRS_MAX NETDEV_RXQ_MAX // queue pairs used at most
#define VNET_CTRLQ_MAX VNET_QMIN // one command at a time
// Control commands (5.1.6.5): class, command, data (device-readable),
// then an ack byte the device writes. Class RX (5.1.6.5.1): one byte, on
// or off. The device resets to promiscuous (QEMU: every frame passes its
// filter until the driver says otherwise).
#define VIRTIO_NET_CTRL_RX 0
#define VIRTIO_NET_CTRL_RX_PROMISC 0
#define VIRTIO_NET_CTRL_RX_ALLMULTI 1
// Class MQ (5.1.6.5.5): le16 virtqueue_pairs, 1..max_virtqueue_pairs.
#define VIRTIO_NET_CTRL_MQ 4
#define VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET 0
#define VIRTIO_NET_OK 0
#define VNET_CTRL_WAIT_US 1000000 // QEMU answers inside the kick (TCG) or from its main loop

// A packet in the transmit queue, by the index of its chain's head.
struct vnet_txp {
	uint64_t cookie;
	uint32_t bytes;
	bool busy; // queued
	bool done; // the device has used the chain
};

struct vnet_dev;

// One receive queue. Its buffers are the NIC's numbers base..base+n-1
// (their pages in rx_page, their header slots); local buffer k is
// descriptors 2k (the slot) -> 2k+1 (the page); rx_free[base..base+nfree)
// are the local numbers of the empty ones.
struct vnet_rx {
	struct virtq q;
	struct vnet_dev *d; // the interrupt's argument
	int base, n, nfree;
	uint16_t left; // buffers of the frame being handed out not yet consumed
	bool first, err;
	uint32_t apic_id; // the CPU its interrupt goes to (MSI-X)
};

// A transmit chain in the FIFO of all queued packets: its queue and head.
#define VNET_TXF(q, head) ((uint16_t)((q) << 10 | (head)))
#define VNET_TXF_Q(f) ((f) >> 10)
#define VNET_TXF_HEAD(f) ((f) & 0x3ff)

struct vnet_dev {
	struct netdev nd; // first: the ops get &nd
	bool attached;
	struct virtio_pci vp;
	uint64_t features;
	int vector; // -1: no interrupt, polling only
	bool msix;  // a vector per receive queue (several pairs); else INTx
	bool link;  // as of the last configuration change
	bool rx_irq_on, in_rx_ready, rx_ready_again;
	bool broken; // the device named a buffer it does not hold
	int pairs;   // queue pairs in use (1 without VIRTIO_NET_F_MQ)
	struct vnet_rx rx[VNET_PAIRS_MAX];
	struct virtq txq[VNET_PAIRS_MAX], ctrlq; // ctrlq.size 0: no control queue
	bool rx_filter; // the device passes only frames to our MAC and broadcast
	// Header frames: receive slot g (the NIC's buffer number) at
	// VNET_SLOT * g, the shared transmit header after the last slot, then
	// the control command's slot.
	paddr_t hdr_pa;
	int hdr_frames;
	uint8_t *hdr;
	int rx_bufs; // all queues' buffers
	paddr_t rx_page[VNET_RX_BUFS_MAX];
	uint16_t rx_free[VNET_RX_BUFS_MAX];
	uint64_t rx_tail_copies, rx_recycled;
	// Transmit: chains in the order queued, over every queue
	// (tx_fifo[tx_head..], tx_n of them, VNET_TXF entries); tx_cur the
	// queue sends go to (-1 before the first), tx_busy[q] its chains the
	// device has not used; rx_seen the receive queue of the last frame
	// handed out (-1: none yet).
	struct vnet_txp txp[VNET_PAIRS_MAX][VNET_TXQ_MAX];
	uint16_t tx_fifo[VNET_PAIRS_MAX * VNET_TXQ_MAX];
	uint16_t tx_head, tx_n;
	int tx_cur, rx_seen, rx_first; // rx_first: the queue of the first frame handed out
	uint64_t hold_until; // timer_now_us until which the current queue waits (0: no move pending)
	uint64_t hold_last;  // and the latest it may be put off to
	uint16_t tx_busy[VNET_PAIRS_MAX];
	uint64_t tx_moves; // times sends moved to another queue
	struct netdev_stats st;
};

static inline struct vnet_dev *vnet(struct netdev *nd) { return (struct vnet_dev *)nd; }
static inline int vnet_rxq_posted(const struct vnet_rx *r) { return r->n - r->nfree; }
static inline int vnet_rx_posted(const struct vnet_dev *d)
{
	int n = 0;
	for (int i = 0; i < d->pairs; i++)
		n += vnet_rxq_posted(&d->rx[i]);
	return n;
}

// virtio_net_ring.c
int vnet_rx_init(struct vnet_dev *d); // chains and zeroed pages in every buffer; -E_NOMEM
void vnet_rx_notify(struct vnet_dev *d, struct vnet_rx *r); // publishes posted buffers, kicks if wanted
uint64_t vnet_rx_free_all(struct vnet_dev *d); // frees posted pages; returns how many
int vnet_tx_drop(struct vnet_dev *d); // forgets queued sends, unpinning them; returns how many
int vnet_tx_batch(struct netdev *nd, const struct netpkt *pkts, int n);
int vnet_tx_reclaim(struct netdev *nd, void (*done)(uint64_t cookie, void *arg), void *arg);
int vnet_rx_poll(struct netdev *nd, struct rxfrag *out, int max);
int vnet_rx_refill(struct netdev *nd, const paddr_t *pages, int n);
int vnet_rx_free_slots(struct netdev *nd);
#endif
