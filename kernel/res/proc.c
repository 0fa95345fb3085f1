// Process manager: the process table, priorities, sleep and wake, exit and
// wait. One CPU, interrupts off in the kernel: no locks are needed.
#include "proc.h"
#include "vspace.h"
#include "res.h"
#include "pmem.h"
#include "../sched.h"
#include "../elf.h"
#include "../progs.h"
#include "../kprintf.h"
#include "../klimit.h"
#include "../arch/x86_64/cpu.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>
#include <sys.h>

struct proc {
	enum pstate state;
	int pid, ppid, prio;
	char name[PROC_NAME];
	long vs;                // virtual space id
	struct context *ctx;    // saved kernel context while switched out
	int exit_status;
	int slice;              // ticks left before a same-priority peer runs
	uint64_t wake_tsc;      // sleep deadline, 0 = none
	const void *chan;       // what the process sleeps on
	uint64_t use[LIM_N];    // charged against the limits
};

#define SLICE_TICKS 10
#define MAX_ARGS 32

static struct proc procs[NPROC];
static uint8_t kstacks[NPROC][KSTACK_SIZE] __attribute__((aligned(16)));
static struct runq rq;
static struct proc *current;
static struct context *sched_ctx;
static bool need_resched;
static int next_pid = 1;
static bool (*idle_work)(void);
static bool idle_blind;

void sched_set_idle_work(bool (*fn)(void), bool blind)
{
	idle_work = fn;
	idle_blind = blind;
}

void proc_init(void)
{
	runq_init(&rq);
}

int proc_self(void) { return current ? current->pid : 0; }

static int slot(struct proc *p) { return (int)(p - procs); }

static struct proc *proc_by_pid(int pid)
{
	for (int i = 0; i < NPROC; i++)
		if (procs[i].state != P_FREE && procs[i].pid == pid)
			return &procs[i];
	return NULL;
}

bool proc_exists(int pid) { return pid > 0 && proc_by_pid(pid); }

// A process that spawns faulting children makes one line each: limited.
static struct klimit fault_log = KLIMIT("proc", 32, 10);

void proc_fault(int status, const char *why)
{
	if (klimit_take(&fault_log, 1))
		kprintf("proc %d (%s) killed: %s\n", current->pid, current->name, why);
	proc_exit(status);
}

int proc_count(void)
{
	int n = 0;
	for (int i = 0; i < NPROC; i++)
		n += procs[i].state != P_FREE;
	return n;
}

static void make_runnable(struct proc *p)
{
	p->state = P_RUNNABLE;
	runq_push(&rq, slot(p), p->prio);
	if (current && p->prio > current->prio)
		need_resched = true;
}

// Lays out argv (strings, then the pointer array) at the top of the stack
// frame `top_pa`, mapped at USER_STACK_TOP - PAGE_SIZE. Returns the user rsp.
static uint64_t push_args(paddr_t top_pa, const char *name, const char *args, int *argc)
{
	uint8_t *page = arch_p2v(top_pa);
	uint64_t base = USER_STACK_TOP - PAGE_SIZE;
	char buf[256];
	char *words[MAX_ARGS];
	size_t off = PAGE_SIZE;
	strlcpy(buf, args ? args : "", sizeof(buf));
	int n = 0;
	words[n++] = (char *)name;
	for (char *s = buf; *s && n < MAX_ARGS - 1;) {
		while (*s == ' ')
			*s++ = 0;
		if (!*s)
			break;
		words[n++] = s;
		while (*s && *s != ' ')
			s++;
	}
	uint64_t uptr[MAX_ARGS];
	for (int i = 0; i < n; i++) {
		size_t l = strlen(words[i]) + 1;
		off -= l;
		memcpy(page + off, words[i], l);
		uptr[i] = base + off;
	}
	uptr[n] = 0;
	off = (off - (size_t)(n + 1) * 8) & ~15ul;
	memcpy(page + off, uptr, (size_t)(n + 1) * 8);
	*argc = n;
	return base + off;
}

