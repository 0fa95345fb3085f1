// exchange: exchange_pmem on the simulated page tables. Two regions
// attached into two spaces (one granted across) or into one space; after
// the call the frames behind the ranges are swapped, every attachment's
// leaf PTEs point at the new frames with the same flags and addresses, the
// bytes moved with the frames, and only the current space's TLB entries
// were invalidated. Each error in its precedence, and a failed call changes
// nothing (frames, PTEs, pins, frame count, TLB).
#include "res_test.h"

#define NPG 8                                  // pages per region
#define VA_A (USER_BASE + (2ull << 20) - 4 * PG) // pages 0-3 and 4-7 in two leaf tables
#define VA_B (USER_BASE + 5 * GiB)
#define VA_C (USER_BASE + 7 * GiB)
#define TAG_A 0x10
#define TAG_B 0x80

// Regions a (pid 1's, in space s1) and b (pid 2's, in s2, granted to 1).
static long s1, s2, a, b;
static uint64_t nfree0; // before the regions

static void setup(void)
{
	res_machine_setup();
	s1 = proc_new(1);
	s2 = proc_new(2);
	proc_new(3);
	nfree0 = pmem_free_count();
}

static void cross_fixture(uint64_t pages)
{
	a = region_new(1, pages, VR_MEM_ALL);
	b = region_new(2, pages, VR_MEM_ALL);
	CU_ASSERT_EQUAL_FATAL(ctl(2, b, VR_OP_GRANT, 1, 0), 0);
	attach(1, a, 0, VA_A);
	attach(2, b, 0, VA_B);
	fill_pages(a, TAG_A);
	fill_pages(b, TAG_B);
}

// Everything a failed exchange must leave alone.
struct snap {
	paddr_t fa[NPG], fb[NPG];
	uint64_t pa[NPG], pb[NPG];
	unsigned pins_a[NPG], pins_b[NPG];
	uint64_t nfree, t1, t2, tlb_pages, tlb_full;
};

static void take(struct snap *s)
{
	for (uint64_t p = 0; p < NPG; p++) {
		s->fa[p] = vregion_frame(a, p);
		s->fb[p] = vregion_frame(b, p);
		s->pa[p] = pte_of(s1, VA_A + p * PG);
		s->pb[p] = pte_of(s2, VA_B + p * PG);
		s->pins_a[p] = s->fa[p] ? pmem_pin_count(s->fa[p]) : 0;
		s->pins_b[p] = s->fb[p] ? pmem_pin_count(s->fb[p]) : 0;
	}
	s->nfree = pmem_free_count();
	s->t1 = vspace_tables(s1);
	s->t2 = vspace_tables(s2);
	s->tlb_pages = tlb_page_flushes;
	s->tlb_full = tlb_full_flushes;
	tlb_reset();
}

static bool unchanged(const struct snap *s)
{
	bool no_tlb = fake.invlpg == 0 && fake.flush_tlb == 0;
	struct snap now;
	take(&now);
	return memcmp(&now, s, sizeof(now)) == 0 && no_tlb;
}

// After exchanging a[off1..off1+n) with b[off2..off2+n) from snapshot s:
// frames swapped, PTEs follow with ATT_PTE flags, the data moved along.
static void check_swapped(const struct snap *s, uint64_t off1, uint64_t off2, uint64_t n)
{
	for (uint64_t p = 0; p < NPG; p++) {
		bool in_a = p >= off1 && p < off1 + n, in_b = p >= off2 && p < off2 + n;
		paddr_t want_a = in_a ? s->fb[p - off1 + off2] : s->fa[p];
		paddr_t want_b = in_b ? s->fa[p - off2 + off1] : s->fb[p];
		uint8_t byte_a = in_a ? pat(TAG_B, p - off1 + off2) : pat(TAG_A, p);
		uint8_t byte_b = in_b ? pat(TAG_A, p - off2 + off1) : pat(TAG_B, p);
		CU_ASSERT_EQUAL(vregion_frame(a, p), want_a);
		CU_ASSERT_EQUAL(vregion_frame(b, p), want_b);
		CU_ASSERT_EQUAL(pte_of(s1, VA_A + p * PG), want_a | ATT_PTE);
		CU_ASSERT_EQUAL(pte_of(s2, VA_B + p * PG), want_b | ATT_PTE);
		CU_ASSERT_TRUE(user_page_is(s1, VA_A + p * PG, byte_a));
		CU_ASSERT_TRUE(user_page_is(s2, VA_B + p * PG, byte_b));
		CU_ASSERT_TRUE(pmem_is_allocated(want_a));
	}
	CU_ASSERT_EQUAL(pmem_free_count(), s->nfree); // nothing allocated or freed
	CU_ASSERT_EQUAL(vspace_tables(s1), s->t1);
	CU_ASSERT_EQUAL(vspace_tables(s2), s->t2);
}

