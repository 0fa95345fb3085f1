// lock: spinlocks, the recursive kernel lock and the lock-order checker.
// Fake CPUs are fake_set_cpu ids, switched on one thread for the checker's
// bookkeeping and run as real threads where the locks must exclude.
#include "host.h"
#include "fake_arch.h"
#include "lock.h"
#include "heap.h"
#include "res/pmem.h"
#include <pthread.h>
#include <string.h>
#include <time.h>

static struct spinlock sched, tlb, pmem, heap, console;

// The report hooks record instead of panicking, so a test sees the line and
// goes on (lock_set_report(NULL, NULL) restores the panic).
static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_line[256];
static int nprinted, nfailed;

static void rec_print(const char *line)
{
	pthread_mutex_lock(&rec_mu);
	snprintf(last_line, sizeof(last_line), "%s", line);
	nprinted++;
	pthread_mutex_unlock(&rec_mu);
}

static void rec_fail(const char *line)
{
	(void)line;
	__atomic_add_fetch(&nfailed, 1, __ATOMIC_RELAXED);
}

static void setup(void)
{
	fake_reset();
	lock_init();
	lock_set_report(rec_print, rec_fail);
	last_line[0] = 0;
	nprinted = nfailed = 0;
	spin_init(&sched, "sched", LK_SCHED);
	spin_init(&tlb, "tlb", LK_TLB);
	spin_init(&pmem, "pmem", LK_PMEM);
	spin_init(&heap, "heap", LK_HEAP);
	spin_init(&console, "console", LK_CONSOLE);
}

static bool is_free(const struct spinlock *l) { return l->locked == 0 && l->owner == 0; }

static void test_order_respected(void)
{
	klock_lock();
	spin_lock(&sched);
	spin_lock(&tlb);
	spin_lock(&pmem);
	spin_lock(&heap);
	spin_lock(&console);
	CU_ASSERT_TRUE(spin_held_by_me(&pmem));
	// Out of order releases, then the same ranks again in order.
	spin_unlock(&pmem);
	spin_unlock(&sched);
	spin_unlock(&console);
	spin_lock(&console);
	spin_unlock(&console);
	spin_unlock(&heap);
	spin_unlock(&tlb);
	spin_lock(&pmem);
	spin_lock(&heap);
	spin_unlock(&heap);
	spin_unlock(&pmem);
	klock_unlock();
	CU_ASSERT_EQUAL(lock_violations(), 0);
	CU_ASSERT_EQUAL(nprinted, 0);
	CU_ASSERT_TRUE(is_free(&sched) && is_free(&tlb) && is_free(&pmem) && is_free(&heap));
	CU_ASSERT_FALSE(klock_held_by_me());
	CU_ASSERT_EQUAL(fake_irq_depth, 0);
}

static struct spinlock static_lock = SPINLOCK_INIT("static", LK_TLB);

static void test_static_lock(void)
{
	struct spinlock zeroed = { 0 };
	CU_ASSERT_FALSE(spin_held_by_me(&zeroed)); // all-zero is free, even on cpu 0
	CU_ASSERT_FALSE(spin_held_by_me(&static_lock));
	spin_lock(&static_lock);
	CU_ASSERT_TRUE(spin_held_by_me(&static_lock));
	spin_lock(&heap);
	spin_unlock(&heap);
	spin_unlock(&static_lock);
	CU_ASSERT_EQUAL(lock_violations(), 0);
	spin_lock(&heap);
	spin_lock(&static_lock);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "takes static (LK_TLB=8) holding heap"));
	spin_unlock(&static_lock);
	spin_unlock(&heap);
	CU_ASSERT_TRUE(is_free(&static_lock));
}

