// The network-device seam: every NIC family (e1000, virtio-net, ...)
// implements struct netdev_ops, and the I/O manager above drives NICs only
// through it. A driver registers one struct netdev per NIC it attaches;
// the registry numbers them 0..netdev_count()-1 in probe order (that
// number is the bit of dev_no's NIC mask).
//
// Transmit: a packet is a gather list of physically contiguous pieces (a
// header buffer, then the caller's payload frames); the driver points
// descriptors at them, pins their frames while the device may read them and
// notifies the device once per batch (e1000: one TDT write; virtio: one
// kick). Receive: every ring buffer is one whole page; rx_poll hands filled
// buffers to the caller, who keeps them (exchanges them into a user region)
// and gives pages back with rx_refill. A frame longer than a page spans
// several buffers, the last marked eop.
//
// Concurrency: callers hold the kernel lock with interrupts off, and so does
// the interrupt path, so these calls and the interrupt path never
// interleave; none sleeps or waits on hardware longer than a bounded time.
#ifndef NETDEV_H
#define NETDEV_H
#include <io.h>
#include "arch/x86_64/arch.h"

#define NETDEV_MAX IO_MAX_NICS // NICs in the registry (8: dev_no's mask has a bit each)
#define NETDEV_MAX_SEGS 6 // header + an 8960-byte payload at any offset (4 pages) + slack
#define NETDEV_RX_BUF PAGE_SIZE
#define NETDEV_RXQ_MAX 4 // receive queues a NIC may use (netdev_set_queues)

struct netseg {
	paddr_t pa;   // physical address of the first byte
	uint32_t len; // bytes, > 0
};
struct netpkt {
	struct netseg seg[NETDEV_MAX_SEGS];
	int nseg;
	uint64_t cookie; // handed to the reclaim callback when the NIC is done with it
};
struct rxfrag {
	paddr_t pa;   // the buffer page; the frame's bytes start at its first byte
	uint16_t len; // bytes of the frame in this buffer
	bool eop;     // last buffer of the frame
	bool error;   // the device flagged the frame bad (meaningful when eop)
};

// Counters every driver keeps; a field a device cannot count stays 0.
struct netdev_stats {
	uint64_t rx_frames, rx_bytes; // frames handed out by rx_poll
	uint64_t rx_errors;           // frames the device flagged bad
	uint64_t rx_no_buf;           // frames the device had no buffer for
	uint64_t tx_frames, tx_bytes; // packets reported done by tx_reclaim
	uint64_t doorbells;           // device notifications for transmit (TDT writes, kicks)
	uint64_t irqs;                // interrupts with a cause for this NIC
	uint64_t link_changes;        // link up/down transitions seen
	uint64_t rx_refills;          // receive notifications (RDT writes, kicks)
	uint64_t tx_ring_full;        // tx_batch calls that stopped for want of descriptors
	uint64_t tx_rejected;         // tx_batch calls refused for bad input
	uint64_t rx_refill_rejected;  // rx_refill calls refused for bad frames
	uint64_t frames_owned;        // ring and buffer frames the driver holds now
	// A NIC of several receive queues (rx_queues > 1): frames rx_poll
	// took from each, interrupts each queue raised.
	uint64_t rxq_frames[NETDEV_RXQ_MAX], rxq_irqs[NETDEV_RXQ_MAX];
	uint64_t txq_moves; // times sends moved to another queue
	int rxq_first;      // the receive queue of the first frame (-1: none yet)
};

struct netdev;

struct netdev_ops {
	// Queues whole packets in order and notifies the device once. Returns
	// how many were queued (0..n; fewer when the ring is full: reclaim and
	// send the rest), or, changing nothing, -E_INVAL (bad segment or frame)
	// or -E_2BIG (too many segments, longer than max_frame). The packets'
	// frames stay pinned until tx_reclaim reports them.
	int (*tx_batch)(struct netdev *nd, const struct netpkt *pkts, int n);
	// Reports finished packets in order: done(cookie, arg) once each,
	// unpins their frames. Returns how many.
	int (*tx_reclaim)(struct netdev *nd, void (*done)(uint64_t cookie, void *arg), void *arg);
	// Hands out up to max filled buffers in ring order; each page becomes
	// the caller's (unpinned, still allocated).
	int (*rx_poll)(struct netdev *nd, struct rxfrag *out, int max);
	// Posts pages to empty receive slots, one notification per call.
	// Returns how many were taken (min(n, free slots)); the caller keeps the
	// rest. -E_INVAL / -E_BUSY for a bad or pinned page, changing nothing.
	int (*rx_refill)(struct netdev *nd, const paddr_t *pages, int n);
	int (*rx_free_slots)(struct netdev *nd); // empty slots waiting for a refill
	// Masks (false) or unmasks (true) receive interrupts. Unmasking with
	// frames pending interrupts at once: "poll until empty, unmask, poll
	// once more" loses no wake-up.
	void (*rx_irq)(struct netdev *nd, bool enable);
	bool (*link_up)(struct netdev *nd);
	// Sends the device's interrupt to the CPU whose LAPIC ID is apic_id.
	int (*irq_cpu)(struct netdev *nd, uint32_t apic_id);
	// The same for receive queue q's interrupt alone (NULL: one queue).
	int (*rxq_irq_cpu)(struct netdev *nd, int q, uint32_t apic_id);
	void (*get_stats)(struct netdev *nd, struct netdev_stats *s);
	// Stops the device (no DMA, no interrupts) and frees every frame it
	// holds; the netdev is gone from the registry afterwards.
	void (*detach)(struct netdev *nd);
};

