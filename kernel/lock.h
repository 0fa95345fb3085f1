// Spinlocks, the recursive big kernel lock, and the lock-order checker.
//
// The lock order. A CPU takes locks in strictly increasing rank; a lock
// whose rank is at or below that of a lock the CPU holds is an inversion
// (re-taking the kernel lock it already holds excepted). Two locks of one
// rank are never held together.
//
//   rank        lock             protects
//   LK_KERNEL   klock            everything no lower lock names: the resource
//                                managers' tables, the process table, the I/O
//                                channels. Recursive on its owner CPU;
//                                released around a halt in idle.
//   LK_NICRX    a NIC's receive  its receive ring (the driver's rx_* calls) and
//                                the receive state demux keeps for it (the
//                                packet being assembled, polling, the frames
//                                put off for the kernel lock); one at a time
//   LK_CHAN     a channel        a struct io and its transport's state; one
//                                at a time, never held across a sleep
//   LK_LB       the balancer     its domains and balanced channels (balance.c):
//                                periods, decisions, the volumes sent
//   LK_RELAY    the relay        its forwarding state (relay.c): free slots,
//                                queues, link turns, counters
//   LK_NICTX    a NIC's transmit its transmit ring (the driver's tx_batch,
//                                tx_reclaim), its shaper, the completions put
//                                off for the kernel lock; one at a time
//   LK_REFILL   a NIC's refill   the buffers waiting to go back to its ring
//   LK_SCHED    run queues       each CPU's run queue, the affinity masks and
//                                the migration of a process between queues
//   LK_TLB      shootdown        the per-CPU shootdown mailboxes (request and
//                                acknowledgement) and a space's CPU set
//   LK_PMEM     frame allocator  the free-frame lists and their counts
//   LK_HEAP     kernel heap      the heap's free list and statistics
//   LK_CONSOLE  console          kprintf's sinks. Innermost: any code may print
//
// A new rank goes in the enum at its place in the order, with its name in
// lock.c's table and a line here.
//
// Every lock disables interrupts on its CPU until the CPU's last lock is
// released, whatever the order of the releases. The checker, on unless
// lock_check_set(false), keeps each CPU's held locks and reports an
// inversion, the release of a lock the CPU does not hold, and a sleep with
// a spinlock held: one line through the print hook, then the fail hook
// (kprintf and panic by default, so a boot fails on the first violation).
#ifndef LOCK_H
#define LOCK_H
#include <stdbool.h>
#include <stdint.h>

enum lock_rank {
	LK_KERNEL,
	LK_NICRX,
	LK_CHAN,
	LK_LB,
	LK_RELAY,
	LK_NICTX,
	LK_REFILL,
	LK_SCHED,
	LK_TLB,
	LK_PMEM,
	LK_HEAP,
	LK_CONSOLE,
	LK_NRANK
};

#define LOCK_MAXHELD 12 // locks one CPU holds at once, as the checker tracks them

struct spinlock {
	uint32_t locked; // 1 while held; the only word a waiter polls
	int32_t owner;   // holder's CPU + 1, 0 when free: written only by the holder
	enum lock_rank rank;
	const char *name;
	uint64_t contended; // acquisitions that had to wait (holder-written)
	uint32_t waiters;   // CPUs spinning for it now
};

// A free lock, for a static one: SPINLOCK_INIT("heap", LK_HEAP). The name,
// for the checker's reports, is not copied.
#define SPINLOCK_INIT(n, r) { .locked = 0, .owner = 0, .rank = (r), .name = (n), .contended = 0 }
void spin_init(struct spinlock *l, const char *name, enum lock_rank rank);
// Spins until l is this CPU's; interrupts stay off until this CPU releases
// its last lock.
void spin_lock(struct spinlock *l);
// Takes l if it is free, without waiting: true when taken. Exempt from the
// order check (it cannot deadlock) but tracked as held.
bool spin_trylock(struct spinlock *l);
void spin_unlock(struct spinlock *l);
bool spin_held_by_me(const struct spinlock *l);

// The big kernel lock (LK_KERNEL), recursive on its owner CPU.
void klock_lock(void);
void klock_unlock(void);
int klock_depth(void); // this CPU's nesting depth, 0 when another or none holds it
bool klock_held_by_me(void);
// Releases every level this CPU holds (0 when none) and returns the depth:
// klock_reacquire(depth) restores it. For halting in idle, where the CPU
// must not keep other CPUs out while it waits for an interrupt.
int klock_release_all(void);
void klock_reacquire(int depth);
// Where a CPU holds the kernel lock in a loop with no end (the boot CPU's
// idle polling of the NICs): if another CPU waits for the lock, hand it
// over and take it back after. The lock is not fair: without this the
// holder would retake it before a waiter saw it free.
void klock_yield(void);

// Called on every iteration of a wait for a lock, interrupts off, on the
// waiting CPU: it answers the requests (TLB shootdowns) a holder may be
// waiting for. It must not wait for a lock itself. NULL: none.
void lock_set_spin_hook(void (*fn)(void));

// Resets the checker (nothing held, no violations, on, default hooks) and
// frees the kernel lock. The boot calls it before starting other CPUs.
void lock_init(void);
// Turns the checker on or off. Only while no CPU holds a lock: the held
// stacks are kept only while it is on.
void lock_check_set(bool on);
// Where a process gives up the CPU: a violation when this CPU holds any
// lock but the kernel lock.
void lock_check_may_sleep(void);
unsigned long lock_violations(void); // since lock_init
// TSC ticks CPU `cpu` spent waiting for any lock since lock_init (under
// -icount: the instructions of its spin loop, the spin hook's included).
uint64_t lock_spin_tsc(int cpu);
// print gets one line (no newline) naming the locks, then fail; NULL keeps
// the default (kprintf, panic). While they run, this CPU's lock operations
// do nothing: a violation is often found where the console lock is held, or
// where another CPU waits for a lock this one holds, and the report must
// still get out.
void lock_set_report(void (*print)(const char *line), void (*fail)(const char *line));
const char *lock_rank_name(enum lock_rank r);

#endif