static void test_inversion_names_both_locks(void)
{
	spin_lock(&heap);
	spin_lock(&sched);
	CU_ASSERT_EQUAL(lock_violations(), 1);
	CU_ASSERT_EQUAL(nfailed, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "inversion"));
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "cpu 0"));
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "takes sched (LK_SCHED=7)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "holding heap (LK_HEAP=10)"));
	// Reported, not refused: the caller has the lock it asked for.
	CU_ASSERT_TRUE(spin_held_by_me(&sched));
	spin_unlock(&sched);
	spin_unlock(&heap);
	CU_ASSERT_EQUAL(lock_violations(), 1);
	CU_ASSERT_TRUE(is_free(&sched) && is_free(&heap));
}

static void test_inversion_against_innermost(void)
{
	// Against the highest-ranked lock held, not the last taken: a trylock
	// may take a lower rank last.
	spin_lock(&heap);
	CU_ASSERT_TRUE(spin_trylock(&sched));
	spin_lock(&tlb);
	CU_ASSERT_EQUAL(lock_violations(), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "takes tlb (LK_TLB=8) holding heap"));
	spin_unlock(&tlb);
	spin_unlock(&sched);
	spin_unlock(&heap);
	// One rank twice is an inversion too.
	struct spinlock other;
	spin_init(&other, "pmem2", LK_PMEM);
	spin_lock(&pmem);
	spin_lock(&other);
	CU_ASSERT_EQUAL(lock_violations(), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "takes pmem2 (LK_PMEM=9) holding pmem (LK_PMEM=9)"));
	spin_unlock(&other);
	spin_unlock(&pmem);
}

static void test_klock_after_spinlock(void)
{
	spin_lock(&sched);
	klock_lock();
	CU_ASSERT_EQUAL(lock_violations(), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "takes kernel (LK_KERNEL=0) holding sched"));
	klock_unlock();
	spin_unlock(&sched);
	// Re-taking the kernel lock it holds is no inversion.
	klock_lock();
	spin_lock(&sched);
	klock_lock();
	CU_ASSERT_EQUAL(klock_depth(), 2);
	klock_unlock();
	spin_unlock(&sched);
	klock_unlock();
	CU_ASSERT_EQUAL(lock_violations(), 1);
	CU_ASSERT_FALSE(klock_held_by_me());
}

static void test_inversion_panics_by_default(void)
{
	lock_set_report(NULL, NULL);
	spin_lock(&console);
	EXPECT_PANIC(spin_lock(&tlb));
	CU_ASSERT_PTR_NOT_NULL(strstr(fake_panic_msg, "lock checker: lock inversion: cpu 0 takes tlb"));
	CU_ASSERT_PTR_NOT_NULL(strstr(fake_console, "holding console (LK_CONSOLE=11)\n"));
	CU_ASSERT_EQUAL(lock_violations(), 1);
}

static void test_retake_reported_not_hung(void)
{
	spin_lock(&pmem);
	spin_lock(&pmem);
	CU_ASSERT_EQUAL(lock_violations(), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "deadlock: cpu 0 takes pmem (LK_PMEM=9), which it holds"));
	spin_unlock(&pmem);
	CU_ASSERT_TRUE(is_free(&pmem));
	CU_ASSERT_EQUAL(fake_irq_depth, 0);
	CU_ASSERT_EQUAL(lock_violations(), 1);
}

static void test_unlock_misuse(void)
{
	spin_unlock(&heap);
	CU_ASSERT_EQUAL(lock_violations(), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "misuse: cpu 0 releases heap (LK_HEAP=10), which is free"));
	fake_set_cpu(1);
	spin_lock(&heap);
	fake_set_cpu(0);
	spin_unlock(&heap);
	CU_ASSERT_EQUAL(lock_violations(), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "releases heap (LK_HEAP=10), held by cpu 1"));
	// Not released: cpu 1 still has it.
	CU_ASSERT_FALSE(spin_trylock(&heap));
	fake_set_cpu(1);
	CU_ASSERT_TRUE(spin_held_by_me(&heap));
	spin_unlock(&heap);
	CU_ASSERT_EQUAL(lock_violations(), 2);
	klock_unlock();
	CU_ASSERT_EQUAL(lock_violations(), 3);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "cpu 1 releases kernel (LK_KERNEL=0)"));
}

