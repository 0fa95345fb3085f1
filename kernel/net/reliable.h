// Reliable channels (reliable.c): sequenced, acknowledged, retransmitted.
#ifndef NET_RELIABLE_H
#define NET_RELIABLE_H
#include "netdev.h"
#include <io.h>

struct io;
struct io_pktpages;

#define IO_SND_WIN 512         // packets a peer may have unacknowledged (<= IO_RO_WIN)
#define IO_REL_SLOT 256        // bytes per header slot of a reliable channel's pool
#define IO_REL_SLOTS 512       // slots: every transmission in flight holds one
#define REL_TICK_BUDGET 32     // packets a channel's timers send per worker run
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
	uint64_t woke_for;     // the report time (rel_report_at) rel_tick woke input_io for
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

long rel_enable(struct io *c, bool on); // IO_OP_RELIABLE
long rel_set(struct io *c, uint64_t key, uint64_t val);
long rel_add_peer(struct io *c, int peer); // IO_OP_PEER: its state
long rel_linkstats(struct io *c, uint64_t peer, struct io_linkstats *s);
long rel_send(struct io *c, const uint64_t *peers, const uint64_t *sizes, const uint64_t *pos,
	      const struct io_pktpages *pages);
// A control packet (WIRE_F_ACK/HBEAT) from peer on link nic; payload p, len bytes.
void rel_ctrl(struct io *c, int peer, int nic, const uint8_t *p, uint32_t len);
// A data packet from peer on nic: liveness and the acknowledgement due;
// false when it belongs to an earlier session of the peer (drop it).
bool rel_data(struct io *c, int peer, int nic, uint16_t tag);
// rx_next moved, or a packet came (now: a batch's last, acknowledged at once).
void rel_rx_progress(struct io *c, int peer, bool now);
void rel_rx_moved(struct io *c, int peer); // input_io made room: rx_next moved
void rel_tick(struct io *c);
// Sends the acknowledgements the receive path made due without the kernel
// lock (rel_send_ctrl could not send them then).
void rel_settle(struct io *c);
uint64_t rel_next(struct io *c, uint64_t now); // when rel_tick next has work
void rel_link_change(int nic, bool up);
// The TSC at which input_io must report a dead peer (0: none), and the report.
// A peer's goodbye is reported once what was sent to it is settled and
// every packet it sent is delivered.
uint64_t rel_dead_deadline(struct io *c);
long rel_dead_report(struct io *c);
// From when peer's hole counts towards gap_us on a reliable channel
// (`since`, or its goodbye if later); 0 while its sender may still fill it.
uint64_t rel_hole_since(const struct io *c, int peer, uint64_t since);
// free_io: waits (bounded) for the peers to acknowledge what was sent,
// then says goodbye. rel_free lets go of everything (any context).
void rel_linger(struct io *c);
void rel_free(struct io *c);
// The transmit completion of a pool slot.
void rel_slot_done(struct io *c, uint32_t slot);
uint32_t rel_free_slots(struct io *c);
#endif
