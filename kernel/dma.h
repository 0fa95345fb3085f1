// What a driver may ask of memory: page frames for rings and buffers, pins
// that keep a frame in place while a device reads or writes it, a check
// that a frame may be handed to a device, and device register windows.
// Drivers reach physical memory only through this file (kernel/dma.c sits
// on the frame manager and the kernel's address space).
#ifndef DMA_H
#define DMA_H
#include "arch/x86_64/arch.h"

// n physically contiguous zeroed pages; 0 when none could be found.
paddr_t dma_alloc_contig(int n);
void dma_free_contig(paddr_t pa, int n);
// One zeroed page (a receive buffer), pinned, marked as zeroed for the
// receive path's scrub (pmem_set_origin); 0 when memory is out.
paddr_t dma_alloc_buf(void);
// Unpins and frees a page from dma_alloc_buf (or one the driver pinned).
void dma_free_buf(paddr_t pa);
// 0 when every page of [pa, pa+len) may be given to a device: managed by
// the frame allocator and handed out (or part of the kernel image), not in
// the first MiB. -E_INVAL otherwise.
long dma_check(paddr_t pa, uint64_t len);
// 0 when page pa may become a receive buffer: handed out, page-aligned, not
// the kernel's; -E_BUSY when it is pinned (in flight, or listed twice).
long dma_check_buf(paddr_t pa);
// Pins and unpins every page of [pa, pa+len) (kernel-image pages need none).
void dma_pin(paddr_t pa, uint64_t len);
void dma_unpin(paddr_t pa, uint64_t len);
// Single zeroed pages (payload buffers of a driver's self-test), unpinned.
paddr_t dma_alloc_page(void);
void dma_free_page(paddr_t pa);
bool dma_pinned(paddr_t pa);
uint64_t dma_free_frames(void); // frames free in the whole machine (leak checks)
// Maps a device register window uncached into the kernel; never unmapped.
volatile uint32_t *dma_map_mmio(paddr_t pa, uint64_t len);
#endif
