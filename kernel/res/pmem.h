// Physical memory: page frames. The manager owns the frame table; others
// hold physical addresses of frames they were given.
#ifndef PMEM_H
#define PMEM_H
#include "../arch/x86_64/arch.h"
#include "../bootinfo.h" // struct mem_range

// Usable RAM ranges; [resv_lo, resv_hi) is taken (kernel image, boot data).
void pmem_init(const struct mem_range *ram, int n, paddr_t resv_lo, paddr_t resv_hi);
paddr_t pmem_alloc(void);        // a zeroed frame, or 0 when none is free
paddr_t pmem_alloc_nozero(void); // contents undefined
// Zeroes bytes [from, PAGE_SIZE) of the frame at pa (pmem_alloc's zeroing,
// and the receive path's scrub of a page past a frame's last byte).
void pmem_zero_tail(paddr_t pa, uint32_t from);
// Frees a frame; one still pinned by a device goes back at its last unpin.
void pmem_free(paddr_t pa);
uint64_t pmem_deferred(void); // frames freed but still pinned
uint64_t pmem_free_count(void);
uint64_t pmem_total(void);
paddr_t pmem_top(void); // end of the highest managed frame
bool pmem_is_allocated(paddr_t pa);

// DMA pins: a pinned frame is in flight; it must not be exchanged or freed.
void pmem_pin(paddr_t pa);
void pmem_unpin(paddr_t pa);
bool pmem_is_pinned(paddr_t pa);
unsigned pmem_pin_count(paddr_t pa);

// A frame's origin mark (8 bytes a frame, 0 after every allocation and
// free): the receive path's record of whose slot page a ring buffer was
// (io_slot.c, "the receive scrub"). The frame's holder sets it; nobody
// else touches the frame meanwhile.
void pmem_set_origin(paddr_t pa, uint64_t mark);
uint64_t pmem_origin(paddr_t pa);
// The mark of a frame that held only zeros when it went to a ring (no
// region's serial is ever this).
#define PMEM_ORIGIN_ZEROED (~0ull)

// The reserve: zeroed frames prepared ahead of need (when the CPU is idle)
// so hot paths take one without zeroing or searching. Counted as free.
paddr_t pmem_take(void);        // a zeroed frame, from the reserve if it has one
// n frames, zeroed, into out (the reserve's first), as n calls of
// pmem_take under one acquisition of the allocator's lock: how many (fewer
// only when memory runs out).
int pmem_take_n(paddr_t *out, int n);
void pmem_reserve_fill(int max); // zero up to max more frames into the reserve

#endif
