// ELF64 loader (System V ABI gABI, x86-64 psABI): validates the header and
// every program header against the image size and the user address range
// before mapping anything.
#include "elf.h"
#include "res/vspace.h"
#include "res/pmem.h"
#include <err.h>
#include <string.h>

#define EM_X86_64 62
#define ET_EXEC 2
#define PT_LOAD 1
#define PF_X 1
#define PF_W 2

struct ehdr {
	uint8_t ident[16];
	uint16_t type, machine;
	uint32_t version;
	uint64_t entry, phoff, shoff;
	uint32_t flags;
	uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};

struct phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, paddr, filesz, memsz, align;
};

static bool in_user(uint64_t va, uint64_t len)
{
	return va >= USER_BASE && len <= USER_TOP - USER_BASE && va <= USER_TOP - len;
}

static long check_header(const struct ehdr *h, size_t len)
{
	if (len < sizeof(*h) || memcmp(h->ident, "\177ELF", 4) || h->ident[4] != 2 ||
	    h->ident[5] != 1)
		return -E_INVAL;
	if (h->type != ET_EXEC || h->machine != EM_X86_64 || h->phentsize != sizeof(struct phdr))
		return -E_INVAL;
	if (h->phoff > len || (uint64_t)h->phnum * sizeof(struct phdr) > len - h->phoff)
		return -E_INVAL;
	if (!in_user(h->entry, 1))
		return -E_INVAL;
	return 0;
}

static long check_segment(const struct phdr *ph, size_t len)
{
	if (ph->filesz > ph->memsz || ph->offset > len || ph->filesz > len - ph->offset)
		return -E_INVAL;
	if (!in_user(ph->vaddr, ph->memsz))
		return -E_INVAL;
	return 0;
}

// Returns the frame behind va in vs, mapping a fresh owned one if needed.
static paddr_t page_for(long vs, uint64_t va, uint64_t flags)
{
	uint64_t *pte = vspace_pte(vs, va);
	if (pte && (*pte & PTE_P)) {
		*pte = (*pte | (flags & PTE_W)) & ~((flags & PTE_NX) ? 0 : PTE_NX);
		return *pte & PTE_ADDR_MASK;
	}
	paddr_t pa = pmem_alloc();
	if (!pa)
		return 0;
	if (vspace_map(vs, va, pa, flags | PTE_OWNED) < 0) {
		pmem_free(pa);
		return 0;
	}
	return pa;
}

static long load_segment(long vs, const uint8_t *img, const struct phdr *ph)
{
	uint64_t flags = PTE_U | ((ph->flags & PF_W) ? PTE_W : 0) | ((ph->flags & PF_X) ? 0 : PTE_NX);
	uint64_t start = PAGE_ROUND_DOWN(ph->vaddr), end = PAGE_ROUND_UP(ph->vaddr + ph->memsz);
	for (uint64_t va = start; va < end; va += PAGE_SIZE) {
		paddr_t pa = page_for(vs, va, flags);
		if (!pa)
			return -E_NOMEM;
		// Copy the part of [vaddr, vaddr+filesz) that falls in this page.
		uint64_t lo = va > ph->vaddr ? va : ph->vaddr;
		uint64_t hi = va + PAGE_SIZE < ph->vaddr + ph->filesz ? va + PAGE_SIZE
								      : ph->vaddr + ph->filesz;
		if (hi > lo)
			memcpy((uint8_t *)arch_p2v(pa) + (lo - va), img + ph->offset + (lo - ph->vaddr),
			       hi - lo);
	}
	return 0;
}

long elf_load(long vs, const uint8_t *img, size_t len, uint64_t *entry)
{
	const struct ehdr *h = (const struct ehdr *)img;
	long r = check_header(h, len);
	if (r < 0)
		return r;
	const struct phdr *ph = (const struct phdr *)(img + h->phoff);
	int nload = 0;
	for (int i = 0; i < h->phnum; i++) {
		if (ph[i].type != PT_LOAD)
			continue;
		if ((r = check_segment(&ph[i], len)) < 0)
			return r;
		nload++;
	}
	if (nload == 0)
		return -E_INVAL;
	for (int i = 0; i < h->phnum; i++)
		if (ph[i].type == PT_LOAD && (r = load_segment(vs, img, &ph[i])) < 0)
			return r;
	*entry = h->entry;
	return 0;
}
