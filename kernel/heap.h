// Kernel heap: variable-sized allocations from one region reserved at boot
// (so the free-frame count of a run is not disturbed by heap growth).
#ifndef HEAP_H
#define HEAP_H
#include <stddef.h>
#include <stdint.h>

struct heap_stats {
	size_t bytes_free, bytes_used, nfree_blocks, nallocs;
};

void heap_init(void *base, size_t size);
void *kmalloc(size_t n);  // 16-byte aligned; NULL when no block fits
void *kzalloc(size_t n);
void kfree(void *p);      // NULL is allowed
void heap_stats(struct heap_stats *s);
// Walks the free list; false when it is corrupt (overlap, misorder, bad size).
int heap_check(void);
#endif
