// The relay (relay.c): a routed packet for another node is forwarded from
// the receive path; a channel's routed peers.
#ifndef NET_RELAY_H
#define NET_RELAY_H
#include "route.h"
#include "pkt.h"

extern struct rt_topo route_topo;
struct io;
// io_init: takes the parsed topology and prints it.
void relay_init(const struct rt_topo *t);
// A routed packet (WIRE_F_ROUTE), payload len: forwarded
// (its buffers go out again, back to the ring when sent) or dropped and
// counted: true, the packet is taken. False when it is for this node:
// *src is then its origin.
bool relay_rx(const struct pkt *f, uint32_t len, uint32_t *src);
// Sends what the receive path queued: one doorbell per outgoing NIC.
void relay_flush(void);
// Transmit completion of a forwarded packet: its slot (txb_cookie_relay).
void relay_done(uint32_t slot);
// IO_OP_NODE and IO_OP_RELAYSTATS.
long relay_set_peer(struct io *c, uint64_t node, uint64_t peer, uint64_t hops);
long relay_stats(uint64_t uptr);
struct io_relaystats;
void relay_get_stats(struct io_relaystats *s);
// A send's routed packet: its flag for the wire header, and the trailer
// written at t (physical pa) and added to the gather list.
uint16_t relay_flag(const struct io *c, uint64_t peer);
void relay_trailer(const struct io *c, uint64_t peer, uint8_t *t, paddr_t pa, struct netpkt *p);
#endif
