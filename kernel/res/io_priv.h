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

// Reliable channels (io_rel.c).
#define IO_SND_WIN 512         // packets a peer may have unacknowledged (<= IO_RO_WIN)
#define IO_REL_SLOT 256        // bytes per header slot of a reliable channel's pool
#define IO_REL_SLOTS 512       // slots: every transmission in flight holds one
#define IO_REL_PAGES ((int)(IO_REL_SLOTS * IO_REL_SLOT / PAGE_SIZE))

// One packet a reliable channel sent (or is to send) and the peer has not
// acknowledged: its payload frames stay pinned until then, and a
// retransmission sends them again (on the link chosen then).
struct rel_tx {
	paddr_t f[4];         // the payload frames (IO_PKT_PAGES)
	uint16_t off, size;   // first byte in f[0]; bytes
	uint8_t npages;
	uint8_t state;        // REL_*
	uint8_t link;         // the link of its last transmission
	uint8_t first;        // not sent yet at all
	uint16_t flags;       // WIRE_F_LAST
	uint16_t rtx;         // times sent again
	uint32_t lsn;         // its number among the link's transmissions to this peer
	uint64_t sent;        // TSC of its last transmission
};

// One link to one peer.
struct rel_link {
	uint8_t state;        // IO_LINK_*
	uint64_t last_rx, last_tx; // TSC: the last frame from / to the peer on it
	uint32_t lsn_next;    // transmissions on it so far
	uint32_t lsn_acked;   // above every acknowledged one's lsn
	uint32_t hb, echo;    // our last heartbeat number on it; the peer's last we got
	uint32_t probe;       // its echo of this (or a later) heartbeat brings it back
	uint64_t probe_at, dead_at;
	uint64_t sent, received, retransmitted, suspected, dead, recovered;
	uint64_t hb_sent, hb_received, acks_sent, acks_received;
	uint64_t last_detect_us, last_down_us, max_down_us, max_skew_us;
};

// A reliable channel's state towards one peer: both directions.
struct rel_peer {
	struct rel_tx tx[IO_SND_WIN]; // sequence number % IO_SND_WIN
	uint32_t una;          // the oldest unacknowledged sequence number
	uint32_t todo;         // no packet before it is waiting to be sent
	uint32_t session;      // the peer's (0: not heard yet)
	bool closed;           // it said goodbye
	bool reported;         // input_io gave -E_LINK for this death or goodbye
	uint64_t bye_at;       // TSC of its goodbye
	uint64_t newest_acked; // send TSC of the newest packet acknowledged
	uint64_t all_dead_since; // TSC every link died (0: one is up)
	uint32_t rx_unacked;   // receive progress since our last acknowledgement
	uint64_t ack_due;      // TSC an acknowledgement must go by (0: none due)
	uint8_t ack_rr;
	uint64_t window_waits;
	struct rel_link l[NETDEV_MAX];
};

