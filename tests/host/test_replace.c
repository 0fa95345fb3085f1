// replace: the network receive path's use of regions (io_slot.c into_slot).
// vregion_check_range vets a slot; vregion_replace puts the NIC's frames
// behind it and hands the old frames back; every attachment's PTEs follow
// at once, without allocating.
#include "res_test.h"

#define VA (USER_BASE + (2ull << 20) - 16 * PG) // the region crosses a leaf table
#define NPG 24

static long s1, s2, in;
static uint64_t nfree0, tables0; // after the region's attachment

static void setup(void)
{
	res_machine_setup();
	s1 = proc_new(1);
	s2 = proc_new(2);
	in = region_new(1, NPG, VR_MEM_ALL);
	fill_pages(in, 0x20);
	attach(1, in, 0, VA);
	CU_ASSERT_EQUAL(vspace_activate(s1), 0);
	nfree0 = pmem_free_count();
	tables0 = vspace_tables(s1);
	CU_ASSERT_EQUAL(tables0, 4); // PDPT, PD and two leaf tables
}

// Frames as the NIC filled them: payload byte tag + i.
static void nic_frames(paddr_t *f, uint64_t n, uint8_t tag)
{
	for (uint64_t i = 0; i < n; i++) {
		f[i] = pmem_alloc_nozero();
		CU_ASSERT_FATAL(f[i] != 0);
		memset(arch_p2v(f[i]), pat(tag, i), PG);
	}
}

static void give_back(const paddr_t *f, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		pmem_free(f[i]);
}

static void finish(void)
{
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
	CU_ASSERT_EQUAL(vregion_delete(1, in), 0);
	ASSERT_CLEAN(nfree0 + NPG + tables0); // the region's frames and tables
	CU_ASSERT_EQUAL(vspace_tables(s1), 0);
}

static void test_receive_into_slot(void)
{
	paddr_t f[3], old[3], before[NPG];
	for (uint64_t p = 0; p < NPG; p++)
		before[p] = vregion_frame(in, p);
	nic_frames(f, 3, 0x70);
	uint64_t t = vspace_tables(s1);
	tlb_reset();
	// Slot at page 14: pages 14-16 straddle the leaf tables.
	CU_ASSERT_EQUAL(vregion_check_range(in, 14 * PG, 3 * PG), 0);
	vregion_replace(in, 14, 3, f, old);
	for (uint64_t i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(old[i], before[14 + i]);
		CU_ASSERT_EQUAL(vregion_frame(in, 14 + i), f[i]);
		CU_ASSERT_EQUAL(pte_of(s1, VA + (14 + i) * PG), f[i] | ATT_PTE);
		CU_ASSERT_TRUE(user_page_is(s1, VA + (14 + i) * PG, pat(0x70, i)));
		CU_ASSERT_TRUE(pmem_is_allocated(old[i])); // the caller gives them back
		CU_ASSERT_TRUE(frame_is(old[i], pat(0x20, 14 + i)));
	}
	for (uint64_t p = 0; p < NPG; p++)
		if (p < 14 || p >= 17) {
			CU_ASSERT_EQUAL(vregion_frame(in, p), before[p]);
			CU_ASSERT_EQUAL(pte_of(s1, VA + p * PG), before[p] | ATT_PTE);
		}
	CU_ASSERT_EQUAL(fake.invlpg, 3);
	for (uint64_t i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(fake.invlpg_va[i], VA + (14 + i) * PG);
	CU_ASSERT_EQUAL(fake.flush_tlb, 0);
	CU_ASSERT_EQUAL(vspace_tables(s1), t);
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0 - 3);
	give_back(old, 3);
	finish();
}