// Interrupts stay off until the CPU's last lock goes, whichever goes last.
static void test_irq_nesting(void)
{
	fake_irq_depth = 0;
	spin_lock(&sched);
	CU_ASSERT_NOT_EQUAL(fake_irq_depth, 0);
	spin_lock(&heap);
	spin_unlock(&sched);
	CU_ASSERT_NOT_EQUAL(fake_irq_depth, 0);
	spin_unlock(&heap);
	CU_ASSERT_EQUAL(fake_irq_depth, 0);
	// Taken with interrupts already off: they stay off after.
	uint64_t off = arch_irq_save();
	spin_lock(&tlb);
	spin_unlock(&tlb);
	CU_ASSERT_EQUAL(fake_irq_depth, off + 1);
	arch_irq_restore(off);
	CU_ASSERT_EQUAL(fake_irq_depth, 0);
}

// The kernel lock taken with nothing else held (every way in from user
// mode) and let go as the last lock (the way out) has a path of its own:
// the checker still records it, and interrupts follow the outermost lock.
static void test_klock_first_and_last(void)
{
	fake_irq_depth = 0;
	klock_lock(); // first: nothing held
	CU_ASSERT_NOT_EQUAL(fake_irq_depth, 0);
	spin_lock(&sched); // ranks above the kernel lock: no report
	CU_ASSERT_EQUAL(lock_violations(), 0);
	klock_unlock(); // not the last lock: the general path
	CU_ASSERT_FALSE(klock_held_by_me());
	CU_ASSERT_NOT_EQUAL(fake_irq_depth, 0);
	klock_lock(); // not the first: the checker sees the inversion
	CU_ASSERT_EQUAL(lock_violations(), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "takes kernel (LK_KERNEL=0) holding sched"));
	CU_ASSERT_EQUAL(klock_release_all(), 1);
	spin_unlock(&sched);
	CU_ASSERT_EQUAL(fake_irq_depth, 0);
	// First and last, nested: one record, interrupts back only at the end.
	klock_lock();
	klock_lock();
	CU_ASSERT_EQUAL(klock_release_all(), 2);
	CU_ASSERT_EQUAL(fake_irq_depth, 0);
	CU_ASSERT_TRUE(is_free(&sched));
	// Its record is gone: a lower lock, then the kernel lock, is reported
	// again, and releasing the kernel lock when free is misuse.
	klock_lock();
	klock_unlock();
	klock_unlock();
	CU_ASSERT_EQUAL(lock_violations(), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "releases kernel (LK_KERNEL=0), which is free"));
	CU_ASSERT_EQUAL(fake_irq_depth, 0);
}

static void test_klock_recursion(void)
{
	CU_ASSERT_EQUAL(klock_depth(), 0);
	CU_ASSERT_FALSE(klock_held_by_me());
	for (int d = 1; d <= 3; d++) {
		klock_lock();
		CU_ASSERT_EQUAL(klock_depth(), d);
	}
	CU_ASSERT_TRUE(klock_held_by_me());
	fake_set_cpu(1);
	CU_ASSERT_FALSE(klock_held_by_me());
	CU_ASSERT_EQUAL(klock_depth(), 0);
	fake_set_cpu(0);
	for (int d = 2; d >= 0; d--) {
		klock_unlock();
		CU_ASSERT_EQUAL(klock_depth(), d);
		CU_ASSERT_EQUAL(fake_irq_depth != 0, d > 0);
	}
	CU_ASSERT_FALSE(klock_held_by_me());
	CU_ASSERT_EQUAL(lock_violations(), 0);
	klock_unlock();
	CU_ASSERT_EQUAL(lock_violations(), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "releases kernel (LK_KERNEL=0), which is free"));
}

