// vregion: creation with and without frames, every ctrl_vr operation and
// its errors, grants, pins, deletion, stale ids, release on owner exit and
// the disk backing (read_vr / write_vr over a RAM disk). Frame counts are
// checked exactly around every scenario.
#include "res_test.h"
#include "fake_ata.h"
#include "res/res.h"

long sys_read_vr(const uint64_t *a);
long sys_write_vr(const uint64_t *a);

static void setup(void)
{
	res_machine_setup();
	for (int pid = 1; pid <= 6; pid++)
		proc_new(pid);
}

static void test_create_without_frames(void)
{
	uint64_t n0 = pmem_free_count();
	size_t h0 = heap_allocs();
	long id = vregion_create(1, 3 * PG, VR_MEM_NONE, -1);
	CU_ASSERT_FATAL(id > 0);
	CU_ASSERT_TRUE(res_kind_is(id, RES_VREGION));
	CU_ASSERT_EQUAL(vregion_pages(id), 3);
	for (uint64_t p = 0; p < 3; p++)
		CU_ASSERT_EQUAL(vregion_frame(id, p), 0);
	CU_ASSERT_EQUAL(vregion_frame(id, 3), 0); // past the end
	CU_ASSERT_EQUAL(vregion_disk(id), -1);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
	CU_ASSERT_EQUAL(heap_allocs(), h0 + 2); // frame and pin arrays
	CU_ASSERT_EQUAL(vregion_live(), 1);
	CU_ASSERT_EQUAL(vregion_access(1, id), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	CU_ASSERT_EQUAL(heap_allocs(), h0);
	ASSERT_CLEAN(n0);
}

static void test_create_with_frames(void)
{
	uint64_t n0 = pmem_free_count();
	long id = vregion_create(1, 5 * PG, VR_MEM_ALL, -1);
	CU_ASSERT_FATAL(id > 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 5);
	for (uint64_t p = 0; p < 5; p++) {
		paddr_t f = vregion_frame(id, p);
		CU_ASSERT_FATAL(f != 0);
		CU_ASSERT_EQUAL(f & (PG - 1), 0);
		CU_ASSERT_TRUE(pmem_is_allocated(f));
		CU_ASSERT_FALSE(pmem_is_pinned(f));
		CU_ASSERT_TRUE(frame_is(f, 0)); // zeroed: fresh RAM is FAKE_POISON
		for (uint64_t q = 0; q < p; q++)
			CU_ASSERT_NOT_EQUAL(vregion_frame(id, q), f);
	}
	paddr_t f0 = vregion_frame(id, 0);
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	CU_ASSERT_FALSE(pmem_is_allocated(f0));
	ASSERT_CLEAN(n0);
}

static void test_create_sizes_and_limits(void)
{
	uint64_t n0 = pmem_free_count();
	size_t h0 = heap_allocs();
	static const struct {
		uint64_t size, pages;
	} ok[] = { { 1, 1 }, { PG - 1, 1 }, { PG, 1 }, { PG + 1, 2 }, { 5 * PG - 1, 5 },
		   { VR_MAX_PAGES * PG - 1, VR_MAX_PAGES }, { VR_MAX_PAGES * PG, VR_MAX_PAGES } };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		long id = vregion_create(1, ok[i].size, VR_MEM_NONE, -1);
		CU_ASSERT_FATAL(id > 0);
		CU_ASSERT_EQUAL(vregion_pages(id), ok[i].pages);
		CU_ASSERT_EQUAL(ctl(1, id, VR_OP_SIZE, 0, 0), (long)(ok[i].pages * PG));
		CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	}
	// Domain errors come before the size limit.
	CU_ASSERT_EQUAL(vregion_create(1, 0, VR_MEM_NONE, -1), -E_INVAL);
	CU_ASSERT_EQUAL(vregion_create(1, 0, VR_MEM_ALL, -1), -E_INVAL);
	CU_ASSERT_EQUAL(vregion_create(1, PG, 0, -1), -E_INVAL);
	CU_ASSERT_EQUAL(vregion_create(1, PG, 3, -1), -E_INVAL);
	CU_ASSERT_EQUAL(vregion_create(1, PG, -1, -1), -E_INVAL);
	CU_ASSERT_EQUAL(vregion_create(1, PG, VR_MEM_NONE, -2), -E_INVAL);
	CU_ASSERT_EQUAL(vregion_create(1, PG, VR_MEM_NONE, 100), -E_INVAL); // unaligned disk
	CU_ASSERT_EQUAL(vregion_create(1, PG, VR_MEM_NONE, PG + 512), -E_INVAL);
	CU_ASSERT_EQUAL(vregion_create(1, ~0ull, 3, -1), -E_INVAL);
	CU_ASSERT_EQUAL(vregion_create(1, VR_MAX_PAGES * PG + 1, VR_MEM_NONE, -1), -E_2BIG);
	CU_ASSERT_EQUAL(vregion_create(1, (VR_MAX_PAGES + 1) * PG, VR_MEM_ALL, -1), -E_2BIG);
	CU_ASSERT_EQUAL(vregion_create(1, ~0ull, VR_MEM_NONE, -1), -E_2BIG);
	CU_ASSERT_EQUAL(vregion_create(1, ~0ull - PG + 2, VR_MEM_NONE, -1), -E_2BIG); // rounds to 0
	CU_ASSERT_EQUAL(heap_allocs(), h0);
	// Disk offsets: 0 and page multiples are fine.
	long d0 = vregion_create(1, PG, VR_MEM_NONE, 0), d1 = vregion_create(1, PG, VR_MEM_NONE, 3 * PG);
	CU_ASSERT_FATAL(d0 > 0 && d1 > 0);
	CU_ASSERT_EQUAL(vregion_disk(d0), 0);
	CU_ASSERT_EQUAL(vregion_disk(d1), 3 * PG);
	CU_ASSERT_EQUAL(vregion_delete(1, d0), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, d1), 0);
	CU_ASSERT_EQUAL(heap_allocs(), h0);
	ASSERT_CLEAN(n0);
}

