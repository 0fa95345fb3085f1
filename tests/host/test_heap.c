// heap: kmalloc/kfree over one region, first fit with coalescing.
#include "host.h"
#include "fake_arch.h"
#include "heap.h"
#include <stdlib.h>
#include <string.h>

#define HEAP_SIZE (256 * 1024)
static uint8_t *region; // HEAP_SIZE + 64 bytes, 16-aligned

static void setup(void)
{
	fake_reset();
	if (!region)
		region = aligned_alloc(16, HEAP_SIZE + 64);
	memset(region, 0xcd, HEAP_SIZE + 64);
	heap_init(region, HEAP_SIZE);
}

static struct heap_stats stats(void)
{
	struct heap_stats s;
	heap_stats(&s);
	return s;
}

static bool in_heap(const void *p, size_t n)
{
	const uint8_t *b = p;
	return b >= region && b + n <= region + HEAP_SIZE;
}

static void test_initial_state(void)
{
	struct heap_stats s = stats();
	CU_ASSERT_EQUAL(s.bytes_free, HEAP_SIZE);
	CU_ASSERT_EQUAL(s.bytes_used, 0);
	CU_ASSERT_EQUAL(s.nfree_blocks, 1);
	CU_ASSERT_EQUAL(s.nallocs, 0);
	CU_ASSERT_TRUE(heap_check());
}

static void test_alignment_and_accounting(void)
{
	size_t sizes[] = { 1, 7, 15, 16, 17, 31, 32, 33, 100, 4095, 4096, 4097 };
	void *p[12];
	size_t used = 0;
	for (int i = 0; i < 12; i++) {
		p[i] = kmalloc(sizes[i]);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p[i]);
		CU_ASSERT_EQUAL((uintptr_t)p[i] & 15, 0);
		CU_ASSERT_TRUE(in_heap(p[i], sizes[i]));
		memset(p[i], i, sizes[i]); // ASan would catch an overrun into a neighbour's header
		// A 16-byte header, rounded up to 16.
		used += (sizes[i] + 16 + 15) & ~(size_t)15;
		CU_ASSERT_EQUAL(stats().bytes_used, used);
	}
	CU_ASSERT_EQUAL(stats().nallocs, 12);
	for (int i = 0; i < 12; i++) {
		const uint8_t *b = p[i];
		for (size_t k = 0; k < sizes[i]; k++)
			if (b[k] != (uint8_t)i)
				CU_FAIL_FATAL("allocations overlap");
	}
	for (int i = 0; i < 12; i++)
		kfree(p[i]);
	CU_ASSERT_EQUAL(stats().bytes_used, 0);
	CU_ASSERT_EQUAL(stats().nfree_blocks, 1);
	CU_ASSERT_EQUAL(stats().nallocs, 0);
}

static void test_unaligned_region(void)
{
	heap_init(region + 3, HEAP_SIZE);
	void *p = kmalloc(10);
	CU_ASSERT_EQUAL((uintptr_t)p & 15, 0);
	CU_ASSERT_TRUE((uint8_t *)p >= region + 3);
	struct heap_stats s = stats();
	CU_ASSERT_TRUE(s.bytes_free + s.bytes_used <= HEAP_SIZE - 13);
	CU_ASSERT_EQUAL((s.bytes_free + s.bytes_used) % 16, 0);
	kfree(p);
	CU_ASSERT_EQUAL(stats().nfree_blocks, 1);
}

// Frees in every order of three neighbours end in one block.
static void test_coalescing_orders(void)
{
	static const int orders[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 },
					  { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };
	for (int o = 0; o < 6; o++) {
		void *p[3];
		for (int i = 0; i < 3; i++)
			p[i] = kmalloc(100);
		for (int i = 0; i < 3; i++) {
			kfree(p[orders[o][i]]);
			CU_ASSERT_TRUE(heap_check());
		}
		struct heap_stats s = stats();
		CU_ASSERT_EQUAL(s.nfree_blocks, 1);
		CU_ASSERT_EQUAL(s.bytes_free, HEAP_SIZE);
	}
}

