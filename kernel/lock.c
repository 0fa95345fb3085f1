// Spinlocks, the big kernel lock and the lock-order checker (lock.h has the
// order). Each CPU's record, indexed by arch_cpu_id(), is touched only by
// that CPU with interrupts off, so it needs no lock of its own.
#include "lock.h"
#include "arch/x86_64/arch.h"
#include "kprintf.h"
#include <fmt.h>
#include <stdarg.h>

static const char *const rank_names[] = {
	[LK_KERNEL] = "LK_KERNEL", [LK_NICRX] = "LK_NICRX", [LK_CHAN] = "LK_CHAN", [LK_LB] = "LK_LB", [LK_RELAY] = "LK_RELAY",
	[LK_NICTX] = "LK_NICTX", [LK_REFILL] = "LK_REFILL", [LK_SCHED] = "LK_SCHED", [LK_TLB] = "LK_TLB",
	[LK_PMEM] = "LK_PMEM",     [LK_HEAP] = "LK_HEAP",   [LK_CONSOLE] = "LK_CONSOLE",
};
_Static_assert(sizeof(rank_names) / sizeof(rank_names[0]) == LK_NRANK, "a rank has no name");

struct lock_cpu {
	uint64_t irq_flags; // interrupt state before this CPU's outermost lock
	int noff;           // locks held; the kernel lock counts once at any depth
	int nheld;          // entries in held (kept while the checker is on)
	// In rank order, so the last is the one a new lock must rank above.
	const struct spinlock *held[LOCK_MAXHELD];
	bool reporting; // in the report hooks: lock operations do nothing
	uint64_t spin_tsc;  // time spent waiting for locks, up to the last wait's end
	uint64_t spin_from; // when the wait under way began (0: none)
} __attribute__((aligned(64)));

static struct lock_cpu cpus[MAXCPU];
static bool checking = true;
static unsigned long violations;
static void (*spin_hook)(void);
static void (*report_print)(const char *line);
static void (*report_fail)(const char *line);

static struct {
	struct spinlock l;
	int depth; // the owner's nesting depth; written only by the owner
} klock = { .l = SPINLOCK_INIT("kernel", LK_KERNEL) };

// Relaxed: set only while no CPU holds a lock (lock.h), so no order is owed.
static inline bool checker_on(void) { return __atomic_load_n(&checking, __ATOMIC_RELAXED); }

const char *lock_rank_name(enum lock_rank r)
{
	return r >= 0 && r < LK_NRANK ? rank_names[r] : "LK_?";
}

static void default_print(const char *line) { kprintf("%s\n", line); }
static void default_fail(const char *line) { panic("lock checker: %s", line); }

// Counts a violation, prints it and calls the fail hook. The kernel's does
// not return, and this CPU's locks then stay as they are for the panic.
static __attribute__((cold, format(printf, 2, 3))) void report(struct lock_cpu *c,
									const char *fmt, ...)
{
	char line[200];
	va_list ap;
	va_start(ap, fmt);
	fmt_vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	__atomic_add_fetch(&violations, 1, __ATOMIC_RELAXED);
	c->reporting = true;
	(report_print ? report_print : default_print)(line);
	(report_fail ? report_fail : default_fail)(line);
	c->reporting = false;
}

#define LK_FMT "%s (%s=%d)"
#define LK_ARG(l) (l)->name ? (l)->name : "?", lock_rank_name((l)->rank), (int)(l)->rank

// Before waiting for l: false when the caller must not take it (this CPU
// holds it and would spin forever, or is reporting). Out of line, as
// check_release, so that the unchecked path saves no registers.
static __attribute__((noinline)) bool check_acquire(struct lock_cpu *c, int cpu,
						     const struct spinlock *l)
{
	if (c->reporting)
		return false;
	if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == cpu + 1) {
		report(c, "lock deadlock: cpu %d takes " LK_FMT ", which it holds", cpu, LK_ARG(l));
		return false;
	}
	const struct spinlock *top = c->nheld ? c->held[c->nheld - 1] : NULL;
	if (top && top->rank >= l->rank)
		report(c, "lock inversion: cpu %d takes " LK_FMT " holding " LK_FMT, cpu, LK_ARG(l),
		       LK_ARG(top));
	return true;
}