// More frames than RAM has: -E_NOMEM, and neither frames nor heap move.
static void test_create_nomem_changes_nothing(void)
{
	uint64_t n0 = pmem_free_count();
	size_t h0 = heap_allocs();
	CU_ASSERT_FATAL(n0 < VR_MAX_PAGES);
	CU_ASSERT_EQUAL(vregion_create(1, VR_MAX_PAGES * PG, VR_MEM_ALL, -1), -E_NOMEM);
	CU_ASSERT_EQUAL(vregion_create(1, (n0 + 1) * PG, VR_MEM_ALL, -1), -E_NOMEM);
	CU_ASSERT_EQUAL(heap_allocs(), h0);
	// Exactly all free frames: fine, and the next one-page region is not.
	long all = vregion_create(1, n0 * PG, VR_MEM_ALL, -1);
	CU_ASSERT_FATAL(all > 0);
	CU_ASSERT_EQUAL(pmem_free_count(), 0);
	CU_ASSERT_EQUAL(vregion_create(1, PG, VR_MEM_ALL, -1), -E_NOMEM);
	long none = vregion_create(1, PG, VR_MEM_NONE, -1); // no frames needed
	CU_ASSERT(none > 0);
	CU_ASSERT_EQUAL(ctl(1, none, VR_OP_ALLOC, 0, PG), -E_NOMEM);
	CU_ASSERT_EQUAL(vregion_frame(none, 0), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, none), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, all), 0);
	CU_ASSERT_EQUAL(heap_allocs(), h0);
	ASSERT_CLEAN(n0);
}

static void test_create_until_table_full(void)
{
	uint64_t n0 = pmem_free_count();
	static long ids[NVREGION];
	for (int i = 0; i < NVREGION; i++) {
		ids[i] = vregion_create(1 + i % 6, PG, VR_MEM_NONE, -1);
		CU_ASSERT_FATAL(ids[i] > 0);
		for (int j = 0; j < i; j += 17)
			CU_ASSERT_NOT_EQUAL(ids[j], ids[i]);
	}
	CU_ASSERT_EQUAL(vregion_live(), NVREGION);
	size_t h = heap_allocs();
	CU_ASSERT_EQUAL(vregion_create(1, PG, VR_MEM_NONE, -1), -E_NOMEM);
	CU_ASSERT_EQUAL(vregion_create(1, PG, VR_MEM_ALL, -1), -E_NOMEM);
	CU_ASSERT_EQUAL(heap_allocs(), h);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
	// One slot freed is one region more, with a new id.
	CU_ASSERT_EQUAL(vregion_delete(1 + 77 % 6, ids[77]), 0);
	long again = vregion_create(1, PG, VR_MEM_NONE, -1);
	CU_ASSERT(again > 0);
	CU_ASSERT_NOT_EQUAL(again, ids[77]);
	CU_ASSERT_EQUAL(res_slot(again), res_slot(ids[77]));
	ids[77] = again;
	for (int i = 0; i < NVREGION; i++)
		CU_ASSERT_EQUAL(vregion_delete(0, ids[i]), 0);
	ASSERT_CLEAN(n0);
}

