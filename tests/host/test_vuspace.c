// vuspace: attaching a region into a space at an address (decode errors,
// page tables prepared at attach), unbacked pages left unmapped until
// ALLOC, FREE unmapping, detach unmapping and pruning, the per-region
// attachment limit, the attachment table limit, release on owner exit and
// region deletion detaching everywhere.
#include "res_test.h"
#include "res/res.h"

#define VA (USER_BASE + 0x40000000ull + 0x10000) // inside one leaf table
#define VA2 (USER_BASE + 3 * GiB)

static long s1, s2, s3;

static void setup(void)
{
	res_machine_setup();
	s1 = proc_new(1);
	s2 = proc_new(2);
	s3 = proc_new(3);
}

static void test_attach_maps_backed_pages(void)
{
	long r = region_new(1, 3, VR_MEM_ALL);
	fill_pages(r, 0x30);
	uint64_t n0 = pmem_free_count();
	CU_ASSERT_EQUAL(vspace_tables(s1), 0);
	long id = vuspace_attach(1, r, 0, VA);
	CU_ASSERT_FATAL(id > 0);
	CU_ASSERT_TRUE(res_kind_is(id, RES_VUSPACE));
	CU_ASSERT_EQUAL(vuspace_addr(id), VA);
	CU_ASSERT_EQUAL(vuspace_live(), 1);
	CU_ASSERT_EQUAL(vspace_tables(s1), 3); // PDPT, PD, PT
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 3);
	for (uint64_t p = 0; p < 3; p++) {
		CU_ASSERT_EQUAL(pte_of(s1, VA + p * PG), vregion_frame(r, p) | ATT_PTE);
		CU_ASSERT_TRUE(user_page_is(s1, VA + p * PG, pat(0x30, p)));
	}
	CU_ASSERT_EQUAL(pte_of(s1, VA - PG), 0);
	CU_ASSERT_TRUE(unmapped(s1, VA + 3 * PG));
	const uint64_t *pml4 = arch_p2v(vspace_root(s1));
	CU_ASSERT_EQUAL(pml4[(VA >> 39) & 0x1ff] & (PTE_P | PTE_W | PTE_U), PTE_P | PTE_W | PTE_U);
	CU_ASSERT_EQUAL(pte_of(s2, VA), NO_TABLE); // another space sees nothing
	// Detach in the loaded space: one invlpg per page, then a full flush
	// for the freed paging structures.
	CU_ASSERT_EQUAL(vspace_activate(s1), 0);
	tlb_reset();
	CU_ASSERT_EQUAL(vuspace_detach(1, id), 0);
	CU_ASSERT_EQUAL(fake.invlpg, 3);
	CU_ASSERT_EQUAL(fake.flush_tlb, 1);
	CU_ASSERT_EQUAL(pte_of(s1, VA), NO_TABLE);
	CU_ASSERT_EQUAL(vspace_tables(s1), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
	CU_ASSERT_EQUAL(vuspace_addr(id), 0);
	CU_ASSERT_EQUAL(vuspace_detach(1, id), -E_BADID);
	// The region keeps its frames and data.
	CU_ASSERT_TRUE(frame_is(vregion_frame(r, 2), pat(0x30, 2)));
	// Explicitly naming its own space is the same as 0.
	id = attach(1, r, s1, VA);
	CU_ASSERT_EQUAL(pte_of(s1, VA), vregion_frame(r, 0) | ATT_PTE);
	CU_ASSERT_EQUAL(vuspace_detach(1, id), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
	ASSERT_CLEAN(n0 + 3);
	CU_ASSERT_EQUAL(vspace_tables(s1), 0);
}

// The kernel (caller 0) attaches into any space it names, and its
// attachments are its own.
static void test_kernel_attach(void)
{
	uint64_t n0 = pmem_free_count();
	long r = region_new(1, 1, VR_MEM_ALL);
	long id = attach(0, r, s2, VA);
	CU_ASSERT_EQUAL(pte_of(s2, VA), vregion_frame(r, 0) | ATT_PTE);
	CU_ASSERT_EQUAL(vuspace_detach(2, id), -E_NOTOWNER);
	CU_ASSERT_EQUAL(vuspace_detach(1, id), -E_NOTOWNER);
	CU_ASSERT_EQUAL(vuspace_attach(0, r, 0, VA), -E_BADID); // the kernel has no own space
	long stale = space_new();
	CU_ASSERT_EQUAL(vspace_destroy(stale), 0);
	CU_ASSERT_EQUAL(vuspace_attach(0, r, stale, VA), -E_BADID);
	CU_ASSERT_EQUAL(vuspace_attach(0, r, r, VA), -E_BADID);
	CU_ASSERT_EQUAL(vuspace_live(), 1);
	CU_ASSERT_EQUAL(vuspace_detach(0, id), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
	ASSERT_CLEAN(n0);
	CU_ASSERT_EQUAL(vspace_tables(s2), 0);
}

static void test_attach_decode_errors(void)
{
	long r = region_new(1, 3, VR_MEM_ALL), theirs = region_new(2, 1, VR_MEM_ALL);
	long stale = region_new(1, 1, VR_MEM_ALL);
	CU_ASSERT_EQUAL(vregion_delete(1, stale), 0);
	// In the way: a plain mapping, and another attachment.
	paddr_t plain = pmem_alloc();
	CU_ASSERT_EQUAL(vspace_map(s1, VA + 2 * PG, plain, PTE_U | PTE_P), 0);
	long other = region_new(1, 2, VR_MEM_ALL);
	long oid = attach(1, other, 0, VA2);
	long dead_space = space_new();
	CU_ASSERT_EQUAL(vspace_destroy(dead_space), 0);
	uint64_t n0 = pmem_free_count(), t1 = vspace_tables(s1), t2 = vspace_tables(s2);
	const struct {
		long vr, vs;
		uint64_t va;
		long err;
	} c[] = {
		{ stale, 0, VA, -E_BADID },
		{ s1, 0, VA, -E_BADID },          // a space is no region
		{ oid, 0, VA, -E_BADID },         // nor is an attachment
		{ 0, 0, VA, -E_BADID },
		{ stale, s2, VA + 1, -E_BADID },  // the region is decoded first
		{ theirs, 0, VA, -E_NOTOWNER },   // not granted
		{ theirs, s2, VA, -E_NOTOWNER },
		{ r, s2, VA, -E_NOTOWNER },       // another process's space
		{ r, KERNEL_VSPACE, VA, -E_NOTOWNER },
		{ r, dead_space, VA, -E_BADID },
		{ r, r, VA, -E_BADID },
		{ r, s2, VA + 1, -E_NOTOWNER },   // before alignment
		{ r, 0, VA + 8, -E_ALIGN },
		{ r, 0, VA + PG / 2, -E_ALIGN },
		{ r, 0, 0x100001, -E_ALIGN },     // before range
		{ r, 0, 0, -E_RANGE },
		{ r, 0, 0x100000, -E_RANGE },
		{ r, 0, USER_BASE - PG, -E_RANGE },
		{ r, 0, USER_TOP, -E_RANGE },
		{ r, 0, USER_TOP - 2 * PG, -E_RANGE }, // ends past the user half
		{ r, 0, 0xffff800000000000ull, -E_RANGE },
		{ r, 0, MMIO_BASE, -E_RANGE },
		{ r, 0, VA, -E_EXIST },           // page 2 is mapped
		{ r, 0, VA + 2 * PG, -E_EXIST },
		{ r, 0, VA2 - 2 * PG, -E_EXIST }, // last page over the attachment
		{ r, 0, VA2 + PG, -E_EXIST },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		long e = vuspace_attach(1, c[i].vr, c[i].vs, c[i].va);
		if (e != c[i].err)
			fprintf(stderr, "attach case %zu: %ld, want %ld\n", i, e, c[i].err);
		CU_ASSERT_EQUAL(e, c[i].err);
	}
	CU_ASSERT_EQUAL(vuspace_live(), 1);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
	CU_ASSERT_EQUAL(vspace_tables(s1), t1);
	CU_ASSERT_EQUAL(vspace_tables(s2), t2);
	CU_ASSERT_EQUAL(pte_of(s1, VA + 2 * PG), plain | PTE_U | PTE_P);
	CU_ASSERT_TRUE(unmapped(s1, VA));
	CU_ASSERT_EQUAL(pte_of(s1, VA2 + PG), vregion_frame(other, 1) | ATT_PTE);
	// Next to what is there, and flush with the top of the user half: fine.
	long a1 = attach(1, r, 0, VA + 3 * PG);
	long a2 = attach(1, r, 0, VA2 - 3 * PG);
	long a3 = attach(1, r, 0, USER_TOP - 3 * PG);
	CU_ASSERT_EQUAL(pte_of(s1, USER_TOP - PG), vregion_frame(r, 2) | ATT_PTE);
	CU_ASSERT_EQUAL(vuspace_detach(1, a1), 0);
	CU_ASSERT_EQUAL(vuspace_detach(1, a2), 0);
	CU_ASSERT_EQUAL(vuspace_detach(1, a3), 0);
	CU_ASSERT_EQUAL(vuspace_detach(1, oid), 0);
	uint64_t old;
	CU_ASSERT_EQUAL(vspace_unmap(s1, VA + 2 * PG, &old), 0);
	pmem_free(plain);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, other), 0);
	CU_ASSERT_EQUAL(vregion_delete(2, theirs), 0);
	CU_ASSERT_EQUAL(vuspace_live(), 0);
	CU_ASSERT_EQUAL(vregion_live(), 0);
}