// Before releasing l: false when this CPU does not hold it (or is reporting).
static __attribute__((noinline)) bool check_release(struct lock_cpu *c, int cpu,
						     const struct spinlock *l)
{
	if (c->reporting)
		return false;
	int owner = __atomic_load_n(&l->owner, __ATOMIC_RELAXED) - 1;
	if (owner != cpu) {
		if (owner < 0)
			report(c, "lock misuse: cpu %d releases " LK_FMT ", which is free", cpu,
			       LK_ARG(l));
		else
			report(c, "lock misuse: cpu %d releases " LK_FMT ", held by cpu %d", cpu,
			       LK_ARG(l), owner);
		return false;
	}
	// Releases need not be in reverse order: close the gap.
	for (int i = c->nheld - 1; i >= 0; i--) {
		if (c->held[i] == l) {
			for (int k = i + 1; k < c->nheld; k++)
				c->held[k - 1] = c->held[k];
			c->nheld--;
			break;
		}
	}
	return true;
}

// The checker's record of l, now held (taken's out-of-line part).
static __attribute__((noinline)) void record_held(struct lock_cpu *c, int cpu, struct spinlock *l)
{
	if (c->nheld == LOCK_MAXHELD) {
		report(c, "lock overflow: cpu %d takes " LK_FMT " holding %d locks", cpu, LK_ARG(l),
		       LOCK_MAXHELD);
		return;
	}
	// Below the last only after a trylock or a reported inversion.
	int i = c->nheld++;
	for (; i > 0 && c->held[i - 1]->rank > l->rank; i--)
		c->held[i] = c->held[i - 1];
	c->held[i] = l;
}

// l is now this CPU's; flags is the interrupt state before its arch_irq_save.
// Inline, with the checker's part out of line: every lock's free case is
// a few instructions and no saved registers.
static inline __attribute__((always_inline)) void own(struct lock_cpu *c, int cpu,
						      struct spinlock *l, uint64_t flags)
{
	__atomic_store_n(&l->owner, cpu + 1, __ATOMIC_RELAXED);
	if (c->noff++ == 0)
		c->irq_flags = flags;
}

static inline __attribute__((always_inline)) void taken(struct lock_cpu *c, int cpu,
							struct spinlock *l, uint64_t flags)
{
	own(c, cpu, l, flags);
	if (checker_on())
		record_held(c, cpu, l);
}

// The same when l ranks above every lock this CPU holds (or it holds
// none): the checker's record only grows on top, no call.
static inline __attribute__((always_inline)) void taken_on_top(struct lock_cpu *c, int cpu,
							       struct spinlock *l, uint64_t flags)
{
	own(c, cpu, l, flags);
	if (checker_on())
		c->held[c->nheld++] = l;
}

// The contended path, out of line so the free case stays a few instructions.
// Polls with plain loads so the line stays shared until the holder lets go.
static __attribute__((noinline)) void spin_wait(struct lock_cpu *c, struct spinlock *l)
{
	uint64_t t0 = arch_rdtsc();
	__atomic_store_n(&c->spin_from, t0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&l->waiters, 1, __ATOMIC_RELAXED);
	do {
		while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED)) {
			void (*hook)(void) = __atomic_load_n(&spin_hook, __ATOMIC_RELAXED);
			if (hook)
				hook();
			arch_pause();
		}
	} while (__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE));
	__atomic_sub_fetch(&l->waiters, 1, __ATOMIC_RELAXED);
	l->contended++;
	__atomic_store_n(&c->spin_tsc, c->spin_tsc + (arch_rdtsc() - t0), __ATOMIC_RELAXED);
	__atomic_store_n(&c->spin_from, 0, __ATOMIC_RELAXED);
}

void spin_init(struct spinlock *l, const char *name, enum lock_rank rank)
{
	*l = (struct spinlock)SPINLOCK_INIT(name, rank);
}