static void test_ctrl_size_paddr(void)
{
	uint64_t n0 = pmem_free_count();
	long id = region_new(1, 3, VR_MEM_ALL);
	long bare = region_new(1, 2, VR_MEM_NONE);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_SIZE, 0, 0), 3 * PG);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PADDR, 0, 0), (long)vregion_frame(id, 0));
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PADDR, PG + 123, 0), (long)vregion_frame(id, 1) + 123);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PADDR, 3 * PG - 1, 0), (long)vregion_frame(id, 2) + PG - 1);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PADDR, 3 * PG, 0), -E_RANGE);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PADDR, ~0ull, 0), -E_RANGE);
	CU_ASSERT_EQUAL(ctl(1, bare, VR_OP_PADDR, PG, 0), -E_NOTBACKED);
	CU_ASSERT_EQUAL(ctl(1, bare, VR_OP_PADDR, 2 * PG, 0), -E_RANGE);
	CU_ASSERT_EQUAL(ctl(1, bare, VR_OP_SIZE, 0, 0), 2 * PG);
	// Unknown operations, including combinations of known bits.
	static const uint64_t bad[] = { 0, 0x3, 0x8, 0x10, 0x300, 0x1000, 0x8001, 0x10000, ~0ull };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(ctl(1, id, bad[i], 0, PG), -E_INVAL);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 3);
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, bare), 0);
	ASSERT_CLEAN(n0);
}

static void test_ctrl_alloc_free(void)
{
	uint64_t n0 = pmem_free_count();
	long id = region_new(1, 4, VR_MEM_NONE);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_ALLOC, PG, 2 * PG), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 2);
	paddr_t f1 = vregion_frame(id, 1), f2 = vregion_frame(id, 2);
	CU_ASSERT(f1 && f2 && f1 != f2);
	CU_ASSERT_TRUE(frame_is(f1, 0));
	CU_ASSERT_EQUAL(vregion_frame(id, 0), 0);
	CU_ASSERT_EQUAL(vregion_frame(id, 3), 0);
	// A range with a backed page: -E_EXIST, and page 0 stays unbacked.
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_ALLOC, 0, 2 * PG), -E_EXIST);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_ALLOC, 2 * PG, 2 * PG), -E_EXIST);
	CU_ASSERT_EQUAL(vregion_frame(id, 0), 0);
	CU_ASSERT_EQUAL(vregion_frame(id, 3), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 2);
	// Freeing a range with an unbacked page frees nothing.
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_FREE, 0, PG), -E_NOTBACKED);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_FREE, 0, 2 * PG), -E_NOTBACKED);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_FREE, 2 * PG, 2 * PG), -E_NOTBACKED);
	CU_ASSERT_EQUAL(vregion_frame(id, 1), f1);
	CU_ASSERT_EQUAL(vregion_frame(id, 2), f2);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 2);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_FREE, PG, PG), 0);
	CU_ASSERT_EQUAL(vregion_frame(id, 1), 0);
	CU_ASSERT_FALSE(pmem_is_allocated(f1));
	CU_ASSERT_EQUAL(vregion_frame(id, 2), f2);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 1);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_FREE, PG, PG), -E_NOTBACKED); // twice
	// Fill the holes, then free everything in one call.
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_ALLOC, 0, 2 * PG), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_ALLOC, 3 * PG, PG), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 4);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_FREE, 0, 4 * PG), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
	for (uint64_t p = 0; p < 4; p++)
		CU_ASSERT_EQUAL(vregion_frame(id, p), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	ASSERT_CLEAN(n0);
}

// Range decoding, the same for ALLOC, FREE, PIN and UNPIN: alignment, then
// zero length, then bounds (overflow-safe). Nothing changes on failure.
static void test_ctrl_range_errors(void)
{
	uint64_t n0 = pmem_free_count();
	long id = region_new(1, 4, VR_MEM_ALL);
	static const uint64_t ops[] = { VR_OP_ALLOC, VR_OP_FREE, VR_OP_PIN, VR_OP_UNPIN };
	static const struct {
		uint64_t off, len;
		long err;
	} c[] = {
		{ 1, PG, -E_ALIGN },
		{ 0, PG + 1, -E_ALIGN },
		{ 0, 100, -E_ALIGN },
		{ 5 * PG + 8, 0, -E_ALIGN }, // alignment first
		{ 0, 0, -E_INVAL },
		{ 5 * PG, 0, -E_INVAL },     // zero length before bounds
		{ 4 * PG, PG, -E_RANGE },
		{ 3 * PG, 2 * PG, -E_RANGE },
		{ 0, 5 * PG, -E_RANGE },
		{ 5 * PG, PG, -E_RANGE },
		{ ~0ull & ~(PG - 1), PG, -E_RANGE },      // offset wraps
		{ PG, ~0ull & ~(PG - 1), -E_RANGE },      // offset + length wraps
		{ 1ull << 63, 1ull << 63, -E_RANGE },
	};
	paddr_t f[4];
	for (uint64_t p = 0; p < 4; p++)
		f[p] = vregion_frame(id, p);
	for (size_t o = 0; o < 4; o++)
		for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
			long r = ctl(1, id, ops[o], c[i].off, c[i].len);
			if (r != c[i].err)
				fprintf(stderr, "op %#lx case %zu: %ld\n", (unsigned long)ops[o], i, r);
			CU_ASSERT_EQUAL(r, c[i].err);
		}
	for (uint64_t p = 0; p < 4; p++) {
		CU_ASSERT_EQUAL(vregion_frame(id, p), f[p]);
		CU_ASSERT_EQUAL(pmem_pin_count(f[p]), 0);
	}
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 4);
	// The whole region is a valid range for every op.
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PIN, 0, 4 * PG), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_UNPIN, 0, 4 * PG), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_FREE, 0, 4 * PG), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_ALLOC, 0, 4 * PG), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	ASSERT_CLEAN(n0);
}

