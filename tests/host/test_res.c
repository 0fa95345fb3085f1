// res: identifiers (kind, generation, slot) and the table of managers:
// encoding round trips, kind checks, generation wrap in every manager's
// slots, the ops table and release order on exit.
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
	static const unsigned gens[] = { 0, 1, 2, 0x7ff, 0x800, 0xffe, 0xfff };
	static const unsigned slots[] = { 0, 1, 63, 255, 256, 2048, 4095 };
	for (int k = 1; k < RES_NKIND; k++)
		for (size_t g = 0; g < sizeof(gens) / sizeof(gens[0]); g++)
			for (size_t s = 0; s < sizeof(slots) / sizeof(slots[0]); s++) {
				long id = res_id(k, gens[g], slots[s]);
				CU_ASSERT(id > 0);
				CU_ASSERT(id < (1l << 31)); // fits a positive int
				CU_ASSERT_EQUAL(res_gen(id), gens[g]);
				CU_ASSERT_EQUAL(res_slot(id), slots[s]);
				CU_ASSERT_EQUAL(id >> 24, k);
				for (int j = 0; j <= RES_NKIND; j++)
					CU_ASSERT_EQUAL(res_kind_is(id, j), j == k);
			}
	// The generation is taken modulo 4096: no bits leak into the kind.
	CU_ASSERT_EQUAL(res_id(RES_VREGION, 0x1005, 7), res_id(RES_VREGION, 5, 7));
	CU_ASSERT_TRUE(res_kind_is(res_id(RES_VREGION, 0xffff, 7), RES_VREGION));
	CU_ASSERT_EQUAL(res_id(RES_VSPACE, 0, 0), KERNEL_VSPACE);
}

static void test_kind_check(void)
{
	long id = res_id(RES_VREGION, 3, 9);
	long bad[] = { 0, -1, -id, id | (1l << 40), id | (1l << 31), LONG_MIN,
		       (long)RES_VREGION, id & 0xffffff };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		for (int k = 1; k <= RES_NKIND; k++)
			CU_ASSERT_FALSE(res_kind_is(bad[i], k));
	CU_ASSERT_FALSE(res_kind_is(id, RES_VUSPACE));
	CU_ASSERT_TRUE(res_kind_is(id, RES_VREGION));
}

// A slot's generation steps by one per reuse and wraps after 4096; every
// older id of the slot is stale in between.
static void test_generation_wrap_vregion(void)
{
	uint64_t n0 = pmem_free_count();
	long first = region_new(1, 1, VR_MEM_NONE), prev = first;
	CU_ASSERT_EQUAL(vregion_delete(1, first), 0);
	bool saw_zero = false;
	for (int i = 1; i <= RES_GEN_MASK + 1; i++) {
		long id = vregion_create(1, PG, VR_MEM_NONE, -1);
		CU_ASSERT_FATAL(id > 0);
		CU_ASSERT_EQUAL(res_slot(id), res_slot(first));
		CU_ASSERT_EQUAL(res_gen(id), (res_gen(prev) + 1) & RES_GEN_MASK);
		CU_ASSERT_EQUAL(vregion_pages(prev), 0);
		CU_ASSERT_EQUAL(vregion_access(1, first), i == RES_GEN_MASK + 1 ? 0 : -E_BADID);
		if (res_gen(id) == 0) { // generation 0 is an ordinary one
			saw_zero = true;
			CU_ASSERT_EQUAL(ctl(1, id, VR_OP_SIZE, 0, 0), PG);
		}
		CU_ASSERT_EQUAL_FATAL(vregion_delete(1, id), 0);
		prev = id;
	}
	CU_ASSERT_EQUAL(prev, first); // 4096 reuses later the id repeats
	CU_ASSERT_TRUE(saw_zero);
	ASSERT_CLEAN(n0);
}

static void test_generation_wrap_vuspace(void)
{
	long r = region_new(1, 1, VR_MEM_ALL);
	uint64_t n0 = pmem_free_count();
	long first = attach(1, r, 0, USER_BASE), prev = first;
	CU_ASSERT_EQUAL(vuspace_detach(1, first), 0);
	for (int i = 1; i <= RES_GEN_MASK + 1; i++) {
		long id = vuspace_attach(1, r, 0, USER_BASE);
		CU_ASSERT_FATAL(id > 0);
		CU_ASSERT_EQUAL(res_slot(id), res_slot(first));
		CU_ASSERT_EQUAL(res_gen(id), (res_gen(prev) + 1) & RES_GEN_MASK);
		CU_ASSERT_EQUAL(vuspace_detach(1, prev), -E_BADID);
		CU_ASSERT_EQUAL(vuspace_addr(first), i == RES_GEN_MASK + 1 ? USER_BASE : 0);
		CU_ASSERT_EQUAL_FATAL(vuspace_detach(1, id), 0);
		prev = id;
	}
	CU_ASSERT_EQUAL(prev, first);
	CU_ASSERT_EQUAL(vuspace_live(), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
	CU_ASSERT_EQUAL(vregion_delete(1, r), 0);
}

static void test_generation_wrap_vspace(void)
{
	uint64_t n0 = pmem_free_count();
	long first = vspace_create(), prev = first;
	CU_ASSERT_FATAL(first > 0);
	CU_ASSERT_EQUAL(vspace_destroy(first), 0);
	for (int i = 1; i <= RES_GEN_MASK + 1; i++) {
		long id = vspace_create();
		CU_ASSERT_FATAL(id > 0);
		CU_ASSERT_EQUAL(res_slot(id), res_slot(first));
		CU_ASSERT_EQUAL(res_gen(id), (res_gen(prev) + 1) & RES_GEN_MASK);
		if (i <= RES_GEN_MASK)
			CU_ASSERT_FALSE(vspace_valid(first));
		CU_ASSERT_EQUAL_FATAL(vspace_destroy(id), 0);
		prev = id;
	}
	CU_ASSERT_EQUAL(prev, first);
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
	// The space manager through the table: create, control op 1, destroy.
	uint64_t n0 = pmem_free_count();
	const struct res_ops *vs = res_ops_of(RES_VSPACE);
	const uint64_t a[4] = { 0 };
	long id = vs->create(1, a);
	CU_ASSERT_FATAL(id > 0);
	CU_ASSERT_EQUAL(vspace_map(id, USER_BASE, pmem_alloc(), PTE_U | PTE_OWNED), 0);
	CU_ASSERT_EQUAL(vs->control(1, id, 1, a), 3);
	CU_ASSERT_EQUAL(vs->control(1, id, 2, a), -E_INVAL);
	CU_ASSERT_EQUAL(vs->control(1, id + 1, 1, a), -E_BADID);
	CU_ASSERT_EQUAL(vs->destroy(1, id), 0);
	CU_ASSERT_EQUAL(vs->destroy(1, id), -E_BADID);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
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

int register_res(void)
{
	static const struct test_case t[] = {
		TEST(test_id_round_trip),
		TEST(test_kind_check),
		TEST(test_generation_wrap_vregion),
		TEST(test_generation_wrap_vuspace),
		TEST(test_generation_wrap_vspace),
		TEST(test_ops_table),
		TEST(test_live_and_release),
	};
	return ADD_SUITE("res", setup, res_machine_teardown, t);
}
