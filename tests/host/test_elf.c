// elf: loading ELF64 images built in memory into a fresh space.
#include "host.h"
#include "fake_arch.h"
#include "res/pmem.h"
#include "res/vspace.h"
#include "elf.h"
#include <elf.h> // the C library's definitions, independent of the loader's
#include "err.h" // lib/include: the kernel's codes, not the C library's err.h
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UA USER_BASE
#define TEXT_VA (UA + 0x400000)
#define DATA_VA (UA + 0x600000)

struct seg {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz;
};

// An image: ELF header, program headers right after it, then file bytes.
struct image {
	_Alignas(8) uint8_t b[64 * 1024];
	size_t len;
};

static Elf64_Ehdr *ehdr(struct image *im) { return (Elf64_Ehdr *)im->b; }
static Elf64_Phdr *phdr(struct image *im, int i)
{
	return (Elf64_Phdr *)(im->b + sizeof(Elf64_Ehdr)) + i;
}

// Builds a valid image; segment file bytes are filled with a pattern that
// identifies the byte's file offset.
static void build(struct image *im, const struct seg *s, int n, uint64_t entry, size_t len)
{
	memset(im, 0, sizeof(*im));
	for (size_t i = 0; i < sizeof(im->b); i++)
		im->b[i] = (uint8_t)(i * 7 + 3);
	Elf64_Ehdr *h = ehdr(im);
	memset(h, 0, sizeof(*h));
	memcpy(h->e_ident, ELFMAG, SELFMAG);
	h->e_ident[EI_CLASS] = ELFCLASS64;
	h->e_ident[EI_DATA] = ELFDATA2LSB;
	h->e_ident[EI_VERSION] = EV_CURRENT;
	h->e_type = ET_EXEC;
	h->e_machine = EM_X86_64;
	h->e_version = EV_CURRENT;
	h->e_entry = entry;
	h->e_phoff = sizeof(Elf64_Ehdr);
	h->e_ehsize = sizeof(Elf64_Ehdr);
	h->e_phentsize = sizeof(Elf64_Phdr);
	h->e_phnum = (uint16_t)n;
	for (int i = 0; i < n; i++) {
		Elf64_Phdr *p = phdr(im, i);
		*p = (Elf64_Phdr){ .p_type = s[i].type, .p_flags = s[i].flags,
				   .p_offset = s[i].offset, .p_vaddr = s[i].vaddr,
				   .p_paddr = s[i].vaddr, .p_filesz = s[i].filesz,
				   .p_memsz = s[i].memsz, .p_align = PAGE_SIZE };
	}
	im->len = len;
}

static struct image im; // 64 KiB: too big for a comfortable stack frame

// text: 0x1800 bytes at TEXT_VA (R X); data: 0x300 file bytes at
// DATA_VA+0x123 followed by 0x2000 bytes of bss (R W).
static const struct seg text_data[] = {
	{ PT_LOAD, PF_R | PF_X, 0x1000, TEXT_VA, 0x1800, 0x1800 },
	{ PT_LOAD, PF_R | PF_W, 0x3123, DATA_VA + 0x123, 0x300, 0x2300 },
};

static long load(long vs, uint64_t *entry)
{
	return elf_load(vs, im.b, im.len, entry);
}

static long space(void)
{
	long id = vspace_create();
	CU_ASSERT_FATAL(id > 0);
	return track_space(id);
}

static uint64_t pte(long vs, uint64_t va)
{
	uint64_t *e = vspace_pte(vs, va);
	return e ? *e : 0;
}

