// Virtual space manager: owns the table of page-table roots. 4-level paging
// (SDM vol. 3A 4.5). The kernel half (RAM identity map in PML4[0], device
// window at MMIO_BASE) is built once and shared by every user space.
#include "vspace.h"
#include "pmem.h"
#include "tlb.h"
#include "../kprintf.h"
#include <err.h>
#include <string.h>

struct vspace {
	struct res_hdr h;
	paddr_t root;
	uint64_t ntables; // page-table frames below the root, user half
};

static struct vspace vspaces[NVSPACE];
static uint64_t mmio_next = MMIO_BASE;

#define IDX(va, level) (((va) >> (12 + 9 * (level))) & 0x1ff)
#define KERNEL_PML4_FIRST_USER 2 // PML4[0] kernel RAM, [1] unused, [2..255] user
#define PML4_MMIO IDX(MMIO_BASE, 3)

uint64_t tlb_full_flushes, tlb_page_flushes;
uint64_t tlb_flush_threshold = TLB_FLUSH_THRESHOLD;

// Slot 0 is the kernel's space (KERNEL_VSPACE), never handed out.
static const struct res_table tab = RES_TABLE(RES_VSPACE, vspaces, 1);

static struct vspace *get(long id) { return res_lookup(&tab, id); }

bool vspace_valid(long id) { return get(id) != NULL; }

paddr_t vspace_root(long id)
{
	struct vspace *v = get(id);
	return v ? v->root : 0;
}

uint64_t vspace_tables(long id)
{
	struct vspace *v = get(id);
	return v ? v->ntables : 0;
}

static uint64_t *table(paddr_t pa) { return arch_p2v(pa & PTE_ADDR_MASK); }

// Walks to the leaf PTE, allocating missing tables when `alloc`.
static uint64_t *walk(struct vspace *v, uint64_t va, bool alloc)
{
	uint64_t *t = table(v->root);
	for (int level = 3; level > 0; level--) {
		uint64_t *e = &t[IDX(va, level)];
		if (!(*e & PTE_P)) {
			if (!alloc)
				return NULL;
			paddr_t pa = pmem_alloc();
			if (!pa)
				return NULL;
			v->ntables++;
			*e = pa | PTE_P | PTE_W | (va < USER_TOP ? PTE_U : 0);
		} else if (*e & PTE_PS) {
			return NULL; // a large page: not ours to split
		}
		t = table(*e);
	}
	return &t[IDX(va, 0)];
}

// Only the spaces CR3 names on some CPU hold TLB entries: switching CR3
// drops the rest (the kernel's identity map is global, user pages are not).
// tlb.c knows which CPUs those are.
static void flush(struct vspace *v, uint64_t va)
{
	tlb_invalidate((int)(v - vspaces), v->root, va, 1);
}

long vspace_map(long id, uint64_t va, paddr_t pa, uint64_t flags)
{
	struct vspace *v = get(id);
	if (!v)
		return -E_BADID;
	if ((va & (PAGE_SIZE - 1)) || (pa & (PAGE_SIZE - 1)))
		return -E_INVAL;
	// A user space maps only its own half: the kernel's tables are shared.
	if (id != KERNEL_VSPACE && (va < USER_BASE || va >= USER_TOP))
		return -E_RANGE;
	uint64_t *e = walk(v, va, true);
	if (!e)
		return -E_NOMEM;
	if (*e & (PTE_P | PTE_HELD))
		return -E_EXIST;
	*e = pa | flags | PTE_P;
	return 0;
}

long vspace_unmap(long id, uint64_t va, uint64_t *old)
{
	struct vspace *v = get(id);
	if (!v)
		return -E_BADID;
	uint64_t *e = walk(v, va, false);
	*old = e ? *e : 0;
	if (!e || !(*e & PTE_P))
		return -E_NOTBACKED;
	*e = 0;
	flush(v, va);
	return 0;
}

uint64_t *vspace_pte(long id, uint64_t va)
{
	struct vspace *v = get(id);
	return v ? walk(v, va, false) : NULL;
}

