// Virtual space: one page-table tree. Identified by a generation-tagged id;
// the kernel's own space is KERNEL_VSPACE.
#ifndef VSPACE_H
#define VSPACE_H
#include "../arch/x86_64/arch.h"

#define NVSPACE 64
#define KERNEL_VSPACE 0
// Software PTE bit: the frame belongs to the space and is freed with it.
#define PTE_OWNED (1ull << 9)

void vspace_init_kernel(paddr_t ram_top);
long vspace_create(void);
long vspace_destroy(long id);
long vspace_map(long id, uint64_t va, paddr_t pa, uint64_t flags);
// Removes the mapping; returns the old PTE in *old (0 when none was mapped).
long vspace_unmap(long id, uint64_t va, uint64_t *old);
// The leaf PTE for va, or NULL when no page table covers it. Never allocates.
uint64_t *vspace_pte(long id, uint64_t va);
// Rewrites a present leaf PTE's frame, keeping its flags; flushes the TLB entry.
void vspace_set_frame(long id, uint64_t va, paddr_t pa);
long vspace_activate(long id);
bool vspace_valid(long id);
paddr_t vspace_root(long id);
uint64_t vspace_tables(long id); // page-table frames in use (for leak checks)

// Maps device registers uncached into the kernel's MMIO window.
void *kmap_mmio(paddr_t pa, size_t size);

#endif
