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
#include "../net/transport.h"
#include "../lock.h"
#include <io.h>
#include <wire.h>

#define IO_PEND 128            // frames held for a channel between input_io calls
#define IO_PEND_RING (IO_PEND + 4) // and room for gap markers among them
#define IO_MAX_FRAME (WIRE_FRAME_HLEN + WIRE_MAX_PAYLOAD) // longest frame we send
#define IO_POLL_US 20           // poll=timer: the tick while polling
#define IO_GAP_US 200000       // default wait for a missing striped frame (IO_OP_GAPWAIT)

// The regions a channel's calls use (IO_OP_REGIONS), held while registered.
struct io_held {
	bool set;
	long in_vr, out_vr;
	uint64_t in_addr, in_size, out_addr, out_size;
	uint64_t slot_size; // an input slot's bytes: whole pages
	uint64_t in_serial; // vregion_serial(in_vr): the origin mark of its slot pages
};

// The batch an input_io is collecting.
struct io_batch {
	bool waiting;
	bool cut;         // the batch ends here: a gap follows
	bool priv;        // its region is its caller's alone (io.c): any CPU may
	                  // fill it under the channel's lock, without the kernel lock
	uint32_t got;
	uint64_t sizes[IO_MAX_BATCH], pos[IO_MAX_BATCH];
};

// Packets that came before input_io asked (nbuf 0: a gap marker).
struct io_pendq {
	struct pkt q[IO_PEND_RING];
	uint32_t head, n;
};

// The pages under one packet's payload, looked up when the send is checked.
#define IO_PKT_PAGES 4 // 8960 bytes at any offset span at most 4 pages
struct io_pktpages {
	paddr_t f[IO_PKT_PAGES];
};

// One output_io's arguments and the frames under its payloads. The
// channel's own: only its owner calls output_io on it, one call at a time,
// and the call may sleep (a busy ring, a full window) and read them after
// while other processes' calls run on their own channels.
struct io_outcall {
	uint64_t peer[IO_MAX_BATCH], size[IO_MAX_BATCH], pos[IO_MAX_BATCH];
	struct io_pktpages pf[IO_MAX_BATCH];
};

// A channel: the resource's part (identity, owner, regions, the batch,
// held packets, counters) and its transport (x, kernel/net's alone).
struct io {
	struct res_hdr h;
	int owner;
	int nic;               // the first (lowest) NIC of the channel's links
	struct netdev *dev;    // its netdev
	uint8_t nicmask;       // every NIC the channel has: more than one stripes
	uint16_t channel;      // 0: a raw channel, which names none
	uint32_t n_in, n_out;
	struct io_held rg;
	uint64_t timeout_us;
	struct io_batch b;
	struct io_pendq pend;
	struct io_stats st;
	struct io_outcall out; // the output_io in progress
	uint8_t fast;          // CPU + 1 of the input_io or output_io working on it
	                       // without the kernel lock (0: none; io.c says when)
	struct xport x;
};

extern struct io ios[NIO];
extern int io_nopen; // of them, in use
extern uint64_t io_copy_threshold;
extern bool io_rx_scrub;

// A channel's lock (LK_CHAN), outside the slot (res_alloc clears a slot
// whole, and a receiving CPU may be waiting for the lock of one being
// freed). Every system call on a channel holds it, and so does the
// receive path while it hands the channel a packet; it is let go around a
// sleep (io_sleep) and around polling a NIC (whose lock ranks below).
// Taken only with rxlock=fine (demux_fine), as the NICs' locks.
extern struct spinlock io_locks[NIO];
static inline void io_lock(const struct io *c) { nl_lock(&io_locks[c - ios]); }
static inline void io_unlock(const struct io *c) { nl_unlock(&io_locks[c - ios]); }
// proc_sleep for a caller that holds c's lock: let go while asleep. The
// kernel lock, held from the caller's test to the sleep, keeps a wake-up
// from falling between them (every proc_wakeup is made under it).
bool io_sleep(struct io *c, const void *chan, uint64_t deadline);

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
// In a call without the kernel lock (c->fast), takes it: c's lock is let
// go first (it ranks below) and held again; from here on the call is the
// kernel lock's. False when the call held it already. c's lock held.
bool io_relock(struct io *c);
// Held packets into the batch, while it waits (c's lock held).
void io_deliver_held(struct io *c);
void io_drop_pending(struct io *c);
// The receive path without the kernel lock (demux_poll_nolock) only holds
// packets; under the kernel lock, once per poll round, what it held goes
// into a waiting batch (remapped into its slots, the process woken when it
// is full) and the acknowledgements it made due are sent. c's lock held.
void io_settle(struct io *c);
// Must a packet c took without the kernel lock be settled under it? Not
// when the taker is c's own unlocked input_io, which moves it in itself,
// unless c is reliable (its acknowledgements are sent under the lock).
bool io_settles(const struct io *c);

// The channel's NICs in order (the loop ends past the highest).
#define IO_FOR_EACH_NIC(c, n) \
	for (int n = 0; n < NETDEV_MAX && ((c)->nicmask >> n); n++) \
		if ((c)->nicmask & (1u << n))

// One past the channel's highest NIC: per-NIC arrays of a call need no more.
static inline int io_nic_top(const struct io *c) { return 32 - __builtin_clz(c->nicmask); }

#endif
