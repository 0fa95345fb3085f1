// The transmit batch (txbatch.c): one doorbell per NIC per call, the
// shaper's turn per NIC, and the NICs' completions.
#ifndef NET_TXBATCH_H
#define NET_TXBATCH_H
#include "netdev.h"

#define IO_TX_WAIT_US 20000     // longest spin for the NIC to take or finish a batch
#define IO_TX_SLEEP_US 5000000  // then, in a system call, how long more it sleeps on ticks
// (a NIC model whose thread a loaded host starves for seconds is slow, not dead)

struct io;

// A call's packets for one NIC: p[done..n) still to go.
struct txgroup {
	struct netpkt *p;
	int n, done;
	bool stuck; // the driver refused, or its ring stayed full
	int err;
};

// A sent packet's cookie, which the NIC hands back when done with it: the
// one layout of whose packet it is (tx_done reads it).
//   plain:    gen << 8 | channel index                 (bit 63 clear)
//   reliable: 1 << 63 | gen << 24 | pool slot << 8 | channel index
//   relay:    forwarding slot << 8 | TXB_RELAY_TAG      (bit 63 clear)
// The channel's slot generation makes a cookie of a channel closed while
// its packets were still queued (a stalled transmitter) count against
// nothing in the next channel of its slot.
#define TXB_RELAY_TAG 0xfeu // a low byte no channel index is (NIO <= 254)
uint64_t txb_cookie(const struct io *c);
uint64_t txb_cookie_rel(const struct io *c, uint32_t slot);
uint64_t txb_cookie_relay(uint32_t slot);
// Reports a NIC's finished packets, every channel's; returns how many.
int txb_reclaim_nic(int nic);
void txb_reclaim(struct io *c); // every NIC of channel c
// Reclaims until nothing of c is in flight (bounded, spinning only: also
// as a process exits); false if it stayed busy.
bool txb_idle(struct io *c);
bool txb_wait_bank(struct io *c); // the next call's header bank free, sleeping in a system call
// Sends every group (g[n]: NIC n's, n below io_nic_top(c)), the NICs in
// turns, each as much as its shaped wire takes now, with one doorbell;
// sleeps while none can.
void txb_send_groups(struct io *c, struct txgroup *g);
// NIC nic's transmit lock (LK_NICTX; rxlock=fine only): every tx_batch,
// tx_reclaim and shaper decision on it is made under it.
void txb_lock(int nic);
void txb_unlock(int nic);
// A call without the kernel lock put off other senders' completions on
// one of c's NICs (txb_later); txb_settle takes the kernel lock (no lock
// held) and hands them over.
bool txb_later(const struct io *c);
extern uint64_t txb_put_off; // completions put off so (NIC transmit lock held)
void txb_settle(uint32_t nicmask);
void txb_init(void);
#endif