static void test_load_text_data_bss(void)
{
	build(&im, text_data, 2, TEXT_VA + 0x40, 0x4000);
	// Dirty every free frame so that zeroing is the loader's doing.
	static paddr_t all[20000];
	size_t n = 0;
	paddr_t pa;
	while ((pa = pmem_alloc_nozero()))
		memset(arch_p2v(all[n++] = pa), 0xcc, PAGE_SIZE);
	while (n)
		pmem_free(all[--n]);
	uint64_t n0 = pmem_free_count();
	long vs = space();
	uint64_t entry = 0;
	CU_ASSERT_EQUAL_FATAL(load(vs, &entry), 0);
	CU_ASSERT_EQUAL(entry, TEXT_VA + 0x40);

	static uint8_t got[0x3000];
	CU_ASSERT_FATAL(user_read(vs, TEXT_VA, got, 0x1800));
	CU_ASSERT_EQUAL(memcmp(got, im.b + 0x1000, 0x1800), 0);
	CU_ASSERT_FATAL(user_read(vs, DATA_VA + 0x123, got, 0x2300));
	CU_ASSERT_EQUAL(memcmp(got, im.b + 0x3123, 0x300), 0);
	size_t nz = 0;
	for (size_t i = 0x300; i < 0x2300; i++)
		nz += got[i] != 0;
	CU_ASSERT_EQUAL(nz, 0); // bss
	// The rest of the pages the segments touch is zero as well.
	CU_ASSERT_FATAL(user_read(vs, DATA_VA, got, 0x123));
	for (size_t i = 0; i < 0x123; i++)
		nz += got[i] != 0;
	CU_ASSERT_FATAL(user_read(vs, TEXT_VA + 0x1800, got, 0x800));
	for (size_t i = 0; i < 0x800; i++)
		nz += got[i] != 0;
	CU_ASSERT_EQUAL(nz, 0);

	// Text: user, executable, read-only. Data: user, writable, NX. All owned.
	for (uint64_t va = TEXT_VA; va < TEXT_VA + 0x2000; va += PAGE_SIZE)
		CU_ASSERT_EQUAL(pte(vs, va) & ~PTE_ADDR_MASK, PTE_P | PTE_U | PTE_OWNED);
	for (uint64_t va = DATA_VA; va < DATA_VA + 0x3000; va += PAGE_SIZE)
		CU_ASSERT_EQUAL(pte(vs, va) & ~PTE_ADDR_MASK,
				PTE_P | PTE_U | PTE_W | PTE_NX | PTE_OWNED);
	CU_ASSERT_EQUAL(pte(vs, TEXT_VA + 0x2000), 0);
	CU_ASSERT_EQUAL(pte(vs, TEXT_VA - PAGE_SIZE), 0);
	CU_ASSERT_EQUAL(pte(vs, DATA_VA + 0x3000), 0);
	// 2 text pages + 3 data pages, the root, PDPT + PD + 2 PTs.
	CU_ASSERT_EQUAL(vspace_tables(vs), 4);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 5 - 1 - 4);
	CU_ASSERT_EQUAL(vspace_destroy(vs), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
}

// Two segments in one page: both contents land in the same frame, the page
// gets the union of the permissions (W from data, X from text).
static void test_segments_share_page(void)
{
	static const struct seg s[] = {
		{ PT_LOAD, PF_R | PF_X, 0x1000, TEXT_VA, 0x900, 0x900 },
		{ PT_LOAD, PF_R | PF_W, 0x1900, TEXT_VA + 0x900, 0x1000, 0x1400 },
	};
	build(&im, s, 2, TEXT_VA, 0x3000);
	uint64_t n0 = pmem_free_count();
	long vs = space();
	uint64_t entry;
	CU_ASSERT_EQUAL_FATAL(load(vs, &entry), 0);
	static uint8_t got[0x2000];
	CU_ASSERT_FATAL(user_read(vs, TEXT_VA, got, 0x1d00));
	CU_ASSERT_EQUAL(memcmp(got, im.b + 0x1000, 0x1900), 0); // file-contiguous here
	for (size_t i = 0x1900; i < 0x1d00; i++)
		if (got[i])
			CU_FAIL_FATAL("bss of the second segment is not zero");
	CU_ASSERT_EQUAL(pte(vs, TEXT_VA) & ~PTE_ADDR_MASK, PTE_P | PTE_U | PTE_W | PTE_OWNED);
	CU_ASSERT_EQUAL(pte(vs, TEXT_VA + PAGE_SIZE) & ~PTE_ADDR_MASK,
			PTE_P | PTE_U | PTE_W | PTE_NX | PTE_OWNED);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 - 2 - 1 - 3); // one frame per page, not per segment
	CU_ASSERT_EQUAL(vspace_destroy(vs), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n0);
}