// Unbacked pages have prepared tables but no mapping; ALLOC maps, FREE
// unmaps, neither allocates a page table.
static void test_unbacked_then_alloc_free(void)
{
	uint64_t n0 = pmem_free_count();
	long r = region_new(1, 4, VR_MEM_NONE);
	long id = attach(1, r, 0, VA);
	CU_ASSERT_EQUAL(vspace_tables(s1), 3);
	for (uint64_t p = 0; p < 4; p++) {
		CU_ASSERT_TRUE(unmapped(s1, VA + p * PG)); // the table is there
	}
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 3);
	CU_ASSERT_EQUAL(vspace_activate(s1), 0);
	tlb_reset();
	CU_ASSERT_EQUAL(ctl(1, r, VR_OP_ALLOC, PG, 2 * PG), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 3 - 2);
	CU_ASSERT_EQUAL(vspace_tables(s1), 3);
	CU_ASSERT_TRUE(unmapped(s1, VA));
	CU_ASSERT_EQUAL(pte_of(s1, VA + PG), vregion_frame(r, 1) | ATT_PTE);
	CU_ASSERT_EQUAL(pte_of(s1, VA + 2 * PG), vregion_frame(r, 2) | ATT_PTE);
	CU_ASSERT_TRUE(unmapped(s1, VA + 3 * PG));
	CU_ASSERT_TRUE(user_page_is(s1, VA + PG, 0)); // fresh frames are zeroed
	CU_ASSERT_EQUAL(fake.invlpg, 2);
	tlb_reset();
	paddr_t f1 = vregion_frame(r, 1);
	CU_ASSERT_EQUAL(ctl(1, r, VR_OP_FREE, PG, PG), 0);
	CU_ASSERT_TRUE(unmapped(s1, VA + PG));
	CU_ASSERT_EQUAL(pte_of(s1, VA + 2 * PG), vregion_frame(r, 2) | ATT_PTE);
	CU_ASSERT_FALSE(pmem_is_allocated(f1));
	CU_ASSERT_EQUAL(fake.invlpg, 1);
	CU_ASSERT_EQUAL(fake.last_invlpg, VA + PG);
	uint8_t byte;
	CU_ASSERT_FALSE(user_read(s1, VA + PG, &byte, 1));
	// Failed range operations leave the PTEs alone.
	CU_ASSERT_EQUAL(ctl(1, r, VR_OP_ALLOC, 0, 3 * PG), -E_EXIST);
	CU_ASSERT_EQUAL(ctl(1, r, VR_OP_FREE, 0, 3 * PG), -E_NOTBACKED);
	CU_ASSERT_TRUE(unmapped(s1, VA));
	CU_ASSERT_EQUAL(pte_of(s1, VA + 2 * PG), vregion_frame(r, 2) | ATT_PTE);
	// A large FREE and ALLOC (over the 64-page batches) keep tables in step.
	long big = region_new(1, 150, VR_MEM_ALL);
	long bid = attach(1, big, 0, VA2);
	uint64_t tables = vspace_tables(s1);
	CU_ASSERT_EQUAL(ctl(1, big, VR_OP_FREE, PG, 140 * PG), 0);
	CU_ASSERT_EQUAL(pte_of(s1, VA2), vregion_frame(big, 0) | ATT_PTE);
	CU_ASSERT_TRUE(unmapped(s1, VA2 + 70 * PG));
	CU_ASSERT_TRUE(unmapped(s1, VA2 + 140 * PG));
	CU_ASSERT_EQUAL(pte_of(s1, VA2 + 141 * PG), vregion_frame(big, 141) | ATT_PTE);
	CU_ASSERT_EQUAL(ctl(1, big, VR_OP_ALLOC, PG, 140 * PG), 0);
	for (uint64_t p = 0; p < 150; p++)
		CU_ASSERT_EQUAL(pte_of(s1, VA2 + p * PG), vregion_frame(big, p) | ATT_PTE);
	CU_ASSERT_EQUAL(vspace_tables(s1), tables);
	CU_ASSERT_EQUAL(vuspace_detach(1, bid), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, big), 0);
	CU_ASSERT_EQUAL(vuspace_detach(1, id), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
	ASSERT_CLEAN(n0);
	CU_ASSERT_EQUAL(vspace_tables(s1), 0);
}

