// pmem: the frame allocator over RAM ranges with holes and a reservation.
#include "host.h"
#include "fake_arch.h"
#include "res/pmem.h"
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)

// A BIOS-style map inside the simulated RAM [1 MiB, 65 MiB):
//   [0, 0x9f000)             low memory: below 1 MiB, never handed out
//   [1 MiB, 16 MiB)          3840 frames, of which the kernel image
//                            [1 MiB, 0x37f800) covers 640 (last one partially)
//   hole [16 MiB, 20 MiB)
//   [20 MiB, 32 MiB)         3072 frames
//   [0x2000800, 0x2003800)   unaligned: only 2 whole frames inside
//   hole [32 MiB+14K, 36 MiB)
//   [36 MiB, 65 MiB)         7424 frames
static const struct mem_range ram[] = {
	{ 0, 0x9f000 },
	{ 1 * MiB, 15 * MiB },
	{ 20 * MiB, 12 * MiB },
	{ 0x2000800, 0x3000 },
	{ 36 * MiB, 29 * MiB },
};
#define NRAM ((int)(sizeof(ram) / sizeof(ram[0])))
#define RESV_LO (1 * MiB)
#define RESV_HI 0x37f800ull
// 0x4100 frames * (8 bytes origin + 2 bytes state + 4 bytes stack) =
// 232960 bytes = 57 pages, carved at the first page after the reservation.
#define ARR_LO 0x380000ull
#define ARR_HI (ARR_LO + 57 * PAGE_SIZE)
#define EXPECT_FREE (3840 - 640 - 57 + 3072 + 2 + 7424)

static void setup(void)
{
	fake_reset();
	pmem_init(ram, NRAM, RESV_LO, RESV_HI);
}

// Independent statement of which frames may be handed out.
static bool eligible(paddr_t pa)
{
	if (pa < 1 * MiB || (pa + PAGE_SIZE > RESV_LO && pa < RESV_HI))
		return false;
	if (pa >= ARR_LO && pa < ARR_HI)
		return false;
	for (int i = 0; i < NRAM; i++)
		if (pa >= ram[i].base && pa + PAGE_SIZE <= ram[i].base + ram[i].len)
			return true;
	return false;
}

static void test_counts_exact(void)
{
	CU_ASSERT_EQUAL(pmem_free_count(), EXPECT_FREE);
	CU_ASSERT_EQUAL(pmem_total(), EXPECT_FREE);
	CU_ASSERT_EQUAL(pmem_top(), 65 * MiB);
	uint64_t n = 0;
	for (paddr_t pa = 0; pa < pmem_top(); pa += PAGE_SIZE)
		n += eligible(pa);
	CU_ASSERT_EQUAL(n, EXPECT_FREE);
	// What the kernel keeps reads as allocated; a hole reads as neither.
	CU_ASSERT_TRUE(pmem_is_allocated(RESV_LO));
	CU_ASSERT_TRUE(pmem_is_allocated(RESV_HI - 1));
	CU_ASSERT_TRUE(pmem_is_allocated(ARR_LO));
	CU_ASSERT_TRUE(pmem_is_allocated(0x1000));
	CU_ASSERT_FALSE(pmem_is_allocated(17 * MiB));
	CU_ASSERT_FALSE(pmem_is_allocated(ARR_HI));
}

