// Resources: every object the kernel manipulates has a kind, a manager that
// owns its table, and an identifier. Identifiers carry the kind and a
// generation number, so a stale or foreign identifier fails cleanly with
// -E_BADID instead of naming whatever reuses the slot.
#ifndef RES_H
#define RES_H
#include <stdint.h>
#include <stdbool.h>

enum res_kind {
	RES_VSPACE = 1,
	RES_PMEM,
	RES_VREGION,
	RES_VUSPACE,
	RES_PROC,
	RES_IO,
	RES_NKIND
};

// id = kind << 48 | generation << 12 | slot: positive, never 0. The
// generation has 32 bits: a slot reused once a microsecond takes over an
// hour to bring an old identifier back, and a resource another holds (a
// region registered in a channel) cannot be deleted and reused at all.
#define RES_SLOT_BITS 12
#define RES_KIND_SHIFT 48
#define RES_GEN_MASK 0xffffffffu
static inline long res_id(enum res_kind k, unsigned gen, unsigned slot)
{
	return ((long)k << RES_KIND_SHIFT) | ((long)(gen & RES_GEN_MASK) << RES_SLOT_BITS) | (long)slot;
}
static inline unsigned res_slot(long id) { return (unsigned)id & ((1u << RES_SLOT_BITS) - 1); }
static inline unsigned res_gen(long id) { return (unsigned)((unsigned long)id >> RES_SLOT_BITS) & RES_GEN_MASK; }
static inline bool res_kind_is(long id, enum res_kind k)
{
	return id > 0 && (id >> RES_KIND_SHIFT) == k && !((unsigned long)id >> (RES_SLOT_BITS + 32) & 0xf);
}
// The slot an identifier of kind k names in a table of n, or -1. The
// manager then checks that the slot is in use with the same generation.
static inline int res_index(long id, enum res_kind k, unsigned n)
{
	return res_kind_is(id, k) && res_slot(id) < n ? (int)res_slot(id) : -1;
}

// The one shape of every manager's operations. `caller` is the pid acting
// (0 for the kernel itself); arguments are the raw system-call words.
struct res_ops {
	const char *name;
	long (*create)(int caller, const uint64_t *a);
	long (*destroy)(int caller, long id);
	long (*control)(int caller, long id, uint64_t op, const uint64_t *a);
	void (*release)(int owner); // frees all the owner had, when it exits
};

const struct res_ops *res_ops_of(enum res_kind k);
// Releases every resource a process owned, manager by manager.
void res_release_owner(int pid);
// Counts live resources of every kind (for leak checks at exit).
long res_live(enum res_kind k);
#endif
