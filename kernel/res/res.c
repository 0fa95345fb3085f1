// The table of managers: adding a resource kind is a file and a line here.
#include "res.h"
#include <stddef.h>
#include <string.h>

extern const struct res_ops vregion_ops, vuspace_ops, proc_ops, vspace_ops, io_ops;

static const struct res_ops *const managers[RES_NKIND] = {
	[RES_VSPACE] = &vspace_ops,
	[RES_VREGION] = &vregion_ops,
	[RES_VUSPACE] = &vuspace_ops,
	[RES_PROC] = &proc_ops,
	[RES_IO] = &io_ops,
};

static struct res_hdr *slot_at(const struct res_table *t, unsigned i)
{
	return (struct res_hdr *)((char *)t->slots + (size_t)i * t->size);
}

void *res_alloc(const struct res_table *t)
{
	for (unsigned i = t->first; i < t->n; i++) {
		struct res_hdr *h = slot_at(t, i);
		if (h->used)
			continue;
		uint32_t gen = (h->gen + 1) & RES_GEN_MASK;
		memset(h, 0, t->size);
		*h = (struct res_hdr){ .gen = gen, .used = true };
		h->name = res_name(t, h);
		return h;
	}
	return NULL;
}

long res_name(const struct res_table *t, const void *slot)
{
	const struct res_hdr *h = slot;
	return res_id(t->kind, h->gen, (unsigned)(((const char *)slot - (char *)t->slots) / t->size));
}

void res_free(void *slot)
{
	struct res_hdr *h = slot;
	h->used = false;
	h->name = 0; // no identifier names a free slot
}

long res_count(const struct res_table *t)
{
	long n = 0;
	for (unsigned i = 0; i < t->n; i++)
		n += slot_at(t, i)->used;
	return n;
}

const struct res_ops *res_ops_of(enum res_kind k)
{
	return k > 0 && k < RES_NKIND ? managers[k] : NULL;
}

// Attachments go before the regions they map, regions before spaces.
void res_release_owner(int pid)
{
	static const enum res_kind order[] = { RES_IO, RES_VUSPACE, RES_VREGION };
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const struct res_ops *m = res_ops_of(order[i]);
		if (m && m->release)
			m->release(pid);
	}
}

long res_live(enum res_kind k)
{
	const struct res_ops *m = res_ops_of(k);
	return m && m->live ? m->live() : 0;
}
