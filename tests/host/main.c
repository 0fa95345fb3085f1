// The host unit-test runner: every suite, CUnit's basic interface, exit
// status 1 on any failed assertion, test or suite.
#include "host.h"
#include "fake_arch.h"
#include "fake_ata.h"
#include "fake_proc.h"
#include "heap.h"
#include "res/res.h"
#include "res/pmem.h"
#include "res/vspace.h"
#include <CUnit/Basic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The whole run takes well under a second; a kernel loop that never ends
// must fail the run, not hang it.
#define WATCHDOG_SECONDS 60

static void watchdog(int sig)
{
	(void)sig;
	static const char msg[] = "\nhost unit tests: watchdog expired, a test hangs: ";
	CU_pTest t = CU_get_current_test();
	if (write(2, msg, sizeof(msg) - 1) < 0 || !t || !t->pName ||
	    write(2, t->pName, strlen(t->pName)) < 0 || write(2, "\n", 1) < 0)
		_exit(3);
	_exit(3);
}

int add_suite(const char *name, CU_SetUpFunc setup, CU_TearDownFunc teardown,
	      const struct test_case *tests, size_t n)
{
	CU_pSuite s = CU_add_suite_with_setup_and_teardown(name, NULL, NULL, setup, teardown);
	if (!s)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!CU_add_test(s, tests[i].name, tests[i].fn))
			return -1;
	}
	return 0;
}

#define MAX_TRACKED 256
static long tracked[MAX_TRACKED];
static int ntracked;

long track_space(long id)
{
	if (id > 0 && ntracked < MAX_TRACKED)
		tracked[ntracked++] = id;
	return id;
}

void machine_setup(void)
{
	fake_reset();
	struct mem_range ram = { FAKE_PHYS_BASE, FAKE_PHYS_SIZE };
	pmem_init(&ram, 1, 0, 0);
	vspace_init_kernel(pmem_top());
}

// A test that stopped half-way must not leave spaces behind: their slots
// would be lost and their frames belong to the next test's allocator.
// A failure here (the test left the tables corrupt) gives up the cleanup.
void machine_teardown(void)
{
	jmp_buf jb;
	if (setjmp(jb) == 0) {
		fake_fatal_env = &jb;
		for (int i = 0; i < ntracked; i++)
			if (vspace_valid(tracked[i]))
				vspace_destroy(tracked[i]);
	}
	fake_fatal_env = NULL;
	ntracked = 0;
}

#define HEAP_PAGES 1024 // as kernel/main.c: 4 MiB, taken before tests count frames

void res_machine_setup(void)
{
	machine_setup();
	paddr_t first = 0;
	for (int i = 0; i < HEAP_PAGES; i++) {
		paddr_t pa = pmem_alloc_nozero();
		if (!pa || (first && pa != first + (paddr_t)i * PAGE_SIZE))
			fake_fatal("heap: no %d contiguous frames", HEAP_PAGES);
		first = first ? first : pa;
	}
	heap_init(arch_p2v(first), HEAP_PAGES * PAGE_SIZE);
	fake_proc_reset();
	fake_ata_reset();
}

// The region and attachment tables outlive a test: whatever it left must go
// now, while the heap their frame arrays live in is still intact.
void res_machine_teardown(void)
{
	jmp_buf jb;
	if (setjmp(jb) == 0) {
		fake_fatal_env = &jb;
		for (int pid = 0; pid <= FAKE_MAX_PID; pid++)
			res_release_owner(pid);
	}
	fake_fatal_env = NULL;
	if (res_live(RES_VREGION) || res_live(RES_VUSPACE))
		fprintf(stderr, "res teardown: %ld regions, %ld attachments left\n",
			res_live(RES_VREGION), res_live(RES_VUSPACE));
	machine_teardown();
}

bool user_read(long vs, uint64_t va, void *dst, size_t n)
{
	uint8_t *d = dst;
	while (n) {
		uint64_t *pte = vspace_pte(vs, va);
		if (!pte || !(*pte & PTE_P))
			return false;
		size_t off = va & (PAGE_SIZE - 1), k = PAGE_SIZE - off;
		k = k < n ? k : n;
		memcpy(d, (uint8_t *)arch_p2v(*pte & PTE_ADDR_MASK) + off, k);
		d += k, va += k, n -= k;
	}
	return true;
}

int main(void)
{
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	int (*suites[])(void) = { register_pmem, register_vspace, register_elf,
				  register_cmdline, register_sched, register_heap,
				  register_bootinfo, register_fbcon, register_fmt, register_lib,
				  register_vregion, register_exchange, register_vuspace,
				  register_replace, register_res, register_io, register_wire,
				  register_e1000e, register_fs, register_relay, register_lb,
				  register_lock, register_tlb, register_vnetmq };
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
		if (suites[i]() < 0) {
			fprintf(stderr, "registering suite %zu: %s\n", i, CU_get_error_msg());
			CU_cleanup_registry();
			return 2;
		}
	}
	signal(SIGALRM, watchdog);
	alarm(WATCHDOG_SECONDS);
	CU_basic_set_mode(getenv("VERBOSE") ? CU_BRM_VERBOSE : CU_BRM_NORMAL);
	// HOST_SUITE=name runs one suite (for per-suite counts and debugging).
	const char *only = getenv("HOST_SUITE");
	if (only) {
		CU_pSuite s = CU_get_suite(only);
		if (!s) {
			fprintf(stderr, "no suite %s\n", only);
			CU_cleanup_registry();
			return 2;
		}
		CU_basic_run_suite(s);
	} else {
		CU_basic_run_tests();
	}
	unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed() +
			  CU_get_number_of_suites_failed();
	unsigned ntests = CU_get_number_of_tests_run();
	int err = CU_get_error();
	CU_cleanup_registry();
	printf("\n");
	printf("host unit tests: %u tests, %s\n", ntests, failed || err ? "FAILED" : "all passed");
	return failed || err ? 1 : 0;
}
