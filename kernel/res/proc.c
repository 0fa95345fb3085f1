// Process manager: the process table, priorities, CPU affinity, sleep and
// wake, exit and wait; one run queue per CPU. Callers hold the big kernel
// lock (kernel/lock.h), which makes the table and the queues one CPU's at a
// time; interrupts are off in the kernel.
#include "proc.h"
#include "vspace.h"
#include "tlb.h"
#include "res.h"
#include "pmem.h"
#include "../sched.h"
#include "../elf.h"
#include "../progs.h"
#include "../kprintf.h"
#include "../klimit.h"
#include "../lock.h"
#include "../arch/x86_64/cpu.h"
#include "../arch/x86_64/timer.h"
#include "../arch/x86_64/smp.h"
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
	int cpu;                // the CPU it last ran on (or is queued on)
	uint32_t affinity;      // CPUs it may run on, a bit each
	uint64_t use[LIM_N];    // charged against the limits
};

#define SLICE_TICKS 10
#define MAX_ARGS 32

static struct proc procs[NPROC];
static uint8_t kstacks[NPROC][KSTACK_SIZE] __attribute__((aligned(16)));
// One per CPU, touched by that CPU only except for its queue (make_runnable
// queues onto any CPU, an idle CPU takes from any queue).
struct cpu_sched {
	struct runq rq;
	struct proc *cur;
	struct context *sched_ctx;
	bool need_resched;
	uint64_t idle_tsc;
	uint64_t halt_tsc; // when the halt under way began (0: not halted)
	bool woke_here;    // this CPU queued a process on itself since it last picked
};
static struct cpu_sched cpus[MAXCPU];
static int ncpus = 1;
static uint32_t online_mask = 1;
#define THIS (&cpus[arch_cpu_id()])
#define current (THIS->cur)
static int next_pid = 1;
static bool (*idle_work)(void), (*idle_found)(void);
static bool idle_blind;
static uint64_t (*idle_next)(uint64_t now);
// The boot CPU halts with its tick stopped (tickless idle); a CPU that
// starts running a process then wakes it (the tick is back for them).
static bool cpu0_oneshot;
static uint64_t lost_wakeups; // halts with a process runnable here (sched_loop)

uint64_t proc_lost_wakeups(void) { return __atomic_load_n(&lost_wakeups, __ATOMIC_RELAXED); }

void sched_set_idle_work(bool (*fn)(void), bool (*found)(void), bool blind)
{
	idle_work = fn;
	idle_found = found;
	idle_blind = blind;
}

void sched_set_idle_next(uint64_t (*fn)(uint64_t now)) { idle_next = fn; }

void proc_init(int ncpu)
{
	ncpus = ncpu;
	online_mask = ncpu >= 32 ? ~0u : (1u << ncpu) - 1;
	for (int c = 0; c < MAXCPU; c++)
		runq_init(&cpus[c].rq);
}

int proc_ncpu(void) { return ncpus; }

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

static bool cpu_idle(int c) { return !cpus[c].cur && runq_top_prio(&cpus[c].rq) < 0; }

bool proc_cpu_free(int c)
{
	return c >= 0 && c < ncpus && !__atomic_load_n(&cpus[c].cur, __ATOMIC_RELAXED);
}

// Where a process becoming runnable is queued: the CPU it last ran on when
// that one is idle, else any idle CPU it may run on, else the one running
// the lowest priority below its own (it preempts that one: no CPU runs a
// lower priority while it waits), else its last CPU (its cache is there),
// else its first allowed one.
static int pick_cpu(const struct proc *p)
{
	uint32_t ok = p->affinity & online_mask;
	if (!ok)
		ok = 1;
	bool last_ok = p->cpu >= 0 && p->cpu < ncpus && (ok >> p->cpu & 1);
	if (last_ok && cpu_idle(p->cpu))
		return p->cpu;
	int low = -1, low_prio = p->prio;
	for (int c = 0; c < ncpus; c++) {
		if (!(ok >> c & 1))
			continue;
		if (cpu_idle(c))
			return c;
		struct proc *cur = cpus[c].cur;
		if (cur && cur != p && cur->prio < low_prio && runq_top_prio(&cpus[c].rq) < p->prio) {
			low = c;
			low_prio = cur->prio;
		}
	}
	if (low >= 0)
		return low;
	return last_ok ? p->cpu : __builtin_ctz(ok);
}

static void make_runnable(struct proc *p)
{
	p->state = P_RUNNABLE;
	int c = pick_cpu(p), me = arch_cpu_id();
	p->cpu = c;
	runq_push(&cpus[c].rq, slot(p), p->prio);
	if (c == me)
		cpus[c].woke_here = true;
	struct proc *cur = cpus[c].cur;
	if (cur && p->prio <= cur->prio)
		return;
	cpus[c].need_resched = cur != NULL;
	if (c != me) // wake it from its halt, or preempt its process
		smp_send_ipi(c, VEC_RESCHED);
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
	struct proc *parent = proc_by_pid(ppid);
	*p = (struct proc){ .pid = next_pid, .ppid = ppid, .prio = prio, .vs = vs,
			    .cpu = arch_cpu_id(), .affinity = parent ? parent->affinity : ~0u };
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
	tlb_batch_end();
	lock_check_may_sleep();
	arch_switch(&current->ctx, THIS->sched_ctx);
}

