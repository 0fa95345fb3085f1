// Receive demultiplexing and refill (demux.c): per NIC, the packet being
// assembled, the drops no channel can own, the buffers waiting to go back
// to the ring, and whether it is polled.
#ifndef NET_DEMUX_H
#define NET_DEMUX_H
#include "netdev.h"
#include "pkt.h"
#include "../lock.h"

#define IO_RING_MAX 1024 // receive buffers a NIC may post (larger rings are refused)
#define DEMUX_LATER 64   // frames a lock-free poll round may put off (one drain_some's)

struct io;

// Per NIC: the receive side's state and the drops no channel can own.
struct demux_nic {
	bool polling;          // RX interrupts masked; packets are polled
	bool link_up;          // the NIC's link, as its link-change interrupts last said
	int irq_cpu;           // the CPU its interrupt goes to (nicirq=; 0 by default)
	uint64_t drop_short, drop_ethertype, drop_badlen, drop_toolong, drop_nochan, drop_rxerr;
	uint64_t drop_notme;   // addressed to another MAC (another station, a group address)
	struct pkt partial;    // buffers of a packet whose EOP has not come yet
	bool overlong;         // partial had more buffers than PKT_MAX_BUFS
	// Buffers waiting to go back to this NIC's ring: posted in groups, since
	// every RDT write is a device register write (an exit under emulation).
	paddr_t refill[IO_RING_MAX + PKT_MAX_BUFS];
	int nrefill;
	struct spinlock rx;    // LK_NICRX: the ring's receive side and the fields above
	struct spinlock refl;  // LK_REFILL: refill, nrefill
	// Frames the receive path without the kernel lock put off for it.
	struct pkt later[DEMUX_LATER];
	int nlater;
	uint64_t drop_later;   // put off with the list full
};

extern struct demux_nic demux_nics[NETDEV_MAX];
// NIC nic's interrupt now goes to CPU cpu (nicirq=).
void demux_set_irq_cpu(int nic, int cpu);

// A NIC the I/O path drives: its receive ring fits the refill list.
static inline bool demux_nic_usable(int nic)
{
	return nic >= 0 && nic < netdev_count() && netdev_at(nic)->rx_slots <= IO_RING_MAX;
}
// Takes up to budget buffers from the NIC (INT32_MAX: every packet it
// has); polling mode ends once no channel on it waits for packets ("poll
// until empty, unmask, poll once more": no wake-up is lost). True while
// the NIC stays polled.
bool demux_poll_nic_budget(int nic, int budget);
// poll=irq: a NIC whose ring is empty leaves polling even while a batch
// waits; its interrupt brings the rest (NAPI's poll-until-empty, then
// re-arm), so an idle CPU halts rather than polling for frames.
extern bool demux_irq_wait;
#define DEMUX_BUDGET 192 // buffers per NIC per worker run: 64 of the longest packets
// NICs in polling mode are polled, budget buffers each; true while any
// still is.
bool demux_poll_polling(int budget);
// The same on a further CPU's idle loop, the kernel lock let go: the ring,
// the assembly, the checks and the channel's order and holding run under
// the NIC's and the channel's locks only; the kernel lock comes back once
// per round of 64 buffers, for what needs it (demux.c: settle). The
// kernel lock held on entry and on return.
bool demux_poll_nolock(int budget);
// rxlock=fine: the NICs' and channels' own locks are taken, and an idle
// CPU's receive path runs without the kernel lock (demux_poll_nolock).
// Off (the default), every CPU on the receive path holds the kernel lock,
// which alone keeps it one CPU's at a time, and these locks are skipped:
// each costs a lock and the checker's bookkeeping per packet. Set at boot.
extern bool demux_fine;
// The locked case out of line and cold (demux.c): in the default mode
// each call site is one test, and the path inlined around it keeps its
// registers (T1 and R1 at one CPU).
void nl_lock_fine(struct spinlock *l) __attribute__((cold));
void nl_unlock_fine(struct spinlock *l) __attribute__((cold));
static inline void nl_lock(struct spinlock *l)
{
	if (__builtin_expect(demux_fine, 0))
		nl_lock_fine(l);
}
static inline void nl_unlock(struct spinlock *l)
{
	if (__builtin_expect(demux_fine, 0))
		nl_unlock_fine(l);
}
static inline bool nl_trylock(struct spinlock *l) { return !demux_fine || spin_trylock(l); }
// Whether this CPU holds the kernel lock on the receive path (always so
// without rxlock=fine, where nothing runs it without).
static inline bool nl_klocked(void) { return !demux_fine || klock_held_by_me(); }
extern uint64_t demux_unlocked; // frames taken without the kernel lock (sysinfo.rx_unlocked)
extern uint64_t demux_settles;  // the kernel-lock sections taken for them (sysinfo.rx_settles)
void demux_init(void); // the NICs' locks
extern uint64_t demux_taken; // buffers taken from every NIC so far
// The NIC's receive interrupt (netdev's rx_ready): masks it and marks the
// NIC polled; the worker takes its packets.
void demux_rx_ready(struct netdev *nd, void *arg);
// Polls every NIC of c (a striped channel's in turns).
void demux_poll_channel(struct io *c);
// A batch ended: the buffers that wait to go back to the rings of nicmask
// go now where no other batch waits (a frame dropped on one link while the
// batch waited, and the batch completed on another, left it there).
void demux_flush_idle(uint32_t nicmask);
void demux_give_back(const struct pkt *f); // to the ring of f->nic
void demux_refill_add(int nic, paddr_t pa);
// A receive region's old slot pages to the ring, marked with the region's
// serial (pmem_set_origin): a frame that comes back into that region in
// one of them needs no scrub (io_slot.c). Every other way into a ring
// (demux_give_back, demux_refill_add) clears the mark.
void demux_give_back_marked(const struct pkt *f, uint64_t mark);
// Posts the buffers collected for nic's ring; what it cannot take is freed.
void demux_flush_refill(int nic);
// n buffers were kept out of nic's ring: free pages replace those that
// leave it below three quarters posted. -E_NOMEM, taking none, when there
// are too few free pages (the caller gives the buffers back instead).
long demux_replenish(int nic, int n);
#endif