static void cleanup(void)
{
	CU_ASSERT_EQUAL(vregion_delete(1, a), 0);
	CU_ASSERT_EQUAL(vregion_delete(2, b), 0);
	ASSERT_CLEAN(nfree0);
	CU_ASSERT_EQUAL(vspace_tables(s1), 0);
	CU_ASSERT_EQUAL(vspace_tables(s2), 0);
}

static void test_cross_space(void)
{
	cross_fixture(NPG);
	CU_ASSERT_EQUAL(vspace_activate(s1), 0);
	struct snap s;
	take(&s);
	// a's pages 2-5 straddle its two leaf tables.
	CU_ASSERT_EQUAL(vregion_exchange(1, a, b, 2 * PG, 3 * PG, 4), 0);
	check_swapped(&s, 2, 3, 4);
	// s1 is current: one invlpg per page of a's range; s2 is not: none.
	CU_ASSERT_EQUAL(fake.invlpg, 4);
	CU_ASSERT_EQUAL(fake.flush_tlb, 0);
	for (uint64_t i = 0; i < 4 && i < fake.invlpg; i++)
		CU_ASSERT_EQUAL(fake.invlpg_va[i], VA_A + (2 + i) * PG);
	CU_ASSERT_EQUAL(tlb_page_flushes - s.tlb_pages, 4);
	CU_ASSERT_EQUAL(tlb_full_flushes, s.tlb_full);
	// pid 2 holds no grant on a; pid 1 swaps back: the original state.
	CU_ASSERT_EQUAL(vregion_exchange(2, a, b, 2 * PG, 3 * PG, 4), -E_NOTOWNER);
	CU_ASSERT_EQUAL(vregion_exchange(1, b, a, 3 * PG, 2 * PG, 4), 0);
	tlb_reset();
	s.tlb_pages = tlb_page_flushes;
	CU_ASSERT_TRUE(unchanged(&s));
	cleanup();
}