// Frames in, then the old ones back in: the original state, exactly.
static void test_round_trip(void)
{
	paddr_t f[2], old[2], back[2];
	nic_frames(f, 2, 0x50);
	vregion_replace(in, 0, 2, f, old);
	vregion_replace(in, 0, 2, old, back);
	CU_ASSERT_EQUAL(back[0], f[0]);
	CU_ASSERT_EQUAL(back[1], f[1]);
	for (uint64_t p = 0; p < 2; p++) {
		CU_ASSERT_EQUAL(vregion_frame(in, p), old[p]);
		CU_ASSERT_EQUAL(pte_of(s1, VA + p * PG), old[p] | ATT_PTE);
		CU_ASSERT_TRUE(user_page_is(s1, VA + p * PG, pat(0x20, p)));
	}
	give_back(back, 2);
	finish();
}

// A granted receiver attached the region too: both views change; only the
// loaded space is invalidated.
static void test_every_attachment_follows(void)
{
	CU_ASSERT_EQUAL(ctl(1, in, VR_OP_GRANT, 2, 0), 0);
	long other = attach(2, in, 0, VA + GiB);
	uint64_t t2 = vspace_tables(s2), n = pmem_free_count();
	paddr_t f[4], old[4];
	nic_frames(f, 4, 0x90);
	tlb_reset();
	vregion_replace(in, 20, 4, f, old);
	for (uint64_t i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(pte_of(s1, VA + (20 + i) * PG), f[i] | ATT_PTE);
		CU_ASSERT_EQUAL(pte_of(s2, VA + GiB + (20 + i) * PG), f[i] | ATT_PTE);
		CU_ASSERT_TRUE(user_page_is(s2, VA + GiB + (20 + i) * PG, pat(0x90, i)));
	}
	CU_ASSERT_EQUAL(fake.invlpg, 4);
	CU_ASSERT_EQUAL(fake.invlpg_va[0], VA + 20 * PG);
	CU_ASSERT_EQUAL(vspace_tables(s2), t2);
	CU_ASSERT_EQUAL(pmem_free_count(), n - 4);
	give_back(old, 4);
	CU_ASSERT_EQUAL(vuspace_detach(2, other), 0);
	CU_ASSERT_EQUAL(vspace_tables(s2), 0);
	finish(); // s2's tables are back too
}

// A batch over TLB_FLUSH_THRESHOLD pages: one full flush.
static void test_large_batch(void)
{
	const uint64_t n = TLB_FLUSH_THRESHOLD + 1;
	long big = region_new(1, 2 * n, VR_MEM_ALL);
	attach(1, big, 0, VA + 4 * GiB);
	uint64_t nb = pmem_free_count();
	CU_ASSERT_EQUAL(nb, nfree0 - 2 * n - 3); // frames, a PD and two PTs
	static paddr_t f[TLB_FLUSH_THRESHOLD + 1], old[TLB_FLUSH_THRESHOLD + 1];
	nic_frames(f, n, 0x11);
	tlb_reset();
	CU_ASSERT_EQUAL(vregion_check_range(big, n * PG, n * PG), 0);
	vregion_replace(big, n, n, f, old);
	CU_ASSERT_EQUAL(fake.invlpg, 0);
	CU_ASSERT_EQUAL(fake.flush_tlb, 1);
	for (uint64_t i = 0; i < n; i++)
		CU_ASSERT_EQUAL(pte_of(s1, VA + 4 * GiB + (n + i) * PG), f[i] | ATT_PTE);
	give_back(old, n);
	CU_ASSERT_EQUAL(pmem_free_count(), nb);
	CU_ASSERT_EQUAL(vregion_delete(1, big), 0);
	finish();
}

// Without an attachment only the frames change.
static void test_unattached_region(void)
{
	long r = region_new(1, 2, VR_MEM_ALL);
	paddr_t f[1], old[1], was = vregion_frame(r, 1);
	nic_frames(f, 1, 0x33);
	tlb_reset();
	vregion_replace(r, 1, 1, f, old);
	CU_ASSERT_EQUAL(old[0], was);
	CU_ASSERT_EQUAL(vregion_frame(r, 1), f[0]);
	CU_ASSERT_EQUAL(fake.invlpg + fake.flush_tlb, 0);
	give_back(old, 1);
	// The NIC's frame is the region's now: deleting frees it.
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
	CU_ASSERT_FALSE(pmem_is_allocated(f[0]));
	finish();
}

