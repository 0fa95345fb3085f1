// Intel 8254x (e1000) NIC driver: zero-copy batched send and receive.
//
// Send: a packet is a gather list of physically contiguous pieces (a header
// buffer and the caller's payload frames); the driver points descriptors at
// them, pins their frames while the NIC may read them, and writes the
// doorbell (TDT) once per batch. Receive: every ring buffer is one whole
// 4 KiB frame; e1000_rx_poll hands filled frames to the caller, who keeps
// them (e.g. exchanges them into a user region) and gives frames back with
// e1000_rx_refill. A frame longer than 4096 bytes spans several buffers.
//
// Concurrency: the kernel runs on one CPU with interrupts off in kernel mode,
// so these calls and the interrupt handler never interleave; none of them
// sleeps or waits on hardware longer than a bounded time.
#ifndef E1000_H
#define E1000_H
#include "arch/x86_64/arch.h"
#include "net/netdev.h"

#define E1000_MAX_NICS NETDEV_MAX
#define E1000_MAX_SEGS NETDEV_MAX_SEGS
#define E1000_TX_DESC 1024  // 4 contiguous frames of descriptors
#define E1000_RX_DESC 1024  // 4 contiguous frames; 1023 buffers posted at most (341 jumbo frames)
#define E1000_RX_BUF 4096   // one frame per receive buffer
#define E1000_MAX_FRAME 9018 // longest frame sent, without FCS: 9014 + an 802.1Q tag
#define E1000_MIN_FRAME 14   // an Ethernet header; the NIC pads to 60 (TCTL.PSP)

struct e1000_dev; // one per NIC, owned by the driver

struct e1000_stats {
	uint64_t rx_frames, rx_bytes; // frames (EOP buffers) and bytes handed out by rx_poll
	uint64_t rx_errors;           // frames with CRC/symbol/sequence/RX-data errors
	uint64_t rx_no_buf;           // frames the NIC had no buffer for (RNBC)
	uint64_t tx_frames, tx_bytes; // packets reported done by tx_reclaim
	uint64_t doorbells;           // TDT writes (one per tx_batch that queued something)
	uint64_t irqs;                // interrupts that had a cause for this NIC
	uint64_t link_changes;        // link up/down transitions seen (LSC)
	uint64_t rx_refills;          // RDT writes
	uint64_t rx_descs, tx_descs;  // descriptors consumed / queued
	uint64_t rx_overruns;         // RXO interrupts
	uint64_t tx_errors;           // packets done with excess or late collisions
	uint64_t tx_ring_full;        // tx_batch calls that stopped for want of descriptors
	uint64_t tx_rejected;         // tx_batch calls refused for bad input
	uint64_t rx_refill_rejected;  // rx_refill calls refused for bad frames
	uint64_t hw_mpc, hw_rnbc, hw_roc, hw_crcerrs; // the NIC's own counters (SDM 13.7)
	uint64_t frames_owned;        // ring and buffer frames the driver holds now
};

// Attaches every supported NIC not yet attached (at most E1000_MAX_NICS)
// and registers each as a netdev; returns the number attached now. Prints
// one line per NIC. The I/O manager sees them only as struct netdev; the
// e1000_* calls below are the driver's own, for its self-test.
int e1000_probe_all(void);
int e1000_count(void);
struct e1000_dev *e1000_get(int idx); // NULL if none
int e1000_index(const struct e1000_dev *d);
// The NIC's netdev (the same one the registry holds, if it took it).
struct netdev *e1000_netdev(struct e1000_dev *d);
void e1000_get_mac(struct e1000_dev *d, uint8_t mac[6]);
bool e1000_link_up(struct e1000_dev *d); // STATUS.LU now

// Queues whole packets in order and writes TDT once. Returns how many were
// queued (0..n; fewer when the ring is full: reclaim and send the rest), or,
// changing nothing, -E_INVAL (n < 0, no segment, empty segment, a page not
// handed out by pmem (nor the kernel image's), the first MiB, a frame
// shorter than E1000_MIN_FRAME) or -E_2BIG (more than E1000_MAX_SEGS
// segments, or longer than E1000_MAX_FRAME). A segment takes one descriptor
// per started 4 KiB. Its frames stay pinned until tx_reclaim reports the
// packet (kernel-image pages, which pmem does not pin, excepted).
int e1000_tx_batch(struct e1000_dev *d, const struct netpkt *pkts, int n);
// Reports packets the NIC has finished (DD), in order: calls done(cookie,
// arg) once per packet (done may be NULL), unpins and frees the descriptors.
// Returns the number of packets reported.
int e1000_tx_reclaim(struct e1000_dev *d, void (*done)(uint64_t cookie, void *arg), void *arg);
int e1000_tx_free_descs(struct e1000_dev *d);

// Hands out up to max filled buffers in ring order; each frame becomes the
// caller's (unpinned, still allocated) and its slot stays empty until a
// refill. Returns the count (0 when nothing arrived).
int e1000_rx_poll(struct e1000_dev *d, struct rxfrag *out, int max);
// Posts frames to the empty slots in order, one RDT write per call. Returns
// how many were taken (min(n, free slots)); the caller keeps the rest.
// Changing nothing: -E_INVAL for a frame not page-aligned or not one pmem
// handed out; -E_BUSY for a frame pinned (by a send in flight, or listed
// twice). The driver pins the frames it holds.
int e1000_rx_refill(struct e1000_dev *d, const paddr_t *frames, int n);
int e1000_rx_free_slots(struct e1000_dev *d); // empty slots waiting for a refill

// Masks (false) or unmasks (true) the receive causes RXT0, RXO, RXDMT0.
// Link changes stay enabled. Unmasking with a cause pending interrupts at
// once, so "poll until empty, unmask, poll once more" loses no wake-up.
void e1000_rx_irq(struct e1000_dev *d, bool enable);
// Masks or unmasks TXDW (descriptor written back); off by default, since
// QEMU completes a batch inside the TDT write.
void e1000_tx_irq(struct e1000_dev *d, bool enable);
// Self-test only: fn runs in the interrupt with the causes read from ICR,
// after the driver handled LSC, instead of the netdev callbacks. NULL
// removes it.
void e1000_set_handler(struct e1000_dev *d, void (*fn)(struct e1000_dev *d, uint32_t icr, void *arg),
		       void *arg);
void e1000_get_stats(struct e1000_dev *d, struct e1000_stats *s);

// Frames the driver holds now (descriptor rings and posted buffers), one
// NIC or all.
uint64_t e1000_frames_owned(struct e1000_dev *d);
uint64_t e1000_frames_owned_all(void);
// Stops every NIC (no more DMA or interrupts), unpins what it still had
// queued for sending, frees every frame it owns and forgets the NICs;
// e1000_probe_all attaches them again. Returns the frames freed.
uint64_t e1000_detach_all(void);

// Boot self-test (e1000_test.c), modes "loop", "loopsmall", "oneway",
// "basic", "link", "detach", "msi", comma-separated. Prints TEST lines;
// returns the number of failed tests.
int e1000_selftest(const char *modes);

#endif