static void test_same_space(void)
{
	a = region_new(1, NPG, VR_MEM_ALL);
	b = region_new(1, NPG, VR_MEM_ALL);
	attach(1, a, 0, VA_A);
	attach(1, b, s1, VA_B);
	fill_pages(a, TAG_A);
	fill_pages(b, TAG_B);
	CU_ASSERT_EQUAL(vspace_activate(s1), 0);
	paddr_t fa[NPG], fb[NPG];
	for (uint64_t p = 0; p < NPG; p++)
		fa[p] = vregion_frame(a, p), fb[p] = vregion_frame(b, p);
	uint64_t n = pmem_free_count(), t = vspace_tables(s1);
	tlb_reset();
	CU_ASSERT_EQUAL(vregion_exchange(1, a, b, 0, 5 * PG, 3), 0);
	for (uint64_t i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(vregion_frame(a, i), fb[5 + i]);
		CU_ASSERT_EQUAL(vregion_frame(b, 5 + i), fa[i]);
		CU_ASSERT_EQUAL(pte_of(s1, VA_A + i * PG), fb[5 + i] | ATT_PTE);
		CU_ASSERT_EQUAL(pte_of(s1, VA_B + (5 + i) * PG), fa[i] | ATT_PTE);
		CU_ASSERT_TRUE(user_page_is(s1, VA_A + i * PG, pat(TAG_B, 5 + i)));
		CU_ASSERT_TRUE(user_page_is(s1, VA_B + (5 + i) * PG, pat(TAG_A, i)));
	}
	CU_ASSERT_EQUAL(pte_of(s1, VA_A + 3 * PG), fa[3] | ATT_PTE);
	CU_ASSERT_EQUAL(pte_of(s1, VA_B + 4 * PG), fb[4] | ATT_PTE);
	// Both ranges are in the current space: both invalidated, a's first.
	CU_ASSERT_EQUAL(fake.invlpg, 6);
	CU_ASSERT_EQUAL(fake.flush_tlb, 0);
	static const uint64_t want[6] = { VA_A, VA_A + PG, VA_A + 2 * PG, VA_B + 5 * PG,
					  VA_B + 6 * PG, VA_B + 7 * PG };
	for (int i = 0; i < 6; i++)
		CU_ASSERT_EQUAL(fake.invlpg_va[i], want[i]);
	// Within one region: adjacent ranges do not overlap.
	tlb_reset();
	paddr_t p3 = vregion_frame(a, 3), p6 = vregion_frame(a, 6), p7 = vregion_frame(a, 7);
	paddr_t p4 = vregion_frame(a, 4), p5 = vregion_frame(a, 5);
	CU_ASSERT_EQUAL(vregion_exchange(1, a, a, 3 * PG, 6 * PG, 2), 0);
	CU_ASSERT_EQUAL(vregion_exchange(1, a, a, 4 * PG, 5 * PG, 1), 0);
	CU_ASSERT_EQUAL(vregion_frame(a, 3), p6);
	CU_ASSERT_EQUAL(vregion_frame(a, 4), p5);
	CU_ASSERT_EQUAL(vregion_frame(a, 5), p7);
	CU_ASSERT_EQUAL(vregion_frame(a, 6), p3);
	CU_ASSERT_EQUAL(vregion_frame(a, 7), p4);
	for (uint64_t p = 3; p < 8; p++)
		CU_ASSERT_EQUAL(pte_of(s1, VA_A + p * PG), vregion_frame(a, p) | ATT_PTE);
	CU_ASSERT_TRUE(user_page_is(s1, VA_A + 3 * PG, pat(TAG_A, 6)));
	CU_ASSERT_TRUE(user_page_is(s1, VA_A + 6 * PG, pat(TAG_A, 3)));
	CU_ASSERT_EQUAL(fake.invlpg, 4 + 2); // each range of each call
	CU_ASSERT_EQUAL(pmem_free_count(), n);
	CU_ASSERT_EQUAL(vspace_tables(s1), t);
	CU_ASSERT_EQUAL(vregion_delete(1, a), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, b), 0);
	ASSERT_CLEAN(nfree0);
	CU_ASSERT_EQUAL(vspace_tables(s1), 0);
}

// Each region attached more than once, in both spaces: every attachment
// follows; only the current space (s2 here) is invalidated.
static void test_every_attachment(void)
{
	cross_fixture(NPG);
	CU_ASSERT_EQUAL(ctl(1, a, VR_OP_GRANT, 2, 0), 0);
	attach(2, a, 0, VA_C);            // a in s2
	attach(1, a, 0, VA_C);            // a again in s1
	attach(1, b, 0, VA_B);            // b in s1 too
	CU_ASSERT_EQUAL(vspace_activate(s2), 0);
	paddr_t fa[NPG], fb[NPG];
	for (uint64_t p = 0; p < NPG; p++)
		fa[p] = vregion_frame(a, p), fb[p] = vregion_frame(b, p);
	tlb_reset();
	CU_ASSERT_EQUAL(vregion_exchange(1, a, b, PG, 6 * PG, 2), 0);
	for (uint64_t p = 0; p < NPG; p++) {
		paddr_t wa = p == 1 || p == 2 ? fb[p + 5] : fa[p];
		paddr_t wb = p == 6 || p == 7 ? fa[p - 5] : fb[p];
		CU_ASSERT_EQUAL(pte_of(s1, VA_A + p * PG), wa | ATT_PTE);
		CU_ASSERT_EQUAL(pte_of(s1, VA_C + p * PG), wa | ATT_PTE);
		CU_ASSERT_EQUAL(pte_of(s2, VA_C + p * PG), wa | ATT_PTE);
		CU_ASSERT_EQUAL(pte_of(s1, VA_B + p * PG), wb | ATT_PTE);
		CU_ASSERT_EQUAL(pte_of(s2, VA_B + p * PG), wb | ATT_PTE);
	}
	CU_ASSERT_EQUAL(fake.invlpg, 4);
	static const uint64_t want[4] = { VA_C + PG, VA_C + 2 * PG, VA_B + 6 * PG, VA_B + 7 * PG };
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(fake.invlpg_va[i], want[i]);
	cleanup(); // deleting each region detaches all its attachments
}