static void test_klock_release_all(void)
{
	CU_ASSERT_EQUAL(klock_release_all(), 0);
	klock_reacquire(0);
	CU_ASSERT_FALSE(klock_held_by_me());
	klock_lock();
	klock_lock();
	klock_lock();
	int depth = klock_release_all();
	CU_ASSERT_EQUAL(depth, 3);
	CU_ASSERT_FALSE(klock_held_by_me());
	CU_ASSERT_EQUAL(fake_irq_depth, 0); // as for the halt
	// Free for another CPU meanwhile.
	fake_set_cpu(1);
	klock_lock();
	CU_ASSERT_EQUAL(klock_depth(), 1);
	klock_unlock();
	fake_set_cpu(0);
	klock_reacquire(depth);
	CU_ASSERT_EQUAL(klock_depth(), 3);
	for (int i = 0; i < 3; i++)
		klock_unlock();
	CU_ASSERT_FALSE(klock_held_by_me());
	CU_ASSERT_EQUAL(lock_violations(), 0);
}

static void test_sleep_with_spinlock(void)
{
	lock_check_may_sleep();
	klock_lock();
	klock_lock();
	lock_check_may_sleep();
	CU_ASSERT_EQUAL(lock_violations(), 0);
	spin_lock(&pmem);
	lock_check_may_sleep();
	CU_ASSERT_EQUAL(lock_violations(), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "sleep: cpu 0 gives up the CPU holding pmem (LK_PMEM=9)"));
	spin_unlock(&pmem);
	klock_unlock();
	klock_unlock();
	spin_lock(&heap);
	lock_check_may_sleep();
	CU_ASSERT_EQUAL(lock_violations(), 2);
	spin_unlock(&heap);
	lock_check_may_sleep();
	CU_ASSERT_EQUAL(lock_violations(), 2);
}

static void test_per_cpu_separation(void)
{
	spin_lock(&heap);
	fake_set_cpu(1);
	spin_lock(&sched); // below cpu 0's heap lock, but cpu 1 holds nothing
	CU_ASSERT_FALSE(spin_held_by_me(&heap));
	CU_ASSERT_EQUAL(lock_violations(), 0);
	spin_unlock(&sched);
	lock_check_may_sleep(); // cpu 0's heap lock does not keep cpu 1 awake
	CU_ASSERT_EQUAL(lock_violations(), 0);
	fake_set_cpu(0);
	lock_check_may_sleep();
	CU_ASSERT_EQUAL(lock_violations(), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "cpu 0 gives up the CPU holding heap"));
	spin_unlock(&heap);
	CU_ASSERT_TRUE(is_free(&sched) && is_free(&heap));
}

static void test_trylock(void)
{
	fake_set_cpu(1);
	spin_lock(&pmem);
	fake_set_cpu(0);
	uint64_t irq = fake_irq_depth;
	CU_ASSERT_FALSE(spin_trylock(&pmem));
	CU_ASSERT_EQUAL(fake_irq_depth, irq);
	CU_ASSERT_FALSE(spin_held_by_me(&pmem));
	fake_set_cpu(1);
	spin_unlock(&pmem);
	fake_set_cpu(0);
	CU_ASSERT_TRUE(spin_trylock(&pmem));
	CU_ASSERT_TRUE(spin_held_by_me(&pmem));
	// Out of order but cannot deadlock: no report, yet tracked as held.
	CU_ASSERT_TRUE(spin_trylock(&sched));
	CU_ASSERT_EQUAL(lock_violations(), 0);
	lock_check_may_sleep();
	CU_ASSERT_EQUAL(lock_violations(), 1);
	CU_ASSERT_FALSE(spin_trylock(&sched)); // its own lock: taken is taken
	spin_unlock(&sched);
	spin_unlock(&pmem);
	CU_ASSERT_TRUE(is_free(&sched) && is_free(&pmem));
	CU_ASSERT_EQUAL(fake_irq_depth, 0);
}

static void test_checker_off(void)
{
	lock_check_set(false);
	spin_lock(&heap);
	spin_lock(&sched);
	lock_check_may_sleep();
	spin_unlock(&sched);
	spin_unlock(&heap);
	CU_ASSERT_EQUAL(lock_violations(), 0);
	CU_ASSERT_TRUE(is_free(&sched) && is_free(&heap));
	lock_check_set(true);
	spin_lock(&heap);
	spin_lock(&sched);
	CU_ASSERT_EQUAL(lock_violations(), 1);
	spin_unlock(&sched);
	spin_unlock(&heap);
}