// The general path of taking l, interrupts already saved (flags): false
// when the checker kept the caller from taking it.
static __attribute__((noinline)) bool lock_take_slow(struct spinlock *l, uint64_t flags)
{
	int cpu = arch_cpu_id();
	struct lock_cpu *c = &cpus[cpu];
	if (checker_on() && !check_acquire(c, cpu, l)) {
		arch_irq_restore(flags);
		return false;
	}
	if (__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
		spin_wait(c, l);
	taken(c, cpu, l, flags);
	return true;
}

// The common case inline, with no call and so no saved registers: l is
// free, and for the checker it ranks above every lock this CPU holds (it
// is then only recorded, on top). Anything else (a report under way, l
// held by this CPU, an order to report, a full record, a wait) is
// lock_take_slow's, which looks again from the start.
void spin_lock(struct spinlock *l)
{
	uint64_t flags = arch_irq_save();
	int cpu = arch_cpu_id();
	struct lock_cpu *c = &cpus[cpu];
	bool chk = checker_on();
	if (__builtin_expect(chk && (c->reporting || c->nheld == LOCK_MAXHELD ||
				     (c->nheld && c->held[c->nheld - 1]->rank >= l->rank)), 0)) {
		lock_take_slow(l, flags);
		return;
	}
	// (l held by this CPU: its own lock is never free, so the exchange
	// fails and the slow path's check reports it.)
	if (__builtin_expect(__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE), 0)) {
		lock_take_slow(l, flags);
		return;
	}
	taken_on_top(c, cpu, l, flags);
}

bool spin_trylock(struct spinlock *l)
{
	uint64_t flags = arch_irq_save();
	int cpu = arch_cpu_id();
	struct lock_cpu *c = &cpus[cpu];
	if (checker_on() && c->reporting) {
		arch_irq_restore(flags);
		return true;
	}
	if (__atomic_load_n(&l->locked, __ATOMIC_RELAXED) ||
	    __atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE)) {
		arch_irq_restore(flags);
		return false;
	}
	taken(c, cpu, l, flags);
	return true;
}

