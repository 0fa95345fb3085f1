// Virtual space: one page-table tree. Identified by a generation-tagged id;
// the kernel's own space is KERNEL_VSPACE.
#ifndef VSPACE_H
#define VSPACE_H
#include "../arch/x86_64/arch.h"
#include "res.h"
#include "tlb.h"

#define NVSPACE 64
#define KERNEL_VSPACE res_id(RES_VSPACE, 0, 0)
// Above tlb_flush_threshold pages a range's TLB entries are dropped by one
// full flush instead of one invlpg each. The kernel measures it at boot
// (bench_tlb_threshold); this is the value before that.
#define TLB_FLUSH_THRESHOLD 32
extern uint64_t tlb_flush_threshold;
// Software PTE bit: the frame belongs to the space and is freed with it.
#define PTE_OWNED (1ull << 9)
// Software PTE bit, never with PTE_P: an attachment's page that has no frame
// now. The page stays taken and its page table is not pruned.
#define PTE_HELD (1ull << 10)

void vspace_init_kernel(paddr_t ram_top);
long vspace_create(void);
long vspace_destroy(long id);
long vspace_map(long id, uint64_t va, paddr_t pa, uint64_t flags);
// Removes the mapping; returns the old PTE in *old (0 when none was mapped).
long vspace_unmap(long id, uint64_t va, uint64_t *old);
// The leaf PTE for va, or NULL when no page table covers it. Never allocates.
uint64_t *vspace_pte(long id, uint64_t va);
void vspace_flush_range(long id, uint64_t va, uint64_t npages);
// Points pages [va, va+n) at frames f[0..n) with flags, in page tables that
// exist (attachments prepare them); f[i] == 0 leaves the entry not present,
// PTE_HELD if flags has it, else 0. Then invalidates the TLB: one walk per
// leaf table, one invlpg per page or one full flush.
void vspace_set_frames(long id, uint64_t va, const paddr_t *f, uint64_t n, uint64_t flags);
// A range's leaf page tables, found once: then pages of the range are
// remapped with no walk (the exchange's hot path). Valid while the tables
// stay, i.e. while the range holds them (attachments keep PTE_HELD on every
// page) and the space lives (attachments go before their space).
#define VSPACE_RANGE_MAX_PAGES 16384
struct vspace_range {
	paddr_t root;   // the space's root
	int slot;       // its slot: tlb_space_cpus[slot] are the CPUs it is live on
	uint64_t va;
	uint64_t *leaf[VSPACE_RANGE_MAX_PAGES / 512 + 1];
};
// 0, or -E_BADID / -E_RANGE (too long) / -E_NOENT (a page has no table).
long vspace_range_init(long id, uint64_t va, uint64_t npages, struct vspace_range *r);
extern uint64_t tlb_flush_threshold, tlb_full_flushes, tlb_page_flushes;
// vspace_set_frames for pages [first, first+n) of the range, no walk.
// Inline: it is most of an exchange's work.
static inline void vspace_range_set(const struct vspace_range *r, uint64_t first, uint64_t n,
				    const paddr_t *f, uint64_t flags)
{
	uint64_t k = ((r->va >> 12) & 511) + first;
	for (uint64_t i = 0; i < n; i++, k++)
		r->leaf[k >> 9][k & 511] = f[i] ? f[i] | (flags & ~PTE_HELD) | PTE_P : flags & PTE_HELD;
	if (!__atomic_load_n(&tlb_space_cpus[r->slot], __ATOMIC_RELAXED))
		return; // no CPU's CR3 names the space: no TLB holds its entries
	tlb_invalidate(r->slot, r->root, r->va + first * PAGE_SIZE, n);
}
// Frees the page tables under [va, va+npages) that no longer map anything.
void vspace_prune(long id, uint64_t va, uint64_t npages);
long vspace_activate(long id);
bool vspace_valid(long id);
paddr_t vspace_root(long id);
uint64_t vspace_tables(long id); // page-table frames in use (for leak checks)

// Maps device registers uncached into the kernel's MMIO window.
void *kmap_mmio(paddr_t pa, size_t size);

#endif