// Per-page invlpg up to TLB_FLUSH_THRESHOLD pages, one full flush above,
// and nothing for a space that is not loaded.
static void test_tlb_threshold(void)
{
	const uint64_t T = TLB_FLUSH_THRESHOLD, n = T + 8;
	a = region_new(1, n, VR_MEM_ALL);
	b = region_new(2, n, VR_MEM_ALL);
	CU_ASSERT_EQUAL(ctl(2, b, VR_OP_GRANT, 1, 0), 0);
	attach(1, a, 0, VA_A);
	attach(2, b, 0, VA_B);
	CU_ASSERT_EQUAL(vspace_activate(s1), 0);
	uint64_t pages0 = tlb_page_flushes, full0 = tlb_full_flushes;
	tlb_reset();
	CU_ASSERT_EQUAL(vregion_exchange(1, a, b, 0, 0, T), 0);
	CU_ASSERT_EQUAL(fake.invlpg, T);
	CU_ASSERT_EQUAL(fake.flush_tlb, 0);
	CU_ASSERT_EQUAL(fake.invlpg_va[T - 1], VA_A + (T - 1) * PG);
	CU_ASSERT_EQUAL(tlb_page_flushes - pages0, T);
	tlb_reset();
	CU_ASSERT_EQUAL(vregion_exchange(1, a, b, 0, PG, T + 1), 0);
	CU_ASSERT_EQUAL(fake.invlpg, 0);
	CU_ASSERT_EQUAL(fake.flush_tlb, 1);
	CU_ASSERT_EQUAL(tlb_full_flushes - full0, 1);
	// The other space loaded: b's side only.
	CU_ASSERT_EQUAL(vspace_activate(s2), 0);
	tlb_reset();
	CU_ASSERT_EQUAL(vregion_exchange(1, a, b, 0, 0, n), 0);
	CU_ASSERT_EQUAL(fake.flush_tlb, 1);
	CU_ASSERT_EQUAL(fake.invlpg, 0);
	tlb_reset();
	CU_ASSERT_EQUAL(vregion_exchange(1, a, b, 3 * PG, 0, 1), 0);
	CU_ASSERT_EQUAL(fake.invlpg, 1);
	CU_ASSERT_EQUAL(fake.last_invlpg, VA_B);
	// Neither loaded: PTEs change, no invalidation at all.
	CU_ASSERT_EQUAL(vspace_activate(KERNEL_VSPACE), 0);
	tlb_reset();
	pages0 = tlb_page_flushes, full0 = tlb_full_flushes;
	paddr_t f = vregion_frame(b, 5);
	CU_ASSERT_EQUAL(vregion_exchange(1, a, b, 0, 5 * PG, n - 5), 0);
	CU_ASSERT_EQUAL(pte_of(s1, VA_A), f | ATT_PTE);
	CU_ASSERT_EQUAL(fake.invlpg + fake.flush_tlb, 0);
	CU_ASSERT_EQUAL(tlb_page_flushes, pages0);
	CU_ASSERT_EQUAL(tlb_full_flushes, full0);
	cleanup();
}

// ctrl_vr's EXCHANGE: a[0] = offset in this region, a[1] = the other
// region, a[2] = offset there, a[3] = pages.
static void test_exchange_via_ctrl(void)
{
	cross_fixture(NPG);
	struct snap s;
	take(&s);
	CU_ASSERT_EQUAL(ctl4(1, a, VR_OP_EXCHANGE, 4 * PG, (uint64_t)b, 0, 4), 0);
	check_swapped(&s, 4, 0, 4);
	take(&s);
	CU_ASSERT_EQUAL(ctl4(1, a, VR_OP_EXCHANGE, 0, (uint64_t)a, PG, 2), -E_OVERLAP);
	CU_ASSERT_EQUAL(ctl4(1, a, VR_OP_EXCHANGE, 0, (uint64_t)s1, 0, 1), -E_BADID);
	CU_ASSERT_EQUAL(ctl4(1, a, VR_OP_EXCHANGE, 0, (uint64_t)b, 0, 0), -E_INVAL);
	CU_ASSERT_EQUAL(ctl4(3, a, VR_OP_EXCHANGE, 0, (uint64_t)b, 0, 1), -E_NOTOWNER);
	CU_ASSERT_TRUE(unchanged(&s));
	cleanup();
}

