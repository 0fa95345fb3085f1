// Routing on a hyper-crossbar (HXB section 2; docs/design.md "Relaying"):
// the node's coordinates and its neighbours, and the routing decision
// (route.c). The relay that forwards is relay.c.
#ifndef NET_ROUTE_H
#define NET_ROUTE_H
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

// route.c (pure: host-tested). Parses the command line's node=X.Y[.Z],
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

#endif
