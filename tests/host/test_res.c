// res: identifiers (kind, generation, slot) and the table of managers:
// encoding round trips, kind checks, generations that do not wrap in any
// manager's slots within thousands of reuses, the ops table and release
// order on exit.
#include "res_test.h"
#include "res/res.h"
#include <limits.h>

static long s1;

static void setup(void)
{
	res_machine_setup();
	s1 = proc_new(1);
	proc_new(2);
}

static void test_id_round_trip(void)
{
	static const unsigned gens[] = { 0, 1, 2, 0x7ff, 0x800, 0xfff, 0x1000, 0xffff, 0x10000,
					 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff };
	static const unsigned slots[] = { 0, 1, 63, 255, 256, 2048, 4095 };
	for (int k = 1; k < RES_NKIND; k++)
		for (size_t g = 0; g < sizeof(gens) / sizeof(gens[0]); g++)
			for (size_t s = 0; s < sizeof(slots) / sizeof(slots[0]); s++) {
				long id = res_id(k, gens[g], slots[s]);
				CU_ASSERT(id > 0);
				CU_ASSERT_EQUAL(res_gen(id), gens[g]);
				CU_ASSERT_EQUAL(res_slot(id), slots[s]);
				CU_ASSERT_EQUAL(id >> RES_KIND_SHIFT, k);
				for (int j = 0; j <= RES_NKIND; j++)
					CU_ASSERT_EQUAL(res_kind_is(id, j), j == k);
			}
	// The generation has 32 bits: 4096 and 65536 reuses are new names.
	CU_ASSERT_NOT_EQUAL(res_id(RES_VREGION, 0x1005, 7), res_id(RES_VREGION, 5, 7));
	CU_ASSERT_NOT_EQUAL(res_id(RES_VREGION, 0x10005, 7), res_id(RES_VREGION, 5, 7));
	CU_ASSERT_TRUE(res_kind_is(res_id(RES_VREGION, 0xffffffff, 7), RES_VREGION));
	CU_ASSERT_EQUAL(res_id(RES_VSPACE, 0, 0), KERNEL_VSPACE);
}

