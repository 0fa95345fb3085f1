// Attachment manager: maps a region's frames into a space at an address and
// keeps the page tables in step when the region's frames change. Page tables
// for the whole range are made at attach time, so later updates (exchange,
// receive) never allocate and cannot fail.
#include "vuspace.h"
#include "vregion.h"
#include "vspace.h"
#include "proc.h"
#include <err.h>

struct vuspace {
	struct res_hdr h;
	int owner;
	long vs, vr;
	uint64_t va, npages;
	struct vspace_range range; // its leaf tables: updates walk nothing
};

static struct vuspace atts[NVUSPACE];
#define ATT_FLAGS (PTE_U | PTE_W | PTE_NX | PTE_HELD)

static const struct res_table table = RES_TABLE(RES_VUSPACE, atts, 0);

static struct vuspace *get(long id) { return res_lookup(&table, id); }

long vuspace_live(void) { return res_count(&table); }

uint64_t vuspace_addr(long id)
{
	struct vuspace *a = get(id);
	return a ? a->va : 0;
}

// Every page of [va, va+n pages) is free in vs; tables are created.
static long prepare(long vs, uint64_t va, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t *pte = vspace_pte(vs, va + i * PAGE_SIZE);
		if (pte && (*pte & (PTE_P | PTE_HELD)))
			return -E_EXIST;
	}
	for (uint64_t i = 0; i < n; i++) {
		// Map then unmap a placeholder: builds the page tables once.
		long r = vspace_map(vs, va + i * PAGE_SIZE, PAGE_SIZE, 0);
		uint64_t old;
		if (r < 0) {
			vspace_prune(vs, va, n); // the tables made so far map nothing
			return r;
		}
		vspace_unmap(vs, va + i * PAGE_SIZE, &old);
	}
	return 0;
}

static long attach_decode(int caller, long vr, long *vs, uint64_t va, uint64_t *n)
{
	long e = vregion_access(caller, vr);
	if (e)
		return e;
	long own = caller ? proc_vspace(caller) : *vs;
	if (own < 0)
		return own; // no such process (a caller always is one: defensive)
	if (*vs == 0)
		*vs = own;
	if (*vs != own)
		return vspace_valid(*vs) ? -E_NOTOWNER : -E_BADID;
	*n = vregion_pages(vr);
	if (va & (PAGE_SIZE - 1))
		return -E_ALIGN;
	if (va < USER_BASE || va >= USER_TOP || *n * PAGE_SIZE > USER_TOP - va)
		return -E_RANGE;
	return 0;
}

long vuspace_attach(int caller, long vr, long vs, uint64_t va)
{
	uint64_t n;
	long e = attach_decode(caller, vr, &vs, va, &n);
	if (e)
		return e;
	struct vuspace *a = res_alloc(&table);
	if (!a)
		return -E_NOMEM;
	if ((e = vregion_att_room(vr)) || (e = prepare(vs, va, n))) {
		res_free(a);
		return e;
	}
	a->owner = caller, a->vs = vs, a->vr = vr, a->va = va, a->npages = n;
	vspace_range_init(vs, va, n, &a->range); // prepare made every table
	long id = res_name(&table, a);
	if ((e = vregion_att_add(vr, id))) {
		res_free(a);
		return e;
	}
	paddr_t f[64];
	for (uint64_t p = 0; p < n; p += 64) {
		uint64_t k = n - p < 64 ? n - p : 64;
		for (uint64_t i = 0; i < k; i++)
			f[i] = vregion_frame(vr, p + i);
		vuspace_update(id, p, k, f);
	}
	return id;
}

// Called twice per exchange: LTO may inline it into vregion.c.
void vuspace_update(long id, uint64_t first, uint64_t n, const paddr_t *f)
{
	struct vuspace *a = get(id);
	if (!a)
		return;
	vspace_range_set(&a->range, first, n, f, ATT_FLAGS);
}

long vuspace_detach(int caller, long id)
{
	struct vuspace *a = get(id);
	if (!a)
		return -E_BADID;
	if (caller && a->owner != caller)
		return -E_NOTOWNER;
	static const paddr_t none[64];
	for (uint64_t p = 0; p < a->npages; p += 64)
		vspace_set_frames(a->vs, a->va + p * PAGE_SIZE, none,
				  a->npages - p < 64 ? a->npages - p : 64, 0);
	vspace_prune(a->vs, a->va, a->npages);
	vregion_att_del(a->vr, id);
	res_free(a);
	return 0;
}

static void release(int owner)
{
	for (int i = 0; i < NVUSPACE; i++)
		if (atts[i].h.used && atts[i].owner == owner)
			vuspace_detach(0, res_name(&table, &atts[i]));
}

const struct res_ops vuspace_ops = {
	.name = "vuspace", .release = release, .live = vuspace_live,
};

// System calls (lib/syscalls.def).
long sys_attach_vr(const uint64_t *a)
{
	return vuspace_attach(proc_self(), (long)a[0], (long)a[1], a[2]);
}

long sys_detach_vr(const uint64_t *a) { return vuspace_detach(proc_self(), (long)a[0]); }
