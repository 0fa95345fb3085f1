// What the reliable transport's three files share (reliable.c: the
// session, the window and the links; reliable_ack.c: what comes back and
// the timers; reliable_call.c: the system calls' side). kernel/net only.
#ifndef RELIABLE_PRIV_H
#define RELIABLE_PRIV_H
#include "shaper.h"
#include "demux.h"
#include "txbatch.h"
#include "stripe.h"
#include "balance.h"
#include "plain.h"
#include "transport.h"
#include "relay.h"
#include "../res/io_priv.h"
#include "../res/pmem.h"
#include "../res/proc.h"
#include "../kprintf.h"
#include "../klimit.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include "reliable.h"

enum { REL_FREE, REL_TODO, REL_FLIGHT, REL_SACKED };

static inline uint64_t us_tsc(uint64_t us) { return timer_us_to_tsc(us); }
static inline uint64_t tsc_us(uint64_t t) { return t / (tsc_hz / 1000000 ? tsc_hz / 1000000 : 1); }
// Milliseconds of the TSC (a user program's rdtsc() on the same basis).
static inline uint64_t tsc_ms(void) { return arch_rdtsc() / (tsc_hz / 1000 ? tsc_hz / 1000 : 1); }
// The link as the NIC's link-change interrupts last said (io.c keeps it):
// the timer tick asks it per peer and link, and a register read there is
// a device access every millisecond.
static inline bool nic_up(int n) { return demux_nics[n].link_up; }
static inline bool known(const struct io *c, int p, int n) { return c->x.peer_links[p] & (1u << n); }
static inline bool seq_before(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }
static inline uint16_t session_tag(uint32_t s) { return (uint16_t)(s | 1); }

extern struct klimit rel_log; // link and session lines, limited

// An acknowledgement now, on the peer's live links in turn (on every link
// whose NIC is up when none is live: the sender needs it most then).
void rel_ack_now(struct io *c, int p);

// Peer p said goodbye: true once what was sent to it is settled, every
// packet acknowledged or dead_us after the goodbye (acknowledgements the
// goodbye overtook on another link have come by then). What is still
// unacknowledged then never will be: its frames are let go, counted.
bool rel_bye_settled(struct io *c, int p, uint64_t now);
// Link n towards peer p: dead (why: 0 link down, 1 heartbeats missed, 2
// probe unanswered; its unacknowledged packets go on other links), suspect
// (it lags by lag TSC: no new packets, a probe sent) or up again.
void rel_link_dead(struct io *c, int p, int n, int why);
void rel_link_suspect(struct io *c, int p, int n, uint64_t lag);
void rel_link_up_again(struct io *c, int p, int n);

// Sends what waits to be sent (never sent, or lost), oldest first per
// peer, on the peer's live links in turn, as much as each paced wire and
// ring take now, one doorbell per NIC, at most max packets. Never sleeps.
void rel_pump_upto(struct io *c, int max);
void rel_pump(struct io *c);

// When input_io must report peer p (0: not now): every link dead for
// dead_us; or its goodbye, once settled (bye_settled) and every frame it
// sent is delivered (a hole in them first: stripe_gap_deadline).
uint64_t rel_report_at(struct io *c, int p);

// A control frame to peer p on link n: our acknowledgement of what p sent
// us, and a heartbeat when hb. Skipped when no slot is free (the next one
// says the same).
void rel_send_ctrl(struct io *c, int p, int n, bool hb, uint8_t cflags);
// Lets a sent packet's payload frames go (acknowledged, or given up).
void rel_unpin_tx(struct rel_tx *t);

// Header slot slot of c's reliable pages: its kernel address, *pa its
// physical one.
uint8_t *rel_slot_at(struct io *c, uint32_t slot, paddr_t *pa);
// Writes the Ethernet and wire header of a packet to peer p on link n
// into h (a routed peer gets the route flag; the trailer comes after the
// payload).
void rel_put_header(struct io *c, uint8_t *h, int p, int n, uint16_t flags, uint32_t seq, uint32_t len);

// A reliable channel's packet from the demultiplexer (the ops' input).
void rel_input(struct io *c, int nic, const struct pkt *f, int peer);

#endif
