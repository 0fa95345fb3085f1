// What the boot loader told us, in one shape for Multiboot1 and Multiboot2.
#ifndef BOOTINFO_H
#define BOOTINFO_H
#include "arch/x86_64/arch.h" // paddr_t

// A range of physical memory the firmware reports usable.
struct mem_range {
	uint64_t base, len;
};

#define BOOT_MAX_RANGES 64

// The screen the firmware and loader left: VGA text (a BIOS boot), a linear
// RGB framebuffer (UEFI's GOP, or VBE), or none the kernel can use (then the
// console is COM1 only, and nothing is written to 0xb8000).
enum boot_con { BOOT_CON_NONE, BOOT_CON_EGA_TEXT, BOOT_CON_RGB };

struct boot_fb {
	int kind;                      // enum boot_con
	uint64_t addr;                 // physical
	uint32_t pitch, width, height; // bytes per line; pixels (characters in text mode)
	uint8_t bpp;                   // bits per pixel: 15, 16, 24 or 32 (RGB)
	uint8_t red_pos, red_size, green_pos, green_size, blue_pos, blue_size;
};

struct bootinfo {
	const char *loader;      // "multiboot1" or "multiboot2"
	const char *mmap_from;   // "multiboot", "efi" (Multiboot2's EFI map tag) or "none"
	int nram;
	struct mem_range ram[BOOT_MAX_RANGES]; // usable RAM
	char cmdline[1024];
	uint64_t rsdp;           // address of rsdp_copy when the loader gave one
	uint8_t rsdp_copy[40];   // the loader's structure may be reused later
	paddr_t info_lo, info_hi; // where the loader's structure lies
	struct boot_fb fb;
	bool efi;                // booted by UEFI firmware (any of tags 11, 12, 17-20)
	uint64_t efi_systab;     // the EFI system table (tags 11, 12), 0 if not given
	bool efi_bs_kept;        // the loader left UEFI boot services running (tag 18)
	int efi_descs;           // descriptors in the EFI memory map tag (17)
	uint64_t load_base;      // where the loader put the image (tag 21), 0 if not said
	int nbad;                // malformed tags skipped (bad sizes, checksums, formats)
	uint32_t bad_types;      // bit t set: a tag of type t (< 32) was malformed
};

// Returns 0, or -1 when the magic is neither Multiboot1 nor Multiboot2.
// Malformed Multiboot2 tags are skipped and counted (nbad, bad_types); the
// walk never reads past the structure's total_size nor past a tag's size.
int bootinfo_parse(struct bootinfo *bi, uint32_t magic, const void *info);

// True on a UEFI boot: the kernel then assumes no BIOS data area, no VGA
// text and no legacy ROM areas to scan.
static inline bool bootinfo_uefi(const struct bootinfo *bi) { return bi->efi; }
#endif