// Drains the allocator: every frame handed out is eligible, page-aligned,
// distinct and zeroed, and exactly the eligible frames come out.
static void test_exhaust_only_eligible(void)
{
	size_t nbits = pmem_top() / PAGE_SIZE;
	uint8_t *seen = calloc(nbits, 1);
	uint64_t n = 0, bad = 0, dup = 0, dirty = 0;
	paddr_t pa;
	while ((pa = pmem_alloc()) != 0) {
		n++;
		if ((pa & (PAGE_SIZE - 1)) || pa >= pmem_top() || !eligible(pa)) {
			bad++;
			continue;
		}
		dup += seen[pa / PAGE_SIZE]++ != 0;
		const uint64_t *w = arch_p2v(pa);
		for (size_t i = 0; i < PAGE_SIZE / 8; i++)
			dirty += w[i] != 0;
		CU_ASSERT_TRUE(pmem_is_allocated(pa));
		memset(arch_p2v(pa), 0xee, PAGE_SIZE); // would smash the arrays if they overlapped
	}
	CU_ASSERT_EQUAL(n, EXPECT_FREE);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(dup, 0);
	CU_ASSERT_EQUAL(dirty, 0);
	CU_ASSERT_EQUAL(pmem_free_count(), 0);
	CU_ASSERT_EQUAL(pmem_alloc(), 0);
	CU_ASSERT_EQUAL(pmem_alloc_nozero(), 0);
	for (paddr_t p = 0; p < pmem_top(); p += PAGE_SIZE)
		if (eligible(p) && !seen[p / PAGE_SIZE])
			CU_FAIL("an eligible frame was never handed out");
	// The frame table survived the writes: everything can be freed again.
	for (paddr_t p = 0; p < pmem_top(); p += PAGE_SIZE)
		if (seen[p / PAGE_SIZE])
			pmem_free(p);
	CU_ASSERT_EQUAL(pmem_free_count(), EXPECT_FREE);
	free(seen);
}

static void test_low_frames_first_and_contiguous(void)
{
	// main.c's heap relies on the first allocations being ascending and
	// contiguous: the first frame after the frame table.
	paddr_t first = pmem_alloc_nozero();
	CU_ASSERT_EQUAL(first, ARR_HI);
	for (int i = 1; i < 256; i++)
		CU_ASSERT_EQUAL(pmem_alloc_nozero(), first + (paddr_t)i * PAGE_SIZE);
}

static void test_alloc_zeroes_reused_frame(void)
{
	paddr_t a = pmem_alloc();
	CU_ASSERT_FATAL(a != 0);
	memset(arch_p2v(a), 0x5a, PAGE_SIZE);
	pmem_free(a);
	paddr_t b = pmem_alloc(); // LIFO: the frame just freed
	CU_ASSERT_EQUAL(b, a);
	const uint8_t *p = arch_p2v(b);
	size_t nz = 0;
	for (size_t i = 0; i < PAGE_SIZE; i++)
		nz += p[i] != 0;
	CU_ASSERT_EQUAL(nz, 0);
	// alloc_nozero promises nothing but must still hand out a used frame.
	memset(arch_p2v(b), 0x5a, PAGE_SIZE);
	pmem_free(b);
	paddr_t c = pmem_alloc_nozero();
	CU_ASSERT_EQUAL(c, b);
	CU_ASSERT_TRUE(pmem_is_allocated(c));
}

// pmem_zero_tail zeroes exactly [from, PAGE_SIZE) of the frame, from any
// offset (byte, word, 64-byte block), and nothing for from >= PAGE_SIZE.
static void test_zero_tail(void)
{
	static const uint32_t from[] = { 0, 1, 7, 8, 9, 30, 56, 63, 64, 65, 100, 2048, 4031, 4032,
					 4033, 4088, 4089, 4095, 4096, 5000 };
	paddr_t pa = pmem_alloc();
	CU_ASSERT_FATAL(pa != 0);
	uint8_t *p = arch_p2v(pa);
	for (unsigned k = 0; k < sizeof(from) / sizeof(from[0]); k++) {
		memset(p, 0xa5, PAGE_SIZE);
		pmem_zero_tail(pa + (k & 3), from[k]); // the offset in pa is not the range's
		bool ok = true;
		for (uint32_t i = 0; i < PAGE_SIZE; i++)
			ok &= p[i] == (i < from[k] ? 0xa5 : 0);
		CU_ASSERT_TRUE(ok);
	}
	pmem_free(pa);
}

static void test_free_then_alloc_reuses(void)
{
	uint64_t n0 = pmem_free_count();
	paddr_t f[8];
	for (int i = 0; i < 8; i++)
		f[i] = pmem_alloc();
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 8);
	pmem_free(f[3]);
	pmem_free(f[6]);
	CU_ASSERT_FALSE(pmem_is_allocated(f[3]));
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 6);
	CU_ASSERT_EQUAL(pmem_alloc(), f[6]);
	CU_ASSERT_EQUAL(pmem_alloc(), f[3]);
	for (int i = 0; i < 8; i++)
		pmem_free(f[i]);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
}

