// The deferred protocol worker (worker.c).
#ifndef NET_WORKER_H
#define NET_WORKER_H
#include <stdbool.h>

// The timer interrupt: protocol timers are due (the worker runs them).
void worker_note_tick(void);
bool worker_tick_due(void); // noted, not run yet
// One budgeted run: polled NICs, then the timers if due. True while a NIC
// is still polled (its budget ran out, or a channel on it waits).
bool worker_run(void);
// An idle CPU's round (the boot CPU's idle polling, a further CPU's
// loop): with rxlock=fine (demux_fine) the NICs' receive work
// without the kernel lock (demux_poll_nolock); by default under it, as
// worker_run.
bool worker_run_idle(void);
#endif
