// The I/O manager's own table and the helpers its two files share:
// io.c (channels, control, system calls) and io_net.c (send and receive).
#ifndef IO_PRIV_H
#define IO_PRIV_H
#include "io.h"
#include "res.h"
#include "../arch/x86_64/arch.h"
#include "../net/netdev.h"
#include <io.h>
#include <wire.h>


#define IO_PEND 128            // frames held for a channel between input_io calls
#define IO_PEND_RING (IO_PEND + 4) // and room for gap markers among them
#define IO_MAX_BUFS 3          // receive buffers of the longest frame (9018 bytes)
#define IO_RING_MAX 1024       // receive buffers a NIC may post (larger rings are refused)
#define IO_MAX_FRAME (WIRE_FRAME_HLEN + WIRE_MAX_PAYLOAD) // longest frame we send
#define IO_POLL_US 20           // poll=timer: the tick while polling
#define IO_TX_WAIT_US 20000     // longest spin for the NIC to take or finish a batch
#define IO_TX_SLEEP_US 1000000  // then, in a system call, how long more it sleeps on ticks
#define IO_HDR_SLOT 64         // bytes per header in the header frames
#define IO_HDR_FRAMES ((int)(IO_MAX_BATCH * IO_HDR_SLOT / PAGE_SIZE))
#define IO_RO_WIN 1024         // striped frames a peer may be ahead of the next in order (4 rings)
#define IO_GAP_US 200000       // default wait for a missing striped frame (IO_OP_GAPWAIT)
#define IO_PACE_DEPTH_US 4000  // a paced NIC's queue: wire time a sender may run ahead (+2 frames)

// A received frame: its buffers, in order. nbuf == 0 in a channel's pend
// queue is a gap marker: the hole input_io reports with -E_GAP (len unused).
struct frame {
	paddr_t buf[IO_MAX_BUFS];
	uint8_t nbuf;
	uint8_t nic;   // the NIC it came from: its buffers go back to that ring
	uint16_t len;
};

// Striped frames of one peer that came ahead of the next in order, each in
// the slot of its sequence number modulo the window; nbuf == 0: empty.
// The receive side fills slots and input_io's side drains them; both run
// with interrupts off on one CPU, so no lock is needed (HXB section 3.2).
struct reorder {
	struct frame f[IO_RO_WIN];
	uint32_t held;       // slots in use
	bool hole;           // held, but the next in order is missing
	uint64_t since;      // TSC when that hole was first seen
};

struct io {
	struct res_hdr h;
	int owner;
	int nic;               // the first (lowest) NIC of the channel's links
	struct netdev *dev;    // its netdev
	uint8_t nicmask;       // every NIC the channel has: more than one stripes
	uint16_t channel;
	bool raw;              // IO_KIND_RAW: frames are sent as the user built them
	uint32_t n_in, n_out;
	bool regions;
	long in_vr, out_vr;
	uint64_t in_addr, in_size, out_addr, out_size, slot_size;
	uint8_t peer[IO_MAX_PEERS][NETDEV_MAX][6]; // a peer's MAC on each link (NIC)
	uint8_t peer_links[IO_MAX_PEERS];           // the links a peer is known on
	uint32_t peer_valid;                        // peers known on some link
	uint32_t seq[IO_MAX_PEERS];
	uint8_t rr[IO_MAX_PEERS];     // the link the next striped packet to a peer takes
	// Receive order of striped frames, per peer.
	uint32_t rx_next[IO_MAX_PEERS];  // the sequence number input_io gets next
	struct reorder *ro[IO_MAX_PEERS]; // allocated on the first frame ahead of order
	int last_peer;                   // the peer of the last striped frame
	uint64_t gap_us;                 // how long a hole may stay open
	bool cut;                        // the batch ends here: a gap follows
	uint64_t timeout_us;
	// The batch an input_io is collecting.
	bool waiting;
	uint32_t got;
	uint64_t sizes[IO_MAX_BATCH], pos[IO_MAX_BATCH];
	// Frames that came before input_io asked.
	struct frame pend[IO_PEND_RING];
	uint32_t pend_head, pend_n;
	// Ethernet + wire headers of the packets in flight, one slot each.
	paddr_t hdr[IO_HDR_FRAMES];
	uint32_t inflight;
	struct io_txcall *tx;  // from the heap, while the channel exists
	struct io_stats st;
};

