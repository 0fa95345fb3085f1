// vspace: creating, mapping, walking, rewriting and destroying page tables.
#include "host.h"
#include "fake_arch.h"
#include "res/pmem.h"
#include "res/vspace.h"
#include "err.h"
#include <string.h> // lib/include: the kernel's codes, not the C library's err.h

#define UA USER_BASE
#define GiB (1ull << 30)

// The leaf PTE, or NO_TABLE when no table covers va: a missing table then
// fails an assertion instead of crashing the run.
#define NO_TABLE 0xdeadbeefdeadbeefull
static uint64_t pte_at(long id, uint64_t va)
{
	uint64_t *e = vspace_pte(id, va);
	return e ? *e : NO_TABLE;
}

static long new_space(void)
{
	long id = vspace_create();
	CU_ASSERT_FATAL(id > 0);
	return track_space(id);
}

static void test_create_shares_kernel_half(void)
{
	uint64_t n0 = pmem_free_count();
	long id = new_space();
	CU_ASSERT_TRUE(vspace_valid(id));
	CU_ASSERT_EQUAL(vspace_tables(id), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 1); // the root only
	const uint64_t *u = arch_p2v(vspace_root(id));
	const uint64_t *k = arch_p2v(vspace_root(KERNEL_VSPACE));
	CU_ASSERT_EQUAL(u[0], k[0]);
	CU_ASSERT_TRUE(k[0] & PTE_P);
	CU_ASSERT_FALSE(k[0] & PTE_U); // kernel RAM map is supervisor only
	CU_ASSERT_EQUAL(u[(MMIO_BASE >> 39) & 0x1ff], k[(MMIO_BASE >> 39) & 0x1ff]);
	int user = 0;
	for (int i = 1; i < 256; i++)
		user += u[i] != 0;
	CU_ASSERT_EQUAL(user, 0);
	CU_ASSERT_EQUAL(vspace_destroy(id), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
}

static void test_kernel_identity_map(void)
{
	// 2 MiB pages cover [0, 4 GiB) at least; the kernel's root is loaded.
	CU_ASSERT_EQUAL(arch_current_root(), vspace_root(KERNEL_VSPACE));
	const uint64_t *pml4 = arch_p2v(vspace_root(KERNEL_VSPACE));
	const uint64_t *pdpt = arch_p2v(pml4[0] & PTE_ADDR_MASK);
	for (int gb = 0; gb < 4; gb++) {
		CU_ASSERT_FATAL(pdpt[gb] & PTE_P);
		const uint64_t *pd = arch_p2v(pdpt[gb] & PTE_ADDR_MASK);
		uint64_t e = pd[gb * 7 % 512];
		CU_ASSERT_EQUAL(e & PTE_ADDR_MASK, (uint64_t)gb * GiB + (uint64_t)(gb * 7 % 512) * (2ull << 20));
		CU_ASSERT_TRUE(e & PTE_PS);
		CU_ASSERT_TRUE(e & PTE_W);
		CU_ASSERT_FALSE(e & PTE_U);
	}
	CU_ASSERT_FALSE(pdpt[4] & PTE_P);
	// A kernel address is not walkable down to a 4 KiB PTE (large page).
	CU_ASSERT_PTR_NULL(vspace_pte(KERNEL_VSPACE, 0x200000));
}

static void test_map_walk_unmap(void)
{
	long id = new_space();
	paddr_t f = pmem_alloc();
	uint64_t va = UA + 0x123000;
	CU_ASSERT_EQUAL(vspace_map(id, va, f, PTE_U | PTE_W | PTE_NX), 0);
	uint64_t *pte = vspace_pte(id, va);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pte);
	CU_ASSERT_EQUAL(*pte & PTE_ADDR_MASK, f);
	CU_ASSERT_EQUAL(*pte & ~PTE_ADDR_MASK, PTE_P | PTE_U | PTE_W | PTE_NX);
	CU_ASSERT_EQUAL(vspace_tables(id), 3);
	// Intermediate entries let user mode through; the leaf decides.
	const uint64_t *pml4 = arch_p2v(vspace_root(id));
	uint64_t e4 = pml4[(va >> 39) & 0x1ff];
	CU_ASSERT_EQUAL(e4 & (PTE_P | PTE_W | PTE_U), PTE_P | PTE_W | PTE_U);
	// A neighbour in the same table has a PTE slot but no mapping.
	uint64_t *next = vspace_pte(id, va + PAGE_SIZE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(next);
	CU_ASSERT_EQUAL(*next, 0);
	CU_ASSERT_EQUAL(next - pte, 1);
	// No table at all 1 GiB away; walking does not allocate.
	CU_ASSERT_PTR_NULL(vspace_pte(id, va + GiB));
	CU_ASSERT_EQUAL(vspace_tables(id), 3);

	uint64_t old = 0;
	CU_ASSERT_EQUAL(vspace_unmap(id, va, &old), 0);
	CU_ASSERT_EQUAL(old, f | PTE_P | PTE_U | PTE_W | PTE_NX);
	CU_ASSERT_EQUAL(*pte, 0);
	CU_ASSERT_TRUE(pmem_is_allocated(f)); // unmap does not free: the caller owns old
	CU_ASSERT_EQUAL(vspace_unmap(id, va, &old), -E_NOTBACKED);
	CU_ASSERT_EQUAL(old, 0);
	CU_ASSERT_EQUAL(vspace_unmap(id, va + GiB, &old), -E_NOTBACKED);
	CU_ASSERT_EQUAL(old, 0);
	pmem_free(f);
	CU_ASSERT_EQUAL(vspace_destroy(id), 0);
}

static void test_map_twice_exists(void)
{
	long id = new_space();
	paddr_t f = pmem_alloc(), g = pmem_alloc();
	CU_ASSERT_EQUAL(vspace_map(id, UA, f, PTE_U), 0);
	uint64_t n = pmem_free_count();
	CU_ASSERT_EQUAL(vspace_map(id, UA, g, PTE_U | PTE_W), -E_EXIST);
	CU_ASSERT_EQUAL(pte_at(id, UA), f | PTE_U | PTE_P); // unchanged
	CU_ASSERT_EQUAL(pmem_free_count(), n);
	CU_ASSERT_EQUAL(vspace_map(id, UA + 8, g, PTE_U), -E_INVAL);  // unaligned va
	CU_ASSERT_EQUAL(vspace_map(id, UA + PAGE_SIZE, g + 8, PTE_U), -E_INVAL); // unaligned pa
	CU_ASSERT_EQUAL(vspace_destroy(id), 0);
	pmem_free(f);
	pmem_free(g);
}

static void test_table_counts(void)
{
	long id = new_space();
	static const struct {
		uint64_t va, tables;
	} steps[] = {
		{ UA, 3 },                      // PDPT, PD, PT
		{ UA + PAGE_SIZE, 3 },          // same PT
		{ UA + (2ull << 20), 4 },       // next PT
		{ UA + GiB, 6 },                // next PD and PT
		{ UA + (512 * GiB), 9 },        // next PML4 slot: PDPT, PD, PT
		{ USER_TOP - PAGE_SIZE, 12 },   // the last user page
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		CU_ASSERT_EQUAL(vspace_map(id, steps[i].va, pmem_alloc(), PTE_U | PTE_OWNED), 0);
		CU_ASSERT_EQUAL(vspace_tables(id), steps[i].tables);
	}
	CU_ASSERT_EQUAL(vspace_destroy(id), 0);
	CU_ASSERT_EQUAL(vspace_tables(id), 0);
}

// Destroy frees the root, every table and every owned frame, and leaves
// frames the space did not own (shared, device) allocated.
static void test_destroy_frees_exactly(void)
{
	uint64_t n0 = pmem_free_count();
	long id = new_space();
	paddr_t shared[5];
	for (int i = 0; i < 5; i++)
		shared[i] = pmem_alloc();
	uint64_t seed = 42;
	int owned = 0;
	for (int i = 0; i < 300; i++) {
		uint64_t va = UA + prng_below(&seed, 1ull << 34) * PAGE_SIZE;
		paddr_t f = pmem_alloc();
		long r = vspace_map(id, va, f, PTE_U | PTE_W | PTE_OWNED);
		if (r == -E_EXIST) {
			pmem_free(f);
			continue;
		}
		CU_ASSERT_EQUAL_FATAL(r, 0);
		owned++;
	}
	for (int i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(vspace_map(id, UA + 0x40000000000ull + (uint64_t)i * PAGE_SIZE,
					   shared[i], PTE_U), 0);
	uint64_t tables = vspace_tables(id);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 1 - tables - (uint64_t)owned - 5);
	CU_ASSERT_EQUAL(vspace_destroy(id), 0);
	CU_ASSERT_FALSE(vspace_valid(id));
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 5);
	for (int i = 0; i < 5; i++) {
		CU_ASSERT_TRUE(pmem_is_allocated(shared[i]));
		pmem_free(shared[i]);
	}
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
}

