// A fake NIC behind the netdev seam (kernel/net/netdev.h), over the fake
// page pool: what the I/O manager asks of a driver, and what a test needs
// to play the wire and the device.
//
// Transmit: tx_batch checks packets as e1000 does, records every packet
// (its gather list, total length and first FAKE_TX_SNAP bytes as gathered
// at queue time), pins every page its segments touch and counts one
// doorbell per call that queued something. Nothing finishes by itself:
// fake_nic_tx_complete plays the device finishing packets (or `autocomplete`
// finishes each at once, as QEMU does inside the doorbell write), and only
// then does tx_reclaim report them, unpin their pages and count them. Only
// tx_reclaim makes room: a caller that finds the ring full FAKE_TX_SPIN
// times in a row without reclaiming would spin forever, and fails the test.
//
// Receive: a ring of rx_slots posted pages, each pinned while posted
// (attach fills it with zeroed pages, as e1000 does). fake_nic_rx plays a
// frame arriving: its bytes go into the next empty posted pages, one page
// per buffer, the last marked eop (and error when asked); rx_poll hands
// filled buffers out in order and unpins them. The receive interrupt is a
// test's call: fake_nic_irq fires rx_ready when interrupts are unmasked and
// a filled buffer waits.
#ifndef FAKE_NETDEV_H
#define FAKE_NETDEV_H
#include <stdbool.h>
#include <stdint.h>
#include "net/netdev.h"

#define FAKE_NIC_MAX 4
#define FAKE_NIC_RX_SLOTS 32   // default receive ring
#define FAKE_NIC_TX_SLOTS 256  // default packets in flight
#define FAKE_NIC_RING_MAX 1100 // largest ring a test may ask for (above IO_RING_MAX)
#define FAKE_TX_LOG 1024       // packets recorded per NIC
#define FAKE_TX_SNAP 128       // bytes of each packet kept
#define FAKE_TX_SPIN 1000     // tx_batch calls finding the ring full with no reclaim between
#define FAKE_MIN_FRAME 14
#define FAKE_MAX_FRAME 9018

struct fake_tx {
	struct netpkt pkt;               // the gather list as queued
	uint32_t len;                    // bytes in all segments
	uint8_t bytes[FAKE_TX_SNAP];     // the first bytes, gathered at queue time
	int doorbell;                    // which doorbell (1, 2, ...) sent it
	bool done, reclaimed;
};

struct fake_rxslot {
	paddr_t pa;
	uint16_t len;
	bool filled, eop, error;
};

struct fake_nic {
	struct netdev nd; // first: ops get &nd
	bool attached;
	// transmit
	struct fake_tx tx[FAKE_TX_LOG];
	int ntx;                  // packets queued (log entries)
	int tx_done, tx_reclaimed; // log indexes: finished by the device, reported
	bool autocomplete;
	// Called as tx_batch returns, q packets queued: what another CPU's
	// reclaim could see from this moment (the device may be done already).
	void (*tx_hook)(struct fake_nic *f, int q);
	int tx_fail;              // when < 0: the next tx_batch returns it, queueing nothing
	int tx_full_streak;       // tx_batch calls in a row that found no room
	// receive
	struct fake_rxslot ring[FAKE_NIC_RING_MAX];
	int rx_head, rx_posted, rx_filled; // next to hand out; posted; filled of those
	bool rx_irq_on;
	int rx_irq_calls;         // rx_irq(false/true) calls
	// As virtio-net (vnet_rx_irq): unmasking with frames already in the
	// ring signals them at once, from inside rx_irq(true), as their
	// interrupt would have. unmask_hook runs first: a frame that came
	// while the interrupt was masked.
	bool ready_on_unmask;
	void (*unmask_hook)(struct fake_nic *f);
	bool link;
	int reclaim_calls, poll_calls, refill_calls;
	struct netdev_stats st;
};

extern struct fake_nic fake_nics[FAKE_NIC_MAX];

// Forgets every fake NIC and empties the registry (test setup; pmem is new).
void fake_netdev_reset(void);
// Attaches fake NIC i: fills its ring with rx_slots zeroed pinned pages,
// link up, receive interrupts on, MAC 02:00:00:00:00:0i; registers it.
// Returns its registry index.
int fake_nic_attach(int i, int rx_slots, int tx_slots);

// The wire: a frame of len bytes arrives. Returns the buffers it took, or
// -1 when too few empty buffers are posted (the device drops it: rx_no_buf).
int fake_nic_rx(int i, const void *bytes, uint32_t len, bool error);
// The k-th next empty posted buffer (what the next frame lands in), 0 if none.
paddr_t fake_nic_rx_next(int i, int k);
// pa is posted in the ring (empty or filled).
bool fake_nic_rx_has(int i, paddr_t pa);
// The receive interrupt: when unmasked and a filled buffer waits, counts
// an interrupt and calls the stack's rx_ready, then runs the network
// worker as the kernel does on the interrupt's way out (worker_run). Returns
// whether it fired.
bool fake_nic_irq(int i);

// A timer tick and the network worker's run on its way out, as the
// kernel does (kernel/main.c: worker_note_tick, then worker_run).
void io_tick(void);

// The device finishes the next n queued packets (all: n < 0).
void fake_nic_tx_complete(int i, int n);
// Packets queued and not yet reported by tx_reclaim.
int fake_nic_tx_inflight(int i);
// Link state change; the stack's link_change is called.
void fake_nic_set_link(int i, bool up);
// Every attached NIC finishes every queued packet.
void fake_nic_tx_complete_all(void);
// The end of an I/O test: res_machine_teardown, then every NIC detached
// (a fatal error on the way is caught: the next test starts clean).
void fake_io_teardown(void);
#endif
