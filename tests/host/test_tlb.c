// tlb: the shootdown bookkeeping (which CPUs hold a space), the protocol
// (one IPI per request, answered by the target) and batching. Fake CPUs are
// fake_set_cpu ids; an IPI is answered at once, as its target.
#include "host.h"
#include "fake_arch.h"
#include "lock.h"
#include "res/tlb.h"
#include "res/vspace.h"
#include "arch/x86_64/cpu.h"

#define KROOT 0x200000ull
#define R3 0x300000ull
#define R4 0x400000ull
#define VA 0x10000000000ull

static int answered[MAXCPU];

static void answer_as_target(int cpu, int vector)
{
	CU_ASSERT_EQUAL(vector, VEC_TLB);
	int me = arch_cpu_id();
	fake_set_cpu(cpu);
	tlb_answer();
	answered[cpu]++;
	fake_set_cpu(me);
}

static void setup(void)
{
	fake_reset();
	lock_init();
	tlb_init(KROOT);
	tlb_flush_threshold = 32;
	fake_ipi_hook = answer_as_target;
	for (int c = 0; c < MAXCPU; c++)
		answered[c] = 0;
}

static void teardown(void) { fake_ipi_hook = NULL; }

// CPU `cpu` loads space slot `slot` and runs a process (or not) on it.
static bool load(int cpu, int slot, paddr_t root, bool running)
{
	fake_set_cpu(cpu);
	tlb_cpu_user(running); // as the scheduler: running first, then CR3
	bool stale = tlb_note_load(slot, root);
	fake_set_cpu(0);
	return stale;
}

static void test_space_cpu_sets(void)
{
	load(0, 3, R3, true);
	load(1, 3, R3, true);
	CU_ASSERT_EQUAL(tlb_space_cpus[3], 0x3u);
	load(1, 4, R4, true);
	CU_ASSERT_EQUAL(tlb_space_cpus[3], 0x1u);
	CU_ASSERT_EQUAL(tlb_space_cpus[4], 0x2u);
	CU_ASSERT_EQUAL(tlb_space_cpus[0] & 0x3u, 0u); // both left the kernel's
}

static void test_local_only(void)
{
	load(0, 3, R3, true);
	tlb_invalidate(3, R3, VA, 2);
	CU_ASSERT_EQUAL(fake.invlpg, 2);
	CU_ASSERT_EQUAL(fake.ipis, 0);
}

// A CPU running a process in the space gets one IPI and flushes the pages.
static void test_remote_running(void)
{
	load(0, 3, R3, true);
	load(1, 3, R3, true);
	tlb_invalidate(3, R3, VA, 2);
	CU_ASSERT_EQUAL(fake.ipis, 1);
	CU_ASSERT_EQUAL(fake.ipi_cpus, 0x2u);
	CU_ASSERT_EQUAL(answered[1], 1);
	CU_ASSERT_EQUAL(fake.invlpg, 4); // two here, two there
	CU_ASSERT_EQUAL(tlb_ipis, 1);
}

// A CPU in the space but running no process: no IPI, a reload owed.
static void test_remote_idle_deferred(void)
{
	load(1, 3, R3, false);
	tlb_invalidate(3, R3, VA, 1);
	CU_ASSERT_EQUAL(fake.ipis, 0);
	CU_ASSERT_EQUAL(tlb_deferred, 1);
	CU_ASSERT_TRUE(load(1, 3, R3, true));  // must reload CR3 though it names R3
	CU_ASSERT_FALSE(load(1, 3, R3, true)); // once
}