// Detach frees exactly the tables that no longer map anything, across 2
// MiB, 1 GiB and 512 GiB boundaries; an unrelated mapping keeps its own.
static void test_detach_prunes(void)
{
	paddr_t plain = pmem_alloc();
	CU_ASSERT_EQUAL(vspace_map(s1, USER_BASE, plain, PTE_U | PTE_W), 0);
	CU_ASSERT_EQUAL(vspace_tables(s1), 3);
	long r = region_new(1, 4, VR_MEM_ALL);
	uint64_t n0 = pmem_free_count();
	static const struct {
		uint64_t va, tables; // tables the attachment adds
	} c[] = {
		{ USER_BASE + PG, 0 },                         // all shared
		{ USER_BASE + (2ull << 20) - 2 * PG, 1 },      // a second leaf table
		{ USER_BASE + GiB - 2 * PG, 3 },               // a second PD and two PTs
		{ USER_BASE + 512 * GiB - 2 * PG, 5 },         // a second PML4 slot
		{ USER_BASE + 100 * GiB, 2 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		long id = attach(1, r, 0, c[i].va);
		CU_ASSERT_EQUAL(vspace_tables(s1), 3 + c[i].tables);
		CU_ASSERT_EQUAL(pmem_free_count(), n0 - c[i].tables);
		CU_ASSERT_EQUAL(pte_of(s1, c[i].va + 3 * PG), vregion_frame(r, 3) | ATT_PTE);
		CU_ASSERT_EQUAL(vuspace_detach(1, id), 0);
		CU_ASSERT_EQUAL(vspace_tables(s1), 3);
		CU_ASSERT_EQUAL(pmem_free_count(), n0);
		CU_ASSERT_EQUAL(pte_of(s1, USER_BASE), plain | PTE_U | PTE_W | PTE_P);
		CU_ASSERT_EQUAL(pte_of(s1, c[i].va + 3 * PG), c[i].tables ? NO_TABLE : 0);
	}
	// Two attachments in one leaf table: the first detach keeps it.
	long x = attach(1, r, 0, VA), y = attach(1, r, 0, VA + 8 * PG);
	CU_ASSERT_EQUAL(vspace_tables(s1), 5); // a PD and a PT for VA's gigabyte
	CU_ASSERT_EQUAL(vuspace_detach(1, x), 0);
	CU_ASSERT_EQUAL(vspace_tables(s1), 5);
	CU_ASSERT_TRUE(unmapped(s1, VA));
	CU_ASSERT_EQUAL(pte_of(s1, VA + 8 * PG), vregion_frame(r, 0) | ATT_PTE);
	CU_ASSERT_EQUAL(vuspace_detach(1, y), 0);
	CU_ASSERT_EQUAL(vspace_tables(s1), 3);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
	uint64_t old;
	CU_ASSERT_EQUAL(vspace_unmap(s1, USER_BASE, &old), 0);
	pmem_free(plain);
	CU_ASSERT_EQUAL(vuspace_live(), 0);
	CU_ASSERT_EQUAL(vregion_live(), 0);
}

// VR_MAX_ATT attachments per region; one more (here where page tables
// exist already) is -E_NOMEM and changes nothing.
static void test_att_slot_limit(void)
{
	uint64_t n0 = pmem_free_count();
	long r = region_new(1, 1, VR_MEM_ALL);
	CU_ASSERT_EQUAL(ctl(1, r, VR_OP_GRANT, 2, 0), 0);
	long ids[VR_MAX_ATT];
	for (int i = 0; i < VR_MAX_ATT; i++)
		ids[i] = attach(1 + i % 2, r, 0, VA + (uint64_t)(i / 2) * PG);
	uint64_t n = pmem_free_count(), t1 = vspace_tables(s1), t2 = vspace_tables(s2);
	uint64_t beside = VA + (VR_MAX_ATT / 2) * PG;
	CU_ASSERT_EQUAL(vuspace_attach(1, r, 0, beside), -E_NOMEM);
	CU_ASSERT_EQUAL(vuspace_attach(2, r, 0, beside), -E_NOMEM);
	CU_ASSERT_EQUAL(vuspace_live(), VR_MAX_ATT);
	CU_ASSERT_EQUAL(pmem_free_count(), n);
	CU_ASSERT_EQUAL(vspace_tables(s1), t1);
	CU_ASSERT_EQUAL(vspace_tables(s2), t2);
	CU_ASSERT_EQUAL(pte_of(s1, beside), 0);
	// A free slot takes the next one; every slot follows an exchange.
	CU_ASSERT_EQUAL(vuspace_detach(2, ids[1]), 0);
	ids[1] = attach(1, r, 0, beside);
	long peer = region_new(1, 1, VR_MEM_ALL);
	paddr_t f = vregion_frame(peer, 0);
	CU_ASSERT_EQUAL(vregion_exchange(1, r, peer, 0, 0, 1), 0);
	for (int i = 0; i < VR_MAX_ATT; i++) {
		long vs = i == 1 ? s1 : (i % 2 ? s2 : s1);
		CU_ASSERT_EQUAL(pte_of(vs, vuspace_addr(ids[i])), f | ATT_PTE);
	}
	CU_ASSERT_EQUAL(vregion_delete(1, peer), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
	ASSERT_CLEAN(n0);
	CU_ASSERT_EQUAL(vspace_tables(s1) + vspace_tables(s2), 0);
}

// The attachment table holds NVUSPACE; the next attach fails before it
// prepares anything.
static void test_attach_table_full(void)
{
	uint64_t n0 = pmem_free_count();
	const int nr = NVUSPACE / VR_MAX_ATT;
	static long regions[NVUSPACE / VR_MAX_ATT];
	for (int i = 0; i < nr; i++)
		regions[i] = region_new(1, 1, VR_MEM_ALL);
	for (int i = 0; i < NVUSPACE; i++)
		CU_ASSERT_FATAL(vuspace_attach(1, regions[i % nr], 0, VA + (uint64_t)i * PG) > 0);
	CU_ASSERT_EQUAL(vuspace_live(), NVUSPACE);
	long extra = region_new(1, 1, VR_MEM_ALL);
	uint64_t n = pmem_free_count(), t = vspace_tables(s1);
	CU_ASSERT_EQUAL(vuspace_attach(1, extra, 0, VA2), -E_NOMEM);
	CU_ASSERT_EQUAL(pmem_free_count(), n);
	CU_ASSERT_EQUAL(vspace_tables(s1), t);
	CU_ASSERT_EQUAL(pte_of(s1, VA2), NO_TABLE);
	res_ops_of(RES_VUSPACE)->release(1);
	CU_ASSERT_EQUAL(vuspace_live(), 0);
	CU_ASSERT_EQUAL(vspace_tables(s1), 0);
	long id = attach(1, extra, 0, VA2);
	CU_ASSERT_EQUAL(vuspace_detach(1, id), 0);
	res_ops_of(RES_VREGION)->release(1);
	ASSERT_CLEAN(n0);
}

// An owner's exit detaches every attachment it made, in any region, and
// leaves the others' attachments of the same regions mapped.
static void test_release_detaches_all(void)
{
	uint64_t n0 = pmem_free_count();
	long a = region_new(1, 2, VR_MEM_ALL), b = region_new(2, 2, VR_MEM_ALL);
	CU_ASSERT_EQUAL(ctl(1, a, VR_OP_GRANT, 2, 0), 0);
	CU_ASSERT_EQUAL(ctl(2, b, VR_OP_GRANT, 1, 0), 0);
	attach(1, a, 0, VA);
	attach(1, a, 0, VA2);
	attach(1, b, 0, VA + 4 * PG);
	long b2 = attach(2, b, 0, VA);
	long a2 = attach(2, a, 0, VA2);
	CU_ASSERT_EQUAL(vuspace_live(), 5);
	res_ops_of(RES_VUSPACE)->release(1);
	CU_ASSERT_EQUAL(vuspace_live(), 2);
	CU_ASSERT_EQUAL(vspace_tables(s1), 0);
	CU_ASSERT_EQUAL(pte_of(s1, VA), NO_TABLE);
	CU_ASSERT_EQUAL(pte_of(s2, VA), vregion_frame(b, 0) | ATT_PTE);
	CU_ASSERT_EQUAL(pte_of(s2, VA2 + PG), vregion_frame(a, 1) | ATT_PTE);
	CU_ASSERT_EQUAL(vregion_pages(a), 2); // regions are the region manager's
	// The whole exit of pid 2: I/O first, then attachments, then regions.
	res_release_owner(2);
	CU_ASSERT_EQUAL(fake_io_nreleased, 1);
	CU_ASSERT_EQUAL(fake_io_released[0], 2);
	CU_ASSERT_EQUAL(fake_io_released_vuspaces[0], 2);
	CU_ASSERT_EQUAL(vuspace_addr(b2), 0);
	CU_ASSERT_EQUAL(vuspace_addr(a2), 0);
	CU_ASSERT_EQUAL(vregion_access(2, b), -E_BADID);
	CU_ASSERT_EQUAL(vregion_access(2, a), -E_NOTOWNER);
	CU_ASSERT_EQUAL(vspace_tables(s2), 0);
	res_release_owner(1);
	ASSERT_CLEAN(n0);
}

// Deleting a region detaches it from every space, whoever attached it.
static void test_delete_detaches_everywhere(void)
{
	uint64_t n0 = pmem_free_count();
	long r = region_new(1, 3, VR_MEM_ALL);
	CU_ASSERT_EQUAL(ctl(1, r, VR_OP_GRANT, 2, 0), 0);
	long i1 = attach(1, r, 0, VA), i2 = attach(2, r, 0, VA2), i3 = attach(0, r, s3, VA);
	CU_ASSERT_EQUAL(vspace_activate(s2), 0);
	tlb_reset();
	CU_ASSERT_EQUAL(vregion_delete(2, r), -E_NOTOWNER);
	CU_ASSERT_EQUAL(vuspace_live(), 3);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
	CU_ASSERT_EQUAL(fake.invlpg, 3); // s2's pages, then its freed tables
	CU_ASSERT_EQUAL(fake.flush_tlb, 1);
	long ids[3] = { i1, i2, i3 };
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(vuspace_addr(ids[i]), 0);
		CU_ASSERT_EQUAL(vuspace_detach(0, ids[i]), -E_BADID);
	}
	CU_ASSERT_EQUAL(pte_of(s1, VA), NO_TABLE);
	CU_ASSERT_EQUAL(pte_of(s2, VA2), NO_TABLE);
	CU_ASSERT_EQUAL(pte_of(s3, VA), NO_TABLE);
	CU_ASSERT_EQUAL(vspace_tables(s1) + vspace_tables(s2) + vspace_tables(s3), 0);
	ASSERT_CLEAN(n0);
}

static void test_detach_errors(void)
{
	uint64_t n0 = pmem_free_count();
	long r = region_new(1, 1, VR_MEM_ALL);
	long id = attach(1, r, 0, VA);
	long bad[] = { r, s1, 0, -1, id + (1 << RES_SLOT_BITS),
		       res_id(RES_VUSPACE, res_gen(id), NVUSPACE), id | (1l << 40) };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL(vuspace_detach(1, bad[i]), -E_BADID);
		CU_ASSERT_EQUAL(vuspace_detach(0, bad[i]), -E_BADID);
		CU_ASSERT_EQUAL(vuspace_addr(bad[i]), 0);
	}
	CU_ASSERT_EQUAL(vuspace_detach(2, id), -E_NOTOWNER);
	CU_ASSERT_EQUAL(pte_of(s1, VA), vregion_frame(r, 0) | ATT_PTE);
	CU_ASSERT_EQUAL(vuspace_detach(0, id), 0); // the kernel may
	long again = attach(1, r, 0, VA);
	CU_ASSERT_EQUAL(res_slot(again), res_slot(id));
	CU_ASSERT_NOT_EQUAL(again, id);
	CU_ASSERT_EQUAL(vuspace_detach(1, id), -E_BADID); // stale
	CU_ASSERT_EQUAL(vuspace_addr(again), VA);
	CU_ASSERT_EQUAL(vuspace_detach(1, again), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
	ASSERT_CLEAN(n0);
}

// One attachment over VR_MAX_ATT, into a range no table covers yet:
// -E_NOMEM, and no page table was made for it.
static void test_att_limit_fresh_range(void)
{
	uint64_t n0 = pmem_free_count();
	long r = region_new(1, 1, VR_MEM_ALL);
	for (int i = 0; i < VR_MAX_ATT; i++)
		attach(1, r, 0, VA + (uint64_t)i * PG);
	uint64_t n = pmem_free_count();
	CU_ASSERT_EQUAL(vuspace_attach(0, r, s3, VA), -E_NOMEM);
	CU_ASSERT_EQUAL(vuspace_attach(1, r, 0, VA2), -E_NOMEM);
	CU_ASSERT_EQUAL(vspace_tables(s3), 0);
	CU_ASSERT_EQUAL(pte_of(s1, VA2), NO_TABLE);
	CU_ASSERT_EQUAL(pmem_free_count(), n);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
	ASSERT_CLEAN(n0);
}

// Out of frames half-way through preparing the tables: -E_NOMEM, and the
// tables made so far are gone again.
static void test_attach_nomem_prepare(void)
{
	long r = region_new(1, 1, VR_MEM_ALL);
	static paddr_t hog[FAKE_PHYS_SIZE / PAGE_SIZE];
	size_t nh = 0;
	while (pmem_free_count() > 1)
		hog[nh++] = pmem_alloc();
	CU_ASSERT_EQUAL(vuspace_attach(1, r, 0, VA), -E_NOMEM); // a PDPT, then no PD
	CU_ASSERT_EQUAL(vspace_tables(s1), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), 1);
	CU_ASSERT_EQUAL(vuspace_live(), 0);
	while (nh)
		pmem_free(hog[--nh]);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
}