static void test_bad_and_stale_ids(void)
{
	long a = new_space();
	CU_ASSERT_EQUAL(vspace_destroy(a), 0);
	long b = new_space(); // reuses the slot with the next generation
	CU_ASSERT_EQUAL(res_slot(b), res_slot(a));
	CU_ASSERT_NOT_EQUAL(b, a);
	uint64_t old = 1;
	paddr_t f = pmem_alloc();
	long bad[] = {
		a,                                             // stale generation
		-1, 0,                                         // never identifiers
		res_slot(b),                                   // the bare slot number
		res_id(RES_VSPACE, res_gen(b), NVSPACE),       // slot out of range
		res_id(RES_VSPACE, 0, res_slot(b) + 1),        // a free slot
		res_id(RES_PROC, res_gen(b), res_slot(b)),     // another kind's identifier
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_FALSE(vspace_valid(bad[i]));
		CU_ASSERT_EQUAL(vspace_unmap(bad[i], UA, &old), -E_BADID);
		CU_ASSERT_EQUAL(vspace_activate(bad[i]), -E_BADID);
		CU_ASSERT_EQUAL(vspace_destroy(bad[i]), -E_BADID);
		CU_ASSERT_PTR_NULL(vspace_pte(bad[i], UA));
		CU_ASSERT_EQUAL(vspace_root(bad[i]), 0);
		CU_ASSERT_EQUAL(vspace_tables(bad[i]), 0);
		CU_ASSERT_TRUE(vspace_map(bad[i], UA, f, PTE_U) < 0);
	}
	CU_ASSERT_EQUAL(vspace_destroy(KERNEL_VSPACE), -E_BADID);
	CU_ASSERT_TRUE(vspace_valid(KERNEL_VSPACE));
	// The live space is untouched by all of the above.
	CU_ASSERT_TRUE(vspace_valid(b));
	CU_ASSERT_EQUAL(vspace_tables(b), 0);
	CU_ASSERT_EQUAL(vspace_destroy(b), 0);
	pmem_free(f);
}