// A send call's packets grouped by link, kept per channel: a paced send
// sleeps, and other channels send meanwhile.
struct io_txcall {
	struct netpkt pkts[IO_MAX_BATCH];
	uint8_t idx[IO_MAX_BATCH];    // pkts[k] is packet idx[k] of the call
	uint64_t peer[IO_MAX_BATCH], size[IO_MAX_BATCH];
	int8_t nic[IO_MAX_BATCH];     // its link; -1: none was up
	uint8_t sent[IO_MAX_BATCH];
};

// Per NIC: the receive side's state and the drops no channel can own.
struct io_nic {
	bool polling;          // RX interrupts masked; frames are polled
	uint64_t drop_short, drop_ethertype, drop_badlen, drop_toolong, drop_nochan, drop_rxerr;
	struct frame partial;  // buffers of a frame whose EOP has not come yet
	// Pacing (nic_mbps=): the wire is modelled busy until pace_free.
	uint64_t tsc_per_kbit;  // 0: unpaced
	uint64_t pace_free;     // TSC at which the frames given so far are "sent"
	uint64_t pace_depth;    // TSC: how far a sender may run ahead of the wire
	bool overlong;         // partial had more buffers than IO_MAX_BUFS
	// Frames waiting to go back to this NIC's ring: posted in groups, since
	// every RDT write is a device register write (an exit under emulation).
	paddr_t refill[IO_RING_MAX + IO_MAX_BUFS];
	int nrefill;
};

extern struct io ios[NIO];
extern struct io_nic io_nics[NETDEV_MAX];
extern uint64_t io_copy_threshold;
extern bool io_rx_scrub;

// The frames under one packet's payload, looked up when the send is checked.
#define IO_PKT_PAGES 4 // 8960 bytes at any offset span at most 4 pages
struct io_pktframes {
	paddr_t f[IO_PKT_PAGES];
};

static inline bool io_striped(const struct io *c) { return c->nicmask & (c->nicmask - 1); }
#define IO_FOR_EACH_NIC(c, n) \
	for (int n = 0; n < NETDEV_MAX; n++) \
		if ((c)->nicmask & (1u << n))

// io_net.c
long io_send(struct io *c, const uint64_t *peers, const uint64_t *sizes, const uint64_t *pos,
	     const struct io_pktframes *frames);
// Reports a NIC's finished packets, every channel's; returns how many.
int io_reclaim_nic(int nic);
void io_reclaim(struct io *c); // the NIC of channel c
// A NIC the I/O manager drives: its receive ring fits the refill list.
static inline bool io_nic_usable(int nic)
{
	return nic >= 0 && nic < netdev_count() && netdev_get(nic)->rx_slots <= IO_RING_MAX;
}
// Reclaims until nothing of c is in flight (bounded); false if it stayed busy.
bool io_tx_idle(struct io *c);
void io_poll_nic(int nic);
void io_rx_ready(struct netdev *nd, void *arg);
// Delivers held frames into the batch's slots, oldest first; -E_GAP when
// a gap marker came first (taken), else 0.
long io_deliver_pending(struct io *c);
// Polls every NIC of c (a striped channel's in turns).
void io_poll_channel(struct io *c);
// True when c can take f now: into the waiting batch, or held.
bool io_can_take(const struct io *c, const struct frame *f);
void io_drop_pending(struct io *c);
// Hands an in-order frame to its channel: into the waiting batch, else held.
void io_take(struct io *c, const struct frame *f);
void io_give_back(const struct frame *f); // to the ring of f->nic
void io_refill_add(int nic, paddr_t pa);
// n buffers were kept out of nic's ring: reserve frames replace them when
// the ring runs below half.
void io_replenish(int nic, int n);
// Sets a NIC's transmit rate (0: unpaced).
void io_pace_set(int nic, uint32_t mbps);

// io_stripe.c: striped channels (several NICs): link choice, receive order.
// The peer whose MAC on some link of c is mac, or -1.
int io_peer_of(struct io *c, const uint8_t *mac);
// The link (NIC) the next packet to peer goes on: round-robin over the
// peer's links that are up; -1 when none is.
int io_next_link(struct io *c, uint64_t peer);
// A striped frame from peer with sequence number seq, taken in order
// (io_take), held ahead of order, or dropped as a duplicate.
void io_order(struct io *c, int peer, uint32_t seq, const struct frame *f);
// The TSC at which the oldest hole of c must be reported (0: none).
uint64_t io_gap_deadline(const struct io *c);
// Declares every hole whose wait ran out: a gap marker, then the frames
// after it, in order.
void io_gap_expire(struct io *c);
void io_order_free(struct io *c);
// Frames that waited for room and are in order go to the channel.
void io_release_waiting(struct io *c);
#endif
