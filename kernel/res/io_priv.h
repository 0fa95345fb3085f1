// The I/O manager's own table and the helpers its files share: io.c
// (channels, control, system calls) and io_slot.c (the channel's sink).
// The transports under kernel/net/ reach the channel's state through it.
#ifndef IO_PRIV_H
#define IO_PRIV_H
#include "io.h"
#include "res.h"
#include "../arch/x86_64/arch.h"
#include "../net/netdev.h"
#include "../net/pkt.h"
#include "../net/reliable.h"
#include "../net/demux.h"
#include <io.h>
#include <wire.h>

#define IO_PEND 128            // frames held for a channel between input_io calls
#define IO_PEND_RING (IO_PEND + 4) // and room for gap markers among them
#define IO_MAX_FRAME (WIRE_FRAME_HLEN + WIRE_MAX_PAYLOAD) // longest frame we send
#define IO_POLL_US 20           // poll=timer: the tick while polling
#define IO_HDR_SLOT 64         // bytes per header in the header frames
#define IO_HDR_FRAMES ((int)(IO_MAX_BATCH * IO_HDR_SLOT / PAGE_SIZE))
#define IO_GAP_US 200000       // default wait for a missing striped frame (IO_OP_GAPWAIT)

struct reorder;
struct io_txcall;

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
	struct pkt pend[IO_PEND_RING];
	uint32_t pend_head, pend_n;
	// Ethernet + wire headers of the packets in flight, one slot each.
	paddr_t hdr[IO_HDR_FRAMES];
	uint32_t inflight;
	struct io_txcall *tx;  // from the heap, while the channel exists
	// Reliable channels (kernel/net/reliable.c).
	bool rel;                          // sequenced and reliable
	bool rel_used;                     // something was sent: rel is fixed
	uint32_t session;
	struct rel_settings rs;
	struct rel_peer *rp[IO_MAX_PEERS]; // from the heap, per known peer
	paddr_t rhdr[IO_REL_PAGES];        // the header slot pool (rel only)
	uint16_t rfree[IO_REL_SLOTS];      // free slots (a stack)
	uint32_t nrfree;
	uint32_t call_left;                // packets of the running send not yet sent once
	// Peers named by node (IO_OP_NODE, kernel/net/relay.c) that are not neighbours:
	// their frames carry a route trailer and go to the first relay's MACs.
	uint32_t routed;                   // bit p: peer p is routed
	uint32_t route_node[IO_MAX_PEERS];
	uint8_t route_hops[IO_MAX_PEERS];
	// Balancing (kernel/net/balance.c): IO_OP_BALANCE's policy, the channel's slot in the domain
	uint8_t lb_policy;                 // IO_LB_* (0: none)
	int8_t lb_slot;                    // -1: not balanced
	struct io_stats st;
};

extern struct io ios[NIO];
extern uint64_t io_copy_threshold;
extern bool io_rx_scrub;

// The pages under one packet's payload, looked up when the send is checked.
#define IO_PKT_PAGES 4 // 8960 bytes at any offset span at most 4 pages
struct io_pktpages {
	paddr_t f[IO_PKT_PAGES];
};

// io_slot.c: the channel's sink.
// True while an input_io collects a batch that has room.
bool io_waiting(const struct io *c);
// True when c can take f now: into the waiting batch, or held.
bool io_can_take(const struct io *c, const struct pkt *f);
// Hands an in-order packet to its channel: into the waiting batch, else held.
void io_take(struct io *c, const struct pkt *f);
// Delivers held packets into the batch's slots, oldest first; -E_GAP when
// a gap marker came first (taken), else 0.
long io_deliver_pending(struct io *c);
void io_drop_pending(struct io *c);

static inline bool io_striped(const struct io *c) { return c->nicmask & (c->nicmask - 1); }
#define IO_FOR_EACH_NIC(c, n) \
	for (int n = 0; n < NETDEV_MAX; n++) \
		if ((c)->nicmask & (1u << n))

#endif