void spin_unlock(struct spinlock *l)
{
	int cpu = arch_cpu_id();
	struct lock_cpu *c = &cpus[cpu];
	if (checker_on() && !check_release(c, cpu, l))
		return;
	__atomic_store_n(&l->owner, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
	if (--c->noff == 0)
		arch_irq_restore(c->irq_flags);
}

// Only the holder writes its own id into owner, and clears it before it
// lets go: reading this CPU's id means this CPU holds l.
bool spin_held_by_me(const struct spinlock *l)
{
	return __atomic_load_n(&l->owner, __ATOMIC_RELAXED) == arch_cpu_id() + 1;
}

// The kernel lock's common case is every way into the kernel from user
// mode: this CPU holds no lock, so there is nothing to check the order
// against. klock_lock takes it inline, with no call (so no saved
// registers) unless it must wait; the checker, when on, only records it.
// Any other case (a nested take, another lock held, a report under way)
// takes the general path.
static void klock_first(struct lock_cpu *c, int cpu, uint64_t flags)
{
	// taken_on_top's work with what it would test known: nothing is held
	// (noff and nheld are 0), which saves a few instructions every system call.
	__atomic_store_n(&klock.l.owner, cpu + 1, __ATOMIC_RELAXED);
	c->noff = 1;
	c->irq_flags = flags;
	if (checker_on()) {
		c->held[0] = &klock.l;
		c->nheld = 1;
	}
	klock.depth = 1;
}

// klock_lock's other cases: the first lock but taken by another CPU (a
// wait), or the general path.
static __attribute__((noinline)) void klock_lock_slow(uint64_t flags)
{
	int cpu = arch_cpu_id();
	struct lock_cpu *c = &cpus[cpu];
	if (!c->noff && !c->reporting) {
		spin_wait(c, &klock.l);
		klock_first(c, cpu, flags);
		return;
	}
	if (lock_take_slow(&klock.l, flags))
		klock.depth = 1;
}

void klock_lock(void)
{
	uint64_t flags = arch_irq_save();
	int cpu = arch_cpu_id();
	if (__atomic_load_n(&klock.l.owner, __ATOMIC_RELAXED) == cpu + 1) {
		klock.depth++;
		arch_irq_restore(flags);
		return;
	}
	struct lock_cpu *c = &cpus[cpu];
	if (__builtin_expect(c->noff || c->reporting ||
				     __atomic_exchange_n(&klock.l.locked, 1, __ATOMIC_ACQUIRE), 0)) {
		klock_lock_slow(flags);
		return;
	}
	klock_first(c, cpu, flags);
}

// The way back to user mode's common case, the mirror of klock_first: the
// kernel lock, held by this CPU, is its only lock. False: the general path.
static inline bool klock_drop_last(void)
{
	int cpu = arch_cpu_id();
	struct lock_cpu *c = &cpus[cpu];
	if (c->noff != 1 || c->reporting ||
	    __atomic_load_n(&klock.l.owner, __ATOMIC_RELAXED) != cpu + 1)
		return false;
	if (checker_on()) {
		if (c->nheld != 1 || c->held[0] != &klock.l)
			return false;
		c->nheld = 0;
	}
	klock.depth = 0;
	__atomic_store_n(&klock.l.owner, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&klock.l.locked, 0, __ATOMIC_RELEASE);
	c->noff = 0;
	arch_irq_restore(c->irq_flags);
	return true;
}

// Not held: spin_unlock reports the misuse.
void klock_unlock(void)
{
	if (klock_held_by_me() && --klock.depth > 0)
		return;
	if (!klock_drop_last())
		spin_unlock(&klock.l);
}

bool klock_held_by_me(void) { return spin_held_by_me(&klock.l); }
int klock_depth(void) { return klock_held_by_me() ? klock.depth : 0; }

static __attribute__((noinline)) int klock_release_slow(int depth)
{
	klock.depth = 0;
	spin_unlock(&klock.l);
	return depth;
}

int klock_release_all(void)
{
	if (!klock_held_by_me())
		return 0;
	int depth = klock.depth;
	return klock_drop_last() ? depth : klock_release_slow(depth);
}

void klock_reacquire(int depth)
{
	if (depth <= 0)
		return;
	klock_lock();
	if (klock_held_by_me())
		klock.depth += depth - 1;
}

void klock_yield(void)
{
	if (!__atomic_load_n(&klock.l.waiters, __ATOMIC_RELAXED) || !klock_held_by_me())
		return;
	uint64_t taken = klock.l.contended;
	int depth = klock_release_all();
	// Until a waiter has it (its count of waited acquisitions moves) or
	// none waits any more.
	while (__atomic_load_n(&klock.l.waiters, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&klock.l.contended, __ATOMIC_RELAXED) == taken)
		arch_pause();
	klock_reacquire(depth);
}

void lock_set_spin_hook(void (*fn)(void)) { __atomic_store_n(&spin_hook, fn, __ATOMIC_RELAXED); }

void lock_init(void)
{
	for (int i = 0; i < MAXCPU; i++)
		cpus[i] = (struct lock_cpu){ 0 };
	spin_init(&klock.l, "kernel", LK_KERNEL);
	klock.depth = 0;
	lock_check_set(true);
	__atomic_store_n(&violations, 0, __ATOMIC_RELAXED);
	lock_set_spin_hook(NULL);
	report_print = NULL;
	report_fail = NULL;
}

void lock_check_set(bool on) { __atomic_store_n(&checking, on, __ATOMIC_RELAXED); }

void lock_check_may_sleep(void)
{
	if (!checker_on())
		return;
	int cpu = arch_cpu_id();
	struct lock_cpu *c = &cpus[cpu];
	if (c->reporting)
		return;
	for (int i = 0; i < c->nheld; i++) {
		if (c->held[i]->rank != LK_KERNEL) {
			report(c, "lock sleep: cpu %d gives up the CPU holding " LK_FMT, cpu,
			       LK_ARG(c->held[i]));
			return;
		}
	}
}

unsigned long lock_violations(void) { return __atomic_load_n(&violations, __ATOMIC_RELAXED); }

// A wait under way counts up to now, so that one that began before a
// measurement is not all charged to it when it ends.
uint64_t lock_spin_tsc(int cpu)
{
	if (cpu < 0 || cpu >= MAXCPU)
		return 0;
	const struct lock_cpu *c = &cpus[cpu];
	uint64_t from = __atomic_load_n(&c->spin_from, __ATOMIC_RELAXED), now = arch_rdtsc();
	uint64_t t = __atomic_load_n(&c->spin_tsc, __ATOMIC_RELAXED);
	return t + (from && from <= now ? now - from : 0);
}

void lock_set_report(void (*print)(const char *line), void (*fail)(const char *line))
{
	report_print = print;
	report_fail = fail;
}