static long map_stack(long vs, paddr_t *top_pa)
{
	for (int i = 1; i <= USER_STACK_PAGES; i++) {
		paddr_t pa = pmem_alloc();
		if (!pa)
			return -E_NOMEM;
		long r = vspace_map(vs, USER_STACK_TOP - (uint64_t)i * PAGE_SIZE, pa,
				    PTE_U | PTE_W | PTE_NX | PTE_OWNED);
		if (r < 0) {
			pmem_free(pa);
			return r;
		}
		if (i == 1)
			*top_pa = pa;
	}
	return 0;
}

static void setup_kstack(struct proc *p, uint64_t entry, uint64_t rsp, int argc)
{
	uint8_t *top = kstacks[slot(p)] + KSTACK_SIZE;
	struct trapframe *tf = (struct trapframe *)(top - sizeof(*tf));
	memset(tf, 0, sizeof(*tf));
	tf->rip = entry;
	tf->cs = SEL_UCODE;
	tf->rflags = 0x202; // IF
	tf->rsp = rsp;
	tf->ss = SEL_UDATA;
	tf->rdi = (uint64_t)argc;
	tf->rsi = rsp;
	struct context *c = (struct context *)((uint8_t *)tf - sizeof(*c));
	memset(c, 0, sizeof(*c));
	c->rip = (uint64_t)trap_return;
	p->ctx = c;
}

static long load_image(struct proc *p, const struct prog *prog, const char *args)
{
	uint64_t entry;
	paddr_t top_pa = 0;
	long r = elf_load(p->vs, prog->start, (size_t)(prog->end - prog->start), &entry);
	if (r == 0)
		r = map_stack(p->vs, &top_pa);
	if (r < 0)
		return r;
	int argc;
	uint64_t rsp = push_args(top_pa, prog->name, args, &argc);
	setup_kstack(p, entry, rsp, argc);
	return 0;
}

long proc_spawn(const char *name, const char *args, int prio, int ppid)
{
	if (prio < PRIO_MIN || prio > PRIO_MAX)
		return -E_INVAL;
	const struct prog *prog = progs_find(name);
	if (!prog)
		return -E_NOENT;
	struct proc *p = NULL;
	for (int i = 0; i < NPROC && !p; i++)
		if (procs[i].state == P_FREE)
			p = &procs[i];
	if (!p)
		return -E_NOMEM;
	long vs = vspace_create();
	if (vs < 0)
		return vs;
	*p = (struct proc){ .pid = next_pid, .ppid = ppid, .prio = prio, .vs = vs };
	strlcpy(p->name, name, sizeof(p->name));
	long r = load_image(p, prog, args);
	if (r < 0) {
		vspace_destroy(vs);
		p->state = P_FREE;
		return r;
	}
	next_pid++;
	make_runnable(p);
	return p->pid;
}

// Gives the CPU back to the scheduler loop; returns when scheduled again.
static void to_scheduler(void)
{
	arch_switch(&current->ctx, sched_ctx);
}

void proc_yield(void)
{
	make_runnable(current);
	to_scheduler();
}

bool proc_sleep(const void *chan, uint64_t deadline_tsc)
{
	current->chan = chan;
	current->wake_tsc = deadline_tsc;
	current->state = P_SLEEPING;
	to_scheduler();
	bool woken = current->chan == NULL;
	current->chan = NULL;
	return woken;
}

void proc_wakeup(const void *chan)
{
	for (int i = 0; i < NPROC; i++) {
		struct proc *p = &procs[i];
		if (p->state == P_SLEEPING && p->chan == chan && chan) {
			p->chan = NULL;
			p->wake_tsc = 0;
			make_runnable(p);
		}
	}
}

void proc_exit(int status)
{
	struct proc *p = current;
	p->exit_status = status;
	res_release_owner(p->pid); // attachments and regions before the space
	vspace_destroy(p->vs);
	for (int i = 0; i < NPROC; i++)
		if (procs[i].state != P_FREE && procs[i].ppid == p->pid)
			procs[i].ppid = 0; // orphans: the kernel reaps them
	p->state = P_ZOMBIE;
	struct proc *parent = proc_by_pid(p->ppid);
	if (parent)
		proc_wakeup(parent);
	to_scheduler();
	panic("proc_exit: zombie %d scheduled", p->pid);
}