static void test_alloc_out_of_frames(void)
{
	uint64_t n0 = pmem_free_count();
	long big = region_new(1, n0 + 2, VR_MEM_NONE);
	CU_ASSERT_EQUAL(ctl(1, big, VR_OP_ALLOC, 0, (n0 + 2) * PG), -E_NOMEM);
	CU_ASSERT_EQUAL(ctl(1, big, VR_OP_ALLOC, 0, (n0 + 1) * PG), -E_NOMEM);
	CU_ASSERT_EQUAL(pmem_free_count(), n0); // none taken on failure
	for (uint64_t p = 0; p < n0 + 2; p += 997)
		CU_ASSERT_EQUAL(vregion_frame(big, p), 0);
	CU_ASSERT_EQUAL(ctl(1, big, VR_OP_ALLOC, 2 * PG, n0 * PG), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), 0);
	CU_ASSERT_EQUAL(ctl(1, big, VR_OP_ALLOC, 0, PG), -E_NOMEM);
	CU_ASSERT_EQUAL(ctl(1, big, VR_OP_FREE, 2 * PG, n0 * PG), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
	CU_ASSERT_EQUAL(vregion_delete(1, big), 0);
	ASSERT_CLEAN(n0);
}

static void test_grant_rules(void)
{
	uint64_t n0 = pmem_free_count();
	long id = region_new(1, 2, VR_MEM_ALL);
	CU_ASSERT_EQUAL(vregion_access(2, id), -E_NOTOWNER);
	CU_ASSERT_EQUAL(ctl(2, id, VR_OP_SIZE, 0, 0), -E_NOTOWNER);
	CU_ASSERT_EQUAL(ctl(2, id, VR_OP_GRANT, 2, 0), -E_NOTOWNER); // no self-grant
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, 99, 0), -E_SRCH);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, 0, 0), -E_SRCH);  // the kernel is no process
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, (uint64_t)-1, 0), -E_SRCH);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, 2, 0), 0);
	CU_ASSERT_EQUAL(vregion_access(2, id), 0);
	CU_ASSERT_EQUAL(ctl(2, id, VR_OP_SIZE, 0, 0), 2 * PG);
	// Only the owner grants: a grantee cannot pass the region on.
	CU_ASSERT_EQUAL(ctl(2, id, VR_OP_GRANT, 3, 0), -E_NOTOWNER);
	CU_ASSERT_EQUAL(vregion_access(3, id), -E_NOTOWNER);
	// A repeated grant takes no slot; four slots, then -E_NOMEM.
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, 2, 0), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, 3, 0), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, 4, 0), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, 5, 0), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, 6, 0), -E_NOMEM);
	CU_ASSERT_EQUAL(vregion_access(6, id), -E_NOTOWNER);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, 4, 0), 0); // already there, even when full
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, 99, 0), -E_SRCH); // unknown before full
	CU_ASSERT_EQUAL(ctl(0, id, VR_OP_GRANT, 6, 0), -E_NOMEM); // the kernel may grant
	for (int pid = 2; pid <= 5; pid++)
		CU_ASSERT_EQUAL(vregion_access(pid, id), 0);
	CU_ASSERT_EQUAL(vregion_access(0, id), 0);
	// A grantee may use but not delete.
	CU_ASSERT_EQUAL(vregion_delete(2, id), -E_NOTOWNER);
	CU_ASSERT_EQUAL(vregion_delete(6, id), -E_NOTOWNER);
	CU_ASSERT_EQUAL(vregion_live(), 1);
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	ASSERT_CLEAN(n0);
}

