// bootinfo: Multiboot1 and Multiboot2 information built in memory.
#include "host.h"
#include "bootinfo.h"
#include <CUnit/CUnit.h>
#include <string.h>
#include <sys/mman.h>

#define MB1_MAGIC 0x2BADB002u
#define MB2_MAGIC 0x36d76289u

static struct bootinfo bi; // 1.7 KiB

// Multiboot1 stores 32-bit physical addresses, so its structures must sit
// below 4 GiB: one anonymous mapping there holds them.
static uint8_t *low;
#define LOW_SIZE (64 * 1024)

static int suite_init(void)
{
	low = mmap(NULL, LOW_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
		   -1, 0);
	return low == MAP_FAILED ? -1 : 0;
}

static int suite_clean(void) { return munmap(low, LOW_SIZE); }

static uint32_t low32(const void *p) { return (uint32_t)(uintptr_t)p; }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

// The info structure at low+0 (116 bytes), the command line at low+0x200,
// the memory map at low+0x404: entries of 24 bytes whose 64-bit fields
// (at +4, +12) are then 8-aligned.
static uint8_t *mb1(uint32_t flags)
{
	memset(low, 0, LOW_SIZE);
	put32(low, flags);
	return low;
}

static void mb1_cmdline(const char *s)
{
	strcpy((char *)low + 0x200, s);
	put32(low + 16, low32(low + 0x200));
}

struct mmap_ent {
	uint64_t base, len;
	uint32_t type;
};

static void mb1_mmap(const struct mmap_ent *e, int n)
{
	uint8_t *p = low + 0x404;
	for (int i = 0; i < n; i++, p += 24) {
		put32(p, 20);
		put64(p + 4, e[i].base);
		put64(p + 12, e[i].len);
		put32(p + 20, e[i].type);
	}
	put32(low + 44, (uint32_t)n * 24);
	put32(low + 48, low32(low + 0x404));
}

static const struct mmap_ent bios_map[] = {
	{ 0, 0x9fc00, 1 },
	{ 0x9fc00, 0x400, 2 },
	{ 0xf0000, 0x10000, 2 },
	{ 0x100000, 0x7ee0000, 1 },
	{ 0x7fe0000, 0x20000, 3 }, // ACPI reclaimable: not RAM for us
	{ 0xfffc0000, 0x40000, 2 },
	{ 0x100000000ull, 0x40000000, 1 },
	{ 0x140000000ull, 0, 1 }, // empty: dropped
	{ 0x180000000ull, 0x1000, 4 },
};

static void test_mb1_full(void)
{
	uint8_t *info = mb1((1 << 0) | (1 << 2) | (1 << 6));
	put32(info + 4, 639);
	put32(info + 8, 130048);
	mb1_cmdline("/boot/kernel.elf run=demo,net log=2");
	mb1_mmap(bios_map, 9);
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB1_MAGIC, info), 0);
	CU_ASSERT_STRING_EQUAL(bi.loader, "multiboot1");
	CU_ASSERT_STRING_EQUAL(bi.cmdline, "run=demo,net log=2");
	CU_ASSERT_EQUAL_FATAL(bi.nram, 3); // the map wins over mem_upper
	CU_ASSERT_EQUAL(bi.ram[0].base, 0);
	CU_ASSERT_EQUAL(bi.ram[0].len, 0x9fc00);
	CU_ASSERT_EQUAL(bi.ram[1].base, 0x100000);
	CU_ASSERT_EQUAL(bi.ram[1].len, 0x7ee0000);
	CU_ASSERT_EQUAL(bi.ram[2].base, 0x100000000ull);
	CU_ASSERT_EQUAL(bi.ram[2].len, 0x40000000);
	CU_ASSERT_EQUAL(bi.rsdp, 0);
	CU_ASSERT_EQUAL(bi.info_lo, (paddr_t)(uintptr_t)info);
	CU_ASSERT_TRUE(bi.info_hi >= bi.info_lo + 116); // covers the fixed part
}

static void test_mb1_cmdline_path_stripped(void)
{
	static const struct {
		const char *given, *want;
	} c[] = {
		{ "/boot/kernel.elf run=a,b key=val flag", "run=a,b key=val flag" },
		{ "/boot/kernel.elf", "" },       // the path alone
		{ "kernel.elf flag", "flag" },    // no '=' anywhere: the first word is the path
		{ "run=demo log=1", "run=demo log=1" }, // no path (QEMU -append only)
		{ "run=x /notapath", "run=x /notapath" },
		{ "", "" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint8_t *info = mb1(1 << 2);
		mb1_cmdline(c[i].given);
		CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB1_MAGIC, info), 0);
		CU_ASSERT_STRING_EQUAL(bi.cmdline, c[i].want);
		CU_ASSERT_EQUAL(bi.nram, 0);
	}
}

