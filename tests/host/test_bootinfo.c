// bootinfo: Multiboot1 and Multiboot2 information built in memory.
#include "host.h"
#include "bootinfo.h"
#include <CUnit/CUnit.h>
#include <stdlib.h>
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

// RSDPs with valid checksums (ACPI 6.x 5.2.5.3): revision 0 (20 bytes)
// and revision 2 (36 bytes, XSDT address, extended checksum).
static uint8_t rsdp_v1[20], rsdp_v2[36];

static uint8_t sum8(const uint8_t *p, size_t n)
{
	uint8_t s = 0;
	while (n--)
		s += *p++;
	return s;
}

static void make_rsdp(uint8_t *r, uint8_t rev, const char *oem, uint32_t rsdt, uint64_t xsdt)
{
	memset(r, 0, rev >= 2 ? 36 : 20);
	memcpy(r, "RSD PTR ", 8);
	memcpy(r + 9, oem, 6);
	r[15] = rev;
	put32(r + 16, rsdt);
	r[8] = (uint8_t)-sum8(r, 20);
	if (rev >= 2) {
		put32(r + 20, 36);
		put64(r + 24, xsdt);
		r[32] = (uint8_t)-sum8(r, 36);
	}
}

static void make_rsdps(void)
{
	make_rsdp(rsdp_v1, 0, "OEMID1", 0x0e1000, 0);
	make_rsdp(rsdp_v2, 2, "OEMID2", 0x0e1000, 0x0e2000);
}

static void test_mb2_full(void)
{
	make_rsdps();
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
	make_rsdps();
	mb2_begin();
	memcpy(mb2_tag(15, 8 + 36) + 8, rsdp_v2, 36);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(bi.rsdp, (uint64_t)(uintptr_t)bi.rsdp_copy);
	CU_ASSERT_EQUAL(memcmp(bi.rsdp_copy, rsdp_v2, 36), 0);
	CU_ASSERT_EQUAL(bi.nbad, 0);
	// GRUB passes both, old first: the new one (its XSDT) is kept, in
	// either order.
	for (int order = 0; order < 2; order++) {
		mb2_begin();
		if (order)
			memcpy(mb2_tag(15, 8 + 36) + 8, rsdp_v2, 36);
		memcpy(mb2_tag(14, 8 + 20) + 8, rsdp_v1, 20);
		if (!order)
			memcpy(mb2_tag(15, 8 + 36) + 8, rsdp_v2, 36);
		mb2_end();
		CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
		CU_ASSERT_EQUAL(bi.rsdp, (uint64_t)(uintptr_t)bi.rsdp_copy);
		CU_ASSERT_EQUAL(memcmp(bi.rsdp_copy, rsdp_v2, 36), 0);
	}
	// UEFI: the old tag holds the first 20 bytes of a revision-2 RSDP.
	mb2_begin();
	memcpy(mb2_tag(14, 8 + 20) + 8, rsdp_v2, 20);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(memcmp(bi.rsdp_copy, rsdp_v2, 20), 0);
	CU_ASSERT_EQUAL(bi.rsdp_copy[20], 0); // nothing past what the tag held
	CU_ASSERT_EQUAL(bi.nbad, 0);
	// An oversized new tag: its length field says how much is the RSDP.
	mb2_begin();
	uint8_t *t = mb2_tag(15, 8 + 64);
	memset(t + 8, 0x3c, 64);
	memcpy(t + 8, rsdp_v2, 36);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(memcmp(bi.rsdp_copy, rsdp_v2, 36), 0);
	CU_ASSERT_EQUAL(bi.rsdp_copy[36], 0);
}