struct netdev {
	const struct netdev_ops *ops;
	const char *family;     // "e1000", "virtio-net"
	const char *model;      // "82540EM", ...
	uint8_t mac[6];
	uint32_t min_frame;     // shortest frame tx_batch takes (an Ethernet header)
	uint32_t max_frame;     // longest frame without FCS either way
	int rx_slots, tx_slots; // ring sizes (buffers, descriptors)
	// Receive queues (1 for most): a multiqueue NIC is still one ring to
	// the stack. rx_poll hands out whole frames of one queue after another
	// (never two queues' buffers interleaved within a frame), rx_refill
	// spreads pages over the queues, rx_slots and rx_free_slots count all
	// of them, rx_irq masks all; only their interrupts are their own
	// (rxq_irq_cpu), so each may wake a CPU of its own.
	int rx_queues;
	int index;              // registry number, set by netdev_register
	// Set by the stack: called from the device's interrupt when frames
	// arrived (receive interrupts unmasked), and when the link changes.
	void (*rx_ready)(struct netdev *nd, void *arg);
	void (*link_change)(struct netdev *nd, bool up, void *arg);
	void *upper;            // the stack's argument to both callbacks
};

// Adds nd to the registry; returns its index, or -E_NOMEM when full.
int netdev_register(struct netdev *nd);
// Takes nd out of the registry (the ones after it move down a number).
void netdev_unregister(struct netdev *nd);
// Removes every registered netdev after calling its detach (drivers probe
// again with netdev_probe_all). Returns how many were detached.
int netdev_detach_all(void);
// The registry itself, read on every packet (inline: the receive and relay
// paths ask for a NIC several times a frame); written only by netdev.c.
extern struct netdev *netdev_devs[NETDEV_MAX];
extern int netdev_ndevs;
static inline int netdev_count(void) { return netdev_ndevs; }
// NULL past the end.
static inline struct netdev *netdev_get(int idx)
{
	return idx >= 0 && idx < netdev_ndevs ? netdev_devs[idx] : NULL;
}
// The same for an index known to be registered (a frame's NIC, a channel's):
// no range check on the per-packet paths.
static inline struct netdev *netdev_at(int idx) { return netdev_devs[idx]; }
// Frames all registered drivers hold now.
uint64_t netdev_frames_owned_all(void);

// Driver table (kernel/nics.c, given to netdev_set_drivers at boot): one
// line per NIC family; each probe attaches the family's NICs on the PCI bus
// and registers them.
struct netdev_driver {
	const char *family;
	int (*probe_all)(void); // returns how many NICs it attached
};
// Calls every driver's probe; returns the NICs in the registry.
int netdev_probe_all(void);
// The table netdev_probe_all walks (none before: it probes nothing).
void netdev_set_drivers(const struct netdev_driver *table, int n);

// The receive filter of every NIC attached from now on. Off (the
// default): a NIC takes frames to its own MAC and broadcast only, as far
// as its hardware filters (e1000, e1000e; virtio-net through its control
// queue, when the device offers VIRTIO_NET_F_CTRL_RX). On (promisc=1 on
// the command line): every frame on the wire, for tests of the I/O
// manager's own destination check and for watching a segment's traffic
// in the counters; no frame for another station is ever delivered either
// way (the I/O manager drops and counts it: io_stats.drop_notme).
void netdev_set_promisc(bool on);
bool netdev_promisc(void);

// Receive queues (queue pairs) a NIC attached from now on uses when its
// device has several (virtio-net with VIRTIO_NET_F_MQ: nicq= on the
// command line); 1, the default, or a NIC with one: one queue, as before.
void netdev_set_queues(int n);
int netdev_queues(void);

// Hooks the stack installs once, applied to every NIC registered later too.
void netdev_set_upper(void (*rx_ready)(struct netdev *, void *),
		      void (*link_change)(struct netdev *, bool, void *));

static inline void netdev_rx_ready(struct netdev *nd)
{
	if (nd->rx_ready)
		nd->rx_ready(nd, nd->upper);
}
static inline void netdev_link_change(struct netdev *nd, bool up)
{
	if (nd->link_change)
		nd->link_change(nd, up, nd->upper);
}
#endif