// A change while CPU 1, its CR3 naming the space, starts a process there:
// whichever step of its start the change falls between, the CPU is either
// sent the IPI (it runs a process already) or told to reload CR3 as it
// loads it. The requester holds no lock the CPU's start takes.
static void test_change_while_starting(void)
{
	for (int at = 0; at < 3; at++) {
		setup();
		load(1, 3, R3, false); // idle, CR3 naming the space
		fake_set_cpu(1);
		if (at == 0) {
			fake_set_cpu(0);
			tlb_invalidate(3, R3, VA, 1); // before it starts
			fake_set_cpu(1);
		}
		tlb_cpu_user(true);
		if (at == 1) {
			fake_set_cpu(0);
			tlb_invalidate(3, R3, VA, 1); // running, CR3 not loaded again yet
			fake_set_cpu(1);
		}
		bool stale = tlb_note_load(3, R3);
		if (at == 2) {
			fake_set_cpu(0);
			tlb_invalidate(3, R3, VA, 1); // after
			fake_set_cpu(1);
		}
		fake_set_cpu(0);
		bool flushed = answered[1] == 1 && fake.invlpg == 1;
		CU_ASSERT_TRUE_FATAL(stale != flushed); // one way, exactly
		CU_ASSERT_EQUAL(stale, at == 0);
	}
}

// 128 single-page changes in a batch: one IPI at its end, and a full flush
// there (the gathered span is above the threshold).
static void test_batch_one_ipi(void)
{
	load(1, 3, R3, true);
	tlb_batch_begin();
	for (int i = 0; i < 128; i++)
		tlb_invalidate(3, R3, VA + (uint64_t)i * PAGE_SIZE, 1);
	CU_ASSERT_EQUAL(fake.ipis, 0);
	tlb_batch_end();
	CU_ASSERT_EQUAL(fake.ipis, 1);
	CU_ASSERT_EQUAL(fake.flush_tlb, 1);
	CU_ASSERT_EQUAL(fake.invlpg, 0);
	tlb_batch_end(); // none open: nothing
	CU_ASSERT_EQUAL(fake.ipis, 1);
}

// Two spaces on two CPUs in one batch: one IPI to each; each flushes only
// the range of the space its CR3 names.
static void test_batch_two_spaces(void)
{
	load(1, 3, R3, true);
	load(2, 4, R4, true);
	tlb_batch_begin();
	tlb_invalidate(3, R3, VA, 1);
	tlb_invalidate(4, R4, VA + PAGE_SIZE, 2);
	tlb_invalidate(3, R3, VA + PAGE_SIZE, 1);
	tlb_batch_end();
	CU_ASSERT_EQUAL(fake.ipis, 2);
	CU_ASSERT_EQUAL(fake.ipi_cpus, 0x6u);
	CU_ASSERT_EQUAL(fake.invlpg, 4); // 2 pages of R3 on CPU 1, 2 of R4 on CPU 2
	CU_ASSERT_EQUAL(tlb_requests, 1);
}

// A space going away: even an idle CPU whose CR3 names it is told to leave
// (its page tables are about to be freed), and the sets follow.
static void test_leave(void)
{
	load(1, 3, R3, false);
	tlb_leave(3, R3, KROOT);
	CU_ASSERT_EQUAL(fake.ipis, 1);
	CU_ASSERT_EQUAL(fake.load_root, 1);
	CU_ASSERT_EQUAL(fake.cr3, KROOT);
	CU_ASSERT_EQUAL(tlb_space_cpus[3], 0u);
	CU_ASSERT_TRUE(tlb_space_cpus[0] & 0x2u);
}

// Nothing to send when no other CPU holds the space.
static void test_nobody_else(void)
{
	load(1, 4, R4, true);
	tlb_invalidate(3, R3, VA, 8);
	tlb_leave(3, R3, KROOT);
	CU_ASSERT_EQUAL(fake.ipis, 0);
	CU_ASSERT_EQUAL(fake.invlpg, 0);
}

int register_tlb(void)
{
	static const struct test_case tests[] = {
		TEST(test_space_cpu_sets), TEST(test_local_only),     TEST(test_remote_running),
		TEST(test_remote_idle_deferred), TEST(test_change_while_starting), TEST(test_batch_one_ipi),
		TEST(test_batch_two_spaces),
		TEST(test_leave),          TEST(test_nobody_else),
	};
	return ADD_SUITE("tlb", setup, teardown, tests);
}
