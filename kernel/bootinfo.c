// Multiboot1 (spec 0.6.96, section 3.3) and Multiboot2 (spec 2.0, section
// 3.6) boot information: memory map, command line, ACPI RSDP, the screen,
// and whether UEFI firmware booted us.
#include "bootinfo.h"
#include <string.h>

#define MB1_MAGIC 0x2BADB002
#define MB2_MAGIC 0x36d76289

// Multiboot2 tag types (spec 3.6).
enum {
	TAG_END = 0,
	TAG_CMDLINE = 1,
	TAG_MMAP = 6,
	TAG_FB = 8,
	TAG_EFI32 = 11,
	TAG_EFI64 = 12,
	TAG_ACPI_OLD = 14,
	TAG_ACPI_NEW = 15,
	TAG_EFI_MMAP = 17,
	TAG_EFI_BS = 18,
	TAG_EFI32_IH = 19,
	TAG_EFI64_IH = 20,
	TAG_LOAD_BASE = 21,
};

#define FB_TYPE_RGB 1
#define FB_TYPE_EGA_TEXT 2
#define FB_MAX_DIM 16384
#define MMAP_ENTRY_MIN 24 // base, length, type, reserved
#define EFI_DESC_MIN 40   // EFI_MEMORY_DESCRIPTOR (UEFI 2.x, 7.2 GetMemoryMap)

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

// Adjacent ranges are merged: an EFI map lists memory in many pieces.
static void add_ram(struct bootinfo *bi, uint64_t base, uint64_t len)
{
	if (!len || base + len < base)
		return;
	struct mem_range *last = bi->nram ? &bi->ram[bi->nram - 1] : NULL;
	if (last && last->base + last->len == base)
		last->len += len;
	else if (bi->nram < BOOT_MAX_RANGES)
		bi->ram[bi->nram++] = (struct mem_range){ base, len };
}

static void bad_tag(struct bootinfo *bi, uint32_t type)
{
	bi->nbad++;
	if (type < 32)
		bi->bad_types |= 1u << type;
}

// A colour field of an RGB pixel: inside the pixel, 1 to 8 bits.
static bool field_ok(uint8_t pos, uint8_t size, uint8_t bpp)
{
	return size >= 1 && size <= 8 && pos + size <= bpp;
}

// The framebuffer fields from the address on (Multiboot1 offset 88 and the
// Multiboot2 tag's offset 8 share the layout); len bytes are readable.
// Returns false when they are malformed.
static bool parse_fb(struct bootinfo *bi, const uint8_t *f, uint32_t len)
{
	struct boot_fb fb = { .kind = BOOT_CON_NONE };
	if (len < 22)
		return false;
	fb.addr = rd64(f);
	fb.pitch = rd32(f + 8);
	fb.width = rd32(f + 12);
	fb.height = rd32(f + 16);
	fb.bpp = f[20];
	uint8_t type = f[21];
	if (!fb.addr || !fb.width || !fb.height || fb.width > FB_MAX_DIM || fb.height > FB_MAX_DIM)
		return false;
	if (type == FB_TYPE_EGA_TEXT) {
		if (fb.pitch < 2 * fb.width)
			return false;
		fb.kind = BOOT_CON_EGA_TEXT;
	} else if (type == FB_TYPE_RGB) {
		// Colour info after a 16-bit reserved word (Multiboot2) or at once
		// (Multiboot1's 6 bytes): the caller passes f so that it sits at +24.
		if (len < 30 || (fb.bpp != 15 && fb.bpp != 16 && fb.bpp != 24 && fb.bpp != 32))
			return false;
		const uint8_t *c = f + 24;
		fb.red_pos = c[0], fb.red_size = c[1];
		fb.green_pos = c[2], fb.green_size = c[3];
		fb.blue_pos = c[4], fb.blue_size = c[5];
		if (!field_ok(fb.red_pos, fb.red_size, fb.bpp) ||
		    !field_ok(fb.green_pos, fb.green_size, fb.bpp) ||
		    !field_ok(fb.blue_pos, fb.blue_size, fb.bpp))
			return false;
		if ((uint64_t)fb.pitch < (uint64_t)fb.width * ((fb.bpp + 7u) / 8))
			return false;
		fb.kind = BOOT_CON_RGB;
	} // indexed colour (type 0) or unknown: well formed, but no console for us
	if (fb.addr + (uint64_t)fb.pitch * fb.height < fb.addr)
		return false;
	bi->fb = fb;
	return true;
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
	bi->mmap_from = bi->nram ? "multiboot" : "none";
	// Our Multiboot1 loader is QEMU's -kernel on a BIOS PC: VGA text at
	// 0xb8000 unless the loader describes another screen (flag 12; its
	// colour info follows the type at once, 2 bytes before Multiboot2's).
	bi->fb = (struct boot_fb){ .kind = BOOT_CON_EGA_TEXT, .addr = 0xb8000, .pitch = 160,
				   .width = 80, .height = 25, .bpp = 16 };
	if (flags & (1 << 12)) {
		uint8_t f[30] = { 0 };
		memcpy(f, mbi + 88, 22);
		memcpy(f + 24, mbi + 110, 6);
		if (!parse_fb(bi, f, sizeof(f))) {
			bi->fb.kind = BOOT_CON_NONE;
			bi->nbad++;
		}
	}
	bi->info_lo = (paddr_t)(uintptr_t)mbi;
	bi->info_hi = bi->info_lo + 128;
}

// The command line, cut at the tag's end when the loader left no NUL.
static void parse_cmdline(struct bootinfo *bi, const uint8_t *s, uint32_t len)
{
	uint32_t n = 0;
	while (n < len && n + 1 < sizeof(bi->cmdline) && s[n])
		n++;
	memcpy(bi->cmdline, s, n);
	bi->cmdline[n] = 0;
}