// A broken RSDP is skipped and counted; one good tag after it still counts.
static void test_mb2_rsdp_malformed(void)
{
	make_rsdps();
	uint8_t bad[6][36];
	int len[6] = { 20, 36, 36, 36, 12, 36 };
	int type[6] = { 14, 15, 15, 15, 14, 15 };
	memcpy(bad[0], rsdp_v1, 20);
	bad[0][8] ^= 1; // checksum
	memcpy(bad[1], rsdp_v2, 36);
	bad[1][32] ^= 1; // extended checksum
	memcpy(bad[2], rsdp_v2, 36);
	memcpy(bad[2], "RSD PTX ", 8); // signature (checksum fixed below)
	bad[2][8] = 0;
	bad[2][8] = (uint8_t)-sum8(bad[2], 20);
	memcpy(bad[3], rsdp_v2, 36);
	put32(bad[3] + 20, 200); // a length past the tag
	bad[3][8] = 0;
	bad[3][8] = (uint8_t)-sum8(bad[3], 20);
	memcpy(bad[4], rsdp_v1, 12); // cut short
	memcpy(bad[5], rsdp_v2, 36);
	put32(bad[5] + 20, 20); // revision 2 but a length below its own fields
	bad[5][8] = 0;
	bad[5][8] = (uint8_t)-sum8(bad[5], 20);
	for (int i = 0; i < 6; i++) {
		mb2_begin();
		memcpy(mb2_tag((uint32_t)type[i], 8 + (uint32_t)len[i]) + 8, bad[i], (size_t)len[i]);
		mb2_cmdline("after=1");
		mb2_end();
		CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
		CU_ASSERT_EQUAL(bi.rsdp, 0);
		CU_ASSERT_EQUAL(bi.nbad, 1);
		CU_ASSERT_EQUAL(bi.bad_types, 1u << type[i]);
		CU_ASSERT_STRING_EQUAL(bi.cmdline, "after=1"); // the walk went on
	}
	// A bad new tag does not hide a good old one.
	mb2_begin();
	memcpy(mb2_tag(14, 8 + 20) + 8, rsdp_v1, 20);
	memcpy(mb2_tag(15, 8 + 36) + 8, bad[1], 36);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(memcmp(bi.rsdp_copy, rsdp_v1, 20), 0);
	CU_ASSERT_EQUAL(bi.nbad, 1);
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

// The framebuffer tag (spec 3.6.12): address, pitch, width, height, bpp,
// type, a reserved word, then for RGB the colour fields' positions and sizes.
static uint8_t *mb2_fb(uint32_t size, uint64_t addr, uint32_t pitch, uint32_t w, uint32_t h,
		       uint8_t bpp, uint8_t type, const uint8_t *colour)
{
	uint8_t *t = mb2_tag(8, size);
	put64(t + 8, addr);
	put32(t + 16, pitch);
	put32(t + 20, w);
	put32(t + 24, h);
	t[28] = bpp;
	t[29] = type;
	t[30] = t[31] = 0;
	if (colour && size >= 38)
		memcpy(t + 32, colour, 6);
	return t;
}

static const uint8_t xrgb[6] = { 16, 8, 8, 8, 0, 8 };  // GOP's BGRX: red at bit 16
static const uint8_t rgb565[6] = { 11, 5, 5, 6, 0, 5 };

static void test_mb2_framebuffer(void)
{
	// UEFI's GOP through GRUB: 32-bit pixels, red at bit 16.
	mb2_begin();
	mb2_fb(38, 0x80000000, 5120, 1280, 800, 32, 1, xrgb);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(bi.fb.kind, BOOT_CON_RGB);
	CU_ASSERT_EQUAL(bi.fb.addr, 0x80000000);
	CU_ASSERT_EQUAL(bi.fb.pitch, 5120);
	CU_ASSERT_EQUAL(bi.fb.width, 1280);
	CU_ASSERT_EQUAL(bi.fb.height, 800);
	CU_ASSERT_EQUAL(bi.fb.bpp, 32);
	CU_ASSERT_EQUAL(bi.fb.red_pos, 16);
	CU_ASSERT_EQUAL(bi.fb.green_pos, 8);
	CU_ASSERT_EQUAL(bi.fb.blue_pos, 0);
	CU_ASSERT_EQUAL(bi.fb.blue_size, 8);
	CU_ASSERT_EQUAL(bi.nbad, 0);
	// 16-bit 5:6:5 above 4 GiB, a pitch wider than the line.
	mb2_begin();
	mb2_fb(40, 0x4000000000ull, 2048, 1000, 700, 16, 1, rgb565);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(bi.fb.kind, BOOT_CON_RGB);
	CU_ASSERT_EQUAL(bi.fb.addr, 0x4000000000ull);
	CU_ASSERT_EQUAL(bi.fb.green_size, 6);
	// A BIOS boot in text mode: GRUB's EGA text tag.
	mb2_begin();
	mb2_fb(32, 0xb8000, 160, 80, 25, 16, 2, NULL);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(bi.fb.kind, BOOT_CON_EGA_TEXT);
	CU_ASSERT_EQUAL(bi.fb.addr, 0xb8000);
	CU_ASSERT_EQUAL(bi.fb.width, 80);
	// Indexed colour is well formed but gives no console; no tag at all
	// gives none either (never VGA text on a Multiboot2 boot without one).
	static const uint8_t palette[8] = { 2, 0, 0, 0, 0, 255, 255, 255 };
	mb2_begin();
	memcpy(mb2_fb(40, 0xa0000, 320, 320, 200, 8, 0, NULL) + 32, palette, 8);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(bi.fb.kind, BOOT_CON_NONE);
	CU_ASSERT_EQUAL(bi.nbad, 0);
	mb2_begin();
	mb2_cmdline("x=1");
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(bi.fb.kind, BOOT_CON_NONE);
}

static void test_mb2_framebuffer_malformed(void)
{
	static const uint8_t over[6] = { 28, 8, 8, 8, 0, 8 };  // red past bit 32
	static const uint8_t wide[6] = { 16, 9, 8, 8, 0, 8 };  // a 9-bit field
	static const uint8_t empty[6] = { 16, 0, 8, 8, 0, 8 }; // a 0-bit field
	struct {
		uint32_t size;
		uint64_t addr;
		uint32_t pitch, w, h;
		uint8_t bpp, type;
		const uint8_t *colour;
	} c[] = {
		{ 24, 0x80000000, 5120, 1280, 800, 32, 1, NULL },  // tag too short for its fields
		{ 36, 0x80000000, 5120, 1280, 800, 32, 1, xrgb },  // RGB without all colour bytes
		{ 38, 0x80000000, 5120, 1280, 800, 8, 1, xrgb },   // 8-bit RGB
		{ 38, 0x80000000, 4000, 1280, 800, 32, 1, xrgb },  // pitch below a line
		{ 38, 0x80000000, 5120, 0, 800, 32, 1, xrgb },     // no width
		{ 38, 0x80000000, 5120, 1280, 0, 32, 1, xrgb },    // no height
		{ 38, 0x80000000, 5120, 20000, 800, 32, 1, xrgb }, // absurd width
		{ 38, 0, 5120, 1280, 800, 32, 1, xrgb },           // no address
		{ 38, 0x80000000, 5120, 1280, 800, 32, 1, over },
		{ 38, 0x80000000, 5120, 1280, 800, 32, 1, wide },
		{ 38, 0x80000000, 5120, 1280, 800, 32, 1, empty },
		{ 38, ~0ull - 4096, 5120, 1280, 800, 32, 1, xrgb }, // wraps past 2^64
		{ 32, 0xb8000, 100, 80, 25, 16, 2, NULL },          // text pitch below 2 bytes a cell
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		mb2_begin();
		mb2_fb(c[i].size, c[i].addr, c[i].pitch, c[i].w, c[i].h, c[i].bpp, c[i].type,
		       c[i].colour);
		mb2_cmdline("after=1");
		mb2_end();
		CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
		CU_ASSERT_EQUAL(bi.fb.kind, BOOT_CON_NONE);
		CU_ASSERT_EQUAL(bi.nbad, 1);
		CU_ASSERT_EQUAL(bi.bad_types, 1u << 8);
		CU_ASSERT_STRING_EQUAL(bi.cmdline, "after=1");
	}
}

// Multiboot1 (QEMU's -kernel on a BIOS PC): VGA text unless flag 12
// describes another screen.
static void test_mb1_screen(void)
{
	uint8_t *info = mb1(0);
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB1_MAGIC, info), 0);
	CU_ASSERT_EQUAL(bi.fb.kind, BOOT_CON_EGA_TEXT);
	CU_ASSERT_EQUAL(bi.fb.addr, 0xb8000);
	CU_ASSERT_FALSE(bootinfo_uefi(&bi));
	info = mb1(1u << 12);
	put64(info + 88, 0xfd000000);
	put32(info + 96, 4096);
	put32(info + 100, 1024);
	put32(info + 104, 768);
	info[108] = 32;
	info[109] = 1;
	memcpy(info + 110, xrgb, 6);
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB1_MAGIC, info), 0);
	CU_ASSERT_EQUAL(bi.fb.kind, BOOT_CON_RGB);
	CU_ASSERT_EQUAL(bi.fb.addr, 0xfd000000);
	CU_ASSERT_EQUAL(bi.fb.red_pos, 16);
	CU_ASSERT_EQUAL(bi.fb.height, 768);
	info[108] = 7; // no such depth: no screen, counted
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB1_MAGIC, info), 0);
	CU_ASSERT_EQUAL(bi.fb.kind, BOOT_CON_NONE);
	CU_ASSERT_EQUAL(bi.nbad, 1);
}

