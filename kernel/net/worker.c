// The deferred, budgeted protocol worker (Linux: NAPI's poll and the
// softirq that runs it). Interrupt handlers only note work: the timer tick
// that protocol timers are due (worker_note_tick), a NIC's receive
// interrupt masks it and marks it polled (demux_rx_ready). The worker does
// the work later in the kernel's own context: on the way back to user mode
// after an interrupt (the trap's to_user hook, before a preemption) and in
// the scheduler's loop (idle, or between processes), a bounded share per
// run: DEMUX_BUDGET buffers per polled NIC, REL_TICK_BUDGET packets per
// reliable channel's timers. What a run leaves stays noted for the next.
// No page is remapped and no packet sent inside an interrupt handler, and
// nothing here allocates.
#include "worker.h"
#include "demux.h"
#include "transport.h"

static bool tick_due;

void worker_note_tick(void) { tick_due = true; }
bool worker_tick_due(void) { return tick_due; }

// What the tick noted, after the NICs.
static bool then_tick(bool polling)
{
	if (tick_due) {
		tick_due = false;
		xport_tick_all();
	}
	return polling;
}

bool worker_run_idle(void)
{
	return then_tick(demux_fine ? demux_poll_nolock(DEMUX_BUDGET) : demux_poll_polling(DEMUX_BUDGET));
}

bool worker_run(void) { return then_tick(demux_poll_polling(DEMUX_BUDGET)); }