static void test_bad_free_panics(void)
{
	paddr_t a = pmem_alloc();
	uint64_t n0 = pmem_free_count();
	pmem_free(a);
	EXPECT_PANIC(pmem_free(a)); // double free
	CU_ASSERT_EQUAL(pmem_free_count(), n0 + 1);
	paddr_t b = pmem_alloc();
	EXPECT_PANIC(pmem_free(b + 8));            // not page-aligned
	EXPECT_PANIC(pmem_free(pmem_top()));       // beyond the table
	EXPECT_PANIC(pmem_free(48 * MiB));         // free, never allocated
	CU_ASSERT_TRUE(pmem_is_allocated(b));
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
}

// Frames the allocator never handed out (reserved image, holes, the low
// megabyte, its own arrays) must not be accepted by pmem_free either:
// accepting one puts it on the free stack and a later pmem_alloc hands out
// kernel text, a hole, or frame 0 (which reads as "out of memory").
static void test_free_of_unmanaged_frame_panics(void)
{
	uint64_t n0 = pmem_free_count();
	EXPECT_PANIC(pmem_free(RESV_LO + 4 * PAGE_SIZE)); // kernel image
	EXPECT_PANIC(pmem_free(17 * MiB));                // hole
	EXPECT_PANIC(pmem_free(ARR_LO));                  // the frame table itself
	EXPECT_PANIC(pmem_free(0));                       // frame 0
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
	CU_ASSERT_FALSE(pmem_is_allocated(17 * MiB));
}

static void test_pins(void)
{
	paddr_t a = pmem_alloc();
	CU_ASSERT_FALSE(pmem_is_pinned(a));
	CU_ASSERT_EQUAL(pmem_pin_count(a), 0);
	pmem_pin(a);
	pmem_pin(a);
	CU_ASSERT_TRUE(pmem_is_pinned(a));
	CU_ASSERT_EQUAL(pmem_pin_count(a), 2);
	CU_ASSERT_TRUE(pmem_is_allocated(a));
	// Freed while in flight: it goes back at the last unpin, not before.
	uint64_t n1 = pmem_free_count();
	pmem_free(a);
	CU_ASSERT_EQUAL(pmem_free_count(), n1);
	CU_ASSERT_EQUAL(pmem_deferred(), 1);
	CU_ASSERT_TRUE(pmem_is_allocated(a));
	EXPECT_PANIC(pmem_free(a)); // freed twice
	EXPECT_PANIC(pmem_pin(a));  // nobody may start a DMA into it now
	pmem_unpin(a);
	CU_ASSERT_TRUE(pmem_is_pinned(a));
	CU_ASSERT_EQUAL(pmem_pin_count(a), 1);
	CU_ASSERT_EQUAL(pmem_free_count(), n1);
	pmem_unpin(a);
	CU_ASSERT_FALSE(pmem_is_pinned(a));
	CU_ASSERT_EQUAL(pmem_free_count(), n1 + 1);
	CU_ASSERT_EQUAL(pmem_deferred(), 0);
	CU_ASSERT_FALSE(pmem_is_allocated(a));
	EXPECT_PANIC(pmem_unpin(a)); // not pinned
	a = pmem_alloc();
	pmem_free(a); // not pinned: at once
	CU_ASSERT_FALSE(pmem_is_pinned(a));
	EXPECT_PANIC(pmem_pin(a));         // free: nobody's DMA buffer
	EXPECT_PANIC(pmem_pin(17 * MiB));  // a hole
	EXPECT_PANIC(pmem_pin(pmem_top()));
	EXPECT_PANIC(pmem_unpin(pmem_top() + PAGE_SIZE));
	CU_ASSERT_FALSE(pmem_is_pinned(pmem_top()));
	CU_ASSERT_EQUAL(pmem_pin_count(pmem_top()), 0);
	CU_ASSERT_FALSE(pmem_is_allocated(pmem_top()));
	CU_ASSERT_EQUAL(pmem_free_count(), EXPECT_FREE);
}