// A data segment first, then text in the same page: the page loses NX.
static void test_shared_page_order_independent(void)
{
	static const struct seg s[] = {
		{ PT_LOAD, PF_R | PF_W, 0x1800, TEXT_VA + 0x800, 0x100, 0x100 },
		{ PT_LOAD, PF_R | PF_X, 0x1000, TEXT_VA, 0x800, 0x800 },
	};
	build(&im, s, 2, TEXT_VA, 0x2000);
	long vs = space();
	uint64_t entry;
	CU_ASSERT_EQUAL_FATAL(load(vs, &entry), 0);
	CU_ASSERT_EQUAL(pte(vs, TEXT_VA) & ~PTE_ADDR_MASK, PTE_P | PTE_U | PTE_W | PTE_OWNED);
	static uint8_t got[0x900];
	CU_ASSERT_FATAL(user_read(vs, TEXT_VA, got, 0x900));
	CU_ASSERT_EQUAL(memcmp(got, im.b + 0x1000, 0x900), 0);
	CU_ASSERT_EQUAL(vspace_destroy(vs), 0);
}

// Non-LOAD headers are not checked against the file and not mapped.
static void test_ignores_other_headers(void)
{
	static const struct seg s[] = {
		{ PT_NOTE, PF_R, 0xfffffff0, 0x10, 0x1000000, 0x1000000 },
		{ PT_LOAD, PF_R | PF_X, 0x1000, TEXT_VA, 0x10, 0x10 },
		{ PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0 },
		{ PT_LOAD, PF_R, 0x1000, DATA_VA, 0, 0 }, // empty: nothing to map
	};
	build(&im, s, 4, TEXT_VA, 0x2000);
	long vs = space();
	uint64_t entry;
	CU_ASSERT_EQUAL(load(vs, &entry), 0);
	CU_ASSERT_EQUAL(pte(vs, TEXT_VA) & ~PTE_ADDR_MASK, PTE_P | PTE_U | PTE_OWNED);
	CU_ASSERT_EQUAL(pte(vs, DATA_VA), 0);
	CU_ASSERT_EQUAL(vspace_tables(vs), 3);
	CU_ASSERT_EQUAL(vspace_destroy(vs), 0);
}

typedef void (*mutate_fn)(struct image *);
static void m_magic(struct image *i) { ehdr(i)->e_ident[EI_MAG1] = 'e'; }
static void m_class32(struct image *i) { ehdr(i)->e_ident[EI_CLASS] = ELFCLASS32; }
static void m_bigendian(struct image *i) { ehdr(i)->e_ident[EI_DATA] = ELFDATA2MSB; }
static void m_machine(struct image *i) { ehdr(i)->e_machine = EM_386; }
static void m_aarch64(struct image *i) { ehdr(i)->e_machine = EM_AARCH64; }
static void m_dyn(struct image *i) { ehdr(i)->e_type = ET_DYN; }
static void m_rel(struct image *i) { ehdr(i)->e_type = ET_REL; }
static void m_phentsize(struct image *i) { ehdr(i)->e_phentsize = 32; }
static void m_phoff_past(struct image *i) { ehdr(i)->e_phoff = i->len + 8; }
static void m_phoff_huge(struct image *i) { ehdr(i)->e_phoff = ~0ull - 7; }
static void m_phnum_past(struct image *i) { ehdr(i)->e_phoff = i->len - 56; }
static void m_phnum_many(struct image *i) { ehdr(i)->e_phnum = 0xffff; }
static void m_short(struct image *i) { i->len = sizeof(Elf64_Ehdr) - 1; }
static void m_entry_kernel(struct image *i) { ehdr(i)->e_entry = 0x100000; }
static void m_entry_top(struct image *i) { ehdr(i)->e_entry = USER_TOP; }
static void m_off_past(struct image *i) { phdr(i, 1)->p_offset = i->len + 1; }
static void m_file_past(struct image *i) { phdr(i, 1)->p_filesz = i->len - 0x3123 + 1, phdr(i, 1)->p_memsz = 0x10000; }
static void m_off_wrap(struct image *i) { phdr(i, 1)->p_offset = ~0ull - 0xff; }
static void m_filesz_gt_memsz(struct image *i) { phdr(i, 1)->p_memsz = 0x2ff; }
static void m_vaddr_low(struct image *i) { phdr(i, 0)->p_vaddr = 0x400000; }
static void m_vaddr_below_user(struct image *i) { phdr(i, 0)->p_vaddr = USER_BASE - 0x1000; }
static void m_vaddr_kernel_high(struct image *i) { phdr(i, 0)->p_vaddr = 0xffffffff80000000ull; }
static void m_vaddr_mmio(struct image *i) { phdr(i, 0)->p_vaddr = MMIO_BASE; }
static void m_cross_top(struct image *i) { phdr(i, 1)->p_vaddr = USER_TOP - 0x1000; }
static void m_memsz_wrap(struct image *i) { phdr(i, 1)->p_memsz = ~0ull - 0xfff; }
static void m_memsz_huge(struct image *i) { phdr(i, 1)->p_memsz = USER_TOP; }
static void m_no_load(struct image *i)
{
	phdr(i, 0)->p_type = PT_NOTE;
	phdr(i, 1)->p_type = PT_PHDR;
}
static void m_no_phdrs(struct image *i) { ehdr(i)->e_phnum = 0; }