// Regions need no attachment: exchange then only swaps frames.
static void test_unattached(void)
{
	a = region_new(1, 2, VR_MEM_ALL);
	b = region_new(1, 2, VR_MEM_ALL);
	paddr_t fa = vregion_frame(a, 1), fb = vregion_frame(b, 0);
	CU_ASSERT_EQUAL(vspace_activate(s1), 0);
	tlb_reset();
	CU_ASSERT_EQUAL(vregion_exchange(1, a, b, PG, 0, 1), 0);
	CU_ASSERT_EQUAL(vregion_frame(a, 1), fb);
	CU_ASSERT_EQUAL(vregion_frame(b, 0), fa);
	CU_ASSERT_EQUAL(fake.invlpg + fake.flush_tlb, 0);
	CU_ASSERT_EQUAL(vregion_exchange(0, a, b, 0, PG, 1), 0); // the kernel's own call
	CU_ASSERT_EQUAL(vregion_delete(1, a), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, b), 0);
	ASSERT_CLEAN(nfree0);
}

struct xcase {
	int caller;
	long *r1, *r2;
	uint64_t off1, off2, pages;
	long err;
};

static void run_cases(const struct xcase *c, size_t n)
{
	struct snap s;
	take(&s);
	for (size_t i = 0; i < n; i++) {
		long r = vregion_exchange(c[i].caller, *c[i].r1, *c[i].r2, c[i].off1, c[i].off2,
					  c[i].pages);
		if (r != c[i].err)
			fprintf(stderr, "exchange case %zu: %ld, want %ld\n", i, r, c[i].err);
		CU_ASSERT_EQUAL(r, c[i].err);
		CU_ASSERT_TRUE(unchanged(&s));
	}
}