// Frames the kernel keeps never move, so pinning one is a no-op (pmem.c).
static void test_pin_kept_frame_is_noop(void)
{
	pmem_pin(RESV_LO + PAGE_SIZE);
	pmem_pin(0x8000); // low memory
	CU_ASSERT_FALSE(pmem_is_pinned(RESV_LO + PAGE_SIZE));
	CU_ASSERT_EQUAL(pmem_pin_count(0x8000), 0);
	pmem_unpin(RESV_LO + PAGE_SIZE);
	pmem_unpin(0x8000);
	EXPECT_PANIC(pmem_free(RESV_LO + PAGE_SIZE));
	CU_ASSERT_EQUAL(pmem_free_count(), EXPECT_FREE);
}

// The pin count saturates with a panic rather than overflowing into the
// state bits, and counts back down exactly.
static void test_pin_saturates(void)
{
	paddr_t b = pmem_alloc();
	volatile unsigned pins = 0;
	EXPECT_PANIC(for (;;) {
		pmem_pin(b);
		if (++pins > 0x20000)
			break;
	});
	CU_ASSERT_TRUE(pins >= 255);
	CU_ASSERT_EQUAL(pmem_pin_count(b), pins);
	CU_ASSERT_TRUE(pmem_is_allocated(b));
	for (unsigned i = 0; i < pins; i++)
		pmem_unpin(b);
	CU_ASSERT_FALSE(pmem_is_pinned(b));
	pmem_free(b);
	CU_ASSERT_EQUAL(pmem_free_count(), EXPECT_FREE);
}

// The reserve: zeroed frames prepared ahead, counted as free, handed out
// first by pmem_take and last by pmem_alloc.
static void test_reserve(void)
{
	static paddr_t all[EXPECT_FREE];
	size_t n = 0;
	paddr_t pa;
	while ((pa = pmem_alloc_nozero()))
		memset(arch_p2v(all[n++] = pa), 0xcc, PAGE_SIZE);
	CU_ASSERT_EQUAL_FATAL(n, EXPECT_FREE);
	pmem_reserve_fill(4); // nothing free: nothing to prepare
	CU_ASSERT_EQUAL(pmem_free_count(), 0);
	CU_ASSERT_EQUAL(pmem_take(), 0);
	while (n)
		pmem_free(all[--n]);

	pmem_reserve_fill(10);
	CU_ASSERT_EQUAL(pmem_free_count(), EXPECT_FREE);
	paddr_t f[10];
	size_t dirty = 0;
	for (int i = 0; i < 10; i++) {
		f[i] = pmem_take();
		CU_ASSERT_TRUE(pmem_is_allocated(f[i]));
		const uint8_t *p = arch_p2v(f[i]);
		for (size_t k = 0; k < PAGE_SIZE; k++)
			dirty += p[k] != 0;
		for (int j = 0; j < i; j++)
			CU_ASSERT_NOT_EQUAL(f[i], f[j]);
	}
	CU_ASSERT_EQUAL(dirty, 0);
	CU_ASSERT_EQUAL(pmem_free_count(), EXPECT_FREE - 10);
	for (int i = 0; i < 10; i++)
		pmem_free(f[i]);
	CU_ASSERT_EQUAL(pmem_free_count(), EXPECT_FREE);

	// pmem_alloc falls back on the reserve when the free stack is empty.
	pmem_reserve_fill(3);
	while (pmem_free_count() > 3)
		all[n++] = pmem_alloc_nozero();
	for (int i = 0; i < 3; i++) {
		f[i] = i == 1 ? pmem_alloc_nozero() : pmem_alloc();
		CU_ASSERT_TRUE(f[i] != 0 && pmem_is_allocated(f[i]));
	}
	CU_ASSERT_EQUAL(pmem_free_count(), 0);
	CU_ASSERT_EQUAL(pmem_alloc(), 0);
	CU_ASSERT_EQUAL(pmem_take(), 0);
	for (int i = 0; i < 3; i++)
		pmem_free(f[i]);
	while (n)
		pmem_free(all[--n]);
	CU_ASSERT_EQUAL(pmem_free_count(), EXPECT_FREE);
}