struct rel_settings {
	uint64_t hb_us, hb_miss, skew_us, rto_us, dead_us, ack_every, ack_us, window;
};

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
// Their buffers count against the channel owner's frame limit while held.
struct reorder {
	struct frame f[IO_RO_WIN];
	uint32_t held;       // slots in use
	uint32_t hi;         // above the highest sequence number held
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
	// Reliable channels (io_rel.c).
	bool rel;                          // sequenced and reliable
	bool rel_used;                     // something was sent: rel is fixed
	uint32_t session;
	struct rel_settings rs;
	struct rel_peer *rp[IO_MAX_PEERS]; // from the heap, per known peer
	paddr_t rhdr[IO_REL_PAGES];        // the header slot pool (rel only)
	uint16_t rfree[IO_REL_SLOTS];      // free slots (a stack)
	uint32_t nrfree;
	uint32_t call_left;                // packets of the running send not yet sent once
	// Peers named by node (IO_OP_NODE, io_relay.c) that are not neighbours:
	// their frames carry a route trailer and go to the first relay's MACs.
	uint32_t routed;                   // bit p: peer p is routed
	uint32_t route_node[IO_MAX_PEERS];
	uint8_t route_hops[IO_MAX_PEERS];
	// Balancing (io_lb.c): IO_OP_BALANCE's policy, the channel's slot in the domain
	uint8_t lb_policy;                 // IO_LB_* (0: none)
	int8_t lb_slot;                    // -1: not balanced
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
	bool link_up;          // the NIC's link, as its link-change interrupts last said
	uint64_t drop_short, drop_ethertype, drop_badlen, drop_toolong, drop_nochan, drop_rxerr;
	uint64_t drop_notme;   // addressed to another MAC (another station, a group address)
	struct frame partial;  // buffers of a frame whose EOP has not come yet
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
// n buffers were kept out of nic's ring: free frames replace those that
// leave it below three quarters posted. -E_NOMEM, taking none, when there
// are too few free frames (the caller gives the buffers back instead).
long io_replenish(int nic, int n);

// io_rel.c: reliable channels.
long io_rel_enable(struct io *c, bool on); // IO_OP_RELIABLE
long io_rel_set(struct io *c, uint64_t key, uint64_t val);
long io_rel_add_peer(struct io *c, int peer); // IO_OP_PEER: its state
long io_rel_linkstats(struct io *c, uint64_t peer, struct io_linkstats *s);
long io_rel_send(struct io *c, const uint64_t *peers, const uint64_t *sizes, const uint64_t *pos,
		 const struct io_pktframes *frames);
// A control frame (WIRE_F_ACK/HBEAT) from peer on link nic; payload p, len bytes.
void io_rel_ctrl(struct io *c, int peer, int nic, const uint8_t *p, uint32_t len);
// A data frame from peer on nic: liveness and the acknowledgement due;
// false when it belongs to an earlier session of the peer (drop it).
bool io_rel_data(struct io *c, int peer, int nic, uint16_t tag);
// rx_next moved, or a frame came (now: a batch's last, acknowledged at once).
void io_rel_rx_progress(struct io *c, int peer, bool now);
void io_rel_rx_moved(struct io *c, int peer); // input_io made room: rx_next moved
void io_rel_tick(struct io *c);
void io_rel_link_change(int nic, bool up);
// The TSC at which input_io must report a dead peer (0: none), and the report.
// A peer's goodbye is reported once what was sent to it is settled and
// every frame it sent is delivered.
uint64_t io_rel_dead_deadline(struct io *c);
long io_rel_dead_report(struct io *c);
// From when peer's hole counts towards gap_us on a reliable channel
// (`since`, or its goodbye if later); 0 while its sender may still fill it.
uint64_t io_rel_hole_since(const struct io *c, int peer, uint64_t since);
// free_io: waits (bounded) for the peers to acknowledge what was sent,
// then says goodbye. io_rel_free lets go of everything (any context).
void io_rel_linger(struct io *c);
void io_rel_free(struct io *c);
// The transmit completion of a pool slot.
void io_rel_slot_done(struct io *c, uint32_t slot);
bool io_rel_cookie(uint64_t cookie); // a pool slot's cookie

// io_lb.c: balancing senders over the NICs of their channels.
long io_lb_set(struct io *c, uint64_t policy, uint64_t t_ms, uint64_t pct); // IO_OP_BALANCE
long io_lb_stats(struct io *c, struct io_lbstats *s);                       // IO_OP_LBSTATS
void io_lb_on_send(struct io *c); // output_io: the period turn, the sender's decision
// True when a bound sender's packet to peer must not take nic (its NIC can).
bool io_lb_skip(struct io *c, int peer, int nic);
void io_lb_sent(struct io *c, int nic, uint64_t bytes); // frame bytes that left on nic
void io_lb_free(struct io *c);

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
// Gives back every frame peer's window holds and empties it; returns how many.
uint32_t io_order_drop(struct io *c, int peer);
void io_order_free(struct io *c);
// Frames that waited for room and are in order go to the channel.
void io_release_waiting(struct io *c);
#endif