void proc_yield(void)
{
	make_runnable(current);
	to_scheduler();
}

// No sleeping process has a deadline before this (one may have a later
// one, or none: a process woken early leaves it behind, and the next scan
// moves it on). The tick scans the table only once it has passed.
static uint64_t wake_min = UINT64_MAX;

bool proc_sleep(const void *chan, uint64_t deadline_tsc)
{
	// Its test and its sleep under the kernel lock, which wake-ups take:
	// none can come between (a call without it takes it first: input_io).
	if (!klock_held_by_me())
		panic("proc_sleep without the kernel lock");
	current->chan = chan;
	current->wake_tsc = deadline_tsc;
	if (deadline_tsc && deadline_tsc < wake_min)
		wake_min = deadline_tsc;
	current->state = P_SLEEPING;
	to_scheduler();
	bool woken = current->chan == NULL;
	current->chan = NULL;
	return woken;
}

void proc_wakeup(const void *chan)
{
	// The run queues are the kernel lock's: the receive path without it
	// leaves every wake-up to its settle (demux.c).
	if (!klock_held_by_me())
		panic("proc_wakeup without the kernel lock");
	for (int i = 0; i < NPROC; i++) {
		struct proc *p = &procs[i];
		if (p->state == P_SLEEPING && p->chan == chan && chan) {
			p->chan = NULL;
			p->wake_tsc = 0;
			make_runnable(p);
		}
	}
}

// Processes that have exited since boot: the runner looks for zombies only
// when this moved (its scheduler-loop poll scanned the table every turn).
static uint64_t nexits;

uint64_t proc_exits(void) { return __atomic_load_n(&nexits, __ATOMIC_ACQUIRE); }

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
	__atomic_add_fetch(&nexits, 1, __ATOMIC_RELEASE);
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
		runq_remove(&cpus[p->cpu].rq, slot(p));
		p->prio = prio;
		make_runnable(p);
	} else {
		p->prio = prio;
	}
	return 0;
}

long proc_setaffinity(int caller, long pid, uint64_t mask)
{
	struct proc *p = pid == 0 ? proc_by_pid(caller) : proc_by_pid((int)pid);
	if (!p || p->state == P_ZOMBIE)
		return -E_SRCH;
	if (caller && p->pid != caller && p->ppid != caller)
		return -E_NOTOWNER;
	if (!(mask & online_mask))
		return -E_INVAL; // no CPU it may run on
	p->affinity = (uint32_t)(mask & online_mask);
	if (p->state == P_RUNNABLE && !(p->affinity >> p->cpu & 1)) {
		runq_remove(&cpus[p->cpu].rq, slot(p));
		make_runnable(p);
	} else if (p == current && !(p->affinity >> arch_cpu_id() & 1)) {
		proc_yield(); // moves now: make_runnable queues it where it may run
	}
	return 0;
}

long proc_cpu(int pid)
{
	struct proc *p = proc_by_pid(pid);
	return p && p->state != P_ZOMBIE ? p->cpu : -E_SRCH;
}

void proc_timer_tick(void)
{
	uint64_t now = arch_rdtsc();
	struct cpu_sched *me = THIS;
	if (me == &cpus[0] && now >= wake_min) {
		uint64_t next = UINT64_MAX;
		for (int i = 0; i < NPROC; i++) {
			struct proc *p = &procs[i];
			if (p->state != P_SLEEPING || !p->wake_tsc)
				continue;
			if (now >= p->wake_tsc) {
				p->wake_tsc = 0;
				make_runnable(p);
			} else if (p->wake_tsc < next) {
				next = p->wake_tsc;
			}
		}
		wake_min = next;
	}
	if (me->cur && --me->cur->slice <= 0 && runq_top_prio(&me->rq) >= me->cur->prio)
		me->need_resched = true;
}

void proc_preempt_point(void)
{
	if (!current || !THIS->need_resched)
		return;
	if (!klock_held_by_me())
		klock_lock(); // a call that ran without it (input_io)
	proc_yield();
}

// TSC ticks spent halted (under -icount: time the clock skipped, not
// instructions), so a program can tell its machine's busy time. A halt
// under way counts up to now: a CPU halted for a whole measurement would
// otherwise look busy for all of it. Expects the kernel lock held, which
// the halted CPU takes before it settles its halt.
uint64_t proc_cpu_idle_tsc(int c)
{
	if (c < 0 || c >= ncpus)
		return 0;
	uint64_t t = __atomic_load_n(&cpus[c].halt_tsc, __ATOMIC_RELAXED), now = arch_rdtsc();
	return cpus[c].idle_tsc + (t && t <= now ? now - t : 0);
}

uint64_t proc_idle_tsc(void)
{
	uint64_t t = 0;
	for (int c = 0; c < ncpus; c++)
		t += proc_cpu_idle_tsc(c);
	return t;
}