static void test_kind_check(void)
{
	long id = res_id(RES_VREGION, 3, 9);
	long bad[] = { 0, -1, -id, id | (1l << 45), id | (1l << 60), LONG_MIN,
		       (long)RES_VREGION, id & 0xffffffffffffl, (long)RES_VREGION << 24 | 9 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		for (int k = 1; k <= RES_NKIND; k++)
			CU_ASSERT_FALSE(res_kind_is(bad[i], k));
	CU_ASSERT_FALSE(res_kind_is(id, RES_VUSPACE));
	CU_ASSERT_TRUE(res_kind_is(id, RES_VREGION));
}

// A slot's generation steps by one per reuse, and an old identifier stays
// stale for far more reuses than the 4096 after which a 12-bit generation
// brought it back (a process could then name another's new region).
#define REUSES 5000

static void test_generation_vregion(void)
{
	uint64_t n0 = pmem_free_count();
	long first = region_new(1, 1, VR_MEM_NONE), prev = first;
	CU_ASSERT_EQUAL(vregion_delete(1, first), 0);
	for (int i = 1; i <= REUSES; i++) {
		long id = vregion_create(1, PG, VR_MEM_NONE, -1);
		CU_ASSERT_FATAL(id > 0);
		CU_ASSERT_EQUAL(res_slot(id), res_slot(first));
		CU_ASSERT_EQUAL(res_gen(id), res_gen(prev) + 1);
		CU_ASSERT_EQUAL(vregion_pages(prev), 0);
		CU_ASSERT_EQUAL(vregion_access(1, first), -E_BADID);
		CU_ASSERT_EQUAL_FATAL(vregion_delete(1, id), 0);
		prev = id;
	}
	CU_ASSERT_NOT_EQUAL(prev, first);
	ASSERT_CLEAN(n0);
}

static void test_generation_vuspace(void)
{
	long r = region_new(1, 1, VR_MEM_ALL);
	uint64_t n0 = pmem_free_count();
	long first = attach(1, r, 0, USER_BASE), prev = first;
	CU_ASSERT_EQUAL(vuspace_detach(1, first), 0);
	for (int i = 1; i <= REUSES; i++) {
		long id = vuspace_attach(1, r, 0, USER_BASE);
		CU_ASSERT_FATAL(id > 0);
		CU_ASSERT_EQUAL(res_slot(id), res_slot(first));
		CU_ASSERT_EQUAL(res_gen(id), res_gen(prev) + 1);
		CU_ASSERT_EQUAL(vuspace_detach(1, prev), -E_BADID);
		CU_ASSERT_EQUAL(vuspace_addr(first), 0);
		CU_ASSERT_EQUAL_FATAL(vuspace_detach(1, id), 0);
		prev = id;
	}
	CU_ASSERT_NOT_EQUAL(prev, first);
	CU_ASSERT_EQUAL(vuspace_live(), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
}

static void test_generation_vspace(void)
{
	uint64_t n0 = pmem_free_count();
	long first = vspace_create(), prev = first;
	CU_ASSERT_FATAL(first > 0);
	CU_ASSERT_EQUAL(vspace_destroy(first), 0);
	for (int i = 1; i <= REUSES; i++) {
		long id = vspace_create();
		CU_ASSERT_FATAL(id > 0);
		CU_ASSERT_EQUAL(res_slot(id), res_slot(first));
		CU_ASSERT_EQUAL(res_gen(id), res_gen(prev) + 1);
		CU_ASSERT_FALSE(vspace_valid(first));
		CU_ASSERT_EQUAL_FATAL(vspace_destroy(id), 0);
		prev = id;
	}
	CU_ASSERT_NOT_EQUAL(prev, first);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
}

static void test_ops_table(void)
{
	static const struct {
		enum res_kind k;
		const char *name;
	} m[] = { { RES_VSPACE, "vspace" }, { RES_VREGION, "vregion" }, { RES_VUSPACE, "vuspace" },
		  { RES_PROC, "proc" },     { RES_IO, "io" } };
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		const struct res_ops *o = res_ops_of(m[i].k);
		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		CU_ASSERT_STRING_EQUAL(o->name, m[i].name);
	}
	CU_ASSERT_PTR_NULL(res_ops_of(RES_PMEM)); // frames have no manager entry
	CU_ASSERT_PTR_NULL(res_ops_of(0));
	CU_ASSERT_PTR_NULL(res_ops_of(RES_NKIND));
	CU_ASSERT_PTR_NULL(res_ops_of((enum res_kind)-1));
	CU_ASSERT_PTR_NULL(res_ops_of((enum res_kind)1000));
	// Live counts go through the table: every counted kind, and only those.
	long r = region_new(1, 1, VR_MEM_ALL);
	attach(1, r, 0, USER_BASE);
	CU_ASSERT_EQUAL(res_live(RES_VREGION), 1);
	CU_ASSERT_EQUAL(res_live(RES_VUSPACE), 1);
	CU_ASSERT_EQUAL(res_live(RES_VSPACE), 0); // spaces go with processes: not counted
	CU_ASSERT_EQUAL(res_live(RES_PMEM), 0);
	CU_ASSERT_EQUAL(res_live((enum res_kind)1000), 0);
	CU_ASSERT_PTR_NOT_NULL(res_ops_of(RES_VREGION)->live);
	CU_ASSERT_PTR_NULL(res_ops_of(RES_PROC)->release);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
	CU_ASSERT_EQUAL(res_live(RES_VREGION) + res_live(RES_VUSPACE), 0);
}

// The generic table helper on a table of its own: allocation order, the
// first slots kept back, generation steps, names, lookups and counts.
static void test_table_helper(void)
{
	static struct item {
		struct res_hdr h;
		int payload;
	} items[3];
	const struct res_table t = RES_TABLE(RES_IO, items, 1);
	struct item *a = res_alloc(&t), *b = res_alloc(&t);
	CU_ASSERT_PTR_EQUAL(a, &items[1]);
	CU_ASSERT_PTR_EQUAL(b, &items[2]);
	CU_ASSERT_PTR_NULL(res_alloc(&t)); // slot 0 is never handed out
	CU_ASSERT_EQUAL(res_count(&t), 2);
	a->payload = 7;
	long ida = res_name(&t, a);
	CU_ASSERT_EQUAL(res_slot(ida), 1);
	CU_ASSERT_PTR_EQUAL(res_lookup(&t, ida), a);
	CU_ASSERT_PTR_NULL(res_lookup(&t, res_id(RES_VREGION, res_gen(ida), 1))); // other kind
	res_free(a);
	CU_ASSERT_PTR_NULL(res_lookup(&t, ida));
	struct item *c = res_alloc(&t);
	CU_ASSERT_PTR_EQUAL(c, a);
	CU_ASSERT_EQUAL(c->payload, 0); // zeroed
	CU_ASSERT_EQUAL(res_gen(res_name(&t, c)), res_gen(ida) + 1);
	CU_ASSERT_PTR_NULL(res_lookup(&t, ida)); // the old name stays stale
	CU_ASSERT_PTR_NULL(res_lookup(&t, res_id(RES_IO, 0, 0)));
	CU_ASSERT_PTR_NULL(res_lookup(&t, res_id(RES_IO, 0, 3))); // past the end
	// A free slot's cached name is 0: neither 0 nor a negative id names it.
	CU_ASSERT_PTR_NULL(res_lookup(&t, 0));
	CU_ASSERT_PTR_NULL(res_lookup(&t, -res_name(&t, c)));
	CU_ASSERT_EQUAL(items[0].h.name, 0);
	CU_ASSERT_EQUAL(c->h.name, res_name(&t, c));
	long idc = res_name(&t, c);
	res_free(c);
	CU_ASSERT_EQUAL(c->h.name, 0);
	CU_ASSERT_PTR_NULL(res_lookup(&t, idc));
	CU_ASSERT_PTR_NULL(res_lookup(&t, 0));
}

static void test_live_and_release(void)
{
	uint64_t n0 = pmem_free_count();
	CU_ASSERT_EQUAL(res_live(RES_VREGION), 0);
	long a = region_new(1, 1, VR_MEM_ALL), b = region_new(2, 1, VR_MEM_ALL);
	long c = region_new(1, 2, VR_MEM_NONE);
	attach(1, a, 0, USER_BASE);
	attach(1, c, s1, USER_BASE + PG);
	CU_ASSERT_EQUAL(res_live(RES_VREGION), 3);
	CU_ASSERT_EQUAL(res_live(RES_VUSPACE), 2);
	CU_ASSERT_EQUAL(res_live(RES_IO), 0);
	CU_ASSERT_EQUAL(res_live(RES_VSPACE), 0); // not counted here
	CU_ASSERT_EQUAL(res_live(RES_PROC), 0);
	res_release_owner(1);
	CU_ASSERT_EQUAL(fake_io_nreleased, 1);
	CU_ASSERT_EQUAL(fake_io_released[0], 1);
	CU_ASSERT_EQUAL(fake_io_released_vuspaces[0], 2); // I/O went first
	CU_ASSERT_EQUAL(res_live(RES_VREGION), 1);
	CU_ASSERT_EQUAL(res_live(RES_VUSPACE), 0);
	CU_ASSERT_EQUAL(vregion_pages(b), 1);
	CU_ASSERT_EQUAL(vspace_tables(s1), 0);
	res_release_owner(1); // twice: nothing left
	CU_ASSERT_EQUAL(res_live(RES_VREGION), 1);
	res_release_owner(2);
	ASSERT_CLEAN(n0);
}

// A region a channel registered cannot be deleted, so its id cannot come
// to name another process's region; when its owner exits it loses its name
// and its frames go at the last unhold.
static void test_hold(void)
{
	uint64_t n0 = pmem_free_count();
	long r = region_new(1, 2, VR_MEM_ALL);
	CU_ASSERT_EQUAL(vregion_hold(2, r), -E_NOTOWNER);
	CU_ASSERT_EQUAL(vregion_hold(1, r + 1), -E_BADID);
	CU_ASSERT_EQUAL(vregion_hold(1, r), 0);
	CU_ASSERT_EQUAL(vregion_hold(1, r), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, r), -E_BUSY);
	vregion_unhold(r);
	CU_ASSERT_EQUAL(vregion_delete(1, r), -E_BUSY);
	vregion_unhold(r);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
	ASSERT_CLEAN(n0);
	// Granted to 2, held by 2's channel; its owner 1 exits.
	r = region_new(1, 2, VR_MEM_ALL);
	attach(1, r, 0, USER_BASE);
	CU_ASSERT_EQUAL(ctl(1, r, VR_OP_GRANT, 2, 0), 0);
	CU_ASSERT_EQUAL(vregion_hold(2, r), 0);
	res_release_owner(1);
	CU_ASSERT_EQUAL(res_live(RES_VUSPACE), 0);     // unmapped at once
	CU_ASSERT_EQUAL(vregion_access(2, r), -E_BADID); // no name any more
	CU_ASSERT_EQUAL(vregion_pages(r), 0);
	CU_ASSERT_EQUAL(vregion_check_range(r, 0, PG), -E_BADID);
	CU_ASSERT_EQUAL(res_live(RES_VREGION), 1);     // frames still held
	long other = region_new(2, 1, VR_MEM_NONE);
	CU_ASSERT_NOT_EQUAL(res_slot(other), res_slot(r)); // the slot is not reused
	CU_ASSERT_EQUAL(vregion_delete(2, other), 0);
	vregion_unhold(r);
	CU_ASSERT_EQUAL(res_live(RES_VREGION), 0);
	vregion_unhold(r); // a stale unhold changes nothing
	ASSERT_CLEAN(n0);
}