// An attachment holds its pages whether or not they have frames: another
// attach over them is -E_EXIST.
static void test_attach_over_unbacked_attachment(void)
{
	uint64_t n0 = pmem_free_count();
	long a = region_new(1, 2, VR_MEM_NONE), b = region_new(1, 2, VR_MEM_ALL);
	long ia = attach(1, a, 0, VA);
	uint64_t t = vspace_tables(s1);
	CU_ASSERT_EQUAL(vuspace_attach(1, b, 0, VA + PG), -E_EXIST);
	CU_ASSERT_EQUAL(vuspace_attach(1, b, 0, VA - PG), -E_EXIST);
	CU_ASSERT_EQUAL(vuspace_live(), 1);
	CU_ASSERT_EQUAL(vspace_tables(s1), t);
	CU_ASSERT_EQUAL(vuspace_detach(1, ia), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, a), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, b), 0);
	ASSERT_CLEAN(n0);
}

// Detaching a neighbour must not prune the leaf table of an attachment
// whose pages have no frames now (never allocated, or freed): its later
// ALLOC maps without allocating.
static void test_detach_keeps_neighbours_tables(void)
{
	uint64_t n0 = pmem_free_count();
	long a = region_new(1, 2, VR_MEM_NONE), b = region_new(1, 1, VR_MEM_ALL);
	long c = region_new(1, 1, VR_MEM_ALL);
	long ia = attach(1, a, 0, VA), ic = attach(1, c, 0, VA + 8 * PG);
	CU_ASSERT_EQUAL(ctl(1, c, VR_OP_FREE, 0, PG), 0);
	long ib = attach(1, b, 0, VA + 4 * PG);
	uint64_t t = vspace_tables(s1);
	CU_ASSERT_EQUAL(vuspace_detach(1, ib), 0);
	CU_ASSERT_EQUAL(vspace_tables(s1), t);
	CU_ASSERT_TRUE(unmapped(s1, VA));
	CU_ASSERT_TRUE(unmapped(s1, VA + 8 * PG));
	CU_ASSERT_EQUAL(ctl(1, a, VR_OP_ALLOC, 0, 2 * PG), 0);
	CU_ASSERT_EQUAL(ctl(1, c, VR_OP_ALLOC, 0, PG), 0);
	CU_ASSERT_EQUAL(pte_of(s1, VA), vregion_frame(a, 0) | ATT_PTE);
	CU_ASSERT_EQUAL(pte_of(s1, VA + PG), vregion_frame(a, 1) | ATT_PTE);
	CU_ASSERT_EQUAL(pte_of(s1, VA + 8 * PG), vregion_frame(c, 0) | ATT_PTE);
	CU_ASSERT_EQUAL(vspace_tables(s1), t);
	CU_ASSERT_EQUAL(vuspace_detach(1, ia), 0);
	CU_ASSERT_EQUAL(vuspace_detach(1, ic), 0);
	CU_ASSERT_EQUAL(vspace_tables(s1), 0); // the last one out prunes
	CU_ASSERT_EQUAL(vregion_delete(1, a), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, b), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, c), 0);
	ASSERT_CLEAN(n0);
}

int register_vuspace(void)
{
	static const struct test_case t[] = {
		TEST(test_attach_maps_backed_pages),
		TEST(test_kernel_attach),
		TEST(test_attach_decode_errors),
		TEST(test_unbacked_then_alloc_free),
		TEST(test_detach_prunes),
		TEST(test_att_slot_limit),
		TEST(test_attach_table_full),
		TEST(test_release_detaches_all),
		TEST(test_delete_detaches_everywhere),
		TEST(test_detach_errors),
		TEST(test_att_limit_fresh_range),
		TEST(test_attach_nomem_prepare),
		TEST(test_attach_over_unbacked_attachment),
		TEST(test_detach_keeps_neighbours_tables),
	};
	return ADD_SUITE("vuspace", setup, res_machine_teardown, t);
}