static void test_overflow(void)
{
	struct spinlock l[LOCK_MAXHELD + 1];
	for (int i = 0; i <= LOCK_MAXHELD; i++) {
		spin_init(&l[i], "deep", LK_CONSOLE);
		spin_lock(&l[i]);
	}
	// Each after the first is an inversion; the last does not fit as well.
	CU_ASSERT_EQUAL(lock_violations(), LOCK_MAXHELD + 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "overflow: cpu 0 takes deep (LK_CONSOLE=11) holding 12"));
	for (int i = LOCK_MAXHELD; i >= 0; i--)
		spin_unlock(&l[i]);
	CU_ASSERT_EQUAL(lock_violations(), LOCK_MAXHELD + 1);
	CU_ASSERT_EQUAL(fake_irq_depth, 0);
}

// A print hook that takes the console lock this CPU already holds, as the
// kernel's kprintf will: it must neither hang nor release the console.
static void locking_print(const char *line)
{
	spin_lock(&console);
	rec_print(line);
	spin_unlock(&console);
}

static void test_report_hooks_may_take_locks(void)
{
	lock_set_report(locking_print, rec_fail);
	spin_lock(&console);
	spin_lock(&heap);
	CU_ASSERT_EQUAL(nprinted, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_line, "takes heap"));
	CU_ASSERT_TRUE(spin_held_by_me(&console));
	spin_unlock(&heap);
	spin_unlock(&console);
	CU_ASSERT_TRUE(is_free(&console) && is_free(&heap));
	CU_ASSERT_EQUAL(lock_violations(), 1);
}

// Threads as CPUs. start is a gate so they begin together.
#define NTHREADS 4
#define ITERS 200000
static long counter; // plain: only the lock keeps increments from being lost
static int start;

struct worker {
	pthread_t t;
	int cpu;
	void (*body)(void);
	uint64_t irq_after;
	bool held_after;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	fake_set_cpu(w->cpu);
	while (!__atomic_load_n(&start, __ATOMIC_ACQUIRE))
		;
	w->body();
	w->irq_after = fake_irq_depth;
	w->held_after = spin_held_by_me(&heap) || klock_held_by_me();
	return NULL;
}

// body on NTHREADS threads as cpus 1..NTHREADS, started together.
static void run_threads(void (*body)(void))
{
	struct worker w[NTHREADS];
	start = 0;
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .cpu = i + 1, .body = body };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&w[i].t, NULL, worker_main, &w[i]), 0);
	}
	__atomic_store_n(&start, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(w[i].t, NULL);
		CU_ASSERT_EQUAL(w[i].irq_after, 0);
		CU_ASSERT_FALSE(w[i].held_after);
	}
	CU_ASSERT_EQUAL(lock_violations(), 0);
}

static void run_workers(void (*body)(void))
{
	counter = 0;
	run_threads(body);
	CU_ASSERT_EQUAL(counter, (long)NTHREADS * ITERS);
}

static void spin_body(void)
{
	for (int i = 0; i < ITERS; i++) {
		spin_lock(&heap);
		long v = counter;
		__atomic_signal_fence(__ATOMIC_SEQ_CST); // keep load and store apart
		counter = v + 1;
		spin_unlock(&heap);
	}
}

static void klock_body(void)
{
	for (int i = 0; i < ITERS; i++) {
		klock_lock();
		klock_lock();
		long v = counter;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		counter = v + 1;
		klock_unlock();
		klock_unlock();
	}
}

static void test_threads_spinlock(void)
{
	run_workers(spin_body);
	CU_ASSERT_TRUE(is_free(&heap));
}

static void test_threads_klock(void)
{
	run_workers(klock_body);
	CU_ASSERT_EQUAL(klock_depth(), 0);
	klock_lock(); // free again
	CU_ASSERT_EQUAL(klock_depth(), 1);
	klock_unlock();
}