static void test_grantee_uses_region(void)
{
	uint64_t n0 = pmem_free_count();
	long id = region_new(1, 4, VR_MEM_NONE), other = region_new(2, 1, VR_MEM_ALL);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, 2, 0), 0);
	// Backing and pins stay the owner's: a grantee freeing frames would
	// make the owner's pages fault, pinning them would block its exchanges,
	// and frames it allocated would count against the owner's limit.
	CU_ASSERT_EQUAL(ctl(2, id, VR_OP_ALLOC, 0, 2 * PG), -E_NOTOWNER);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_ALLOC, 0, 2 * PG), 0);
	CU_ASSERT(ctl(2, id, VR_OP_PADDR, PG, 0) == (long)vregion_frame(id, 1));
	CU_ASSERT_EQUAL(ctl(2, id, VR_OP_PIN, 0, PG), -E_NOTOWNER);
	CU_ASSERT_EQUAL(pmem_pin_count(vregion_frame(id, 0)), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PIN, 0, PG), 0);
	CU_ASSERT_EQUAL(ctl(2, id, VR_OP_UNPIN, 0, PG), -E_NOTOWNER);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_UNPIN, 0, PG), 0);
	paddr_t mine = vregion_frame(other, 0), theirs = vregion_frame(id, 1);
	CU_ASSERT_EQUAL(ctl4(2, id, VR_OP_EXCHANGE, PG, (uint64_t)other, 0, 1), 0);
	CU_ASSERT_EQUAL(vregion_frame(id, 1), mine);
	CU_ASSERT_EQUAL(vregion_frame(other, 0), theirs);
	// The owner cannot use the grantee's own region in the same call.
	CU_ASSERT_EQUAL(ctl4(1, id, VR_OP_EXCHANGE, PG, (uint64_t)other, 0, 1), -E_NOTOWNER);
	CU_ASSERT_EQUAL(ctl(2, id, VR_OP_FREE, 0, 2 * PG), -E_NOTOWNER);
	CU_ASSERT_EQUAL(vregion_frame(id, 0) != 0, 1);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_FREE, 0, 2 * PG), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 1);
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	CU_ASSERT_EQUAL(vregion_delete(2, other), 0);
	ASSERT_CLEAN(n0);
}

static void test_pins(void)
{
	uint64_t n0 = pmem_free_count();
	long id = region_new(1, 4, VR_MEM_ALL), peer = region_new(1, 4, VR_MEM_ALL);
	paddr_t f0 = vregion_frame(id, 0), f1 = vregion_frame(id, 1);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PIN, 0, 2 * PG), 0);
	CU_ASSERT_EQUAL(pmem_pin_count(f0), 1);
	CU_ASSERT_EQUAL(pmem_pin_count(f1), 1);
	CU_ASSERT_EQUAL(pmem_pin_count(vregion_frame(id, 2)), 0);
	// Pinned frames are neither freed nor exchanged, even partly in range.
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_FREE, 0, PG), -E_BUSY);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_FREE, PG, 3 * PG), -E_BUSY);
	CU_ASSERT_EQUAL(vregion_exchange(1, id, peer, PG, 0, 2), -E_BUSY);
	CU_ASSERT_EQUAL(vregion_exchange(1, peer, id, 0, 0, 4), -E_BUSY);
	CU_ASSERT_EQUAL(vregion_frame(id, 0), f0);
	CU_ASSERT_EQUAL(vregion_frame(id, 1), f1);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 8);
	// Unpinned pages beside them still move.
	CU_ASSERT_EQUAL(vregion_exchange(1, id, peer, 2 * PG, 0, 2), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_FREE, 3 * PG, PG), 0);
	// Pins nest; unpinning an unpinned page (anywhere in range) changes nothing.
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PIN, 0, PG), 0);
	CU_ASSERT_EQUAL(pmem_pin_count(f0), 2);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_UNPIN, 0, 3 * PG), -E_INVAL);
	CU_ASSERT_EQUAL(pmem_pin_count(f0), 2);
	CU_ASSERT_EQUAL(pmem_pin_count(f1), 1);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_UNPIN, 0, 2 * PG), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_UNPIN, PG, PG), -E_INVAL); // twice
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_UNPIN, 0, PG), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_UNPIN, 0, PG), -E_INVAL);  // twice
	CU_ASSERT_FALSE(pmem_is_pinned(f0));
	CU_ASSERT_FALSE(pmem_is_pinned(f1));
	// A range with an unbacked page pins nothing.
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PIN, 2 * PG, 2 * PG), -E_NOTBACKED);
	CU_ASSERT_EQUAL(pmem_pin_count(vregion_frame(id, 2)), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_UNPIN, 3 * PG, PG), -E_NOTBACKED);
	// An external pin is not the region's to drop.
	pmem_pin(f0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_UNPIN, 0, PG), -E_INVAL);
	CU_ASSERT_EQUAL(pmem_pin_count(f0), 1);
	pmem_unpin(f0);
	// Deleting with own pins held drops them and frees the frames.
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PIN, 0, 3 * PG), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PIN, 0, PG), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	CU_ASSERT_FALSE(pmem_is_allocated(f0));
	CU_ASSERT_EQUAL(pmem_pin_count(f0), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, peer), 0);
	ASSERT_CLEAN(n0);
}