long proc_reap(int ppid, long pid, int *status)
{
	bool have = false;
	for (int i = 0; i < NPROC; i++) {
		struct proc *c = &procs[i];
		if (c->state == P_FREE || c->ppid != ppid || (pid != -1 && c->pid != pid))
			continue;
		have = true;
		if (c->state != P_ZOMBIE)
			continue;
		*status = c->exit_status;
		c->state = P_FREE;
		return c->pid;
	}
	return have ? 0 : -E_CHILD;
}

long proc_wait(long pid, int *status)
{
	for (;;) {
		long r = proc_reap(current->pid, pid, status);
		if (r != 0)
			return r;
		proc_sleep(current, 0);
	}
}

long proc_setprio(int caller, long pid, int prio)
{
	struct proc *p = pid == 0 ? proc_by_pid(caller) : proc_by_pid((int)pid);
	if (!p || p->state == P_ZOMBIE)
		return -E_SRCH;
	if (caller && p->pid != caller && p->ppid != caller)
		return -E_NOTOWNER; // only itself and its own children
	if (prio < PRIO_MIN || prio > PRIO_MAX)
		return -E_INVAL;
	if (p->state == P_RUNNABLE) {
		runq_remove(&rq, slot(p));
		p->prio = prio;
		make_runnable(p);
	} else {
		p->prio = prio;
	}
	return 0;
}

void proc_timer_tick(void)
{
	uint64_t now = arch_rdtsc();
	for (int i = 0; i < NPROC; i++) {
		struct proc *p = &procs[i];
		if (p->state == P_SLEEPING && p->wake_tsc && now >= p->wake_tsc) {
			p->wake_tsc = 0;
			make_runnable(p);
		}
	}
	if (current && --current->slice <= 0 && runq_top_prio(&rq) >= current->prio)
		need_resched = true;
}

void proc_preempt_point(void)
{
	if (current && need_resched)
		proc_yield();
}

// TSC ticks spent halted (under -icount: time the clock skipped, not
// instructions), so a program can tell its machine's busy time.
static uint64_t idle_tsc;
uint64_t proc_idle_tsc(void) { return idle_tsc; }

void sched_loop(void (*poll)(void))
{
	for (;;) {
		poll();
		int i = runq_pop(&rq);
		if (i < 0) {
			if (idle_work && idle_work()) {
				// Polling: no halt, but the timer still comes in, so
				// deadlines fire and woken processes run.
				if (!idle_blind)
					arch_irq_window();
				continue;
			}
			pmem_reserve_fill(16); // idle time zeroes frames ahead of need
			uint64_t t = arch_rdtsc();
			arch_idle();
			// Up to the first interrupt: what its handler (a NIC's
			// receive path, the relay) did is busy time.
			uint64_t woke = arch_idle_woke(), now = arch_rdtsc();
			idle_tsc += (woke && woke <= now ? woke : now) - t;
			continue;
		}
		struct proc *p = &procs[i];
		p->state = P_RUNNING;
		p->slice = SLICE_TICKS;
		need_resched = false;
		current = p;
		vspace_activate(p->vs);
		arch_set_kernel_stack((uint64_t)(kstacks[i] + KSTACK_SIZE));
		arch_switch(&sched_ctx, p->ctx);
		current = NULL;
	}
}

static uint64_t limits[LIM_N] = { UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX };

void proc_set_limits(const uint64_t lim[LIM_N])
{
	for (int k = 0; k < LIM_N; k++)
		limits[k] = lim[k];
}

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

int proc_prio(int pid)
{
	struct proc *p = proc_by_pid(pid);
	return p && p->state != P_ZOMBIE ? p->prio : -E_SRCH;
}

// Processes are reaped by wait, not released by an owner.
const struct res_ops proc_ops = { .name = "proc" };

long sys_getvs(const uint64_t *a)
{
	(void)a;
	return current->vs;
}