// Multiboot2 memory map (spec 3.6.8): entry_size, entry_version, entries.
static bool parse_mmap(struct bootinfo *bi, const uint8_t *t, uint32_t size)
{
	if (size < 16)
		return false;
	uint32_t esz = rd32(t + 8);
	if (esz < MMAP_ENTRY_MIN || esz % 8)
		return false;
	for (uint32_t off = 16; off + esz <= size; off += esz)
		if (rd32(t + off + 16) == 1)
			add_ram(bi, rd64(t + off), rd64(t + off + 8));
	return true;
}

// The EFI memory map (tag 17): descriptor_size, descriptor_version, then
// EFI_MEMORY_DESCRIPTORs. Loader, boot-services and conventional memory are
// RAM once boot services have exited. Used when tag 6 is missing.
static bool parse_efi_mmap(struct bootinfo *bi, const uint8_t *t, uint32_t size, bool use)
{
	if (size < 16)
		return false;
	uint32_t dsz = rd32(t + 8);
	if (dsz < EFI_DESC_MIN || dsz % 8)
		return false;
	bi->efi_descs = 0;
	for (uint32_t off = 16; off + dsz <= size; off += dsz) {
		const uint8_t *d = t + off;
		uint32_t type = rd32(d);
		uint64_t base = rd64(d + 8), pages = rd64(d + 24);
		bi->efi_descs++;
		if (!use || pages > (UINT64_MAX >> PAGE_SHIFT) || (base & (PAGE_SIZE - 1)))
			continue;
		if (type == 1 || type == 2 || type == 3 || type == 4 || type == 7)
			add_ram(bi, base, pages << PAGE_SHIFT);
	}
	return true;
}

static uint8_t sum(const uint8_t *p, uint32_t n)
{
	uint8_t s = 0;
	while (n--)
		s += *p++;
	return s;
}

// ACPI 6.x 5.2.5.3: the first 20 bytes sum to 0; from revision 2 on, a
// length and an extended checksum over it follow. The old tag holds the
// first 20 bytes only (whatever the revision); the new tag wins over it.
static bool parse_rsdp(struct bootinfo *bi, const uint8_t *r, uint32_t len, bool newer)
{
	if (len < 20 || memcmp(r, "RSD PTR ", 8) || sum(r, 20))
		return false;
	uint32_t keep = 20;
	if (newer && r[15] >= 2) {
		uint32_t n = len >= 24 ? rd32(r + 20) : 0;
		if (n < 36 || n > len || sum(r, n))
			return false;
		keep = 36;
	}
	if (bi->rsdp && !newer)
		return true;
	memset(bi->rsdp_copy, 0, sizeof(bi->rsdp_copy));
	memcpy(bi->rsdp_copy, r, keep);
	bi->rsdp = (uint64_t)(uintptr_t)bi->rsdp_copy;
	return true;
}

// One tag; false when it is malformed (it is then ignored).
static bool parse_tag(struct bootinfo *bi, uint32_t type, const uint8_t *t, uint32_t size,
		      const uint8_t **efi_mmap)
{
	switch (type) {
	case TAG_CMDLINE:
		parse_cmdline(bi, t + 8, size - 8);
		return true;
	case TAG_MMAP:
		return parse_mmap(bi, t, size);
	case TAG_FB:
		return parse_fb(bi, t + 8, size - 8);
	case TAG_EFI32:
	case TAG_EFI64:
		if (size < (type == TAG_EFI32 ? 12u : 16u))
			return false;
		bi->efi = true;
		bi->efi_systab = type == TAG_EFI32 ? rd32(t + 8) : rd64(t + 8);
		return true;
	case TAG_ACPI_OLD:
	case TAG_ACPI_NEW:
		return parse_rsdp(bi, t + 8, size - 8, type == TAG_ACPI_NEW);
	case TAG_EFI_MMAP:
		bi->efi = true;
		*efi_mmap = t;
		return parse_efi_mmap(bi, t, size, false);
	case TAG_EFI_BS:
		bi->efi = bi->efi_bs_kept = true;
		return true;
	case TAG_EFI32_IH:
	case TAG_EFI64_IH:
		bi->efi = true;
		return true;
	case TAG_LOAD_BASE:
		if (size < 12)
			return false;
		bi->load_base = rd32(t + 8);
		return true;
	default:
		return true; // not ours to read
	}
}

static void parse_mb2(struct bootinfo *bi, const uint8_t *mbi)
{
	uint32_t total = *(const uint32_t *)mbi;
	const uint8_t *efi_mmap = NULL;
	bi->loader = "multiboot2";
	// Without a screen tag there is no screen we know: COM1 only.
	bi->fb.kind = BOOT_CON_NONE;
	for (uint64_t off = 8; off + 8 <= total;) {
		const uint8_t *t = mbi + off;
		uint32_t type = rd32(t), size = rd32(t + 4);
		if (type == TAG_END)
			break;
		if (size < 8 || size > total - off) { // would loop, or run past the end
			bad_tag(bi, type);
			break;
		}
		if (!parse_tag(bi, type, t, size, &efi_mmap))
			bad_tag(bi, type);
		off += (size + 7ull) & ~7ull;
	}
	bi->mmap_from = bi->nram ? "multiboot" : "none";
	if (!bi->nram && efi_mmap) {
		parse_efi_mmap(bi, efi_mmap, rd32(efi_mmap + 4), true);
		if (bi->nram)
			bi->mmap_from = "efi";
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