// EFI_MEMORY_DESCRIPTORs of descriptor size dsz (UEFI firmware uses 48).
struct efi_desc {
	uint32_t type;
	uint64_t base, pages;
};

static void mb2_efi_mmap(const struct efi_desc *d, int n, uint32_t dsz)
{
	uint8_t *t = mb2_tag(17, 16 + dsz * (uint32_t)n);
	put32(t + 8, dsz);
	put32(t + 12, 1);
	for (int i = 0; i < n; i++) {
		uint8_t *e = t + 16 + dsz * (uint32_t)i;
		memset(e, 0, dsz);
		put32(e, d[i].type);
		put64(e + 8, d[i].base);
		put64(e + 16, 0); // virtual start
		put64(e + 24, d[i].pages);
		put64(e + 32, 0xf); // attributes
	}
}

// A slice of an OVMF map: loader, boot-services and conventional memory
// are RAM after ExitBootServices; runtime, ACPI, MMIO are not.
static const struct efi_desc ovmf_map[] = {
	{ 3, 0x0, 1 },           // boot services code
	{ 7, 0x1000, 0x9f },     // conventional
	{ 7, 0x100000, 0x700 },  // conventional, 1 MiB..8 MiB
	{ 10, 0x800000, 0x8 },   // ACPI NVS
	{ 7, 0x808000, 0x8 },    // conventional
	{ 4, 0x810000, 0xf0 },   // boot services data (adjacent: merged)
	{ 2, 0x900000, 0x100 },  // loader data (adjacent: merged)
	{ 5, 0xa00000, 0x10 },   // runtime services code
	{ 9, 0xa10000, 0x10 },   // ACPI reclaim
	{ 1, 0xa20000, 0x10 },   // loader code
	{ 11, 0xffe00000, 0x200 }, // MMIO
	{ 7, 0x123, 0x10 },      // unaligned: skipped
	{ 7, 0x2000000, 1ull << 60 }, // length past 2^64: skipped
};

