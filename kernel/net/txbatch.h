// The transmit batch (txbatch.c): one doorbell per NIC per call, the
// shaper's turn per NIC, and the NICs' completions.
#ifndef NET_TXBATCH_H
#define NET_TXBATCH_H
#include "netdev.h"

#define IO_TX_WAIT_US 20000     // longest spin for the NIC to take or finish a batch
#define IO_TX_SLEEP_US 1000000  // then, in a system call, how long more it sleeps on ticks

struct io;

// A call's packets for one NIC: p[done..n) still to go.
struct txgroup {
	struct netpkt *p;
	int n, done;
	bool stuck; // the driver refused, or its ring stayed full
	int err;
};

// A plain packet's cookie: its channel with the slot's generation.
uint64_t txb_cookie(const struct io *c);
// Reports a NIC's finished packets, every channel's; returns how many.
int txb_reclaim_nic(int nic);
void txb_reclaim(struct io *c); // every NIC of channel c
// Reclaims until nothing of c is in flight (bounded, spinning only: also
// as a process exits); false if it stayed busy.
bool txb_idle(struct io *c);
bool txb_wait_idle(struct io *c); // the same, sleeping in a system call
// Sends every group (g[n]: NIC n's), the NICs in turns, each as much as
// its shaped wire takes now, with one doorbell; sleeps while none can.
void txb_send_groups(struct io *c, struct txgroup *g);
#endif
