// The DMA interface drivers use (dma.h), on the frame manager and the
// kernel's address space. Pins keep a frame from being exchanged or freed
// while a device reads or writes it; frames of the kernel image are never
// either, and the frame manager keeps them outside the allocator, so they
// go to devices unpinned.
#include "dma.h"
#include "res/pmem.h"
#include "res/vspace.h"
#include <err.h>

extern char __image_start[], __image_end[];

static bool in_image(paddr_t pg)
{
	return pg >= arch_v2p(__image_start) && pg < PAGE_ROUND_UP(arch_v2p(__image_end));
}

// The lowest of n consecutive frames among f[0..m), or 0.
static paddr_t find_run(const paddr_t *f, int m, int n)
{
	for (int i = 0; i < m; i++) {
		int k = 1;
		for (int j = 0; j < m && k < n; j++)
			if (f[j] == f[i] + (paddr_t)k * PAGE_SIZE)
				k++, j = -1; // found the next one: look for the one after it
		if (k == n)
			return f[i];
	}
	return 0;
}

// Takes frames until n of them are consecutive (at most CONTIG_TRIES),
// then gives the others back.
#define CONTIG_TRIES 64
paddr_t dma_alloc_contig(int n)
{
	paddr_t f[CONTIG_TRIES], base = 0;
	int m = 0;
	if (n < 1 || n > CONTIG_TRIES)
		return 0;
	while (!base && m < CONTIG_TRIES && (f[m] = pmem_alloc()) != 0)
		base = find_run(f, ++m, n);
	for (int i = m; i-- > 0;)
		if (!base || f[i] < base || f[i] >= base + (paddr_t)n * PAGE_SIZE)
			pmem_free(f[i]);
	return base;
}

void dma_free_contig(paddr_t pa, int n)
{
	for (int i = n - 1; i >= 0; i--)
		pmem_free(pa + (paddr_t)i * PAGE_SIZE);
}

paddr_t dma_alloc_buf(void)
{
	paddr_t pa = pmem_alloc();
	if (pa) {
		pmem_pin(pa);
		// Zeroed, straight into a receive ring: whoever's frame the NIC
		// writes into it, the page holds zeros past it (io_slot.c).
		pmem_set_origin(pa, PMEM_ORIGIN_ZEROED);
	}
	return pa;
}

void dma_free_buf(paddr_t pa)
{
	pmem_unpin(pa);
	pmem_free(pa);
}

long dma_check(paddr_t pa, uint64_t len)
{
	if (len == 0 || pa < 0x100000 || pa >= pmem_top() || len > pmem_top() - pa)
		return -E_INVAL;
	for (paddr_t pg = PAGE_ROUND_DOWN(pa); pg < pa + len; pg += PAGE_SIZE)
		if (!pmem_is_allocated(pg))
			return -E_INVAL;
	return 0;
}

long dma_check_buf(paddr_t pa)
{
	if (pa < 0x100000 || (pa & (PAGE_SIZE - 1)) || pa >= pmem_top() || in_image(pa) ||
	    !pmem_is_allocated(pa))
		return -E_INVAL;
	return pmem_is_pinned(pa) ? -E_BUSY : 0;
}

// The image's frames are the frame manager's F_RESV ones, whose pin and
// unpin are no-ops: no test of the image's range here (a send's every
// descriptor comes through).
void dma_pin(paddr_t pa, uint64_t len)
{
	for (paddr_t pg = PAGE_ROUND_DOWN(pa); pg < pa + len; pg += PAGE_SIZE)
		pmem_pin(pg);
}

void dma_unpin(paddr_t pa, uint64_t len)
{
	for (paddr_t pg = PAGE_ROUND_DOWN(pa); pg < pa + len; pg += PAGE_SIZE)
		pmem_unpin(pg);
}

paddr_t dma_alloc_page(void) { return pmem_alloc(); }
void dma_free_page(paddr_t pa) { pmem_free(pa); }
bool dma_pinned(paddr_t pa) { return pmem_is_pinned(pa); }
uint64_t dma_free_frames(void) { return pmem_free_count(); }

volatile uint32_t *dma_map_mmio(paddr_t pa, uint64_t len)
{
	return kmap_mmio(pa, len);
}
