// Exchange versus copy, in the kernel, in one boot. Two regions are attached
// into a fresh space that is made current, so the exchange pays its real
// costs: checks, frame swaps, PTE rewrites in both mappings and TLB
// invalidation. The copy goes through the same user addresses, as a
// receive copy into user memory would. Under QEMU -icount shift=0 the TSC
// counts guest instructions; otherwise it is real time.
#include "bench.h"
#include "kprintf.h"
#include "res/vregion.h"
#include "res/vuspace.h"
#include "res/vspace.h"
#include "res/pmem.h"
#include "arch/x86_64/arch.h"
#include <string.h>
#include <stats.h>

#define MAX_PAGES 16
#define SRC_VA 0x50000000000ull
#define DST_VA 0x50001000000ull
#define MAX_REPS 101

// Every sample count here is odd (9, or the 51 repetitions): the median
// is the middle value, as lib/stats.c picks it.
static uint64_t median(const uint64_t *v, int n) { return v[stats_median_index(v, n)]; }

static uint64_t time_copy(size_t n, bool cold)
{
	if (cold)
		arch_cache_flush_range((void *)SRC_VA, n); // the copy reads from memory
	else
		memcpy((void *)DST_VA, (void *)SRC_VA, n);
	uint64_t t0 = arch_rdtsc();
	memcpy((void *)DST_VA, (void *)SRC_VA, n);
	return arch_rdtsc() - t0;
}

static uint64_t time_exchange(long a, long b, uint64_t pages)
{
	uint64_t t0 = arch_rdtsc();
	long e = vregion_exchange(0, a, b, 0, 0, pages);
	uint64_t t = arch_rdtsc() - t0;
	if (e)
		panic("bench: exchange failed (%ld)", e);
	return t;
}

static void one_size(long a, long b, size_t bytes, int reps)
{
	uint64_t cold[MAX_REPS], hot[MAX_REPS], xchg[MAX_REPS];
	uint64_t pages = (bytes + PAGE_SIZE - 1) / PAGE_SIZE;
	for (int i = 0; i < reps; i++) {
		cold[i] = time_copy(bytes, true);
		hot[i] = time_copy(bytes, false);
		xchg[i] = time_exchange(a, b, pages);
	}
	kprintf("BENCH exchange bytes=%lu pages=%lu copy_cycles=%lu copy_hot_cycles=%lu "
		"exchange_cycles=%lu reps=%d\n",
		bytes, pages, median(cold, reps), median(hot, reps), median(xchg, reps), reps);
}

struct setup {
	long vs, a, b, va, vb;
	paddr_t old_root;
};

// Two regions of MAX_PAGES attached at SRC_VA and DST_VA in a fresh space,
// made current.
static void setup(struct setup *s)
{
	s->vs = vspace_create();
	s->a = vregion_create(0, MAX_PAGES * PAGE_SIZE, VR_MEM_ALL, -1);
	s->b = vregion_create(0, MAX_PAGES * PAGE_SIZE, VR_MEM_ALL, -1);
	s->va = vuspace_attach(0, s->a, s->vs, SRC_VA);
	s->vb = vuspace_attach(0, s->b, s->vs, DST_VA);
	if (s->vs < 0 || s->a < 0 || s->b < 0 || s->va < 0 || s->vb < 0)
		panic("bench: setup failed (%ld %ld %ld %ld %ld)", s->vs, s->a, s->b, s->va, s->vb);
	vspace_activate(s->vs);
	memset((void *)SRC_VA, 0x5a, MAX_PAGES * PAGE_SIZE);
}

static void teardown(struct setup *s)
{
	vspace_activate(KERNEL_VSPACE); // the boot runs in the kernel's space
	vuspace_detach(0, s->va);
	vuspace_detach(0, s->vb);
	vregion_delete(0, s->a);
	vregion_delete(0, s->b);
	vspace_destroy(s->vs);
}

uint64_t bench_copy_threshold(bool scrub)
{
	struct setup s;
	setup(&s);
	uint64_t t[9], z[9], best = 0;
	paddr_t spare = pmem_take(), old;
	for (int i = 0; i < 9; i++) { // one page in, one out, as a receive does
		uint64_t t0 = arch_rdtsc();
		vregion_replace(s.b, 0, 1, &spare, &old);
		t[i] = arch_rdtsc() - t0;
		spare = old;
	}
	uint64_t xchg = median(t, 9);
	for (size_t bytes = 64; bytes <= PAGE_SIZE; bytes *= 2) {
		for (int i = 0; i < 9; i++) { // the scrub of the page past the frame
			arch_cache_flush_range(arch_p2v(spare), PAGE_SIZE);
			uint64_t t0 = arch_rdtsc();
			pmem_zero_tail(spare, (uint32_t)bytes);
			z[i] = arch_rdtsc() - t0;
		}
		for (int i = 0; i < 9; i++)
			t[i] = time_copy(bytes, true);
		if (median(t, 9) < xchg + (scrub ? median(z, 9) : 0))
			best = bytes;
	}
	pmem_free(spare);
	teardown(&s);
	return best;
}

// Reads one byte of each of n pages from SRC_VA; returns TSC ticks.
static uint64_t touch(uint64_t n)
{
	uint64_t t0 = arch_rdtsc();
	for (uint64_t i = 0; i < n; i++)
		(void)*(volatile uint8_t *)(SRC_VA + i * PAGE_SIZE);
	return arch_rdtsc() - t0;
}

uint64_t bench_tlb_threshold(void)
{
	struct setup s;
	setup(&s);
	uint64_t inv[9], flush[9], miss[9];
	for (int r = 0; r < 9; r++) {
		touch(MAX_PAGES);
		uint64_t hit = touch(MAX_PAGES), t0 = arch_rdtsc();
		for (uint64_t i = 0; i < MAX_PAGES; i++)
			arch_invlpg(SRC_VA + i * PAGE_SIZE);
		inv[r] = (arch_rdtsc() - t0) / MAX_PAGES;
		uint64_t after = touch(MAX_PAGES);
		miss[r] = after > hit ? (after - hit) / MAX_PAGES : 0;
		t0 = arch_rdtsc();
		arch_flush_tlb();
		flush[r] = arch_rdtsc() - t0;
	}
	uint64_t ci = median(inv, 9), cf = median(flush, 9), cm = median(miss, 9);
	teardown(&s);
	// n invlpg + n misses  vs  one flush + (n + hot) misses
	uint64_t n = ci ? (cf + BENCH_HOT_PAGES * cm + ci - 1) / ci : 512;
	n = n < 1 ? 1 : n > 512 ? 512 : n;
	pr_info("vspace: full TLB flush above %lu pages (invlpg %lu, flush %lu, miss %lu TSC ticks; "
		"hot set %d pages)\n", n, ci, cf, cm, BENCH_HOT_PAGES);
	return n;
}

void bench_exchange(int reps)
{
	if (reps < 1 || reps > MAX_REPS)
		reps = 51;
	struct setup s;
	setup(&s);
	long a = s.a, b = s.b;
	kprintf("BENCH exchange begin tlb_threshold=%d\n", TLB_FLUSH_THRESHOLD);
	for (size_t bytes = 64; bytes <= MAX_PAGES * PAGE_SIZE; bytes *= 2)
		one_size(a, b, bytes, reps);
	kprintf("BENCH exchange end\n");
	teardown(&s);
}