// Bad id, not owner, zero pages, alignment, range (with overflow), overlap,
// busy, not backed: each where the earlier checks pass, and each before
// every later one.
static void test_errors_in_order(void)
{
	static long stale, c, space, att;
	cross_fixture(NPG);
	CU_ASSERT_EQUAL(vspace_activate(s1), 0);
	c = region_new(3, NPG, VR_MEM_ALL);
	stale = region_new(1, 1, VR_MEM_NONE);
	CU_ASSERT_EQUAL(vregion_delete(1, stale), 0);
	space = s1;
	att = attach(3, c, 0, VA_C);
	const uint64_t top = ~0ull & ~(PG - 1);
	const struct xcase before[] = {
		{ 1, &stale, &b, 0, 0, 1, -E_BADID },
		{ 1, &a, &stale, 0, 0, 1, -E_BADID },
		{ 1, &space, &b, 0, 0, 1, -E_BADID },
		{ 1, &a, &att, 0, 0, 1, -E_BADID },
		{ 1, &stale, &c, 0, 0, 0, -E_BADID },   // before not owner, zero pages
		{ 3, &a, &stale, 1, 0, 1, -E_BADID },
		{ 3, &a, &b, 0, 0, 1, -E_NOTOWNER },
		{ 2, &a, &b, 0, 0, 1, -E_NOTOWNER },   // b is 2's, a is not granted
		{ 1, &a, &c, 0, 0, 1, -E_NOTOWNER },
		{ 1, &c, &a, 0, 0, 1, -E_NOTOWNER },
		{ 3, &a, &b, 1, 0, 0, -E_NOTOWNER },   // before zero pages, alignment
		{ 1, &a, &b, 0, 0, 0, -E_INVAL },
		{ 1, &a, &b, 1, 3, 0, -E_INVAL },      // before alignment
		{ 1, &a, &a, 0, 0, 0, -E_INVAL },      // before overlap
		{ 1, &a, &b, top, 0, 0, -E_INVAL },    // before range
		{ 1, &a, &b, 100, 0, 1, -E_ALIGN },
		{ 1, &a, &b, 0, PG + 1, 1, -E_ALIGN },
		{ 1, &a, &b, 9 * PG + 8, 0, 1, -E_ALIGN }, // before range, same region
		{ 1, &a, &b, PG - 1, 0, NPG, -E_ALIGN },
		{ 1, &a, &a, 8, 0, 1, -E_ALIGN },      // before overlap
		{ 1, &a, &b, NPG * PG, 0, 1, -E_RANGE },
		{ 1, &a, &b, 7 * PG, 0, 2, -E_RANGE },
		{ 1, &a, &b, 0, 7 * PG, 2, -E_RANGE },
		{ 1, &a, &b, 0, 0, NPG + 1, -E_RANGE },
		{ 1, &a, &b, top, 0, 1, -E_RANGE },    // offset + length wraps
		{ 1, &a, &b, 0, 1ull << 63, 1, -E_RANGE },
		{ 1, &a, &b, 0, 0, 1ull << 60, -E_RANGE },
		{ 1, &a, &b, 0, 0, VR_MAX_PAGES + 1, -E_RANGE },
		{ 1, &a, &b, 0, 0, 1ull << 52, -E_RANGE },     // pages * 4096 wraps to 0
		{ 1, &a, &b, 0, 0, (1ull << 52) + 1, -E_RANGE }, // ... and to one page
		{ 1, &a, &a, 0, PG, NPG, -E_RANGE },   // before overlap
		{ 1, &a, &a, 0, PG, 2, -E_OVERLAP },
		{ 1, &a, &a, PG, 0, 2, -E_OVERLAP },
		{ 1, &a, &a, 2 * PG, 2 * PG, 1, -E_OVERLAP },
		{ 1, &a, &a, 3 * PG, 0, 4, -E_OVERLAP },
		{ 2, &b, &b, 0, 3 * PG, 4, -E_OVERLAP },
		{ 1, &a, &b, NPG * PG, 1, 1, -E_ALIGN },  // unaligned there, out of range here
		{ 1, &a, &b, 1, 0, 1ull << 60, -E_ALIGN }, // before the page-count limit
	};
	run_cases(before, sizeof(before) / sizeof(before[0]));
	// Now a's page 5 is pinned through ctrl_vr, b's page 6 by a "NIC", and
	// a's page 7 and b's page 1 have no frames.
	CU_ASSERT_EQUAL(ctl(1, a, VR_OP_PIN, 5 * PG, PG), 0);
	pmem_pin(vregion_frame(b, 6));
	CU_ASSERT_EQUAL(ctl(1, a, VR_OP_FREE, 7 * PG, PG), 0);
	CU_ASSERT_EQUAL(ctl(2, b, VR_OP_FREE, PG, PG), 0);
	const struct xcase after[] = {
		{ 3, &a, &b, 5 * PG, 0, 1, -E_NOTOWNER },
		{ 1, &a, &b, 5 * PG, 0, 0, -E_INVAL },
		{ 1, &a, &a, 5 * PG, 4 * PG, 2, -E_OVERLAP }, // before busy
		{ 1, &a, &a, 6 * PG, 6 * PG, 2, -E_OVERLAP }, // before not backed
		{ 1, &a, &b, 5 * PG, 6 * PG, 4, -E_RANGE },
		{ 1, &a, &b, 5 * PG, 0, 1, -E_BUSY },
		{ 1, &a, &b, 0, 6 * PG, 1, -E_BUSY },     // pinned outside the region
		{ 1, &b, &a, 6 * PG, 0, 1, -E_BUSY },
		{ 1, &a, &b, 7 * PG, 0, 1, -E_NOTBACKED },
		{ 1, &a, &b, 0, PG, 1, -E_NOTBACKED },
		{ 1, &a, &a, 7 * PG, 0, 1, -E_NOTBACKED },
		{ 1, &a, &b, 5 * PG, 2 * PG, 3, -E_BUSY }, // busy and unbacked in one range
		{ 1, &a, &b, 4 * PG, 0, 4, -E_BUSY },
		{ 1, &a, &b, 5 * PG, PG, 1, -E_BUSY },     // busy here, unbacked there
		{ 1, &a, &b, 7 * PG, 6 * PG, 1, -E_BUSY }, // unbacked here, busy there
	};
	run_cases(after, sizeof(after) / sizeof(after[0]));
	// The same ranges work again once pins and frames are back.
	pmem_unpin(vregion_frame(b, 6));
	CU_ASSERT_EQUAL(ctl(1, a, VR_OP_UNPIN, 5 * PG, PG), 0);
	CU_ASSERT_EQUAL(ctl(1, a, VR_OP_ALLOC, 7 * PG, PG), 0);
	CU_ASSERT_EQUAL(ctl(2, b, VR_OP_ALLOC, PG, PG), 0);
	CU_ASSERT_EQUAL(vregion_exchange(1, a, b, 4 * PG, 0, 4), 0);
	CU_ASSERT_EQUAL(vregion_delete(3, c), 0);
	cleanup();
}

int register_exchange(void)
{
	static const struct test_case t[] = {
		TEST(test_cross_space),
		TEST(test_same_space),
		TEST(test_every_attachment),
		TEST(test_tlb_threshold),
		TEST(test_exchange_via_ctrl),
		TEST(test_unattached),
		TEST(test_errors_in_order),
	};
	return ADD_SUITE("exchange", setup, res_machine_teardown, t);
}