// The spin hook, as the SMP code uses it: cpu 0 holds a lock and waits for
// an acknowledgement (a TLB shootdown) from cpu 1, which is spinning for
// that lock with interrupts off. Only the hook can answer.
static int request, answered_by, hook_calls;

static void answer_request(void)
{
	__atomic_add_fetch(&hook_calls, 1, __ATOMIC_RELAXED);
	if (__atomic_exchange_n(&request, 0, __ATOMIC_ACQ_REL))
		__atomic_store_n(&answered_by, arch_cpu_id() + 1, __ATOMIC_RELEASE);
}

static void take_pmem(void)
{
	spin_lock(&pmem);
	counter = spin_held_by_me(&pmem);
	spin_unlock(&pmem);
}

static void test_spin_hook_answers_holder(void)
{
	lock_set_spin_hook(answer_request);
	request = answered_by = hook_calls = 0;
	counter = 0;
	spin_lock(&pmem);
	struct worker w = { .cpu = 1, .body = take_pmem };
	start = 1;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&w.t, NULL, worker_main, &w), 0);
	__atomic_store_n(&request, 1, __ATOMIC_RELEASE);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while (!__atomic_load_n(&answered_by, __ATOMIC_ACQUIRE) && t.tv_sec - t0.tv_sec < 10);
	CU_ASSERT_EQUAL(answered_by, 2); // cpu 1
	uint64_t waiting = lock_spin_tsc(1);
	CU_ASSERT_TRUE(waiting > 0); // a wait under way counts already
	spin_unlock(&pmem);
	pthread_join(w.t, NULL);
	CU_ASSERT_TRUE(lock_spin_tsc(1) >= waiting);
	CU_ASSERT_EQUAL(lock_spin_tsc(0), 0); // the holder never waited
	CU_ASSERT_EQUAL(counter, 1); // cpu 1 got the lock after waiting
	CU_ASSERT_TRUE(hook_calls > 0);
	CU_ASSERT_EQUAL(pmem.contended, 1);
	CU_ASSERT_TRUE(is_free(&pmem));
	lock_set_spin_hook(NULL);
}

// The frame allocator and the heap from several CPUs at once. A frame or
// a block handed to two CPUs shows as a mark another CPU overwrote; lost
// ones as counts that do not come back.
#define MEM_ITERS 20000
#define MEM_HELD 8
static long mem_faults;

// The owner frees a frame while a NIC (the next cpu) still has it pinned:
// the last unpin, on that cpu, puts it back (the deferred free), racing
// with the owner's own pins and frees of other frames.
#define HANDOFF 64
static paddr_t handoff[NTHREADS][HANDOFF]; // cpu c's frames for cpu c+1 to unpin
static int handoff_head[NTHREADS], handoff_tail[NTHREADS];

static void pmem_body(void)
{
	int me = arch_cpu_id() - 1, from = (me + NTHREADS - 1) % NTHREADS;
	paddr_t held[MEM_HELD];
	for (int i = 0; i < MEM_ITERS; i++) {
		for (int k = 0; k < MEM_HELD; k++) {
			held[k] = i % 3 ? pmem_alloc_nozero() : pmem_take();
			if (!held[k]) {
				__atomic_add_fetch(&mem_faults, 1, __ATOMIC_RELAXED);
				return;
			}
			*(volatile uint64_t *)arch_p2v(held[k]) = (uint64_t)me << 32 | (uint32_t)(i * MEM_HELD + k);
		}
		for (int k = 0; k < MEM_HELD; k++) {
			if (*(volatile uint64_t *)arch_p2v(held[k]) != ((uint64_t)me << 32 | (uint32_t)(i * MEM_HELD + k)))
				__atomic_add_fetch(&mem_faults, 1, __ATOMIC_RELAXED);
			int t = __atomic_load_n(&handoff_tail[me], __ATOMIC_ACQUIRE);
			if (k == 0 && handoff_head[me] - t < HANDOFF) { // pinned, freed, unpinned by the next cpu
				pmem_pin(held[k]);
				handoff[me][handoff_head[me] % HANDOFF] = held[k];
				__atomic_store_n(&handoff_head[me], handoff_head[me] + 1, __ATOMIC_RELEASE);
			}
			pmem_free(held[k]);
		}
		if (i % 7 == 0)
			pmem_reserve_fill(2);
		int h = __atomic_load_n(&handoff_head[from], __ATOMIC_ACQUIRE);
		for (; handoff_tail[from] < h; __atomic_store_n(&handoff_tail[from], handoff_tail[from] + 1, __ATOMIC_RELEASE))
			pmem_unpin(handoff[from][handoff_tail[from] % HANDOFF]);
	}
}