// err.h: E_BADID is "identifier unknown or stale"; map says so like unmap,
// activate and destroy, and keeps E_INVAL for a misaligned address.
static void test_map_stale_id_is_badid(void)
{
	long a = new_space();
	CU_ASSERT_EQUAL(vspace_destroy(a), 0);
	paddr_t f = pmem_alloc();
	CU_ASSERT_EQUAL(vspace_map(a, UA, f, PTE_U), -E_BADID);
	CU_ASSERT_EQUAL(vspace_map(-1, UA, f, PTE_U), -E_BADID);
	pmem_free(f);
}

// Invalidation of a range in the current space: per page up to the
// threshold, one full flush above it; nothing for other spaces.
static void test_flush_range(void)
{
	long id = new_space();
	paddr_t f = pmem_alloc();
	CU_ASSERT_EQUAL(vspace_map(id, UA, f, PTE_U | PTE_OWNED), 0);
	CU_ASSERT_EQUAL(vspace_activate(id), 0);
	uint64_t inv = fake.invlpg, full = fake.flush_tlb;
	uint64_t pages = tlb_page_flushes, fulls = tlb_full_flushes;

	// Small ranges: one invlpg per page; above the threshold: one full flush.
	vspace_flush_range(id, UA, 3);
	CU_ASSERT_EQUAL(fake.invlpg, inv + 3);
	CU_ASSERT_EQUAL(fake.last_invlpg, UA + 2 * PAGE_SIZE);
	CU_ASSERT_EQUAL(tlb_page_flushes, pages + 3);
	vspace_flush_range(id, UA, TLB_FLUSH_THRESHOLD);
	CU_ASSERT_EQUAL(fake.invlpg, inv + 3 + TLB_FLUSH_THRESHOLD);
	CU_ASSERT_EQUAL(fake.flush_tlb, full);
	vspace_flush_range(id, UA, TLB_FLUSH_THRESHOLD + 1);
	CU_ASSERT_EQUAL(fake.invlpg, inv + 3 + TLB_FLUSH_THRESHOLD);
	CU_ASSERT_EQUAL(fake.flush_tlb, full + 1);
	CU_ASSERT_EQUAL(tlb_full_flushes, fulls + 1);
	// Not the current space, or not a space: nothing to flush.
	long other = new_space();
	vspace_flush_range(other, UA, 5);
	vspace_flush_range(other, UA, 500);
	vspace_flush_range(-1, UA, 5);
	CU_ASSERT_EQUAL(fake.invlpg, inv + 3 + TLB_FLUSH_THRESHOLD);
	CU_ASSERT_EQUAL(fake.flush_tlb, full + 1);
	CU_ASSERT_EQUAL(vspace_destroy(other), 0);
	// f was mapped PTE_OWNED: destroying the space frees it.
	CU_ASSERT_EQUAL(vspace_destroy(id), 0);
	CU_ASSERT_FALSE(pmem_is_allocated(f));
}

