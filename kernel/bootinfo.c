// Multiboot1 (spec 0.6.96, section 3.3) and Multiboot2 (spec 2.0, section
// 3.6) boot information: memory map, command line, ACPI RSDP.
#include "bootinfo.h"
#include <string.h>

#define MB1_MAGIC 0x2BADB002
#define MB2_MAGIC 0x36d76289

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static void add_ram(struct bootinfo *bi, uint64_t base, uint64_t len)
{
	if (bi->nram < BOOT_MAX_RANGES && len)
		bi->ram[bi->nram++] = (struct mem_range){ base, len };
}

static void parse_mb1(struct bootinfo *bi, const uint8_t *mbi)
{
	uint32_t flags = *(const uint32_t *)mbi;
	bi->loader = "multiboot1";
	if (flags & (1 << 2)) {
		// Multiboot1 loaders (QEMU, GRUB legacy) put the image path first.
		const char *c = (const char *)(uintptr_t) * (const uint32_t *)(mbi + 16);
		const char *sp = strchr(c, ' ');
		if (!strchr(c, '=') || (sp && strchr(c, '=') > sp))
			c = sp ? sp + 1 : "";
		strlcpy(bi->cmdline, c, sizeof(bi->cmdline));
	}
	if (flags & (1 << 6)) {
		uint32_t len = *(const uint32_t *)(mbi + 44);
		const uint8_t *p = (const uint8_t *)(uintptr_t) * (const uint32_t *)(mbi + 48);
		for (const uint8_t *e = p; e < p + len; e += rd32(e) + 4) {
			if (rd32(e + 20) == 1)
				add_ram(bi, rd64(e + 4), rd64(e + 12)); // fields at 4 mod 8: unaligned
		}
	} else if (flags & 1) { // only mem_lower/mem_upper (KiB)
		add_ram(bi, 0x100000, (uint64_t) * (const uint32_t *)(mbi + 8) << 10);
	}
	bi->info_lo = (paddr_t)(uintptr_t)mbi;
	bi->info_hi = bi->info_lo + 128;
}

static void parse_mb2(struct bootinfo *bi, const uint8_t *mbi)
{
	uint32_t total = *(const uint32_t *)mbi;
	bi->loader = "multiboot2";
	for (const uint8_t *t = mbi + 8; t < mbi + total;) {
		uint32_t type = *(const uint32_t *)t, size = *(const uint32_t *)(t + 4);
		if (type == 0 || size < 8)
			break;
		if (type == 1) {
			strlcpy(bi->cmdline, (const char *)(t + 8), sizeof(bi->cmdline));
		} else if (type == 6) {
			uint32_t esz = *(const uint32_t *)(t + 8);
			for (const uint8_t *e = t + 16; esz && e + esz <= t + size; e += esz)
				if (rd32(e + 16) == 1)
					add_ram(bi, rd64(e), rd64(e + 8));
		} else if ((type == 14 || type == 15) && !bi->rsdp) {
			uint32_t n = size - 8 < sizeof(bi->rsdp_copy) ? size - 8 : sizeof(bi->rsdp_copy);
			memcpy(bi->rsdp_copy, t + 8, n);
			bi->rsdp = (uint64_t)(uintptr_t)bi->rsdp_copy;
		}
		t += (size + 7) & ~7u;
	}
	bi->info_lo = (paddr_t)(uintptr_t)mbi;
	bi->info_hi = bi->info_lo + total;
}

int bootinfo_parse(struct bootinfo *bi, uint32_t magic, const void *info)
{
	memset(bi, 0, sizeof(*bi));
	if (magic == MB1_MAGIC)
		parse_mb1(bi, info);
	else if (magic == MB2_MAGIC)
		parse_mb2(bi, info);
	else
		return -1;
	return 0;
}
