// Shared by the suites: registration, a seeded PRNG, and the standard
// machine (all simulated RAM managed by pmem, kernel page tables built).
#ifndef HOST_H
#define HOST_H
#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct test_case {
	const char *name;
	CU_TestFunc fn;
};
#define TEST(fn) { #fn, fn }

// Adds a suite; setup/teardown run around every test. Returns 0 or -1.
int add_suite(const char *name, CU_SetUpFunc setup, CU_TearDownFunc teardown,
	      const struct test_case *tests, size_t n);
#define ADD_SUITE(name, setup, teardown, tests)                                    \
	add_suite(name, setup, teardown, tests, sizeof(tests) / sizeof(tests[0]))

// xorshift64*: the same sequence on every run for a given seed.
static inline uint64_t prng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}
static inline uint64_t prng_below(uint64_t *s, uint64_t n) { return prng_next(s) % n; }

// fake_reset, pmem over all simulated RAM, kernel page tables loaded.
void machine_setup(void);
// Destroys the user spaces recorded with track_space that are still valid.
void machine_teardown(void);
long track_space(long id);

// machine_setup, then a kernel heap carved out of pmem as the kernel's
// main.c does (so region frame arrays live in simulated RAM), an empty fake
// process table and a fresh RAM disk. The teardown releases every owner's
// regions and attachments (pids 0..FAKE_MAX_PID), then machine_teardown.
void res_machine_setup(void);
void res_machine_teardown(void);

// Copies n bytes of user memory at va in space vs out of the simulated RAM,
// one page at a time; false when a page is not mapped.
bool user_read(long vs, uint64_t va, void *dst, size_t n);

int register_pmem(void);
int register_vspace(void);
int register_elf(void);
int register_cmdline(void);
int register_sched(void);
int register_heap(void);
int register_bootinfo(void);
int register_fbcon(void);
int register_fmt(void);
int register_lib(void);
int register_vregion(void);
int register_exchange(void);
int register_vuspace(void);
int register_replace(void);
int register_res(void);
int register_io(void);
int register_wire(void);
int register_e1000e(void);
int register_fs(void);
int register_relay(void);
int register_lb(void);
int register_lock(void);
int register_tlb(void);
int register_vnetmq(void);
#endif
