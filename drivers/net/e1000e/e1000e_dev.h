// Private to the e1000e driver: the per-NIC structure and what e1000e.c
// (attach, interrupts, control) and e1000e_ring.c (send, receive) share.
#ifndef E1000E_DEV_H
#define E1000E_DEV_H
#include "e1000e.h"
#include "e1000e_desc.h"
#include "../../pci/pci.h"

#define E1000E_TX_RING_FRAMES (E1000E_TX_DESC * sizeof(struct e1000e_tx_desc) / PAGE_SIZE)
#define E1000E_RX_RING_FRAMES (E1000E_RX_DESC * sizeof(union e1000e_rx_desc) / PAGE_SIZE)
_Static_assert(E1000E_TX_RING_FRAMES <= 4 && E1000E_RX_RING_FRAMES <= 4,
	       "dma_alloc_contig finds runs of 4 frames");
_Static_assert(E1000E_TX_DESC * 16 % 128 == 0 && E1000E_RX_DESC * 16 % 128 == 0,
	       "TDLEN/RDLEN are multiples of 128 bytes (DS 10.2.5.7, 10.2.6.6)");

// Shadow of a transmit descriptor: what it pins; the first of a packet
// also carries the packet's descriptor count and cookie.
struct e1000e_txslot {
	paddr_t pa;
	uint32_t len;
	uint16_t ndesc;
	uint64_t cookie;
};

struct e1000e_dev {
	struct netdev nd; // first: the netdev pointer is the device's
	int idx;
	struct pci_dev *pci;
	volatile uint8_t *regs;
	bool link;
	uint32_t ims;
	// Transmit: [tx_clean, tx_tail) queued (tx_used descriptors).
	paddr_t tx_ring_pa;
	volatile struct e1000e_tx_desc *tx;
	uint32_t tx_tail, tx_clean, tx_used;
	struct e1000e_txslot txs[E1000E_TX_DESC];
	// Receive: [rx_next, rx_fill) hold buffers (rx_posted); the NIC owns
	// [RDH, RDT = rx_fill); [rx_fill, rx_next) wait for a refill. The
	// write-back erases a descriptor's address: rxbuf[] is the record.
	paddr_t rx_ring_pa;
	volatile union e1000e_rx_desc *rx;
	uint32_t rx_next, rx_fill, rx_posted;
	paddr_t rxbuf[E1000E_RX_DESC];
	struct netdev_stats st;
	struct e1000e_info in;
};

static inline uint32_t e1000e_rd(struct e1000e_dev *d, uint32_t reg)
{
	return arch_mmio_rd32(d->regs + reg);
}
static inline void e1000e_wr(struct e1000e_dev *d, uint32_t reg, uint32_t v)
{
	arch_mmio_wr32(d->regs + reg, v);
}

// The device behind one of its netdevs (the netdev is its first member).
static inline struct e1000e_dev *e1000e_of(struct netdev *nd) { return (struct e1000e_dev *)nd; }

// e1000e_ring.c: rings and buffers; the data-path netdev ops themselves.
int e1000e_rings_alloc(struct e1000e_dev *d);     // -E_NOMEM, changing nothing
uint64_t e1000e_rings_free(struct e1000e_dev *d); // frames freed (queued sends unpinned)
uint64_t e1000e_frames_owned(struct e1000e_dev *d);
int e1000e_tx_batch(struct netdev *nd, const struct netpkt *pkts, int n);
int e1000e_tx_reclaim(struct netdev *nd, void (*done)(uint64_t, void *), void *arg);
int e1000e_rx_poll(struct netdev *nd, struct rxfrag *out, int max);
int e1000e_rx_refill(struct netdev *nd, const paddr_t *pages, int n);
int e1000e_rx_free_slots(struct netdev *nd);
#endif