// 255 pins per page through ctrl_vr, then -E_2BIG with nothing pinned.
static void test_pin_limit(void)
{
	uint64_t n0 = pmem_free_count();
	long id = region_new(1, 2, VR_MEM_ALL);
	paddr_t f0 = vregion_frame(id, 0), f1 = vregion_frame(id, 1);
	for (int i = 0; i < 255; i++)
		CU_ASSERT_EQUAL_FATAL(ctl(1, id, VR_OP_PIN, PG, PG), 0);
	CU_ASSERT_EQUAL(pmem_pin_count(f1), 255);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PIN, PG, PG), -E_2BIG);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PIN, 0, 2 * PG), -E_2BIG);
	CU_ASSERT_EQUAL(pmem_pin_count(f0), 0);
	CU_ASSERT_EQUAL(pmem_pin_count(f1), 255);
	for (int i = 0; i < 255; i++)
		CU_ASSERT_EQUAL_FATAL(ctl(1, id, VR_OP_UNPIN, PG, PG), 0);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_UNPIN, PG, PG), -E_INVAL);
	CU_ASSERT_FALSE(pmem_is_pinned(f1));
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	ASSERT_CLEAN(n0);
}

// A frame a NIC holds (pmem_pin directly, as the e1000 driver does) keeps
// the region: -E_BUSY, and the region stays whole.
static void test_delete_busy_external_pin(void)
{
	uint64_t n0 = pmem_free_count();
	long id = region_new(1, 3, VR_MEM_ALL);
	paddr_t f2 = vregion_frame(id, 2);
	pmem_pin(f2);
	CU_ASSERT_EQUAL(vregion_delete(1, id), -E_BUSY);
	CU_ASSERT_EQUAL(vregion_delete(0, id), -E_BUSY); // the kernel too
	CU_ASSERT_EQUAL(vregion_pages(id), 3);
	CU_ASSERT_EQUAL(vregion_frame(id, 2), f2);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 3);
	// Own pins on top do not hide the external one.
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PIN, 2 * PG, PG), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, id), -E_BUSY);
	CU_ASSERT_EQUAL(pmem_pin_count(f2), 2);
	// Ownership is checked before busy.
	CU_ASSERT_EQUAL(vregion_delete(2, id), -E_NOTOWNER);
	pmem_unpin(f2);
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0); // only its own pin left
	CU_ASSERT_FALSE(pmem_is_allocated(f2));
	ASSERT_CLEAN(n0);
}

static void test_stale_and_foreign_ids(void)
{
	uint64_t n0 = pmem_free_count();
	long id = region_new(1, 2, VR_MEM_ALL), peer = region_new(1, 2, VR_MEM_ALL);
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	long again = region_new(1, 2, VR_MEM_ALL); // reuses the slot, new generation
	CU_ASSERT_EQUAL(res_slot(again), res_slot(id));
	CU_ASSERT_NOT_EQUAL(again, id);
	long space = proc_vspace(1);
	long bad[] = {
		id,                                                        // stale
		res_id(RES_VREGION, res_gen(again) + 1, res_slot(again)), // future generation
		res_id(RES_VREGION, res_gen(again), NVREGION),             // slot past the table
		res_id(RES_VREGION, res_gen(again), 4095),
		res_id(RES_VSPACE, res_gen(again), res_slot(again)),       // another kind
		res_id(RES_VUSPACE, res_gen(again), res_slot(again)),
		res_id(RES_IO, res_gen(again), res_slot(again)),
		space,
		again | (1l << 40),                                        // bits above the kind
		0, -1, -again, -E_BADID,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		long b = bad[i];
		CU_ASSERT_EQUAL(vregion_delete(1, b), -E_BADID);
		CU_ASSERT_EQUAL(vregion_delete(0, b), -E_BADID);
		CU_ASSERT_EQUAL(ctl(1, b, VR_OP_SIZE, 0, 0), -E_BADID);
		CU_ASSERT_EQUAL(ctl(1, b, 0x1234, 0, 0), -E_BADID); // before the op is decoded
		CU_ASSERT_EQUAL(ctl(1, b, VR_OP_GRANT, 2, 0), -E_BADID);
		CU_ASSERT_EQUAL(vregion_access(1, b), -E_BADID);
		CU_ASSERT_EQUAL(vregion_pages(b), 0);
		CU_ASSERT_EQUAL(vregion_frame(b, 0), 0);
		CU_ASSERT_EQUAL(vregion_disk(b), -1);
		CU_ASSERT_EQUAL(vregion_check_range(b, 0, PG), -E_BADID);
		CU_ASSERT_EQUAL(vregion_exchange(1, b, peer, 0, 0, 1), -E_BADID);
		CU_ASSERT_EQUAL(vregion_exchange(1, peer, b, 0, 0, 1), -E_BADID);
		CU_ASSERT_EQUAL(vregion_att_add(b, 1), -E_BADID);
	}
	CU_ASSERT_EQUAL(vregion_pages(again), 2);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 4);
	CU_ASSERT_EQUAL(vregion_delete(1, again), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, peer), 0);
	ASSERT_CLEAN(n0);
}