// The checks into_slot relies on before it may replace (drop_badslot).
static void test_check_range(void)
{
	long stale = region_new(1, 1, VR_MEM_NONE);
	CU_ASSERT_EQUAL(vregion_delete(1, stale), 0);
	CU_ASSERT_EQUAL(vregion_check_range(stale, 0, PG), -E_BADID);
	CU_ASSERT_EQUAL(vregion_check_range(s1, 0, PG), -E_BADID);
	CU_ASSERT_EQUAL(vregion_check_range(in, 100, PG), -E_ALIGN);
	CU_ASSERT_EQUAL(vregion_check_range(in, 0, 1514), -E_ALIGN);
	CU_ASSERT_EQUAL(vregion_check_range(in, 0, 0), -E_INVAL);
	CU_ASSERT_EQUAL(vregion_check_range(in, NPG * PG, PG), -E_RANGE);
	CU_ASSERT_EQUAL(vregion_check_range(in, (NPG - 1) * PG, 2 * PG), -E_RANGE);
	CU_ASSERT_EQUAL(vregion_check_range(in, ~0ull & ~(PG - 1), 2 * PG), -E_RANGE);
	CU_ASSERT_EQUAL(vregion_check_range(in, PG, ~0ull & ~(PG - 1)), -E_RANGE);
	CU_ASSERT_EQUAL(vregion_check_range(in, 0, NPG * PG), 0);
	CU_ASSERT_EQUAL(vregion_check_range(in, (NPG - 1) * PG, PG), 0);
	// The process pinned a slot page, a NIC holds another, one was freed.
	CU_ASSERT_EQUAL(ctl(1, in, VR_OP_PIN, 2 * PG, PG), 0);
	pmem_pin(vregion_frame(in, 5));
	CU_ASSERT_EQUAL(ctl(1, in, VR_OP_FREE, 8 * PG, PG), 0);
	CU_ASSERT_EQUAL(vregion_check_range(in, 2 * PG, PG), -E_BUSY);
	CU_ASSERT_EQUAL(vregion_check_range(in, 4 * PG, 2 * PG), -E_BUSY);
	CU_ASSERT_EQUAL(vregion_check_range(in, 8 * PG, PG), -E_NOTBACKED);
	CU_ASSERT_EQUAL(vregion_check_range(in, 6 * PG, 4 * PG), -E_NOTBACKED);
	CU_ASSERT_EQUAL(vregion_check_range(in, 5 * PG, 4 * PG), -E_BUSY); // busy first
	CU_ASSERT_EQUAL(vregion_check_range(in, 8 * PG, 3 * PG), -E_NOTBACKED);
	CU_ASSERT_EQUAL(vregion_check_range(in, 9 * PG, 3 * PG), 0);
	CU_ASSERT_EQUAL(vregion_check_range(in, 0, 2 * PG), 0);
	CU_ASSERT_TRUE(unmapped(s1, VA + 8 * PG));
	pmem_unpin(vregion_frame(in, 5));
	CU_ASSERT_EQUAL(ctl(1, in, VR_OP_UNPIN, 2 * PG, PG), 0);
	CU_ASSERT_EQUAL(ctl(1, in, VR_OP_ALLOC, 8 * PG, PG), 0);
	CU_ASSERT_EQUAL(vregion_check_range(in, 0, NPG * PG), 0);
	finish();
}

int register_replace(void)
{
	static const struct test_case t[] = {
		TEST(test_receive_into_slot),
		TEST(test_round_trip),
		TEST(test_every_attachment_follows),
		TEST(test_large_batch),
		TEST(test_unattached_region),
		TEST(test_check_range),
	};
	return ADD_SUITE("replace", setup, res_machine_teardown, t);
}