static void test_mb1_long_cmdline_truncated(void)
{
	uint8_t *info = mb1(1 << 2);
	char s[3000];
	memset(s, 'a', sizeof(s) - 1);
	s[sizeof(s) - 1] = 0;
	memcpy(s, "/k x=", 5);
	mb1_cmdline(s);
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB1_MAGIC, info), 0);
	CU_ASSERT_EQUAL(strlen(bi.cmdline), sizeof(bi.cmdline) - 1);
	CU_ASSERT_EQUAL(memcmp(bi.cmdline, "x=aaa", 5), 0);
}

static void test_mb1_mem_upper_only(void)
{
	uint8_t *info = mb1(1 << 0);
	put32(info + 4, 639);
	put32(info + 8, 130048); // KiB above 1 MiB
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB1_MAGIC, info), 0);
	CU_ASSERT_EQUAL_FATAL(bi.nram, 1);
	CU_ASSERT_EQUAL(bi.ram[0].base, 0x100000);
	CU_ASSERT_EQUAL(bi.ram[0].len, 130048ull << 10);
	CU_ASSERT_STRING_EQUAL(bi.cmdline, "");
}

static void test_mb1_nothing(void)
{
	memset(&bi, 0x77, sizeof(bi));
	uint8_t *info = mb1(0);
	put32(info + 16, 0xdeadbeef); // ignored: flag 2 clear
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB1_MAGIC, info), 0);
	CU_ASSERT_EQUAL(bi.nram, 0);
	CU_ASSERT_STRING_EQUAL(bi.cmdline, "");
	CU_ASSERT_EQUAL(bi.rsdp, 0);
}

static void test_mb1_too_many_ranges(void)
{
	static struct mmap_ent e[80];
	for (int i = 0; i < 80; i++)
		e[i] = (struct mmap_ent){ 0x100000ull * (uint64_t)(i + 1), 0x80000, 1 };
	uint8_t *info = mb1(1 << 6);
	mb1_mmap(e, 80);
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB1_MAGIC, info), 0);
	CU_ASSERT_EQUAL(bi.nram, BOOT_MAX_RANGES);
	CU_ASSERT_EQUAL(bi.ram[BOOT_MAX_RANGES - 1].base, 0x100000ull * BOOT_MAX_RANGES);
}

// Multiboot2: tags of 8-byte-aligned size after an 8-byte header.
struct mb2 {
	_Alignas(8) uint8_t b[8192];
	size_t len;
};
static struct mb2 m;

static void mb2_begin(void)
{
	memset(&m, 0xee, sizeof(m));
	m.len = 8;
}

static uint8_t *mb2_tag(uint32_t type, uint32_t size)
{
	uint8_t *t = m.b + m.len;
	put32(t, type);
	put32(t + 4, size);
	m.len += (size + 7) & ~7u;
	return t;
}

static void mb2_end(void)
{
	mb2_tag(0, 8);
	put32(m.b, (uint32_t)m.len);
	put32(m.b + 4, 0);
}

static void mb2_cmdline(const char *s)
{
	uint8_t *t = mb2_tag(1, 8 + (uint32_t)strlen(s) + 1);
	strcpy((char *)t + 8, s);
}

static void mb2_mmap(const struct mmap_ent *e, int n)
{
	uint8_t *t = mb2_tag(6, 16 + 24 * (uint32_t)n);
	put32(t + 8, 24);
	put32(t + 12, 0);
	for (int i = 0; i < n; i++) {
		put64(t + 16 + 24 * i, e[i].base);
		put64(t + 24 + 24 * i, e[i].len);
		put32(t + 32 + 24 * i, e[i].type);
		put32(t + 36 + 24 * i, 0);
	}
}

static const uint8_t rsdp_v1[20] = "RSD PTR \x42OEMID1\x00\x10\x0e\x00";
static const uint8_t rsdp_v2[36] = "RSD PTR \x17OEMID2\x02\x00\x10\x0e\x00\x24\x00\x00\x00"
				   "\x00\x20\x0e\x00\x00\x00\x00\x00\x99";

static void test_mb2_full(void)
{
	mb2_begin();
	mb2_tag(21, 12); // load base address: unknown to the parser, skipped
	mb2_cmdline("run=demo log=3");
	mb2_mmap(bios_map, 9);
	memcpy(mb2_tag(14, 8 + 20) + 8, rsdp_v1, 20);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_STRING_EQUAL(bi.loader, "multiboot2");
	CU_ASSERT_STRING_EQUAL(bi.cmdline, "run=demo log=3"); // no path to strip
	CU_ASSERT_EQUAL_FATAL(bi.nram, 3);
	CU_ASSERT_EQUAL(bi.ram[1].base, 0x100000);
	CU_ASSERT_EQUAL(bi.ram[1].len, 0x7ee0000);
	CU_ASSERT_EQUAL(bi.ram[2].base, 0x100000000ull);
	// The RSDP is copied: the loader's memory may be reused.
	CU_ASSERT_EQUAL(bi.rsdp, (uint64_t)(uintptr_t)bi.rsdp_copy);
	CU_ASSERT_EQUAL(memcmp(bi.rsdp_copy, rsdp_v1, 20), 0);
	memset(m.b, 0, sizeof(m.b));
	CU_ASSERT_EQUAL(memcmp(bi.rsdp_copy, rsdp_v1, 20), 0);
	CU_ASSERT_EQUAL(bi.info_lo, (paddr_t)(uintptr_t)m.b);
	CU_ASSERT_EQUAL(bi.info_hi - bi.info_lo, m.len);
}

