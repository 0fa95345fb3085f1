// Relaying on a hyper-crossbar (HXB sections 2 and 3.4; docs/design.md
// "Relaying"): the node's coordinates and its neighbours (io_route.c), the
// routing decision, and the relay in the receive path (io_relay.c) with its
// hooks in io_net.c and io.c.
#ifndef IO_RELAY_H
#define IO_RELAY_H
#include <stdbool.h>
#include <stdint.h>
#include <wire.h>
#include "../net/netdev.h"

#define RT_MAX_NB 16      // neighbours a node knows
#define RT_NONE 0xffffffffu

// A neighbour: a node that differs from this one in one coordinate, `dim`;
// it is on that dimension's networks, with MAC mac[j] on link j.
struct rt_nb {
	uint32_t node;
	int dim;
	int nlinks;
	uint8_t mac[NETDEV_MAX][6];
};

struct rt_topo {
	uint32_t me;                     // RT_NONE: no topology (relay off)
	int dims;                        // 1..WIRE_DIMS
	int8_t nicdim[NETDEV_MAX];       // NIC i's dimension, -1: none
	int dimnics[WIRE_DIMS][NETDEV_MAX]; // link j of dimension d is NIC dimnics[d][j]
	int ndimnics[WIRE_DIMS];
	struct rt_nb nb[RT_MAX_NB];
	int nnb;
};

// io_route.c (pure: host-tested). Parses the command line's node=X.Y[.Z],
// nicdim=D0,D1,.. (NIC i sits on dimension Di, 0 = X, "-" for none) and
// nb=X.Y/MAC[/MAC..],.. (each neighbour with its MAC per link of the
// dimension it differs in). node == NULL: no topology (0). -E_INVAL for
// anything malformed or inconsistent (t is then "no topology").
long rt_parse(struct rt_topo *t, const char *node, const char *nicdim, const char *nb);
// The neighbour a frame for dst goes to next: in dimension order, the
// first dimension where dst differs whose neighbour (this node with that
// coordinate set to dst's) exists. Each hop fixes one coordinate and none
// is ever changed back, so no route loops. Returns the neighbour's index,
// -E_INVAL when dst is this node or has a coordinate beyond the topology's
// dimensions, -E_NOENT when no neighbour leads there.
long rt_next_hop(const struct rt_topo *t, uint32_t dst);
// The neighbour that is node dst, or -1.
int rt_neighbour(const struct rt_topo *t, uint32_t dst);

// io_relay.c
extern struct rt_topo io_topo;
struct frame;
struct io;
// io_init: takes the parsed topology and prints it.
void io_relay_init(const struct rt_topo *t);
// A routed frame (WIRE_F_ROUTE), payload len: forwarded
// (its buffers go out again, back to the ring when sent) or dropped and
// counted: true, the frame is taken. False when it is for this node:
// *src is then its origin.
bool io_relay_rx(const struct frame *f, uint32_t len, uint32_t *src);
// Sends what the receive path queued: one doorbell per outgoing NIC.
void io_relay_flush(void);
// Transmit completion of a forwarded frame (cookie from io_relay_cookie).
bool io_relay_cookie(uint64_t cookie);
void io_relay_done(uint64_t cookie);
// IO_OP_NODE and IO_OP_RELAYSTATS.
long io_relay_set_peer(struct io *c, uint64_t node, uint64_t peer, uint64_t hops);
long io_relay_stats(uint64_t uptr);
struct io_relaystats;
void io_relay_get_stats(struct io_relaystats *s);
// The routed peer of c that is node src, or -1.
int io_relay_peer_of(struct io *c, uint32_t src);
// A send's routed packet: its flag for the wire header, and the trailer
// written at t (physical pa) and added to the gather list.
uint16_t io_relay_flag(const struct io *c, uint64_t peer);
void io_relay_trailer(const struct io *c, uint64_t peer, uint8_t *t, paddr_t pa, struct netpkt *p);
#endif