// Exit of pid 1: its regions go with their frames; grants it held on
// others' regions are withdrawn, and the slots can be granted again.
static void test_release_owner(void)
{
	proc_new(7);
	uint64_t n0 = pmem_free_count();
	long a = region_new(1, 3, VR_MEM_ALL), b = region_new(1, 4, VR_MEM_NONE);
	long c = region_new(2, 2, VR_MEM_ALL), d = region_new(3, 1, VR_MEM_ALL);
	CU_ASSERT_EQUAL(ctl(1, b, VR_OP_ALLOC, PG, PG), 0);
	CU_ASSERT_EQUAL(ctl(1, b, VR_OP_PIN, PG, PG), 0); // own pins go too
	CU_ASSERT_EQUAL(ctl(1, a, VR_OP_GRANT, 2, 0), 0);
	for (int pid = 1; pid <= 5; pid++)
		if (pid != 2)
			CU_ASSERT_EQUAL(ctl(2, c, VR_OP_GRANT, pid, 0), 0);
	CU_ASSERT_EQUAL(ctl(2, c, VR_OP_GRANT, 6, 0), -E_NOMEM);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 7);
	res_ops_of(RES_VREGION)->release(1);
	CU_ASSERT_EQUAL(vregion_access(1, a), -E_BADID);
	CU_ASSERT_EQUAL(vregion_access(2, a), -E_BADID);
	CU_ASSERT_EQUAL(vregion_access(1, b), -E_BADID);
	CU_ASSERT_EQUAL(vregion_access(1, c), -E_NOTOWNER); // grant withdrawn
	CU_ASSERT_EQUAL(vregion_access(3, c), 0);           // others keep theirs
	CU_ASSERT_EQUAL(vregion_access(4, c), 0);
	CU_ASSERT_EQUAL(vregion_access(3, d), 0);
	CU_ASSERT_EQUAL(vregion_live(), 2);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 3);
	CU_ASSERT_EQUAL(ctl(2, c, VR_OP_GRANT, 6, 0), 0); // the freed slot
	CU_ASSERT_EQUAL(ctl(2, c, VR_OP_GRANT, 7, 0), -E_NOMEM);
	res_ops_of(RES_VREGION)->release(1); // nothing left: no-op
	CU_ASSERT_EQUAL(vregion_live(), 2);
	res_ops_of(RES_VREGION)->release(2);
	res_ops_of(RES_VREGION)->release(3);
	ASSERT_CLEAN(n0);
}

// read_vr / write_vr move whole pages between frames and the disk at the
// region's byte offset (sector = offset / 512).
static void test_disk_io(void)
{
	uint64_t n0 = pmem_free_count();
	fake_proc_set_current(1);
	long id = vregion_create(1, 3 * PG, VR_MEM_ALL, 8 * PG);
	CU_ASSERT_FATAL(id > 0);
	fill_pages(id, 0x40);
	uint64_t w[3] = { (uint64_t)id, PG, 2 * PG };
	CU_ASSERT_EQUAL(sys_write_vr(w), 0);
	CU_ASSERT_EQUAL(fake_ata.writes, 2); // a call per page
	CU_ASSERT_EQUAL(fake_ata.sectors_moved, 2 * PG / ATA_SECTOR);
	CU_ASSERT_EQUAL(fake_ata.last_lba, (10 * PG) / ATA_SECTOR);
	for (uint64_t p = 1; p < 3; p++) {
		const uint8_t *d = fake_disk + (8 + p) * PG;
		CU_ASSERT_TRUE(d[0] == pat(0x40, p) && d[PG - 1] == pat(0x40, p));
		CU_ASSERT_EQUAL(memcmp(d, arch_p2v(vregion_frame(id, p)), PG), 0);
	}
	CU_ASSERT_NOT_EQUAL(fake_disk[8 * PG], pat(0x40, 0)); // page 0 not written
	// Read back over cleared frames; page 0 gets the disk's old bytes.
	for (uint64_t p = 0; p < 3; p++)
		memset(arch_p2v(vregion_frame(id, p)), 0, PG);
	uint64_t r[3] = { (uint64_t)id, 0, 3 * PG };
	CU_ASSERT_EQUAL(sys_read_vr(r), 0);
	CU_ASSERT_EQUAL(fake_ata.reads, 3);
	CU_ASSERT_EQUAL(memcmp(arch_p2v(vregion_frame(id, 0)), fake_disk + 8 * PG, PG), 0);
	CU_ASSERT_TRUE(frame_is(vregion_frame(id, 1), pat(0x40, 1)));
	CU_ASSERT_TRUE(frame_is(vregion_frame(id, 2), pat(0x40, 2)));
	// A grantee may do I/O too.
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_GRANT, 2, 0), 0);
	fake_proc_set_current(2);
	CU_ASSERT_EQUAL(sys_read_vr(r), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	CU_ASSERT_EQUAL(fake_disk[9 * PG], pat(0x40, 1)); // the disk keeps the data
	ASSERT_CLEAN(n0);
}