static void test_rejects(void)
{
	static const struct {
		const char *what;
		mutate_fn m;
	} cases[] = {
		{ "bad magic", m_magic },
		{ "32-bit class", m_class32 },
		{ "big endian", m_bigendian },
		{ "i386 machine", m_machine },
		{ "aarch64 machine", m_aarch64 },
		{ "ET_DYN", m_dyn },
		{ "ET_REL", m_rel },
		{ "phentsize", m_phentsize },
		{ "phdrs past the file", m_phoff_past },
		{ "phoff wraps", m_phoff_huge },
		{ "phdr table crosses the end", m_phnum_past },
		{ "65535 phdrs", m_phnum_many },
		{ "file shorter than a header", m_short },
		{ "entry in the kernel", m_entry_kernel },
		{ "entry at USER_TOP", m_entry_top },
		{ "segment offset past the file", m_off_past },
		{ "segment bytes past the file", m_file_past },
		{ "segment offset wraps", m_off_wrap },
		{ "filesz > memsz", m_filesz_gt_memsz },
		{ "segment in kernel RAM map", m_vaddr_low },
		{ "segment below USER_BASE", m_vaddr_below_user },
		{ "segment in the high half", m_vaddr_kernel_high },
		{ "segment in the MMIO window", m_vaddr_mmio },
		{ "segment crossing USER_TOP", m_cross_top },
		{ "memsz wraps the address space", m_memsz_wrap },
		{ "memsz larger than user space", m_memsz_huge },
		{ "no PT_LOAD", m_no_load },
		{ "no program headers", m_no_phdrs },
	};
	long vs = space();
	uint64_t n0 = pmem_free_count();
	char msg[128];
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		build(&im, text_data, 2, TEXT_VA, 0x4000);
		cases[c].m(&im);
		uint64_t entry = 0x1234;
		long r = load(vs, &entry);
		snprintf(msg, sizeof(msg), "%s: got %ld, want -E_INVAL", cases[c].what, r);
		CU_assertImplementation(r == -E_INVAL, __LINE__, msg, __FILE__, "", CU_FALSE);
		// Checked before anything is mapped: a failed load changes nothing.
		snprintf(msg, sizeof(msg), "%s: the failed load mapped something", cases[c].what);
		CU_assertImplementation(vspace_tables(vs) == 0 && pmem_free_count() == n0, __LINE__,
					msg, __FILE__, "", CU_FALSE);
		CU_ASSERT_EQUAL(entry, 0x1234);
	}
	// The unmutated image loads in the same space.
	build(&im, text_data, 2, TEXT_VA, 0x4000);
	uint64_t entry;
	CU_ASSERT_EQUAL(load(vs, &entry), 0);
	CU_ASSERT_EQUAL(vspace_destroy(vs), 0);
}

// A segment ending exactly at USER_TOP is accepted.
static void test_segment_at_user_top(void)
{
	static const struct seg s[] = {
		{ PT_LOAD, PF_R | PF_W, 0x1000, USER_TOP - 0x2000, 0x100, 0x2000 },
	};
	build(&im, s, 1, USER_TOP - 0x2000, 0x2000);
	long vs = space();
	uint64_t entry;
	CU_ASSERT_EQUAL(load(vs, &entry), 0);
	CU_ASSERT_TRUE(pte(vs, USER_TOP - PAGE_SIZE) & PTE_P);
	CU_ASSERT_EQUAL(vspace_destroy(vs), 0);
}