static void test_hole_is_reused_first_fit(void)
{
	void *a = kmalloc(64), *b = kmalloc(256), *c = kmalloc(64);
	kfree(b);
	CU_ASSERT_EQUAL(stats().nfree_blocks, 2);
	void *d = kmalloc(200); // fits the hole b left
	CU_ASSERT_PTR_EQUAL(d, b);
	void *e = kmalloc(300); // does not: goes after c
	CU_ASSERT_TRUE((uint8_t *)e > (uint8_t *)c);
	kfree(a), kfree(c), kfree(d), kfree(e);
	CU_ASSERT_EQUAL(stats().nfree_blocks, 1);
	CU_ASSERT_TRUE(heap_check());
}

static void test_exhaustion(void)
{
	CU_ASSERT_PTR_NULL(kmalloc(0));
	CU_ASSERT_PTR_NULL(kmalloc(HEAP_SIZE)); // the header does not fit
	CU_ASSERT_PTR_NULL(kmalloc(SIZE_MAX));
	CU_ASSERT_PTR_NULL(kmalloc(SIZE_MAX - 8));
	void *all = kmalloc(HEAP_SIZE - 16); // exactly everything
	CU_ASSERT_PTR_NOT_NULL(all);
	CU_ASSERT_EQUAL(stats().bytes_free, 0);
	CU_ASSERT_PTR_NULL(kmalloc(1));
	kfree(all);
	static void *p[HEAP_SIZE / 64 + 1];
	int n = 0;
	while ((p[n] = kmalloc(48)) != NULL)
		n++;
	CU_ASSERT_EQUAL(n, HEAP_SIZE / 64);
	CU_ASSERT_EQUAL(stats().nallocs, (size_t)n);
	for (int i = 0; i < n; i += 2)
		kfree(p[i]);
	CU_ASSERT_PTR_NULL(kmalloc(100)); // fragmented: no 128-byte block
	CU_ASSERT_PTR_NOT_NULL(p[0] = kmalloc(48));
	kfree(p[0]);
	for (int i = 1; i < n; i += 2)
		kfree(p[i]);
	CU_ASSERT_EQUAL(stats().nfree_blocks, 1);
	CU_ASSERT_EQUAL(stats().bytes_used, 0);
}