static void test_mb2_rsdp_v2_and_both(void)
{
	mb2_begin();
	memcpy(mb2_tag(15, 8 + 36) + 8, rsdp_v2, 36);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(bi.rsdp, (uint64_t)(uintptr_t)bi.rsdp_copy);
	CU_ASSERT_EQUAL(memcmp(bi.rsdp_copy, rsdp_v2, 36), 0);
	// GRUB passes both; exactly one of them is kept, intact.
	mb2_begin();
	memcpy(mb2_tag(14, 8 + 20) + 8, rsdp_v1, 20);
	memcpy(mb2_tag(15, 8 + 36) + 8, rsdp_v2, 36);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_NOT_EQUAL(bi.rsdp, 0);
	CU_ASSERT_TRUE(memcmp(bi.rsdp_copy, rsdp_v1, 20) == 0 ||
		       memcmp(bi.rsdp_copy, rsdp_v2, 36) == 0);
	// An oversized tag is cut to the copy's size.
	mb2_begin();
	uint8_t *t = mb2_tag(15, 8 + 64);
	memset(t + 8, 0x3c, 64);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(bi.rsdp_copy[sizeof(bi.rsdp_copy) - 1], 0x3c);
}

static void test_mb2_stops_at_end_tag(void)
{
	mb2_begin();
	mb2_cmdline("a=1");
	mb2_tag(0, 8); // end
	mb2_cmdline("b=2");
	mb2_mmap(bios_map, 4);
	put32(m.b, (uint32_t)m.len);
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_STRING_EQUAL(bi.cmdline, "a=1");
	CU_ASSERT_EQUAL(bi.nram, 0);
	// A tag with a size below its own header stops the walk instead of
	// looping on it.
	mb2_begin();
	mb2_cmdline("c=3");
	mb2_tag(6, 4);
	mb2_mmap(bios_map, 4);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_STRING_EQUAL(bi.cmdline, "c=3");
	CU_ASSERT_EQUAL(bi.nram, 0);
	// total_size bounds the walk even without an end tag.
	mb2_begin();
	mb2_cmdline("d=4");
	put32(m.b, (uint32_t)m.len);
	mb2_mmap(bios_map, 4); // past total_size
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_STRING_EQUAL(bi.cmdline, "d=4");
	CU_ASSERT_EQUAL(bi.nram, 0);
}

static void test_mb2_mmap_entry_size(void)
{
	// A newer loader may use bigger entries: the parser steps by entry_size.
	mb2_begin();
	uint8_t *t = mb2_tag(6, 16 + 32 * 3);
	put32(t + 8, 32);
	const struct mmap_ent e[3] = { { 0x100000, 0x1000000, 1 }, { 0x2000000, 0x1000, 2 },
				       { 0x4000000, 0x2000000, 1 } };
	for (int i = 0; i < 3; i++) {
		put64(t + 16 + 32 * i, e[i].base);
		put64(t + 24 + 32 * i, e[i].len);
		put32(t + 32 + 32 * i, e[i].type);
	}
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL_FATAL(bi.nram, 2);
	CU_ASSERT_EQUAL(bi.ram[1].base, 0x4000000);
	// entry_size 0 must not loop forever.
	mb2_begin();
	t = mb2_tag(6, 16 + 24);
	put32(t + 8, 0);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(bi.nram, 0);
}

static void test_mb2_long_cmdline(void)
{
	static char s[2000];
	memset(s, 'z', sizeof(s) - 1);
	mb2_begin();
	mb2_cmdline(s);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(strlen(bi.cmdline), sizeof(bi.cmdline) - 1);
}

static void test_unknown_magic(void)
{
	mb2_begin();
	mb2_cmdline("a=1");
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, 0x12345678, m.b), -1);
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, 0, m.b), -1);
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, 0xe85250d6, m.b), -1); // the header magic, not the boot one
	CU_ASSERT_EQUAL(bi.nram, 0);
	CU_ASSERT_STRING_EQUAL(bi.cmdline, "");
}

int register_bootinfo(void)
{
	static const struct test_case t[] = {
		TEST(test_mb1_full),
		TEST(test_mb1_cmdline_path_stripped),
		TEST(test_mb1_long_cmdline_truncated),
		TEST(test_mb1_mem_upper_only),
		TEST(test_mb1_nothing),
		TEST(test_mb1_too_many_ranges),
		TEST(test_mb2_full),
		TEST(test_mb2_rsdp_v2_and_both),
		TEST(test_mb2_stops_at_end_tag),
		TEST(test_mb2_mmap_entry_size),
		TEST(test_mb2_long_cmdline),
		TEST(test_unknown_magic),
	};
	CU_pSuite s = CU_add_suite("bootinfo", suite_init, suite_clean);
	if (!s)
		return -1;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!CU_add_test(s, t[i].name, t[i].fn))
			return -1;
	return 0;
}
