// The transport under a channel: its state (struct xport, owned by
// kernel/net: the channel resource holds it but never reads it) and the
// one ops table every transport implements. Three transports: raw (frames
// as the user built them), plain (sequenced, unacknowledged; striped over
// several NICs when the channel has them) and reliable (acknowledged and
// retransmitted, over the same striping). Both plain and reliable send to
// a peer named by node through the relays (relay.c): reliable over
// striped over routed. The resource (kernel/res/io.c) calls only the
// xport_* entry points below; which transport runs is chosen at get_io
// and by IO_OP_RELIABLE.
#ifndef NET_TRANSPORT_H
#define NET_TRANSPORT_H
#include "netdev.h"
#include "reliable.h"
#include <io.h>
#include <wire.h>

// A plain send's slot per packet of a call in the header pages: the
// header, then a payload of up to IO_TX_COPY bytes copied in behind it (one
// descriptor, no page of the caller's pinned), then from IO_HDR_SLOT / 2 a
// route trailer (relay.c). Longer payloads are gathered from the caller's
// pages. Two banks of a call's slots, calls taking them in turn (plain.c):
// 16 frames a channel.
#define IO_HDR_SLOT 256
#define IO_HDR_BANKS 2
#define IO_HDR_BANK_PAGES ((int)(IO_MAX_BATCH * IO_HDR_SLOT / PAGE_SIZE))
#define IO_HDR_PAGES (IO_HDR_BANKS * IO_HDR_BANK_PAGES)
#define IO_TX_COPY (IO_HDR_SLOT / 2 - WIRE_FRAME_HLEN)

struct io;
struct pkt;
struct reorder;
struct io_txcall;
struct io_pktpages;
struct io_stats;
struct io_options;

struct xport_ops {
	const char *name;
	// Decode: may packet i of sizes[i] bytes go to peers[i]? Returns the
	// first of the n that may not, with output_io's error in *err; n when
	// all may.
	uint32_t (*check)(struct io *c, const uint64_t *peers, const uint64_t *sizes, uint32_t n, long *err);
	// Decode, after every packet passed: can the call go at all?
	long (*check_call)(struct io *c);
	// Invoke: a checked call (the caller's own arrays); how many left.
	long (*send)(struct io *c, const uint64_t *peers, const uint64_t *sizes, const uint64_t *pos,
		     const struct io_pktpages *pages);
	// A striped packet of the channel from peer on nic (the demux found
	// both); takes its buffers.
	void (*input)(struct io *c, int nic, const struct pkt *f, int peer);
	void (*tick)(struct io *c); // protocol timers (NULL: none)
	// After the receive path ran without the kernel lock: what it could
	// not send then (acknowledgements made due), under the lock now.
	void (*settle)(struct io *c);
	// When tick next has work, a TSC value (now or before: at the next
	// tick; NULL with a tick: every tick).
	uint64_t (*next)(struct io *c, uint64_t now);
	// When input_io must look again: a hole's or a dead peer's (0: none).
	uint64_t (*deadline)(struct io *c);
	long (*report)(struct io *c); // input_io's -E_LINK for a dead or departed peer, once
	void (*close)(struct io *c);  // free_io: what was sent settles (bounded), goodbye
	void (*stats)(struct io *c, struct io_stats *s);
};

// One channel's transport state.
struct xport {
	const struct xport_ops *ops;
	bool raw;              // IO_KIND_RAW: packets are sent as the user built them
	uint8_t peer[IO_MAX_PEERS][NETDEV_MAX][6]; // a peer's MAC on each link (NIC)
	uint8_t peer_links[IO_MAX_PEERS];           // the links a peer is known on
	uint32_t peer_valid;                        // peers known on some link
	uint32_t seq[IO_MAX_PEERS];
	uint8_t rr[IO_MAX_PEERS];     // the link the next striped packet to a peer takes
	// Receive order of striped packets, per peer (stripe.c).
	uint32_t rx_next[IO_MAX_PEERS];  // the sequence number input_io gets next
	struct reorder *ro[IO_MAX_PEERS];
	int last_peer;                   // the peer of the last striped packet
	uint64_t gap_us;                 // how long a hole may stay open
	// Ethernet + wire headers of the packets in flight, one slot each:
	// bank b's pages are hdr[b * IO_HDR_BANK_PAGES ...]. A call builds in
	// `bank` while the previous call's packets, in the other, may still
	// be on the NIC, and waits only for what is left of the call before.
	paddr_t hdr[IO_HDR_PAGES];
	uint32_t bank_inflight[IO_HDR_BANKS]; // packets on a NIC, of each bank (xport_inflight)
	uint8_t bank;                        // the bank the next call builds in
	struct io_txcall *tx;  // from the heap, while the channel exists
	// Reliable channels (reliable.c).
	bool rel;                          // sequenced and reliable
	bool rel_used;                     // something was sent: rel is fixed
	uint32_t session;
	struct rel_settings rs;
	struct rel_peer *rp[IO_MAX_PEERS]; // from the heap, per known peer
	paddr_t rhdr[IO_REL_PAGES];        // the header slot pool (rel only)
	uint16_t rfree[IO_REL_SLOTS];      // free slots (a stack)
	uint32_t nrfree;
	// Slots a completion gave back, a bit each, set by atomic or from any
	// CPU (rel_slot_done); the stack takes them under the channel's lock
	// (rel_free_slots).
	uint64_t rret[IO_REL_SLOTS / 64];
	uint32_t call_left;                // packets of the running send not yet sent once
	// Peers named by node (IO_OP_NODE, relay.c) that are not neighbours:
	// their packets carry a route trailer and go to the first relay's MACs.
	uint32_t routed;                   // bit p: peer p is routed
	uint32_t route_node[IO_MAX_PEERS];
	uint8_t route_hops[IO_MAX_PEERS];
	// Balancing (balance.c): IO_OP_BALANCE's policy, the channel's slot in the domain
	uint8_t lb_policy;                 // IO_LB_* (0: none)
	int8_t lb_slot;                    // -1: not balanced
};

