// First-fit allocator over an address-ordered free list; neighbours are
// merged on free, so fragmentation stays bounded by live allocations.
// Safe under concurrent calls: the list and the counts are under lk
// (LK_HEAP).
#include "heap.h"
#include "kprintf.h"
#include "lock.h"
#include <string.h>

#define ALIGN 16
#define MAGIC_USED 0x5553454455534544ull

struct block {
	size_t size;        // bytes including this header
	union {
		struct block *next; // free: next free block by address
		uint64_t magic;     // used: MAGIC_USED
	};
};

static struct block *free_list;
static uint8_t *heap_lo, *heap_hi;
static size_t nallocs;
static struct spinlock lk = SPINLOCK_INIT("heap", LK_HEAP);

void heap_init(void *base, size_t size)
{
	uintptr_t b = ((uintptr_t)base + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1);
	size = (size - (b - (uintptr_t)base)) & ~(size_t)(ALIGN - 1);
	free_list = (struct block *)b;
	free_list->size = size;
	free_list->next = NULL;
	heap_lo = (uint8_t *)b;
	heap_hi = heap_lo + size;
	nallocs = 0;
}

static void *alloc_locked(size_t need)
{
	for (struct block **pp = &free_list; *pp; pp = &(*pp)->next) {
		struct block *b = *pp;
		if (b->size < need)
			continue;
		if (b->size - need >= sizeof(struct block) + ALIGN) { // split off the tail
			struct block *rest = (struct block *)((uint8_t *)b + need);
			rest->size = b->size - need;
			rest->next = b->next;
			b->size = need;
			*pp = rest;
		} else {
			*pp = b->next;
		}
		b->magic = MAGIC_USED;
		nallocs++;
		return b + 1;
	}
	return NULL;
}

void *kmalloc(size_t n)
{
	if (n == 0 || n > (size_t)(heap_hi - heap_lo))
		return NULL;
	size_t need = (n + sizeof(struct block) + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	spin_lock(&lk);
	void *p = alloc_locked(need);
	spin_unlock(&lk);
	return p;
}

void *kzalloc(size_t n)
{
	void *p = kmalloc(n);
	if (p)
		memset(p, 0, n);
	return p;
}

void kfree(void *p)
{
	if (!p)
		return;
	struct block *b = (struct block *)p - 1;
	if ((uint8_t *)b < heap_lo || (uint8_t *)b >= heap_hi || b->magic != MAGIC_USED)
		panic("kfree: %p is not a live heap block", p);
	spin_lock(&lk);
	struct block *prev = NULL, *next = free_list;
	while (next && next < b)
		prev = next, next = next->next;
	b->next = next;
	if (next && (uint8_t *)b + b->size == (uint8_t *)next) {
		b->size += next->size;
		b->next = next->next;
	}
	if (prev && (uint8_t *)prev + prev->size == (uint8_t *)b) {
		prev->size += b->size;
		prev->next = b->next;
	} else if (prev) {
		prev->next = b;
	} else {
		free_list = b;
	}
	nallocs--;
	spin_unlock(&lk);
}

void heap_stats(struct heap_stats *s)
{
	spin_lock(&lk);
	*s = (struct heap_stats){ .nallocs = nallocs };
	for (struct block *b = free_list; b; b = b->next) {
		s->bytes_free += b->size;
		s->nfree_blocks++;
	}
	s->bytes_used = (size_t)(heap_hi - heap_lo) - s->bytes_free;
	spin_unlock(&lk);
}

int heap_check(void)
{
	int ok = 1;
	spin_lock(&lk);
	for (struct block *b = free_list; b && ok; b = b->next) {
		if ((uint8_t *)b < heap_lo || (uint8_t *)b + b->size > heap_hi || b->size < ALIGN)
			ok = 0;
		else if (b->next && (uint8_t *)b + b->size >= (uint8_t *)b->next)
			ok = 0; // overlapping, out of order, or unmerged neighbours
	}
	spin_unlock(&lk);
	return ok;
}
