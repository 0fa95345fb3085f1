// Striped channels (stripe.c): link choice and receive order.
#ifndef NET_STRIPE_H
#define NET_STRIPE_H
#include "pkt.h"

#define IO_RO_WIN 1024 // striped packets a peer may be ahead of the next in order (4 rings)

struct io;

// Striped packets of one peer that came ahead of the next in order, each in
// the slot of its sequence number modulo the window; nbuf == 0: empty.
// The receive side fills slots and input_io's side drains them; both run
// with interrupts off on one CPU, so no lock is needed (HXB section 3.2).
// Their buffers count against the channel owner's frame limit while held.
struct reorder {
	struct pkt f[IO_RO_WIN];
	uint32_t held;       // slots in use
	uint32_t hi;         // above the highest sequence number held
	bool hole;           // held, but the next in order is missing
	uint64_t since;      // TSC when that hole was first seen
};

// True when c has several NICs: its packets are striped over them.
bool stripe_active(const struct io *c);
// The link (NIC) the next packet to peer goes on: round-robin over the
// peer's links that are up; -1 when none is.
int stripe_next_link(struct io *c, uint64_t peer);
// A striped packet from peer with sequence number seq, taken in order
// (io_take), held ahead of order, or dropped as a duplicate.
void stripe_order(struct io *c, int peer, uint32_t seq, const struct pkt *f);
// The TSC at which the oldest hole of c must be reported (0: none).
uint64_t stripe_gap_deadline(const struct io *c);
// Declares every hole whose wait ran out: a gap marker, then the packets
// after it, in order.
void stripe_gap_expire(struct io *c);
// Gives back every packet peer's window holds and empties it; returns how many.
uint32_t stripe_drop_peer(struct io *c, int peer);
// A peer's reorder window, allocated (charged to the channel's owner) when
// the peer is added; 0, or -E_LIMIT / -E_NOMEM. stripe_drop_window lets
// go of it and what it holds.
long stripe_add_peer(struct io *c, int peer);
void stripe_drop_window(struct io *c, int peer);
void stripe_free(struct io *c);
// Packets that waited for room and are in order go to the channel.
void stripe_release(struct io *c);
#endif