// A plain channel's packets on a NIC, both banks.
static inline uint32_t xport_inflight(const struct xport *x)
{
	uint32_t n = 0;
	for (int b = 0; b < IO_HDR_BANKS; b++)
		n += __atomic_load_n(&x->bank_inflight[b], __ATOMIC_RELAXED);
	return n;
}

extern const struct xport_ops xport_raw, xport_plain, xport_reliable;

// Kernel heap for channel c's transport, charged to its owner (LIM_KHEAP):
// zeroed; NULL with *err = -E_LIMIT (the owner's share is spent) or
// -E_NOMEM. xport_kfree gives it back (NULL: nothing).
void *xport_kzalloc(struct io *c, size_t n, long *err);
void xport_kfree(struct io *c, void *p, size_t n);
// A peer's state, allocated when the peer is added (never on the receive
// path): its reorder window, and when reliable its protocol state. 0, or
// the error, with nothing this call allocated kept.
long xport_add_peer_state(struct io *c, int peer);
// get_io: the channel's transport (raw; else plain, reliable when striped)
// with its header pages and send list. 0, or an error with nothing kept.
long xport_open(struct io *c, bool raw);
// Lets go of everything the transport holds (any context).
void xport_free(struct io *c);
// free_io: -E_BUSY while a NIC still holds the channel's packets; else
// the transport closes (a reliable one lingers, bounded, and says goodbye).
long xport_close(struct io *c);
// IO_OP_PEER: peer's MAC on link nic.
long xport_set_peer(struct io *c, uint64_t peer, uint64_t nic, const uint8_t mac[6]);
long xport_set_gapwait(struct io *c, uint64_t us); // IO_OP_GAPWAIT
// IO_OP_RECLAIM: what the NICs still hold of the channel's packets.
long xport_held(struct io *c);
// Decode (output_io): the packets (the first the transport refuses, its
// error in *err; n: none), then the call as a whole (ops check).
uint32_t xport_check(struct io *c, const uint64_t *peers, const uint64_t *sizes, uint32_t n, long *err);
long xport_check_call(struct io *c);
// Invoke: the balancer's turn, then the transport's send.
long xport_send(struct io *c, const uint64_t *peers, const uint64_t *sizes, const uint64_t *pos,
		const struct io_pktpages *pages);
// When input_io must look again (0: never); then what is due: a hole
// declared (XPORT_GAP: the batch may go on) or a peer to report.
// Under the kernel lock: what the lock-free receive path left due.
void xport_settle(struct io *c);
// Whether this context may transmit (the NICs' transmit side is the
// kernel lock's): the receive path without it makes its sends due instead.
bool xport_may_send(void);
uint64_t xport_deadline(struct io *c);
enum { XPORT_GAP = 1, XPORT_REPORT = 2 };
int xport_expire(struct io *c);
long xport_report(struct io *c); // a dead or departed peer's -E_LINK, once (else 0)
// IO_OP_STATS: the transport's and its NICs' part.
void xport_stats(struct io *c, struct io_stats *s);
// Protocol timers of every channel (the worker's, after a tick): each
// channel's NICs drained first (budgeted), then its transport's tick.
void xport_tick_all(void);
// When any channel's protocol timers are next due (UINT64_MAX: none): the
// scheduler's tickless idle sleeps until then.
uint64_t xport_next_all(uint64_t now);
// The idle CPU's: completions reclaimed, then a worker run; true while
// any NIC is polled.
bool xport_idle(void);
// An output_io without the kernel lock left other senders' completions
// on c's NICs (xport_tx_later); xport_tx_settle hands them over under the
// kernel lock (no lock held).
bool xport_tx_later(const struct io *c);
void xport_tx_settle(uint32_t nicmask);
// Sets up the network path: link changes, the relay's topology, pacing;
// returns how many NICs it drives.
int xport_init(const struct io_options *o);
#endif
