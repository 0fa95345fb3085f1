// What the boot loader told us, in one shape for Multiboot1 and Multiboot2.
#ifndef BOOTINFO_H
#define BOOTINFO_H
#include "res/pmem.h"

#define BOOT_MAX_RANGES 64

struct bootinfo {
	const char *loader;      // "multiboot1" or "multiboot2"
	int nram;
	struct mem_range ram[BOOT_MAX_RANGES]; // usable RAM
	char cmdline[1024];
	uint64_t rsdp;           // address of rsdp_copy when the loader gave one
	uint8_t rsdp_copy[40];   // the loader's structure may be reused later
	paddr_t info_lo, info_hi; // where the loader's structure lies
};

// Returns 0, or -1 when the magic is neither Multiboot1 nor Multiboot2.
int bootinfo_parse(struct bootinfo *bi, uint32_t magic, const void *info);
#endif
