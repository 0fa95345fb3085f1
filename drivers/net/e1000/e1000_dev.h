// Private to the e1000 driver: the per-NIC structure and what its three
// files (e1000.c attach/interrupts/control, e1000_eeprom.c, e1000_ring.c
// send/receive) share.
#ifndef E1000_DEV_H
#define E1000_DEV_H
#include "e1000.h"
#include "e1000_regs.h"
#include "../../pci/pci.h"

#define TX_RING_FRAMES (E1000_TX_DESC * sizeof(struct e1000_tx_desc) / PAGE_SIZE)
#define RX_RING_FRAMES (E1000_RX_DESC * sizeof(struct e1000_rx_desc) / PAGE_SIZE)
#define RING_MAX_FRAMES 4 // alloc_contig finds runs this long
_Static_assert(TX_RING_FRAMES <= RING_MAX_FRAMES && RX_RING_FRAMES <= RING_MAX_FRAMES,
	       "ring too large");
_Static_assert(E1000_TX_DESC * 16 % 128 == 0 && E1000_RX_DESC * 16 % 128 == 0,
	       "TDLEN/RDLEN must be multiples of 128 bytes (SDM 13.4.27, 13.4.38)");

// How a model's EEPROM is read (SDM 13.4.3-4).
enum { EE_EERD_8254X, EE_EERD_82541, EE_MICROWIRE };

struct model {
	const char *name;
	uint8_t ee;     // EE_*
	bool dual_port; // function 1 has the EEPROM address with bit 0 of byte 5 flipped
};

// The NIC's counters (SDM 13.7). The manual says they clear on read;
// QEMU's MPC and RNBC do not. Each is classified the first time it reads
// non-zero: read twice, a clearing register reads less the second time.
enum { HW_MPC, HW_RNBC, HW_ROC, HW_CRCERRS, HW_N };
struct hwstat {
	uint64_t total;
	uint32_t base; // cumulative registers: the value at attach
	int8_t clears; // -1 unknown, 0 cumulative, 1 clears on read
};

// Software shadow of a transmit descriptor; the first of a packet carries
// its cookie and descriptor count.
struct txslot {
	paddr_t pa;
	uint32_t len;
	uint8_t ndesc;
	uint64_t cookie;
};

struct e1000_dev {
	struct netdev nd; // what the stack above sees (first: container_of is a cast)
	int idx;
	struct pci_dev *pci;
	const struct model *model;
	volatile uint8_t *regs; // the 128 KiB register window (BAR0)
	uint8_t mac[6];
	const char *ee_how; // "eerd" or "microwire"
	bool ee_sum_ok;
	bool link;  // as of the last LSC
	int vector; // -1: no interrupt, polling only
	uint32_t ims;
	// Transmit ring: [tx_clean, tx_tail) queued, tx_used of them.
	paddr_t tx_ring_pa;
	volatile struct e1000_tx_desc *tx;
	uint32_t tx_tail, tx_clean, tx_used;
	struct txslot txs[E1000_TX_DESC];
	// Receive ring: [rx_next, rx_fill) hold buffers (rx_posted), the NIC
	// owns [RDH, RDT = rx_fill); [rx_fill, rx_next) wait for a refill.
	paddr_t rx_ring_pa;
	volatile struct e1000_rx_desc *rx;
	uint32_t rx_next, rx_fill, rx_posted;
	paddr_t rxbuf[E1000_RX_DESC];
	void (*handler)(struct e1000_dev *d, uint32_t icr, void *arg);
	void *handler_arg;
	struct e1000_stats st;
	struct hwstat hw[HW_N];
};

static inline uint32_t e1000_rd(struct e1000_dev *d, uint32_t reg)
{
	return arch_mmio_rd32(d->regs + reg);
}

static inline void e1000_wr(struct e1000_dev *d, uint32_t reg, uint32_t v)
{
	arch_mmio_wr32(d->regs + reg, v);
}

// e1000.c
void e1000_udelay(uint64_t us);
// Waits until (reg & mask) == want; -E_TIMEOUT after `us` microseconds.
int e1000_wait_reg(struct e1000_dev *d, uint32_t reg, uint32_t mask, uint32_t want, uint64_t us);

// e1000_eeprom.c: the MAC into d->mac (and d->ee_how, d->ee_sum_ok);
// -E_TIMEOUT, or -E_IO for a blank or multicast address.
int e1000_read_mac(struct e1000_dev *d);

// e1000_ring.c: descriptor rings and posted buffers (all frames zeroed).
int e1000_rings_alloc(struct e1000_dev *d); // -E_NOMEM, changing nothing
uint64_t e1000_rings_free(struct e1000_dev *d); // returns frames freed
void e1000_tx_drop(struct e1000_dev *d);      // forgets queued sends, unpinning them

// The netdev seam's ring operations (kernel/net/netdev.h's contracts), in
// e1000_ring.c: e1000.c's ops table names them.
int e1000_nd_tx_batch(struct netdev *nd, const struct netpkt *p, int n);
int e1000_nd_tx_reclaim(struct netdev *nd, void (*done)(uint64_t, void *), void *arg);
int e1000_nd_rx_poll(struct netdev *nd, struct rxfrag *out, int max);
int e1000_nd_rx_refill(struct netdev *nd, const paddr_t *pages, int n);
int e1000_nd_rx_free_slots(struct netdev *nd);

#endif
