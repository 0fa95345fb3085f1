// Loading static ELF64 user programs into a virtual space.
#ifndef ELF_H
#define ELF_H
#include <stdint.h>
#include <stddef.h>

// Maps every PT_LOAD segment of img into space vs with fresh frames owned by
// the space; returns 0 and the entry point, or a negative -E_* code (the
// caller destroys the space, which frees whatever was mapped).
long elf_load(long vs, const uint8_t *img, size_t len, uint64_t *entry);
#endif
