// Resources: every object the kernel manipulates has a kind, a manager that
// owns its table, and an identifier. Identifiers carry the kind and a
// generation number, so a stale or foreign identifier fails cleanly with
// -E_BADID instead of naming whatever reuses the slot.
#ifndef RES_H
#define RES_H
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

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

// Every manager's table is an array of slots that start with this header;
// res_* below allocate, look up (generation-checked), name, free and
// count them, so the pattern is written once.
struct res_hdr {
	uint32_t gen; // steps at every allocation of the slot
	bool used;
	long name;    // the identifier naming the slot while used; 0 when free
};
struct res_table {
	enum res_kind kind;
	void *slots;   // the manager's array; each element starts with struct res_hdr
	size_t size;   // bytes per element
	unsigned n;    // elements
	unsigned first; // slots below are never handed out (the kernel's space)
};
#define RES_TABLE(k, arr, first_) { (k), (arr), sizeof((arr)[0]), sizeof(arr) / sizeof((arr)[0]), (first_) }

// The slot id names, if in use with the same generation; else NULL.
// Inline: one bounds check and one compare against the slot's name, which
// holds kind, generation and slot at once (every system call and the
// exchange's hot path look identifiers up).
static inline void *res_lookup(const struct res_table *t, long id)
{
	unsigned i = res_slot(id);
	if (id <= 0 || i >= t->n) // a free slot's name is 0
		return NULL;
	struct res_hdr *h = (struct res_hdr *)((char *)t->slots + (size_t)i * t->size);
	return h->name == id ? h : NULL;
}
// The first free slot, zeroed but for its stepped generation, marked used;
// NULL when the table is full.
void *res_alloc(const struct res_table *t);
long res_name(const struct res_table *t, const void *slot);
void res_free(void *slot);
long res_count(const struct res_table *t);

// What the kernel does with every kind of resource alike, through the
// table in res.c: free what an exiting process owned, and count what is
// live (the leak check at exit). Creation and control differ by kind and
// go through each manager's own system calls.
struct res_ops {
	const char *name;
	void (*release)(int owner); // frees all the owner had, when it exits
	long (*live)(void);         // how many exist now (NULL: not counted)
};

const struct res_ops *res_ops_of(enum res_kind k);
// Releases every resource a process owned, manager by manager.
void res_release_owner(int pid);
// Counts live resources of kind k (for leak checks at exit); 0 for a kind
// that is not counted.
long res_live(enum res_kind k);
#endif