// Frames, regions: charged to the owner, refused past the limit with
// -E_LIMIT and nothing changed, given back when freed.
static void test_limits(void)
{
	uint64_t n0 = pmem_free_count();
	const uint64_t lim[LIM_N] = { 6, 3, 1 };
	proc_set_limits(lim);
	long a = region_new(1, 4, VR_MEM_ALL);
	CU_ASSERT_EQUAL(proc_usage(1, LIM_FRAMES), 4);
	CU_ASSERT_EQUAL(vregion_create(1, 3 * PG, VR_MEM_ALL, -1), -E_LIMIT);
	CU_ASSERT_EQUAL(proc_usage(1, LIM_REGIONS), 1);
	long b = region_new(1, 4, VR_MEM_NONE);
	CU_ASSERT_EQUAL(ctl(1, b, VR_OP_ALLOC, 0, 2 * PG), 0);
	CU_ASSERT_EQUAL(ctl(1, b, VR_OP_ALLOC, 2 * PG, PG), -E_LIMIT);
	CU_ASSERT_EQUAL(vregion_frame(b, 2), 0);
	CU_ASSERT_EQUAL(vregion_create(1, PG, VR_MEM_NONE, -1) > 0, 1);
	CU_ASSERT_EQUAL(vregion_create(1, PG, VR_MEM_NONE, -1), -E_LIMIT);
	CU_ASSERT_EQUAL(proc_usage(1, LIM_REGIONS), 3);
	long c = region_new(2, 6, VR_MEM_ALL); // another process is not starved
	CU_ASSERT_EQUAL(ctl(1, b, VR_OP_FREE, 0, PG), 0);
	CU_ASSERT_EQUAL(proc_usage(1, LIM_FRAMES), 5);
	CU_ASSERT_EQUAL(vregion_delete(1, a), 0);
	CU_ASSERT_EQUAL(proc_usage(1, LIM_FRAMES), 1);
	CU_ASSERT_EQUAL(proc_usage(1, LIM_REGIONS), 2);
	CU_ASSERT_EQUAL(vregion_create(0, 64 * PG, VR_MEM_ALL, -1) > 0, 1); // the kernel: no limit
	res_release_owner(1);
	res_release_owner(2);
	res_release_owner(0);
	CU_ASSERT_EQUAL(proc_usage(1, LIM_FRAMES) + proc_usage(1, LIM_REGIONS), 0);
	CU_ASSERT_EQUAL(proc_usage(2, LIM_FRAMES), 0);
	(void)c;
	ASSERT_CLEAN(n0);
}

int register_res(void)
{
	static const struct test_case t[] = {
		TEST(test_id_round_trip),
		TEST(test_kind_check),
		TEST(test_generation_vregion),
		TEST(test_generation_vuspace),
		TEST(test_generation_vspace),
		TEST(test_ops_table),
		TEST(test_table_helper),
		TEST(test_live_and_release),
		TEST(test_hold),
		TEST(test_limits),
	};
	return ADD_SUITE("res", setup, res_machine_teardown, t);
}
