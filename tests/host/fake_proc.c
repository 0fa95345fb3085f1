// A fixed table of fake processes, the proc manager's res_ops, a spy on
// the I/O manager's, sleep and wakeup, and the two timer calls io.c makes.
#include "fake_proc.h"
#include "fake_arch.h"
#include "res/res.h"
#include "lock.h"
#include "res/vuspace.h"
#include "arch/x86_64/timer.h"
#include "err.h"
#include <string.h>

// The fake's own process table (the kernel's struct proc is private).
struct proc {
	enum pstate state;
	int pid;
	long vs;
	uint64_t use[LIM_N];
};

static struct proc procs[FAKE_NPROC];
static uint64_t limits[LIM_N];
static struct proc *current;
int fake_io_released[16];
long fake_io_released_vuspaces[16];
int fake_io_nreleased;

void fake_proc_reset(void)
{
	memset(procs, 0, sizeof(procs));
	for (int k = 0; k < LIM_N; k++)
		limits[k] = UINT64_MAX;
	current = NULL;
	fake_io_nreleased = 0;
	fake_sleep_hook = NULL;
	fake_sleep_arg = NULL;
	fake_sleeps = fake_wakeups = fake_wakeups_missed = fake_sleep_max = 0;
	fake_timer_fast_us = 0;
	fake_timer_fast_calls = 0;
}

static struct proc *proc_by_pid(int pid)
{
	for (int i = 0; i < FAKE_NPROC; i++)
		if (procs[i].state != P_FREE && procs[i].pid == pid)
			return &procs[i];
	return NULL;
}

bool proc_exists(int pid) { return pid > 0 && proc_by_pid(pid); }

void fake_proc_add(int pid, long vs)
{
	if (pid <= 0 || pid > FAKE_MAX_PID || proc_by_pid(pid))
		fake_fatal("fake_proc_add: bad or duplicate pid %d", pid);
	for (int i = 0; i < FAKE_NPROC; i++) {
		if (procs[i].state == P_FREE) {
			procs[i] = (struct proc){ .state = P_RUNNABLE, .pid = pid, .vs = vs };
			return;
		}
	}
	fake_fatal("fake_proc_add: table full");
}

void fake_proc_remove(int pid)
{
	struct proc *p = proc_by_pid(pid);
	if (!p)
		fake_fatal("fake_proc_remove: no pid %d", pid);
	if (p == current)
		current = NULL;
	p->state = P_FREE;
}

void fake_proc_set_current(int pid)
{
	current = pid ? proc_by_pid(pid) : NULL;
	if (pid && !current)
		fake_fatal("fake_proc_set_current: no pid %d", pid);
}

int proc_self(void)
{
	if (!current)
		fake_fatal("proc_self: no current process (fake_proc_set_current)");
	return current->pid;
}

void proc_set_limits(const uint64_t lim[LIM_N])
{
	for (int k = 0; k < LIM_N; k++)
		limits[k] = lim[k];
}

// The same accounting as kernel/res/proc.c, over the fake table.
long proc_charge(int pid, enum proc_limit k, uint64_t n)
{
	struct proc *p = pid ? proc_by_pid(pid) : NULL;
	return p ? lim_charge(&p->use[k], limits[k], n) : 0;
}

void proc_uncharge(int pid, enum proc_limit k, uint64_t n)
{
	struct proc *p = pid ? proc_by_pid(pid) : NULL;
	if (p)
		lim_uncharge(&p->use[k], n);
}

uint64_t proc_usage(int pid, enum proc_limit k)
{
	struct proc *p = pid ? proc_by_pid(pid) : NULL;
	return p ? p->use[k] : 0;
}

long proc_vspace(int pid)
{
	struct proc *p = proc_by_pid(pid);
	return p && p->state != P_ZOMBIE ? p->vs : -E_SRCH;
}

int proc_prio(int pid) { return proc_by_pid(pid) ? 3 : -E_SRCH; } // PRIO_DEFAULT

// res.c's table entry for the I/O manager (linked with --wrap=io_ops): io.c's
// own ops, with each release recorded first, so the suites can see that an
// exit lets go of channels before attachments and regions.
extern const struct res_ops __real_io_ops;

static void io_release(int owner)
{
	if (fake_io_nreleased < 16) {
		fake_io_released_vuspaces[fake_io_nreleased] = vuspace_live();
		fake_io_released[fake_io_nreleased++] = owner;
	}
	__real_io_ops.release(owner);
}
static long io_live_spy(void) { return __real_io_ops.live(); }

const struct res_ops proc_ops = { .name = "proc" };
const struct res_ops __wrap_io_ops = { .name = "io", .release = io_release, .live = io_live_spy };

// Sleeping: nothing else runs on the host, so the sleep itself is the
// test's hook (what interrupts would do meanwhile), then the verdict.
void (*fake_sleep_hook)(const void *chan, void *arg);
void *fake_sleep_arg;
int fake_sleeps, fake_wakeups, fake_wakeups_missed, fake_sleep_max;
static const void *sleeping_on;
static bool woken;

bool proc_sleep(const void *chan, uint64_t deadline_tsc)
{
	if (!current)
		fake_fatal("proc_sleep: no current process");
	if (sleeping_on)
		fake_fatal("proc_sleep: called from inside a sleep");
	if (!klock_held_by_me())
		fake_fatal("proc_sleep: without the kernel lock");
	if (fake_sleep_max && fake_sleeps >= fake_sleep_max)
		fake_fatal("proc_sleep: %d sleeps on %p: it would sleep forever", fake_sleeps, chan);
	fake_sleeps++;
	sleeping_on = chan;
	woken = false;
	if (fake_sleep_hook)
		fake_sleep_hook(chan, fake_sleep_arg);
	sleeping_on = NULL;
	if (woken)
		return true;
	if (!deadline_tsc)
		fake_fatal("proc_sleep: no deadline and nothing woke %p: it would sleep forever", chan);
	if (fake.tsc < deadline_tsc)
		fake.tsc = deadline_tsc;
	return false;
}

void proc_wakeup(const void *chan)
{
	if (!klock_held_by_me())
		fake_fatal("proc_wakeup: without the kernel lock");
	if (chan && chan == sleeping_on) {
		woken = true;
		fake_wakeups++;
	} else {
		fake_wakeups_missed++;
	}
}

uint64_t fake_timer_fast_us;
int fake_timer_fast_calls;

uint64_t tsc_hz = FAKE_TSC_PER_US * 1000000ull;

uint64_t timer_now_us(void) { return fake.tsc / FAKE_TSC_PER_US; }

uint64_t timer_us_to_tsc(uint64_t us)
{
	return us > UINT64_MAX / FAKE_TSC_PER_US ? UINT64_MAX : us * FAKE_TSC_PER_US;
}

uint64_t timer_deadline(uint64_t us)
{
	uint64_t now = arch_rdtsc();
	if (us > (UINT64_MAX - now) / FAKE_TSC_PER_US)
		return UINT64_MAX;
	return now + us * FAKE_TSC_PER_US;
}

void timer_fast(uint32_t us)
{
	fake_timer_fast_us = us;
	fake_timer_fast_calls++;
}

// No fake CPU runs an idle loop of its own here: a caller's poll takes
// every NIC of its channel, whichever CPU its interrupt goes to.
bool proc_cpu_free(int c)
{
	(void)c;
	return false;
}
