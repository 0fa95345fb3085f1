// The host side of the process manager for the resource managers' tests:
// vregion and vuspace ask proc_exists, proc_vspace and proc_self about
// pids, so tests register the pids they act for, each with a space. Also
// the proc and I/O managers' entries of res.c's table (proc.c and io.c
// switch contexts and drive NICs: not host-compilable).
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
#endif
