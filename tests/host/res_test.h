// Helpers shared by the resource suites (vregion, exchange, vuspace,
// replace, res): processes with their spaces, regions, control calls with
// their argument words, PTE reads and page patterns.
#ifndef RES_TEST_H
#define RES_TEST_H
#include "host.h"
#include "fake_arch.h"
#include "fake_proc.h"
#include "heap.h"
#include "res/pmem.h"
#include "res/vspace.h"
#include "res/vregion.h"
#include "res/vuspace.h"
#include "err.h" // lib/include: the kernel's codes, not the C library's err.h
#include <stdio.h>
#include <string.h>

#define PG PAGE_SIZE
#define GiB (1ull << 30)
#define ATT_PTE (PTE_U | PTE_W | PTE_NX | PTE_P) // an attachment's leaf flags
#define NO_TABLE 0xdeadbeefdeadbeefull           // pte_of: no table covers va

static inline uint64_t pte_of(long vs, uint64_t va)
{
	uint64_t *e = vspace_pte(vs, va);
	return e ? *e : NO_TABLE;
}

// A page table covers va, and its entry maps nothing (not present).
static inline bool unmapped(long vs, uint64_t va)
{
	uint64_t e = pte_of(vs, va);
	return e != NO_TABLE && !(e & PTE_P);
}

static inline long space_new(void)
{
	long id = vspace_create();
	CU_ASSERT_FATAL(id > 0);
	return track_space(id);
}

// Registers process pid running in a fresh space; returns the space.
static inline long proc_new(int pid)
{
	long vs = space_new();
	fake_proc_add(pid, vs);
	return vs;
}

static inline long region_new(int owner, uint64_t pages, int mem)
{
	long id = vregion_create(owner, pages * PG, mem, -1);
	CU_ASSERT_FATAL(id > 0);
	return id;
}

static inline long attach(int caller, long vr, long vs, uint64_t va)
{
	long id = vuspace_attach(caller, vr, vs, va);
	CU_ASSERT_FATAL(id > 0);
	return id;
}

// ctrl_vr with its argument words a[0..3].
static inline long ctl4(int caller, long id, uint64_t op, uint64_t a0, uint64_t a1, uint64_t a2,
			uint64_t a3)
{
	const uint64_t a[4] = { a0, a1, a2, a3 };
	return vregion_control(caller, id, op, a);
}
static inline long ctl(int caller, long id, uint64_t op, uint64_t a0, uint64_t a1)
{
	return ctl4(caller, id, op, a0, a1, 0, 0);
}

static inline size_t heap_allocs(void)
{
	struct heap_stats s;
	heap_stats(&s);
	return s.nallocs;
}

// Page contents that name their region and page: tag + page in every byte.
static inline uint8_t pat(uint8_t tag, uint64_t page) { return (uint8_t)(tag + page); }

static inline void fill_pages(long vr, uint8_t tag)
{
	for (uint64_t p = 0; p < vregion_pages(vr); p++)
		if (vregion_frame(vr, p))
			memset(arch_p2v(vregion_frame(vr, p)), pat(tag, p), PG);
}

static inline bool frame_is(paddr_t f, uint8_t byte)
{
	const uint8_t *b = arch_p2v(f);
	for (size_t i = 0; i < PG; i++)
		if (b[i] != byte)
			return false;
	return true;
}

// The user-visible page at va in vs holds byte everywhere.
static inline bool user_page_is(long vs, uint64_t va, uint8_t byte)
{
	static uint8_t buf[PAGE_SIZE];
	if (!user_read(vs, va, buf, PG))
		return false;
	for (size_t i = 0; i < PG; i++)
		if (buf[i] != byte)
			return false;
	return true;
}

static inline void tlb_reset(void)
{
	fake.invlpg = 0;
	fake.flush_tlb = 0;
}

// Every resource of the test is gone and every frame is back.
#define ASSERT_CLEAN(nfree0)                                                   \
	do {                                                                   \
		CU_ASSERT_EQUAL(vregion_live(), 0);                            \
		CU_ASSERT_EQUAL(vuspace_live(), 0);                            \
		CU_ASSERT_EQUAL(pmem_free_count(), (nfree0));                  \
	} while (0)
#endif