static void test_random_alloc_free_restores_count(void)
{
	static paddr_t live[4096];
	int n = 0;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	for (int op = 0; op < 20000; op++) {
		if (n < 4096 && (n == 0 || prng_below(&seed, 3) != 0)) {
			paddr_t pa = prng_below(&seed, 2) ? pmem_alloc() : pmem_alloc_nozero();
			CU_ASSERT_FATAL(pa != 0);
			live[n++] = pa;
		} else {
			int i = (int)prng_below(&seed, (uint64_t)n);
			pmem_free(live[i]);
			live[i] = live[--n];
		}
		if (pmem_free_count() != EXPECT_FREE - (uint64_t)n)
			CU_FAIL_FATAL("free count drifted from the number of live frames");
	}
	while (n)
		pmem_free(live[--n]);
	CU_ASSERT_EQUAL(pmem_free_count(), EXPECT_FREE);
}

// Arrays go to the first range big enough, here the second one.
static void test_arrays_skip_small_range(void)
{
	fake_reset();
	const struct mem_range r[] = { { 1 * MiB, 4 * PAGE_SIZE }, { 8 * MiB, 8 * MiB } };
	pmem_init(r, 2, 0, 0);
	// 16 MiB top: 4096 frames * 14 bytes = 14 pages of arrays, which do not
	// fit the first range's 4 pages: they go to 8 MiB.
	CU_ASSERT_EQUAL(pmem_free_count(), 4 + 2048 - 14);
	CU_ASSERT_TRUE(pmem_is_allocated(8 * MiB));
	CU_ASSERT_TRUE(pmem_is_allocated(8 * MiB + 13 * PAGE_SIZE));
	CU_ASSERT_FALSE(pmem_is_allocated(8 * MiB + 14 * PAGE_SIZE));
	CU_ASSERT_EQUAL(pmem_alloc(), 1 * MiB);
}

// Overlapping entries (firmware maps do this) count each frame once; a
// reservation in the middle of a range leaves both sides usable.
static void test_overlap_and_middle_reservation(void)
{
	fake_reset();
	const struct mem_range r[] = { { 1 * MiB, 8 * MiB }, { 4 * MiB, 8 * MiB } };
	pmem_init(r, 2, 2 * MiB, 3 * MiB);
	// [1, 12) MiB = 2816 frames, minus 256 reserved, minus 11 pages of arrays
	// (3072 frames * 14 bytes = 10.5 pages) placed at 3 MiB.
	CU_ASSERT_EQUAL(pmem_free_count(), 2816 - 256 - 11);
	CU_ASSERT_TRUE(pmem_is_allocated(3 * MiB + 10 * PAGE_SIZE));
	CU_ASSERT_FALSE(pmem_is_allocated(3 * MiB + 11 * PAGE_SIZE));
	CU_ASSERT_EQUAL(pmem_alloc(), 1 * MiB);
	CU_ASSERT_TRUE(pmem_is_allocated(3 * MiB));
	CU_ASSERT_TRUE(pmem_is_allocated(2 * MiB + 255 * PAGE_SIZE));
}

static void test_no_room_for_arrays_panics(void)
{
	fake_reset();
	const struct mem_range r[] = { { 1 * MiB, 64 * MiB } };
	// Everything but four pages is reserved; the arrays need 25 pages.
	EXPECT_PANIC(pmem_init(r, 1, 1 * MiB, 65 * MiB - 4 * PAGE_SIZE));
}

static void test_empty_map(void)
{
	fake_reset();
	const struct mem_range r[] = { { 0, 0x9f000 } };
	// Nothing above 1 MiB: no room for a table at all.
	EXPECT_PANIC(pmem_init(r, 1, 0, 0));
}

int register_pmem(void)
{
	static const struct test_case t[] = {
		TEST(test_counts_exact),
		TEST(test_exhaust_only_eligible),
		TEST(test_low_frames_first_and_contiguous),
		TEST(test_alloc_zeroes_reused_frame),
		TEST(test_zero_tail),
		TEST(test_free_then_alloc_reuses),
		TEST(test_bad_free_panics),
		TEST(test_free_of_unmanaged_frame_panics),
		TEST(test_pins),
		TEST(test_pin_kept_frame_is_noop),
		TEST(test_pin_saturates),
		TEST(test_reserve),
		TEST(test_random_alloc_free_restores_count),
		TEST(test_arrays_skip_small_range),
		TEST(test_overlap_and_middle_reservation),
		TEST(test_no_room_for_arrays_panics),
		TEST(test_empty_map),
	};
	return ADD_SUITE("pmem", setup, NULL, t);
}