// Running out of frames half-way fails with E_NOMEM; destroying the space
// then returns every frame (the contract in elf.h).
static void test_out_of_frames(void)
{
	static const struct seg s[] = {
		{ PT_LOAD, PF_R | PF_W, 0x1000, DATA_VA, 0x1000, 0x40000 }, // 64 pages
	};
	build(&im, s, 1, DATA_VA, 0x2000);
	long vs = space();
	uint64_t n0 = pmem_free_count();
	static paddr_t hold[20000];
	size_t taken = 0;
	paddr_t pa;
	while (pmem_free_count() > 20 && (pa = pmem_alloc()))
		hold[taken++] = pa;
	uint64_t entry = 7;
	CU_ASSERT_EQUAL(load(vs, &entry), -E_NOMEM);
	CU_ASSERT_EQUAL(entry, 7);
	CU_ASSERT_EQUAL(pmem_free_count(), 0);
	CU_ASSERT_EQUAL(vspace_destroy(vs), 0);
	while (taken)
		pmem_free(hold[--taken]);
	CU_ASSERT_EQUAL(pmem_free_count(), n0 + 1); // + the root
}

// Segment edges one byte either side of a page boundary: the single byte
// in the first or last page is copied too.
static void test_one_byte_edges(void)
{
	static const struct seg s[] = {
		{ PT_LOAD, PF_R, 0x1fff, DATA_VA + 0xfff, 2, 2 },                // 1 byte + 1 byte
		{ PT_LOAD, PF_R, 0x2100, DATA_VA + 0x3000, 0x1001, 0x1001 },     // page + 1 byte
		{ PT_LOAD, PF_R, 0x4000, DATA_VA + 0x6000, 1, 0x3000 },          // 1 byte, then bss
	};
	build(&im, s, 3, DATA_VA, 0x5000);
	long vs = space();
	uint64_t entry;
	CU_ASSERT_EQUAL_FATAL(load(vs, &entry), 0);
	uint8_t got[0x1001];
	CU_ASSERT_FATAL(user_read(vs, DATA_VA + 0xfff, got, 2));
	CU_ASSERT_EQUAL(memcmp(got, im.b + 0x1fff, 2), 0);
	CU_ASSERT_FATAL(user_read(vs, DATA_VA + 0x3000, got, 0x1001));
	CU_ASSERT_EQUAL(memcmp(got, im.b + 0x2100, 0x1001), 0);
	CU_ASSERT_FATAL(user_read(vs, DATA_VA + 0x6000, got, 2));
	CU_ASSERT_EQUAL(got[0], im.b[0x4000]);
	CU_ASSERT_EQUAL(got[1], 0);
	CU_ASSERT_EQUAL(pte(vs, DATA_VA + 0x2000), 0); // the gap stays unmapped
	CU_ASSERT_EQUAL(pte(vs, DATA_VA + 0x5000), 0);
	CU_ASSERT_TRUE(pte(vs, DATA_VA + 0x8000) & PTE_P);
	CU_ASSERT_EQUAL(vspace_destroy(vs), 0);
}

// Loading twice into one space: the second load rewrites the same frames.
static void test_reload_same_space(void)
{
	build(&im, text_data, 2, TEXT_VA, 0x4000);
	long vs = space();
	uint64_t entry;
	CU_ASSERT_EQUAL_FATAL(load(vs, &entry), 0);
	uint64_t n = pmem_free_count();
	CU_ASSERT_EQUAL(load(vs, &entry), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n);
	CU_ASSERT_EQUAL(vspace_destroy(vs), 0);
}

int register_elf(void)
{
	static const struct test_case t[] = {
		TEST(test_load_text_data_bss),
		TEST(test_segments_share_page),
		TEST(test_shared_page_order_independent),
		TEST(test_ignores_other_headers),
		TEST(test_rejects),
		TEST(test_segment_at_user_top),
		TEST(test_out_of_frames),
		TEST(test_one_byte_edges),
		TEST(test_reload_same_space),
	};
	return ADD_SUITE("elf", machine_setup, machine_teardown, t);
}