// The next process for CPU `me`: the first of its own queue's highest
// priority, unless another CPU's queue holds a higher one that may run
// here (or its own is empty): then that one migrates.
static int pick_next(int me)
{
	int best = me, top = runq_top_prio(&cpus[me].rq);
	for (int c = 0; c < ncpus; c++) {
		struct runq *q = &cpus[c].rq;
		int t = runq_top_prio(q);
		if (c == me || t <= top)
			continue;
		int h = q->head[t];
		if (procs[h].affinity >> me & 1) {
			best = c;
			top = t;
		}
	}
	if (top < 0)
		return -1;
	if (best == me)
		return runq_pop(&cpus[me].rq);
	int i = cpus[best].rq.head[top];
	runq_remove(&cpus[best].rq, i);
	return i;
}

// The boot CPU, about to halt, keeps the deadlines of every CPU's
// processes and the network's timers (proc_timer_tick, the worker). While
// no other CPU runs a process, nothing but an interrupt, which wakes it,
// can add one: it stops its tick and sets the timer for the earliest of
// them instead (a tickless idle, as Linux's NO_HZ_IDLE). The network's
// timers say when they are next due (idle_next); the tick comes back on
// any wake-up. A CPU that starts a process meanwhile (one an interrupt
// woke there) wakes the boot CPU by an IPI, so that a deadline its process
// sets is never left to a timer set before it.
static bool sleep_tickless(void)
{
	if (!idle_next)
		return false; // none set (tickless=0): the tick stays
	for (int c = 1; c < ncpus; c++)
		if (cpus[c].cur || runq_top_prio(&cpus[c].rq) >= 0)
			return false;
	uint64_t at = wake_min, n = idle_next(arch_rdtsc());
	if (!timer_sleep_until(n < at ? n : at))
		return false;
	__atomic_store_n(&cpu0_oneshot, true, __ATOMIC_RELEASE);
	return true;
}

void sched_loop(void (*poll)(void))
{
	struct cpu_sched *cs = THIS;
	int me = arch_cpu_id();
	for (;;) {
		arch_mark(ARCH_MARK_POLL_BEGIN);
		if (poll)
			poll();
		cs->woke_here = false;
		int i = pick_next(me);
		if (i < 0) {
			if (me == 0 && idle_work && idle_work()) {
				if (idle_found && !idle_found())
					arch_mark(ARCH_MARK_POLL_EMPTY);
				// Polling: no halt, but the timer still comes in, so
				// deadlines fire and woken processes run; and a CPU
				// waiting for the kernel lock gets it.
				if (!idle_blind)
					arch_irq_window();
				klock_yield();
				continue;
			}
			// Its work may have made a process runnable here (a batch
			// it completed, a send's completions): that one runs now.
			if (cs->woke_here)
				continue;
			pmem_reserve_fill(16); // idle time zeroes frames ahead of need
			// A further CPU needs no tick while it has nothing to
			// run (the boot CPU keeps the deadlines and the network's
			// timers): it halts until an IPI queues it a process.
			bool tickless = me != 0 && runq_top_prio(&cs->rq) < 0;
			bool oneshot = me == 0 && sleep_tickless();
			if (tickless)
				timer_stop_this_cpu();
			// A process this CPU queued on itself since it picked has
			// no IPI coming: halted, it waits for the next interrupt
			// (tickless: up to a second). Counted, and the boot fails.
			if (cs->woke_here)
				__atomic_add_fetch(&lost_wakeups, 1, __ATOMIC_RELAXED);
			uint64_t t = arch_rdtsc();
			__atomic_store_n(&cs->halt_tsc, t, __ATOMIC_RELAXED);
			int depth = klock_release_all();
			arch_idle();
			// Up to the first interrupt: what its handler (a NIC's
			// receive path, the relay) did is busy time, and so is
			// the wait for the kernel lock below.
			uint64_t woke = arch_idle_woke(), now = arch_rdtsc();
			klock_reacquire(depth);
			if (tickless)
				timer_start_this_cpu();
			if (oneshot) {
				__atomic_store_n(&cpu0_oneshot, false, __ATOMIC_RELAXED);
				timer_resume();
			}
			cs->idle_tsc += (woke && woke <= now ? woke : now) - t;
			__atomic_store_n(&cs->halt_tsc, 0, __ATOMIC_RELAXED);
			continue;
		}
		struct proc *p = &procs[i];
		if (me != 0 && __atomic_exchange_n(&cpu0_oneshot, false, __ATOMIC_ACQ_REL))
			smp_send_ipi(0, VEC_RESCHED); // its tick, back for this process
		p->state = P_RUNNING;
		p->slice = SLICE_TICKS;
		p->cpu = me;
		cs->need_resched = false;
		cs->cur = p;
		tlb_cpu_user(true); // before its CR3 (tlb.h: a remote change is then flushed or marked)
		vspace_activate(p->vs);
		arch_set_kernel_stack((uint64_t)(kstacks[i] + KSTACK_SIZE));
		arch_switch(&cs->sched_ctx, p->ctx);
		tlb_cpu_user(false);
		cs->cur = NULL;
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
