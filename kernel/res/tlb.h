// TLB shootdown: which CPUs may hold a space's translations, and how a
// change to a space reaches them (docs/design.md, "Many CPUs").
//
// A CPU holds translations of the space its CR3 names, and of no other:
// without PCIDs, loading CR3 drops every non-global entry, and user pages
// are never global. So a space's CPU set is the CPUs whose CR3 names it,
// kept here at every load. A change to a space is flushed
//  - on this CPU at once (invlpg per page, or one full flush above
//    tlb_flush_threshold pages);
//  - on a CPU running a process: one IPI per request carrying every range,
//    and the requester waits for its acknowledgement;
//  - on a CPU running none (idle, or in the scheduler's loop): deferred. It
//    is marked stale and reloads CR3 before it next runs a process: until
//    then it makes no user access. Requester and target agree through one
//    atomic state word per CPU, so a requester need not hold the kernel
//    lock (input_io and the receive path's remaps into a region its owner
//    alone has: io.c). A space that goes away is the exception:
//    its page tables are freed, so such CPUs are told to leave it first.
// Between tlb_batch_begin and tlb_batch_end (one exchange or one input_io
// call) remote ranges gather, per space, and go out as one IPI per CPU at
// the end. Safe because a frame leaves a region to nobody but the call's
// other region until then: before one goes back to the allocator
// (pmem_free) or to a NIC's ring (demux_flush_refill) what was gathered is
// sent (tlb_batch_sync), and the end comes before the call returns or its
// process gives up the CPU.
#ifndef TLB_H
#define TLB_H
#include "../arch/x86_64/arch.h"

#define TLB_BATCH_SPACES 8 // spaces one batch gathers before it flushes early

// Space slot s's CPU set (bit N: CPU N's CR3 names it). Read without a
// lock on the exchange's path; changed by atomic operations as CR3 loads.
extern uint32_t tlb_space_cpus[];
extern uint64_t tlb_ipis, tlb_requests, tlb_deferred; // counters
// TSC ticks requesters spent waiting for acknowledgements, and targets
// spent answering (under -icount: instructions; with several emulated CPUs
// taking turns, a wait also counts the other CPUs' turns).
extern uint64_t tlb_wait_tsc, tlb_answer_tsc, tlb_answers;

// This CPU is about to load space slot `slot` whose root is `root`, and
// loads it after this returns. Returns true when CR3 must be reloaded
// although it names that root (a deferred flush is due).
bool tlb_note_load(int slot, paddr_t root);
// This CPU runs a process (user accesses possible) or not. A CPU starting
// one says so before tlb_note_load: a change whose requester finds it not
// running leaves a mark that tlb_note_load then returns; one that finds it
// running sends it the IPI. Neither needs the kernel lock.
void tlb_cpu_user(bool running);
// Pages [va, va + n pages) of space `slot` (root `root`) changed.
void tlb_invalidate(int slot, paddr_t root, uint64_t va, uint64_t n);
// Space `slot` is going away: every CPU whose CR3 names it loads
// `kernel_root` first; returns when they all did.
void tlb_leave(int slot, paddr_t root, paddr_t kernel_root);
void tlb_batch_begin(void);
void tlb_batch_end(void); // no-op when none is open
void tlb_batch_sync(void); // sends what was gathered; the batch stays open
// Answers this CPU's pending request, if any (the IPI's handler, and every
// turn of a wait for a lock).
void tlb_answer(void);
void tlb_init(paddr_t kernel_root);
#endif