static void flush_range(struct vspace *v, uint64_t va, uint64_t npages)
{
	tlb_invalidate((int)(v - vspaces), v->root, va, npages);
}

void vspace_flush_range(long id, uint64_t va, uint64_t npages)
{
	struct vspace *v = get(id);
	if (v)
		flush_range(v, va, npages);
}

void vspace_set_frames(long id, uint64_t va, const paddr_t *f, uint64_t n, uint64_t flags)
{
	struct vspace *v = get(id);
	if (!v)
		return;
	uint64_t *e = NULL;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t a = va + i * PAGE_SIZE;
		if (!e || IDX(a, 0) == 0) // a new leaf table
			e = walk(v, a, false);
		else
			e++;
		if (e)
			*e = f[i] ? f[i] | (flags & ~PTE_HELD) | PTE_P : flags & PTE_HELD;
	}
	flush_range(v, va, n);
}

long vspace_range_init(long id, uint64_t va, uint64_t npages, struct vspace_range *r)
{
	struct vspace *v = get(id);
	if (!v)
		return -E_BADID;
	if (npages > VSPACE_RANGE_MAX_PAGES)
		return -E_RANGE;
	r->root = v->root;
	r->slot = (int)(v - vspaces);
	r->va = va;
	uint64_t first = va >> 12, last = first + npages - 1;
	for (uint64_t k = 0; k <= (last >> 9) - (first >> 9) && npages; k++) {
		uint64_t *e = walk(v, ((first & ~511ull) + k * 512) << 12, false);
		if (!e)
			return -E_NOENT;
		r->leaf[k] = e; // entry 0 of the leaf table
	}
	return 0;
}

static bool table_empty(paddr_t t)
{
	const uint64_t *e = table(t);
	for (int i = 0; i < 512; i++)
		if (e[i])
			return false;
	return true;
}

// Level `level` entry *e covers [base, base + span); frees the table it
// points to when everything below it is empty.
static void prune_entry(struct vspace *v, uint64_t *e, int level, uint64_t lo, uint64_t hi,
			uint64_t base)
{
	if (!(*e & PTE_P) || (*e & PTE_PS))
		return;
	if (level > 1) {
		uint64_t span = 1ull << (12 + 9 * (level - 1));
		uint64_t *t = table(*e);
		for (int i = 0; i < 512; i++) {
			uint64_t b = base + (uint64_t)i * span;
			if (b + span > lo && b < hi)
				prune_entry(v, &t[i], level - 1, lo, hi, b);
		}
	}
	if (table_empty(*e)) {
		pmem_free(*e & PTE_ADDR_MASK);
		v->ntables--;
		*e = 0;
	}
}

void vspace_prune(long id, uint64_t va, uint64_t npages)
{
	struct vspace *v = get(id);
	if (!v || id == KERNEL_VSPACE)
		return;
	uint64_t hi = va + npages * PAGE_SIZE, span = 1ull << 39;
	uint64_t *root = table(v->root);
	for (int i = KERNEL_PML4_FIRST_USER; i < 256; i++) {
		uint64_t b = (uint64_t)i * span;
		if (b + span > va && b < hi)
			prune_entry(v, &root[i], 3, va, hi, b);
	}
	// Paging-structure caches may hold the freed tables: all of it.
	tlb_invalidate((int)(v - vspaces), v->root, va, UINT64_MAX);
}

long vspace_create(void)
{
	struct vspace *v = res_alloc(&tab);
	paddr_t root = v ? pmem_alloc() : 0;
	if (!root) {
		if (v)
			res_free(v);
		return -E_NOMEM;
	}
	paddr_t kroot = vspaces[res_slot(KERNEL_VSPACE)].root;
	uint64_t *u = table(root);
	if (kroot) { // share the kernel half: RAM identity map and MMIO window
		uint64_t *k = table(kroot);
		u[0] = k[0];
		for (int j = 256; j < 512; j++)
			u[j] = k[j];
	}
	v->root = root;
	return res_name(&tab, v);
}

