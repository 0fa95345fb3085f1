// Processes: a thread of control in a virtual space. The manager owns the
// process table; others name a process by pid.
#ifndef PROC_H
#define PROC_H
#include "../arch/x86_64/arch.h"
#include "err.h" // quoted: the host tests reach lib/include by -iquote

#define NPROC 64
#define PROC_NAME 32
#define KSTACK_SIZE 16384
#define USER_STACK_TOP 0x00007fff00000000ull
#define USER_STACK_PAGES 16

enum pstate { P_FREE, P_RUNNABLE, P_RUNNING, P_SLEEPING, P_ZOMBIE };

// What one process may hold at most, so no process starves the others.
// LIM_KHEAP: bytes of the kernel heap its channels hold (send lists,
// per-peer state), charged when allocated.
enum proc_limit { LIM_FRAMES, LIM_REGIONS, LIM_CHANNELS, LIM_KHEAP, LIM_N };

void proc_init(int ncpu); // CPUs 0..ncpu-1 run processes
int proc_ncpu(void);
// Creates a process running program `prog` with argument string `args`.
long proc_spawn(const char *prog, const char *args, int prio, int ppid);
// The running process's pid (0: none, the kernel itself).
int proc_self(void);
// True while pid names a process (running, sleeping or not yet reaped).
bool proc_exists(int pid);
// Kills the running process for a fault: prints why, exits with status.
void proc_fault(int status, const char *why) __attribute__((noreturn));
void proc_exit(int status) __attribute__((noreturn));
// Reaps an exited child of ppid (pid -1: any). Returns its pid, 0 when the
// children are still running, -E_CHILD when there are none.
long proc_reap(int ppid, long pid, int *status);
// Processes that have exited since boot (a zombie may wait for its reaper).
uint64_t proc_exits(void);
long proc_wait(long pid, int *status);
void proc_yield(void);
// Sleeps on chan until proc_wakeup(chan) or the TSC deadline (0: none).
// Returns false when the deadline passed.
bool proc_sleep(const void *chan, uint64_t deadline_tsc);
void proc_wakeup(const void *chan);
uint64_t proc_idle_tsc(void); // TSC ticks the CPUs spent halted since boot, summed
uint64_t proc_cpu_idle_tsc(int cpu); // one CPU's
uint64_t proc_lost_wakeups(void); // halts while a process this CPU woke waited to run (0)
// CPU c runs no process now (idle, or between two): a hint, read unlocked.
bool proc_cpu_free(int c);
// Sets the priority of pid (0: the caller). A process may change only its
// own and its children's: -E_NOTOWNER otherwise (caller 0: the kernel).
long proc_setprio(int caller, long pid, int prio);
// The CPUs (a bit each) pid may run on; it moves at once when its CPU is
// no longer among them. -E_INVAL when no running CPU is in the mask.
long proc_setaffinity(int caller, long pid, uint64_t mask);
long proc_cpu(int pid); // the CPU it runs on, or last ran on
int proc_count(void);
long proc_vspace(int pid); // the process's space id, or -E_SRCH
int proc_prio(int pid);    // its scheduler priority (PRIO_MIN..PRIO_MAX), or -E_SRCH

// Sets every process's limits (boot: plimit=frames,regions,channels).
void proc_set_limits(const uint64_t lim[LIM_N]);
// The accounting itself, on one process's counters (proc.c, and the host
// tests' fake process table): charge n of k within limit, or -E_LIMIT with
// nothing charged; give n back (never below 0). Atomic: the receive path
// charges a channel's owner without the kernel lock (stripe.c's window).
static inline long lim_charge(uint64_t *use, uint64_t limit, uint64_t n)
{
	uint64_t u = __atomic_load_n(use, __ATOMIC_RELAXED);
	do {
		if (n > limit || u > limit - n)
			return -E_LIMIT;
	} while (!__atomic_compare_exchange_n(use, &u, u + n, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return 0;
}
static inline void lim_uncharge(uint64_t *use, uint64_t n)
{
	uint64_t u = __atomic_load_n(use, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(use, &u, u - (n <= u ? n : u), true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

// Charges n units of k to pid: 0, or -E_LIMIT (nothing charged) when that
// would pass its limit. pid 0 (the kernel) and unknown pids are not charged.
long proc_charge(int pid, enum proc_limit k, uint64_t n);
// Gives n units back (a process that is gone is ignored).
void proc_uncharge(int pid, enum proc_limit k, uint64_t n);
// What pid holds of k now (0 for none).
uint64_t proc_usage(int pid, enum proc_limit k);

// Called from the timer interrupt; the trap path then calls
// proc_preempt_point() before returning to user mode.
void proc_timer_tick(void);
void proc_preempt_point(void);

// Work for the idle CPU (e.g. polling NICs): called instead of halting;
// returns true while it wants to be called again rather than halt. Between
// two calls interrupts are let in; `blind` (idlepoll=spin, for measuring
// what that costs) keeps them out, so timers stall while it polls.
// `found` (may be NULL) says whether the round since its last call took
// anything in: a round that took nothing is marked an empty poll
// (arch_mark), so a receive-work count leaves it out.
void sched_set_idle_work(bool (*fn)(void), bool (*found)(void), bool blind);
// When the timers kept outside the scheduler (the network's) are next
// due, as a TSC value (UINT64_MAX: none; `now` or earlier: at the next
// tick): the boot CPU halts tickless until the earliest deadline.
void sched_set_idle_next(uint64_t (*fn)(uint64_t now));

// The scheduler loop (runs on the boot stack, never returns). `poll` is
// called each round, e.g. to start the next program of the run list.
void sched_loop(void (*poll)(void)) __attribute__((noreturn));
#endif