static void test_threads_pmem(void)
{
	machine_setup();
	uint64_t free0 = pmem_free_count();
	mem_faults = 0;
	memset(handoff_head, 0, sizeof(handoff_head));
	memset(handoff_tail, 0, sizeof(handoff_tail));
	run_threads(pmem_body);
	for (int c = 0; c < NTHREADS; c++) // what the next cpu had not yet unpinned
		for (; handoff_tail[c] < handoff_head[c]; handoff_tail[c]++)
			pmem_unpin(handoff[c][handoff_tail[c] % HANDOFF]);
	CU_ASSERT_EQUAL(mem_faults, 0);
	CU_ASSERT_EQUAL(pmem_deferred(), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), free0);
}

static void heap_body(void)
{
	int me = arch_cpu_id();
	uint8_t *held[MEM_HELD];
	size_t len[MEM_HELD];
	for (int i = 0; i < MEM_ITERS; i++) {
		for (int k = 0; k < MEM_HELD; k++) {
			len[k] = 16 + (size_t)((i * 131 + k * 71 + me * 17) % 2000);
			held[k] = kmalloc(len[k]);
			if (!held[k]) {
				__atomic_add_fetch(&mem_faults, 1, __ATOMIC_RELAXED);
				return;
			}
			memset(held[k], me, len[k]);
		}
		for (int k = 0; k < MEM_HELD; k++) {
			for (size_t j = 0; j < len[k]; j += 97)
				if (held[k][j] != me)
					__atomic_add_fetch(&mem_faults, 1, __ATOMIC_RELAXED);
			kfree(held[k]);
		}
	}
}

static void test_threads_heap(void)
{
	res_machine_setup();
	struct heap_stats s0, s1;
	heap_stats(&s0);
	mem_faults = 0;
	run_threads(heap_body);
	heap_stats(&s1);
	CU_ASSERT_EQUAL(mem_faults, 0);
	CU_ASSERT_EQUAL(s1.nallocs, s0.nallocs);
	CU_ASSERT_EQUAL(s1.bytes_free, s0.bytes_free);
	CU_ASSERT_TRUE(heap_check());
	res_machine_teardown();
}

int register_lock(void)
{
	static const struct test_case tests[] = {
		TEST(test_order_respected),
		TEST(test_static_lock),
		TEST(test_inversion_names_both_locks),
		TEST(test_inversion_against_innermost),
		TEST(test_klock_after_spinlock),
		TEST(test_inversion_panics_by_default),
		TEST(test_retake_reported_not_hung),
		TEST(test_unlock_misuse),
		TEST(test_irq_nesting),
		TEST(test_klock_first_and_last),
		TEST(test_klock_recursion),
		TEST(test_klock_release_all),
		TEST(test_sleep_with_spinlock),
		TEST(test_per_cpu_separation),
		TEST(test_trylock),
		TEST(test_checker_off),
		TEST(test_overflow),
		TEST(test_report_hooks_may_take_locks),
		TEST(test_threads_spinlock),
		TEST(test_threads_klock),
		TEST(test_spin_hook_answers_holder),
		TEST(test_threads_pmem),
		TEST(test_threads_heap),
	};
	return ADD_SUITE("lock", setup, NULL, tests);
}