static void test_mb2_uefi(void)
{
	const int n = (int)(sizeof(ovmf_map) / sizeof(ovmf_map[0]));
	// GRUB's x86_64-efi build: EFI64 system table, both memory maps,
	// boot services exited (no tag 18).
	mb2_begin();
	mb2_cmdline("run=demo");
	mb2_mmap(bios_map, 4);
	uint8_t *t = mb2_tag(12, 16);
	put64(t + 8, 0xf9ec018);
	mb2_efi_mmap(ovmf_map, n, 48);
	t = mb2_tag(21, 12);
	put32(t + 8, 0x100000);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_TRUE(bootinfo_uefi(&bi));
	CU_ASSERT_EQUAL(bi.efi_systab, 0xf9ec018);
	CU_ASSERT_FALSE(bi.efi_bs_kept);
	CU_ASSERT_EQUAL(bi.efi_descs, n);
	CU_ASSERT_EQUAL(bi.load_base, 0x100000);
	CU_ASSERT_STRING_EQUAL(bi.mmap_from, "multiboot"); // tag 6 wins
	CU_ASSERT_EQUAL(bi.nram, 2);
	CU_ASSERT_EQUAL(bi.nbad, 0);
	// Without tag 6 the EFI map is used: RAM types only, neighbours merged.
	mb2_begin();
	mb2_efi_mmap(ovmf_map, n, 48);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_TRUE(bootinfo_uefi(&bi));
	CU_ASSERT_STRING_EQUAL(bi.mmap_from, "efi");
	CU_ASSERT_EQUAL_FATAL(bi.nram, 4);
	CU_ASSERT_EQUAL(bi.ram[0].base, 0);
	CU_ASSERT_EQUAL(bi.ram[0].len, 0xa0000);
	CU_ASSERT_EQUAL(bi.ram[1].base, 0x100000);
	CU_ASSERT_EQUAL(bi.ram[1].len, 0x700000);
	CU_ASSERT_EQUAL(bi.ram[2].base, 0x808000);
	CU_ASSERT_EQUAL(bi.ram[2].len, 0x1f8000);
	CU_ASSERT_EQUAL(bi.ram[3].base, 0xa20000);
	CU_ASSERT_EQUAL(bi.ram[3].len, 0x10000);
	// Boot services left running (tag 18), a 32-bit system table.
	mb2_begin();
	mb2_tag(18, 8);
	t = mb2_tag(11, 12);
	put32(t + 8, 0x7f00000);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_TRUE(bi.efi_bs_kept);
	CU_ASSERT_EQUAL(bi.efi_systab, 0x7f00000);
	CU_ASSERT_STRING_EQUAL(bi.mmap_from, "none");
	// A BIOS boot has none of these.
	mb2_begin();
	mb2_mmap(bios_map, 9);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_FALSE(bootinfo_uefi(&bi));
}

