// The host side of the process manager for the resource managers' tests:
// vregion, vuspace and io ask proc_exists, proc_vspace and proc_self
// about pids, so tests register the pids they act for, each with a space.
// Also the proc manager's entry of res.c's table (proc.c switches
// contexts: not host-compilable), a spy on the I/O manager's, proc_sleep
// and proc_wakeup, and the timer calls io.c makes.
#ifndef FAKE_PROC_H
#define FAKE_PROC_H
#include "res/proc.h"

#define FAKE_NPROC 8
#define FAKE_MAX_PID 64 // teardown releases every owner in [0, FAKE_MAX_PID]

// Forgets every process; no current process.
void fake_proc_reset(void);
// Registers pid (in (0, FAKE_MAX_PID]) running in space vs; fails the test
// when the table is full or the pid is taken.
void fake_proc_add(int pid, long vs);
void fake_proc_remove(int pid);
// proc_self() returns this process from now on (0: none, which fails).
void fake_proc_set_current(int pid);

// The fake I/O manager's release: pids it was called for, in order, and
// the live attachments at each call (res_release_owner must call it first).
extern int fake_io_released[16];
extern long fake_io_released_vuspaces[16];
extern int fake_io_nreleased;

// proc_sleep cannot block: nothing else runs. It calls fake_sleep_hook
// (what interrupts would do while the process sleeps: a test injects
// frames and fires a NIC's interrupt) and returns true when proc_wakeup
// named its channel meanwhile. Otherwise its deadline passed: the fake TSC
// moves to it and it returns false; with no deadline the test fails (the
// process would sleep forever). proc_wakeup with nobody asleep on the
// channel counts in fake_wakeups_missed. fake_sleep_max (0: none) fails
// the test at that many sleeps: a loop of timed sleeps that would never
// end (a sender waiting on a peer that is gone) stops there.
extern void (*fake_sleep_hook)(const void *chan, void *arg);
extern void *fake_sleep_arg;
extern int fake_sleeps, fake_wakeups, fake_wakeups_missed, fake_sleep_max;

// timer_deadline counts in fake TSC ticks (fake_arch.h's fake.tsc);
// timer_fast records its argument.
#define FAKE_TSC_PER_US 1000ull
extern uint64_t fake_timer_fast_us;
extern int fake_timer_fast_calls;
#endif
