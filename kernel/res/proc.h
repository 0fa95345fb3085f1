// Processes: a thread of control in a virtual space. The manager owns the
// process table; others name a process by pid.
#ifndef PROC_H
#define PROC_H
#include "../arch/x86_64/arch.h"

#define NPROC 64
#define PROC_NAME 32
#define KSTACK_SIZE 16384
#define USER_STACK_TOP 0x00007fff00000000ull
#define USER_STACK_PAGES 16

enum pstate { P_FREE, P_RUNNABLE, P_RUNNING, P_SLEEPING, P_ZOMBIE };

struct trapframe;

struct proc {
	enum pstate state;
	int pid, ppid, prio;
	char name[PROC_NAME];
	long vs;                // virtual space id
	struct context *ctx;    // saved kernel context while switched out
	struct trapframe *tf;   // user state at the last kernel entry
	int exit_status;
	int slice;              // ticks left before a same-priority peer runs
	uint64_t wake_tsc;      // sleep deadline, 0 = none
	const void *chan;       // what the process sleeps on
};

void proc_init(void);
// Creates a process running program `prog` with argument string `args`.
long proc_spawn(const char *prog, const char *args, int prio, int ppid);
struct proc *proc_current(void);
struct proc *proc_by_pid(int pid);
void proc_exit(int status) __attribute__((noreturn));
// Reaps an exited child of ppid (pid -1: any). Returns its pid, 0 when the
// children are still running, -E_CHILD when there are none.
long proc_reap(int ppid, long pid, int *status);
long proc_wait(long pid, int *status);
void proc_yield(void);
// Sleeps on chan until proc_wakeup(chan) or the TSC deadline (0: none).
// Returns false when the deadline passed.
bool proc_sleep(const void *chan, uint64_t deadline_tsc);
void proc_wakeup(const void *chan);
long proc_setprio(long pid, int prio);
int proc_count(void);
long proc_vspace(int pid); // the process's space id, or -E_SRCH

// Called from the timer interrupt; the trap path then calls
// proc_preempt_point() before returning to user mode.
void proc_timer_tick(void);
void proc_preempt_point(void);

// Work for the idle CPU (e.g. polling NICs): called instead of halting;
// returns true while it wants to be called again rather than halt.
void sched_set_idle_work(bool (*fn)(void));

// The scheduler loop (runs on the boot stack, never returns). `poll` is
// called each round, e.g. to start the next program of the run list.
void sched_loop(void (*poll)(void)) __attribute__((noreturn));
#endif