// Frees a user-half subtree: tables always, leaf frames when PTE_OWNED.
static void free_tree(struct vspace *v, paddr_t t, int level)
{
	uint64_t *e = table(t);
	for (int i = 0; i < 512; i++) {
		if (!(e[i] & PTE_P))
			continue;
		if (level > 0)
			free_tree(v, e[i] & PTE_ADDR_MASK, level - 1);
		else if (e[i] & PTE_OWNED)
			pmem_free(e[i] & PTE_ADDR_MASK);
	}
	if (level < 3) {
		pmem_free(t & PTE_ADDR_MASK);
		v->ntables--;
	}
}

long vspace_destroy(long id)
{
	struct vspace *v = get(id);
	if (!v || id == KERNEL_VSPACE)
		return -E_BADID;
	paddr_t kroot = vspaces[res_slot(KERNEL_VSPACE)].root;
	if (arch_current_root() == v->root) {
		tlb_note_load(res_slot(KERNEL_VSPACE), kroot);
		arch_load_root(kroot);
	}
	tlb_leave((int)(v - vspaces), v->root, kroot); // others whose CR3 names it
	uint64_t *root = table(v->root);
	for (int i = KERNEL_PML4_FIRST_USER; i < 256; i++) {
		if (root[i] & PTE_P)
			free_tree(v, root[i] & PTE_ADDR_MASK, 2);
	}
	pmem_free(v->root);
	res_free(v);
	return 0;
}

long vspace_activate(long id)
{
	struct vspace *v = get(id);
	if (!v)
		return -E_BADID;
	bool stale = tlb_note_load((int)(v - vspaces), v->root);
	if (arch_current_root() != v->root || stale)
		arch_load_root(v->root);
	return 0;
}

// Identity-maps [0, max(ram_top, 4 GiB)) with 2 MiB pages in PML4[0] and
// prepares the PML4 slot of the MMIO window, so that user spaces can share
// the kernel half by copying PML4 entries once.
void vspace_init_kernel(paddr_t ram_top)
{
	struct vspace *k = &vspaces[res_slot(KERNEL_VSPACE)];
	*k = (struct vspace){ .h = { .gen = 0, .used = true, .name = KERNEL_VSPACE }, .root = pmem_alloc() };
	uint64_t *pml4 = table(k->root);
	paddr_t pdpt = pmem_alloc(), mmio_pdpt = pmem_alloc();
	if (!k->root || !pdpt || !mmio_pdpt)
		panic("vspace: no frames for the kernel page tables");
	pml4[0] = pdpt | PTE_P | PTE_W;
	pml4[PML4_MMIO] = mmio_pdpt | PTE_P | PTE_W;
	uint64_t top = ram_top > (4ull << 30) ? ram_top : (4ull << 30);
	for (uint64_t gb = 0; gb < (top + (1ull << 30) - 1) >> 30 && gb < 512; gb++) {
		paddr_t pd = pmem_alloc();
		if (!pd)
			panic("vspace: no frames for the identity map");
		uint64_t *d = table(pd);
		for (int i = 0; i < 512; i++)
			d[i] = ((gb << 30) + ((uint64_t)i << 21)) | PTE_P | PTE_W | PTE_PS | PTE_G;
		table(pdpt)[gb] = pd | PTE_P | PTE_W;
	}
	tlb_init(k->root);
	arch_load_root(k->root);
}

void *kmap_mmio(paddr_t pa, size_t size)
{
	paddr_t base = PAGE_ROUND_DOWN(pa);
	uint64_t va = mmio_next;
	for (paddr_t p = base; p < pa + size; p += PAGE_SIZE, mmio_next += PAGE_SIZE) {
		long r = vspace_map(KERNEL_VSPACE, mmio_next, p, PTE_W | PTE_PCD | PTE_PWT | PTE_NX);
		if (r < 0)
			panic("kmap_mmio: cannot map %lx (%ld)", p, r);
	}
	mmio_next += PAGE_SIZE; // guard page between windows
	return (void *)(va + (pa - base));
}

// Spaces go with their process (proc.c), not through release.
const struct res_ops vspace_ops = { .name = "vspace" };
