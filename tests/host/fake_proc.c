// A fixed table of fake processes, the proc and I/O managers' res_ops, and
// io_live: enough of both managers for vregion, vuspace and res to link.
#include "fake_proc.h"
#include "fake_arch.h"
#include "res/res.h"
#include "res/vuspace.h"
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
	if (!p)
		return 0;
	if (n > limits[k] || p->use[k] > limits[k] - n)
		return -E_LIMIT;
	p->use[k] += n;
	return 0;
}

void proc_uncharge(int pid, enum proc_limit k, uint64_t n)
{
	struct proc *p = pid ? proc_by_pid(pid) : NULL;
	if (p)
		p->use[k] -= n <= p->use[k] ? n : p->use[k];
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

static void io_release(int owner)
{
	if (fake_io_nreleased < 16) {
		fake_io_released_vuspaces[fake_io_nreleased] = vuspace_live();
		fake_io_released[fake_io_nreleased++] = owner;
	}
}

const struct res_ops proc_ops = { .name = "proc" };
long io_live(void) { return 0; }
const struct res_ops io_ops = { .name = "io", .release = io_release, .live = io_live };