static void test_small_tail_not_split(void)
{
	// A 32-byte remainder is split off (header plus 16 bytes of data);
	// a 16-byte one is too small and stays with the block.
	void *a = kmalloc(HEAP_SIZE - 16 - 32);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(stats().bytes_free, 32);
	void *b = kmalloc(1); // needs 32: takes the last block whole
	CU_ASSERT_PTR_NOT_NULL(b);
	CU_ASSERT_EQUAL(stats().nfree_blocks, 0);
	kfree(a);
	kfree(b);
	CU_ASSERT_EQUAL(stats().nfree_blocks, 1);
	void *c = kmalloc(HEAP_SIZE - 16 - 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(stats().bytes_free, 0); // a 16-byte tail is absorbed
	kfree(c);
	CU_ASSERT_EQUAL(stats().bytes_free, HEAP_SIZE);
}

static void test_kzalloc(void)
{
	uint8_t *p = kmalloc(500);
	memset(p, 0xff, 500);
	kfree(p);
	uint8_t *q = kzalloc(500);
	CU_ASSERT_PTR_EQUAL(q, p);
	size_t nz = 0;
	for (int i = 0; i < 500; i++)
		nz += q[i] != 0;
	CU_ASSERT_EQUAL(nz, 0);
	kfree(q);
	CU_ASSERT_PTR_NULL(kzalloc(0));
}

static void test_bad_frees(void)
{
	kfree(NULL);
	CU_ASSERT_EQUAL(stats().nallocs, 0);
	uint8_t *a = kmalloc(64), *b = kmalloc(64);
	kfree(a);
	EXPECT_PANIC(kfree(a)); // double free
	static uint64_t foreign[8];
	EXPECT_PANIC(kfree(&foreign[2])); // not in the heap
	memset(b, 0, 64);
	EXPECT_PANIC(kfree(b + 16)); // interior pointer
	EXPECT_PANIC(kfree(region + HEAP_SIZE + 32)); // just past the end
	CU_ASSERT_TRUE(heap_check());
	kfree(b);
	EXPECT_PANIC(kfree(b)); // double free after merging into a neighbour
	CU_ASSERT_EQUAL(stats().nfree_blocks, 1);
	CU_ASSERT_EQUAL(stats().nallocs, 0);
}

static void test_heap_check_detects_corruption(void)
{
	uint8_t *a = kmalloc(64), *b = kmalloc(64), *c = kmalloc(64);
	(void)c;
	kfree(a);
	kfree(b); // merges with a: free list is [a+b, tail]
	CU_ASSERT_TRUE(heap_check());
	size_t *hdr = (size_t *)(a - 16);
	size_t saved = *hdr;
	*hdr = saved + 96; // overlaps c and the tail
	CU_ASSERT_FALSE(heap_check());
	*hdr = 8; // smaller than any block
	CU_ASSERT_FALSE(heap_check());
	*hdr = saved;
	CU_ASSERT_TRUE(heap_check());
}

// Thousands of random allocations and frees: contents never overlap, the
// free list stays sound, and everything returns in the end.
static void test_random_sequences(void)
{
	enum { LIVE = 512 };
	static uint8_t *p[LIVE];
	static size_t sz[LIVE];
	for (uint64_t seed = 1; seed <= 4; seed++) {
		uint64_t s = seed * 0x2545f4914f6cdd1dull;
		int n = 0, fails = 0;
		size_t sum = 0;
		for (int op = 0; op < 5000; op++) {
			if (n < LIVE && (n == 0 || prng_below(&s, 100) < 50)) {
				size_t want = 1 + (size_t)(prng_below(&s, 8) == 0 ? prng_below(&s, 8192)
										  : prng_below(&s, 200));
				uint8_t *q = kmalloc(want);
				if (!q) {
					fails++;
					continue;
				}
				if (((uintptr_t)q & 15) || !in_heap(q, want))
					CU_FAIL_FATAL("bad block address");
				memset(q, (int)(n & 0xff), want);
				p[n] = q, sz[n] = want, n++;
				sum += want;
			} else {
				int i = (int)prng_below(&s, (uint64_t)n);
				for (size_t k = 0; k < sz[i]; k++)
					if (p[i][k] != (uint8_t)(i & 0xff))
						CU_FAIL_FATAL("block contents changed: overlap");
				kfree(p[i]);
				sum -= sz[i];
				n--;
				if (i != n) { // keep the tag = index invariant
					p[i] = p[n], sz[i] = sz[n];
					memset(p[i], i & 0xff, sz[i]);
				}
			}
			if (!heap_check())
				CU_FAIL_FATAL("heap_check failed");
			if (stats().nallocs != (size_t)n || stats().bytes_used < sum)
				CU_FAIL_FATAL("heap_stats disagrees with the live set");
		}
		CU_ASSERT_EQUAL(fails, 0);
		while (n)
			kfree(p[--n]);
		struct heap_stats st = stats();
		CU_ASSERT_EQUAL(st.bytes_used, 0);
		CU_ASSERT_EQUAL(st.nfree_blocks, 1);
		CU_ASSERT_EQUAL(st.nallocs, 0);
		CU_ASSERT_TRUE(heap_check());
	}
}

int register_heap(void)
{
	static const struct test_case t[] = {
		TEST(test_initial_state),
		TEST(test_alignment_and_accounting),
		TEST(test_unaligned_region),
		TEST(test_coalescing_orders),
		TEST(test_hole_is_reused_first_fit),
		TEST(test_exhaustion),
		TEST(test_small_tail_not_split),
		TEST(test_kzalloc),
		TEST(test_bad_frees),
		TEST(test_heap_check_detects_corruption),
		TEST(test_random_sequences),
	};
	return ADD_SUITE("heap", setup, NULL, t);
}
