// The plain transport (plain.c): an unreliable channel's send, on one NIC
// or striped over several.
#ifndef NET_PLAIN_H
#define NET_PLAIN_H
#include "netdev.h"
#include <io.h>

struct io;
struct io_pktpages;

// A send call's packets grouped by link, kept per channel: a paced send
// sleeps, and other channels send meanwhile.
struct io_txcall {
	struct netpkt pkts[IO_MAX_BATCH];
	uint8_t idx[IO_MAX_BATCH];    // pkts[k] is packet idx[k] of the call
	uint64_t peer[IO_MAX_BATCH], size[IO_MAX_BATCH];
	int8_t nic[IO_MAX_BATCH];     // its link; -1: none was up
	uint8_t sent[IO_MAX_BATCH];
};

// Sends a checked call: packets to peers[i], sizes[i] bytes at pos[i] of
// the output region, in pages[i]. Returns how many left, or an error when
// none did.
long plain_send(struct io *c, const uint64_t *peers, const uint64_t *sizes, const uint64_t *pos,
		const struct io_pktpages *pages);
#endif