// Batch rewrite within existing tables: pages without a leaf table are
// skipped, 0 unmaps, and one TLB invalidation covers the batch.
static void test_set_frames(void)
{
	long id = new_space();
	paddr_t f0 = pmem_alloc();
	CU_ASSERT_EQUAL(vspace_map(id, UA, f0, PTE_U), 0); // the leaf table of [UA, UA+2M)
	CU_ASSERT_EQUAL(vspace_activate(id), 0);
	paddr_t fr[40];
	for (int i = 0; i < 40; i++)
		fr[i] = pmem_alloc();
	uint64_t va = UA + (2ull << 20) - 20 * PAGE_SIZE; // 20 pages in, 20 past the table
	uint64_t inv = fake.invlpg, full = fake.flush_tlb;
	uint64_t flags = PTE_U | PTE_W | PTE_NX;
	vspace_set_frames(id, va, fr, 40, flags);
	for (int i = 0; i < 20; i++)
		CU_ASSERT_EQUAL(pte_at(id, va + (uint64_t)i * PAGE_SIZE), fr[i] | flags | PTE_P);
	CU_ASSERT_PTR_NULL(vspace_pte(id, va + 20 * PAGE_SIZE));
	CU_ASSERT_PTR_NULL(vspace_pte(id, va + 39 * PAGE_SIZE));
	CU_ASSERT_EQUAL(vspace_tables(id), 3); // never allocates
	CU_ASSERT_EQUAL(pte_at(id, UA), f0 | PTE_U | PTE_P); // outside: untouched
	CU_ASSERT_EQUAL(fake.flush_tlb, full + 1); // 40 > TLB_FLUSH_THRESHOLD
	CU_ASSERT_EQUAL(fake.invlpg, inv);
	// Unmap five of them: five invlpg.
	paddr_t zero[5] = { 0 };
	vspace_set_frames(id, va + 2 * PAGE_SIZE, zero, 5, flags);
	CU_ASSERT_EQUAL(fake.invlpg, inv + 5);
	CU_ASSERT_EQUAL(fake.last_invlpg, va + 6 * PAGE_SIZE);
	CU_ASSERT_EQUAL(pte_at(id, va + 1 * PAGE_SIZE), fr[1] | flags | PTE_P);
	for (int i = 2; i < 7; i++)
		CU_ASSERT_EQUAL(pte_at(id, va + (uint64_t)i * PAGE_SIZE), 0);
	CU_ASSERT_EQUAL(pte_at(id, va + 7 * PAGE_SIZE), fr[7] | flags | PTE_P);
	// Crossing into an existing leaf table: the entries land in that table,
	// not in whatever frame follows the first one.
	CU_ASSERT_EQUAL(vspace_map(id, UA + (2ull << 20) + 100 * PAGE_SIZE, f0, PTE_U), 0);
	uint8_t *pt1 = (uint8_t *)vspace_pte(id, UA);
	paddr_t after = arch_v2p(pt1) + PAGE_SIZE;
	static uint8_t snap[PAGE_SIZE];
	bool backed = fake_phys_ok(after, PAGE_SIZE);
	if (backed)
		memcpy(snap, arch_p2v(after), PAGE_SIZE);
	vspace_set_frames(id, va, fr, 40, PTE_U);
	for (int i = 0; i < 40; i++)
		CU_ASSERT_EQUAL(pte_at(id, va + (uint64_t)i * PAGE_SIZE), fr[i] | PTE_U | PTE_P);
	if (backed)
		CU_ASSERT_EQUAL(memcmp(snap, arch_p2v(after), PAGE_SIZE), 0);
	CU_ASSERT_EQUAL(pte_at(id, UA + (2ull << 20) + 100 * PAGE_SIZE), f0 | PTE_U | PTE_P);
	// Not current: rewritten, nothing invalidated. A bad id: nothing at all.
	CU_ASSERT_EQUAL(vspace_activate(KERNEL_VSPACE), 0);
	vspace_set_frames(id, va, fr + 10, 2, PTE_U);
	CU_ASSERT_EQUAL(pte_at(id, va), fr[10] | PTE_U | PTE_P);
	vspace_set_frames(-1, va, fr, 2, PTE_U);
	vspace_set_frames(id + 1, va, fr, 2, PTE_U);
	CU_ASSERT_EQUAL(pte_at(id, va), fr[10] | PTE_U | PTE_P);
	CU_ASSERT_EQUAL(fake.invlpg, inv + 5);
	CU_ASSERT_EQUAL(fake.flush_tlb, full + 2);
	CU_ASSERT_EQUAL(vspace_destroy(id), 0); // nothing was PTE_OWNED
	pmem_free(f0);
	for (int i = 0; i < 40; i++)
		pmem_free(fr[i]);
}