static long rd(long id, uint64_t off, uint64_t size)
{
	uint64_t a[3] = { (uint64_t)id, off, size };
	return sys_read_vr(a);
}
static long wr(long id, uint64_t off, uint64_t size)
{
	uint64_t a[3] = { (uint64_t)id, off, size };
	return sys_write_vr(a);
}

static void test_disk_io_errors(void)
{
	uint64_t n0 = pmem_free_count();
	fake_proc_set_current(1);
	long id = vregion_create(1, 4 * PG, VR_MEM_ALL, 0);
	long nodisk = region_new(1, 1, VR_MEM_ALL), theirs = vregion_create(2, PG, VR_MEM_ALL, 0);
	uint64_t disk_pages = FAKE_DISK_SECTORS * ATA_SECTOR / PG;
	long far = vregion_create(1, 2 * PG, VR_MEM_ALL, (int64_t)((disk_pages - 1) * PG));
	CU_ASSERT_FATAL(id > 0 && theirs > 0 && far > 0);
	fill_pages(id, 0x10);
	CU_ASSERT_EQUAL(rd(id + (1 << RES_SLOT_BITS), 0, PG), -E_BADID);
	CU_ASSERT_EQUAL(wr(theirs, 0, PG), -E_NOTOWNER);
	CU_ASSERT_EQUAL(rd(nodisk, 0, PG), -E_NODEV);
	CU_ASSERT_EQUAL(rd(id, 10, PG), -E_ALIGN);
	CU_ASSERT_EQUAL(rd(id, 0, 0), -E_INVAL);
	CU_ASSERT_EQUAL(rd(id, 4 * PG, PG), -E_RANGE);
	CU_ASSERT_EQUAL(wr(id, 2 * PG, 8 * PG), -E_RANGE);
	CU_ASSERT_EQUAL(wr(far, 0, PG), 0);              // the disk's last page
	CU_ASSERT_EQUAL(wr(far, 0, 2 * PG), -E_RANGE);   // beyond the disk
	CU_ASSERT_EQUAL(rd(far, PG, PG), -E_RANGE);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_PIN, PG, PG), 0);
	CU_ASSERT_EQUAL(rd(id, 0, 2 * PG), -E_BUSY);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_FREE, 3 * PG, PG), 0);
	CU_ASSERT_EQUAL(rd(id, 2 * PG, 2 * PG), -E_NOTBACKED);
	CU_ASSERT_EQUAL(rd(id, PG, 3 * PG), -E_BUSY); // busy before not backed
	CU_ASSERT_EQUAL(fake_ata.calls, 1); // only the one good write reached the disk
	for (uint64_t p = 0; p < 3; p++)
		CU_ASSERT_TRUE(frame_is(vregion_frame(id, p), pat(0x10, p)));
	// A device error stops the transfer and comes back as it is.
	fake_ata.fail = -E_IO;
	fake_ata.fail_at = fake_ata.calls + 2;
	CU_ASSERT_EQUAL(wr(id, 2 * PG, PG), 0);
	CU_ASSERT_EQUAL(rd(id, 2 * PG, PG), -E_IO);
	CU_ASSERT_TRUE(frame_is(vregion_frame(id, 2), pat(0x10, 2)));
	fake_ata.sectors = 0; // no disk at all
	CU_ASSERT_EQUAL(rd(id, 0, PG), -E_RANGE);
	CU_ASSERT_EQUAL(ctl(1, id, VR_OP_UNPIN, PG, PG), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, id), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, nodisk), 0);
	CU_ASSERT_EQUAL(vregion_delete(2, theirs), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, far), 0);
	ASSERT_CLEAN(n0);
}

int register_vregion(void)
{
	static const struct test_case t[] = {
		TEST(test_create_without_frames),
		TEST(test_create_with_frames),
		TEST(test_create_sizes_and_limits),
		TEST(test_create_nomem_changes_nothing),
		TEST(test_create_until_table_full),
		TEST(test_ctrl_size_paddr),
		TEST(test_ctrl_alloc_free),
		TEST(test_ctrl_range_errors),
		TEST(test_alloc_out_of_frames),
		TEST(test_grant_rules),
		TEST(test_grantee_uses_region),
		TEST(test_pins),
		TEST(test_pin_limit),
		TEST(test_delete_busy_external_pin),
		TEST(test_stale_and_foreign_ids),
		TEST(test_release_owner),
		TEST(test_disk_io),
		TEST(test_disk_io_errors),
	};
	return ADD_SUITE("vregion", setup, res_machine_teardown, t);
}