static void test_mb2_uefi_malformed(void)
{
	static const uint32_t bad_dsz[] = { 0, 8, 32, 44 }; // none, too small, not 8-aligned
	for (size_t i = 0; i < sizeof(bad_dsz) / sizeof(bad_dsz[0]); i++) {
		mb2_begin();
		uint8_t *t = mb2_tag(17, 16 + 96);
		memset(t + 16, 0, 96);
		put32(t + 8, bad_dsz[i]);
		mb2_end();
		CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
		CU_ASSERT_EQUAL(bi.nram, 0);
		CU_ASSERT_EQUAL(bi.nbad, 1);
		CU_ASSERT_EQUAL(bi.bad_types, 1u << 17);
	}
	// Short tags: an EFI map without its header, system tables cut short.
	static const uint32_t type[] = { 17, 12, 11, 21 }, size[] = { 12, 12, 8, 8 };
	for (size_t i = 0; i < 4; i++) {
		mb2_begin();
		memset(mb2_tag(type[i], size[i]) + 8, 0x55, size[i] - 8);
		mb2_end();
		CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
		CU_ASSERT_EQUAL(bi.nbad, 1);
		CU_ASSERT_EQUAL(bi.efi_systab, 0);
		CU_ASSERT_EQUAL(bi.load_base, 0);
	}
	// A descriptor cut by the tag's end is not read.
	mb2_begin();
	mb2_efi_mmap(ovmf_map, 3, 48);
	put32(m.b + m.len - (16 + 144) + 4, 16 + 48 * 2 + 20);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(bi.efi_descs, 2);
}

// A tag that runs past total_size stops the walk; a command line without
// its NUL ends at the tag's end.
static void test_mb2_overruns(void)
{
	mb2_begin();
	mb2_cmdline("a=1");
	uint8_t *t = mb2_tag(6, 16 + 24);
	put32(t + 8, 24);
	mb2_end();
	put32(t + 4, 4096); // past the end
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_STRING_EQUAL(bi.cmdline, "a=1");
	CU_ASSERT_EQUAL(bi.nram, 0);
	CU_ASSERT_EQUAL(bi.nbad, 1);
	CU_ASSERT_EQUAL(bi.bad_types, 1u << 6);
	mb2_begin();
	t = mb2_tag(1, 8 + 5);
	memcpy(t + 8, "k=abcXXX", 8); // 5 bytes belong to the tag, no NUL among them
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_STRING_EQUAL(bi.cmdline, "k=abc");
	// Memory-map entries smaller than the fields read are refused.
	mb2_begin();
	t = mb2_tag(6, 16 + 16 * 2);
	put32(t + 8, 16);
	mb2_end();
	CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, m.b), 0);
	CU_ASSERT_EQUAL(bi.nram, 0);
	CU_ASSERT_EQUAL(bi.nbad, 1);
}

// Random bytes after a valid header, in a buffer of exactly total_size
// bytes: AddressSanitizer fails the test on any read past it.
static void test_mb2_random_tags(void)
{
	uint64_t seed = 0x5eed;
	for (int round = 0; round < 3000; round++) {
		uint32_t total = 8 + 8 * (uint32_t)prng_below(&seed, 64);
		uint8_t *b = malloc(total);
		CU_ASSERT_PTR_NOT_NULL_FATAL(b);
		for (uint32_t i = 0; i < total; i++)
			b[i] = (uint8_t)prng_next(&seed);
		put32(b, total);
		// Plausible tag headers now and then, so walks go deep.
		for (uint32_t off = 8; off + 8 <= total; off += 8)
			if (prng_below(&seed, 3) == 0) {
				static const uint32_t types[] = { 1, 6, 8, 11, 12, 14, 15, 17, 18, 21 };
				put32(b + off, types[prng_below(&seed, 10)]);
				put32(b + off + 4, 8 + (uint32_t)prng_below(&seed, 80));
			}
		CU_ASSERT_EQUAL(bootinfo_parse(&bi, MB2_MAGIC, b), 0);
		CU_ASSERT_TRUE(bi.nram <= BOOT_MAX_RANGES);
		CU_ASSERT_TRUE(strlen(bi.cmdline) < sizeof(bi.cmdline));
		free(b);
	}
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
		TEST(test_mb2_rsdp_malformed),
		TEST(test_mb2_framebuffer),
		TEST(test_mb2_framebuffer_malformed),
		TEST(test_mb1_screen),
		TEST(test_mb2_uefi),
		TEST(test_mb2_uefi_malformed),
		TEST(test_mb2_overruns),
		TEST(test_mb2_random_tags),
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