// Prune frees exactly the tables under the range that map nothing any more.
static void test_prune(void)
{
	uint64_t n0 = pmem_free_count();
	long id = new_space();
	const uint64_t A = UA, B = UA + (2ull << 20), C = UA + GiB, D = UA + 512 * GiB;
	const uint64_t E = UA + (8ull << 20); // left with an empty leaf table
	const uint64_t va[5] = { A, B, C, D, E };
	for (int i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(vspace_map(id, va[i], pmem_alloc(), PTE_U | PTE_OWNED), 0);
	CU_ASSERT_EQUAL(vspace_tables(id), 10);
	uint64_t old;
	CU_ASSERT_EQUAL(vspace_unmap(id, E, &old), 0);
	pmem_free(old & PTE_ADDR_MASK);
	CU_ASSERT_EQUAL(vspace_unmap(id, B, &old), 0);
	pmem_free(old & PTE_ADDR_MASK);
	vspace_prune(id, B, 1); // B's leaf table only: E's is empty but outside
	CU_ASSERT_EQUAL(vspace_tables(id), 9);
	CU_ASSERT_PTR_NULL(vspace_pte(id, B));
	CU_ASSERT_PTR_NOT_NULL(vspace_pte(id, A));
	CU_ASSERT_PTR_NOT_NULL(vspace_pte(id, E));
	CU_ASSERT_EQUAL(vspace_unmap(id, C, &old), 0);
	pmem_free(old & PTE_ADDR_MASK);
	vspace_prune(id, C, 1); // C's leaf table and directory
	CU_ASSERT_EQUAL(vspace_tables(id), 7);
	vspace_prune(id, A, 512); // A still mapped, E outside: nothing to free
	CU_ASSERT_EQUAL(vspace_tables(id), 7);
	CU_ASSERT_EQUAL(vspace_activate(id), 0);
	uint64_t full = fake.flush_tlb;
	CU_ASSERT_EQUAL(vspace_unmap(id, A, &old), 0);
	pmem_free(old & PTE_ADDR_MASK);
	vspace_prune(id, A, 1); // A's table; the directory still holds E's
	CU_ASSERT_EQUAL(vspace_tables(id), 6);
	CU_ASSERT_EQUAL(fake.flush_tlb, full + 1); // cached walks may name freed tables
	vspace_prune(id, E, 1); // E's table, then the directory and the PDPT
	CU_ASSERT_EQUAL(vspace_tables(id), 3);
	const uint64_t *root = arch_p2v(vspace_root(id));
	CU_ASSERT_EQUAL(root[(UA >> 39) & 0x1ff], 0);
	vspace_prune(id, USER_BASE, (USER_TOP - USER_BASE) / PAGE_SIZE); // D stays
	CU_ASSERT_EQUAL(vspace_tables(id), 3);
	CU_ASSERT_TRUE(pte_at(id, D) & PTE_P);
	// Pruning the kernel's space or a bad id does nothing.
	const uint64_t *k = arch_p2v(vspace_root(KERNEL_VSPACE));
	uint64_t k0 = k[0];
	vspace_prune(KERNEL_VSPACE, 0, 1ull << 20);
	vspace_prune(-1, UA, 1);
	CU_ASSERT_EQUAL(k[0], k0);
	CU_ASSERT_EQUAL(vspace_destroy(id), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
}

static void test_unmap_invalidates_only_current(void)
{
	long a = new_space(), b = new_space();
	CU_ASSERT_EQUAL(vspace_map(a, UA, pmem_alloc(), PTE_U | PTE_OWNED), 0);
	CU_ASSERT_EQUAL(vspace_map(b, UA, pmem_alloc(), PTE_U | PTE_OWNED), 0);
	CU_ASSERT_EQUAL(vspace_activate(a), 0);
	uint64_t loads = fake.load_root;
	CU_ASSERT_EQUAL(vspace_activate(a), 0);
	CU_ASSERT_EQUAL(fake.load_root, loads); // already current: no CR3 reload
	fake.invlpg = fake.flush_tlb = 0;
	uint64_t old;
	CU_ASSERT_EQUAL(vspace_unmap(b, UA, &old), 0);
	CU_ASSERT_EQUAL(fake.invlpg + fake.flush_tlb, 0);
	pmem_free(old & PTE_ADDR_MASK);
	CU_ASSERT_EQUAL(vspace_unmap(a, UA, &old), 0);
	CU_ASSERT_TRUE(fake.invlpg == 1 || fake.flush_tlb == 1);
	if (fake.invlpg)
		CU_ASSERT_EQUAL(fake.last_invlpg, UA);
	pmem_free(old & PTE_ADDR_MASK);
	// Destroying the current space leaves the CPU on the kernel's tables.
	CU_ASSERT_EQUAL(vspace_destroy(a), 0);
	CU_ASSERT_EQUAL(arch_current_root(), vspace_root(KERNEL_VSPACE));
	CU_ASSERT_EQUAL(vspace_destroy(b), 0);
}

static void test_create_until_full(void)
{
	uint64_t n0 = pmem_free_count();
	long ids[NVSPACE];
	int n = 0;
	long r;
	while ((r = vspace_create()) > 0 && n < NVSPACE)
		ids[n++] = track_space(r);
	CU_ASSERT_EQUAL(n, NVSPACE - 1); // slot 0 is the kernel's
	CU_ASSERT_EQUAL(r, -E_NOMEM);
	for (int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(vspace_destroy(ids[i]), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
}

static void test_out_of_frames(void)
{
	long id = new_space();
	// Leave two frames: enough for a PDPT and a PD, not the PT.
	paddr_t pa;
	uint64_t taken = 0;
	static paddr_t hold[20000];
	while (pmem_free_count() > 2 && (pa = pmem_alloc()))
		hold[taken++] = pa;
	CU_ASSERT_EQUAL(vspace_map(id, UA, hold[0], PTE_U), -E_NOMEM);
	CU_ASSERT_EQUAL(pmem_free_count(), 0);
	CU_ASSERT_EQUAL(vspace_tables(id), 2); // kept, freed with the space
	CU_ASSERT_EQUAL(vspace_create(), -E_NOMEM);
	CU_ASSERT_EQUAL(vspace_destroy(id), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), 3);
	while (taken)
		pmem_free(hold[--taken]);
}

static void test_kmap_mmio(void)
{
	paddr_t dev = 0xfebc0000; // an e1000 BAR: not RAM, never dereferenced here
	volatile uint8_t *a = kmap_mmio(dev + 0x10, 2 * PAGE_SIZE);
	uint64_t va = (uint64_t)(uintptr_t)a;
	CU_ASSERT_TRUE(va >= MMIO_BASE);
	CU_ASSERT_EQUAL(va & (PAGE_SIZE - 1), 0x10);
	for (int i = 0; i < 3; i++) { // [dev+0x10, dev+0x2010) spans three pages
		uint64_t *pte = vspace_pte(KERNEL_VSPACE, PAGE_ROUND_DOWN(va) + (uint64_t)i * PAGE_SIZE);
		CU_ASSERT_PTR_NOT_NULL_FATAL(pte);
		CU_ASSERT_EQUAL(*pte, (dev + (uint64_t)i * PAGE_SIZE) | PTE_P | PTE_W | PTE_PCD |
					      PTE_PWT | PTE_NX);
	}
	volatile uint8_t *b = kmap_mmio(0xfec00000, 4);
	uint64_t vb = (uint64_t)(uintptr_t)b;
	// A guard page separates windows.
	CU_ASSERT_EQUAL(vb, PAGE_ROUND_DOWN(va) + 4 * PAGE_SIZE);
	CU_ASSERT_EQUAL(pte_at(KERNEL_VSPACE, vb - PAGE_SIZE), 0);
	// User spaces see the window through the shared PML4 entry.
	long id = new_space();
	CU_ASSERT_EQUAL(pte_at(id, vb), 0xfec00000 | PTE_P | PTE_W | PTE_PCD | PTE_PWT | PTE_NX);
	CU_ASSERT_EQUAL(vspace_destroy(id), 0);
}

int register_vspace(void)
{
	static const struct test_case t[] = {
		TEST(test_create_shares_kernel_half),
		TEST(test_kernel_identity_map),
		TEST(test_map_walk_unmap),
		TEST(test_map_twice_exists),
		TEST(test_table_counts),
		TEST(test_destroy_frees_exactly),
		TEST(test_bad_and_stale_ids),
		TEST(test_map_stale_id_is_badid),
		TEST(test_flush_range),
		TEST(test_set_frames),
		TEST(test_prune),
		TEST(test_unmap_invalidates_only_current),
		TEST(test_create_until_full),
		TEST(test_out_of_frames),
		TEST(test_kmap_mmio),
	};
	return ADD_SUITE("vspace", machine_setup, machine_teardown, t);
}
