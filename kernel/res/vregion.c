// Virtual region manager (Tender, section 4.2-4.3): creation with or without
// frames, frame allocation and release per range, grants to other
// processes, and the physical memory exchange. Each operation decodes (checks
// everything, may fail, changes nothing) before it invokes (cannot fail).
#include "vregion.h"
#include "vuspace.h"
#include "pmem.h"
#include "tlb.h"
#include "proc.h"
#include "../heap.h"
#include "../kprintf.h"
#include "../uaccess.h"
#include "../blkdev.h"
#include <err.h>
#include <string.h>

struct vregion {
	struct res_hdr h;
	int owner;
	int grants[VR_MAX_GRANTS]; // pids given access; 0 = free slot
	uint64_t npages;
	paddr_t *frames;           // per page; 0 = not backed
	uint8_t *pins;             // per page, pins taken through ctrl_vr
	int64_t disk;              // byte offset of the backing store, -1: none
	long att[VR_MAX_ATT];      // attachments (virtual user space ids), att[0..natt)
	int natt;
	uint32_t holds;            // channels that registered it (vregion_hold)
	bool dying;                // owner gone while held: freed at the last unhold
	uint64_t serial;           // vregion_serial: this region's alone, never reused
};

static uint64_t serials; // the last region's serial

static struct vregion regions[NVREGION];
static const struct res_table table = RES_TABLE(RES_VREGION, regions, 0);

// The live region id names; a dying one is gone for every caller.
static struct vregion *get_any(long id) { return res_lookup(&table, id); }

static struct vregion *get(long id)
{
	struct vregion *r = get_any(id);
	return r && !r->dying ? r : NULL;
}

static long id_of(struct vregion *r) { return res_name(&table, r); }

static bool may_use(const struct vregion *r, int caller)
{
	if (caller == 0 || r->owner == caller)
		return true;
	for (int i = 0; i < VR_MAX_GRANTS; i++)
		if (r->grants[i] == caller)
			return true;
	return false;
}

long vregion_access(int caller, long id)
{
	struct vregion *r = get(id);
	if (!r)
		return -E_BADID;
	return may_use(r, caller) ? 0 : -E_NOTOWNER;
}

long vregion_live(void) { return res_count(&table); }

uint64_t vregion_serial(long id)
{
	struct vregion *r = get_any(id);
	return r ? r->serial : 0;
}

uint64_t vregion_pages(long id)
{
	struct vregion *r = get(id);
	return r ? r->npages : 0;
}

paddr_t vregion_frame(long id, uint64_t page)
{
	struct vregion *r = get(id);
	return r && page < r->npages ? r->frames[page] : 0;
}

long vregion_frame_table(long id, const paddr_t **frames, uint64_t *npages)
{
	struct vregion *r = get(id);
	if (!r)
		return -E_BADID;
	*frames = r->frames;
	*npages = r->npages;
	return 0;
}

int64_t vregion_disk(long id)
{
	struct vregion *r = get(id);
	return r ? r->disk : -1;
}

// Tells every attachment that pages [first, first+n) now have new frames.
// Inline: the exchange's hot path (with vuspace_update and the range set).
static inline __attribute__((always_inline)) void remap(struct vregion *r, uint64_t first, uint64_t n)
{
	for (int i = 0; i < r->natt; i++)
		vuspace_update(r->att[i], first, n, r->frames + first);
}

// Page range [off, off+len) of r: aligned and inside, or an error.
static long check_bounds(const struct vregion *r, uint64_t off, uint64_t len)
{
	if ((off | len) & (PAGE_SIZE - 1))
		return -E_ALIGN;
	if (len == 0)
		return -E_INVAL;
	if (off > r->npages * PAGE_SIZE || len > r->npages * PAGE_SIZE - off)
		return -E_RANGE;
	return 0;
}

// Every page of the range is backed and no frame is pinned (busy is
// reported before not-backed when a range has both).
static inline long check_frames(const struct vregion *r, uint64_t first, uint64_t n)
{
	bool unbacked = false;
	for (uint64_t p = first; p < first + n; p++) {
		if (!r->frames[p])
			unbacked = true;
		else if (pmem_is_pinned(r->frames[p]))
			return -E_BUSY;
	}
	return unbacked ? -E_NOTBACKED : 0;
}

long vregion_check_range(long id, uint64_t off, uint64_t len)
{
	struct vregion *r = get(id);
	if (!r)
		return -E_BADID;
	long e = check_bounds(r, off, len);
	return e ? e : check_frames(r, off / PAGE_SIZE, len / PAGE_SIZE);
}

// Flattened like the exchange: it is the receive path's per-packet remap.
__attribute__((flatten)) void vregion_replace(long id, uint64_t first, uint64_t n, const paddr_t *in, paddr_t *out)
{
	struct vregion *r = get(id);
	for (uint64_t i = 0; i < n; i++) {
		out[i] = r->frames[first + i];
		r->frames[first + i] = in[i];
	}
	remap(r, first, n);
}

// Backs pages [first, first+n) with new frames, charged to the owner.
static long alloc_frames(struct vregion *r, uint64_t first, uint64_t n)
{
	for (uint64_t p = first; p < first + n; p++)
		if (r->frames[p])
			return -E_EXIST;
	if (pmem_free_count() < n)
		return -E_NOMEM;
	long e = proc_charge(r->owner, LIM_FRAMES, n);
	if (e)
		return e;
	for (uint64_t p = first; p < first + n; p++)
		r->frames[p] = pmem_take();
	remap(r, first, n);
	return 0;
}

static long free_frames(struct vregion *r, uint64_t first, uint64_t n)
{
	long e = check_frames(r, first, n);
	if (e)
		return e;
	paddr_t *old = r->frames + first;
	paddr_t keep[64];
	for (uint64_t done = 0; done < n; done += 64) { // unmap before the frames go back
		uint64_t k = n - done < 64 ? n - done : 64;
		memcpy(keep, old + done, k * sizeof(paddr_t));
		memset(old + done, 0, k * sizeof(paddr_t));
		remap(r, first + done, k);
		for (uint64_t i = 0; i < k; i++)
			pmem_free(keep[i]);
	}
	proc_uncharge(r->owner, LIM_FRAMES, n);
	return 0;
}

long vregion_create(int owner, uint64_t size, int mem, int64_t disk)
{
	if (size == 0 || (mem != VR_MEM_NONE && mem != VR_MEM_ALL) || disk < -1 ||
	    (disk > 0 && (disk & (PAGE_SIZE - 1))))
		return -E_INVAL;
	if (size > VR_MAX_PAGES * PAGE_SIZE)
		return -E_2BIG;
	uint64_t n = PAGE_ROUND_UP(size) / PAGE_SIZE;
	struct vregion *r = res_alloc(&table);
	if (!r)
		return -E_NOMEM;
	long e = proc_charge(owner, LIM_REGIONS, 1);
	if (e) {
		res_free(r);
		return e;
	}
	paddr_t *frames = kzalloc(n * sizeof(paddr_t));
	uint8_t *pins = kzalloc(n);
	if (!frames || !pins || (mem == VR_MEM_ALL && pmem_free_count() < n))
		e = -E_NOMEM;
	else if (mem == VR_MEM_ALL)
		e = proc_charge(owner, LIM_FRAMES, n);
	if (e) {
		kfree(frames);
		kfree(pins);
		proc_uncharge(owner, LIM_REGIONS, 1);
		res_free(r);
		return e;
	}
	r->owner = owner, r->npages = n, r->frames = frames, r->pins = pins, r->disk = disk;
	r->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
	for (uint64_t p = 0; mem == VR_MEM_ALL && p < n; p++)
		frames[p] = pmem_take();
	return id_of(r);
}

// Drops the region: attachments first (they map its frames), then frames.
// Frames in a DMA are drained by the I/O manager before a region goes.
static void destroy(struct vregion *r)
{
	while (r->natt) // each detach takes itself out of att[]
		vuspace_detach(0, r->att[0]);
	uint64_t backed = 0;
	for (uint64_t p = 0; p < r->npages; p++) {
		for (; r->pins[p]; r->pins[p]--)
			pmem_unpin(r->frames[p]);
		if (r->frames[p])
			pmem_free(r->frames[p]), backed++;
	}
	proc_uncharge(r->owner, LIM_FRAMES, backed);
	proc_uncharge(r->owner, LIM_REGIONS, 1);
	kfree(r->frames);
	kfree(r->pins);
	res_free(r);
}

long vregion_hold(int caller, long id)
{
	struct vregion *r = get(id);
	if (!r)
		return -E_BADID;
	if (!may_use(r, caller))
		return -E_NOTOWNER;
	r->holds++;
	return 0;
}

void vregion_unhold(long id)
{
	struct vregion *r = get_any(id);
	if (!r || !r->holds)
		return;
	if (--r->holds == 0 && r->dying)
		destroy(r);
}

bool vregion_private(int caller, long id, uint32_t holds)
{
	struct vregion *r = get(id);
	if (!r || r->owner != caller || r->holds > holds)
		return false;
	for (int i = 0; i < VR_MAX_GRANTS; i++)
		if (r->grants[i])
			return false;
	return true;
}

// Frames a NIC still has in flight keep the region alive: -E_BUSY.
static long busy_beyond_own_pins(const struct vregion *r)
{
	for (uint64_t p = 0; p < r->npages; p++)
		if (r->frames[p] && pmem_pin_count(r->frames[p]) > r->pins[p])
			return -E_BUSY;
	return 0;
}

long vregion_delete(int caller, long id)
{
	struct vregion *r = get(id);
	if (!r)
		return -E_BADID;
	if (caller && r->owner != caller)
		return -E_NOTOWNER;
	if (r->holds)
		return -E_BUSY; // registered in a channel: free_io first
	long e = busy_beyond_own_pins(r);
	if (e)
		return e;
	destroy(r);
	return 0;
}

static long grant(struct vregion *r, int caller, int pid)
{
	if (caller && r->owner != caller)
		return -E_NOTOWNER;
	if (!proc_exists(pid))
		return -E_SRCH;
	int free_slot = -1;
	for (int i = 0; i < VR_MAX_GRANTS; i++) {
		if (r->grants[i] == pid)
			return 0;
		if (!r->grants[i] && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0)
		return -E_NOMEM;
	r->grants[free_slot] = pid;
	return 0;
}

static long pin(struct vregion *r, uint64_t first, uint64_t n, bool on)
{
	for (uint64_t p = first; p < first + n; p++) {
		if (!r->frames[p])
			return -E_NOTBACKED;
		if (on ? r->pins[p] == 255 : !r->pins[p])
			return on ? -E_2BIG : -E_INVAL;
	}
	for (uint64_t p = first; p < first + n; p++) {
		if (on)
			pmem_pin(r->frames[p]), r->pins[p]++;
		else
			pmem_unpin(r->frames[p]), r->pins[p]--;
	}
	return 0;
}

// Range operations: a[0] = offset, a[1] = size in bytes.
static long range_op(struct vregion *r, uint64_t op, const uint64_t *a)
{
	long e = check_bounds(r, a[0], a[1]);
	if (e)
		return e;
	uint64_t first = a[0] / PAGE_SIZE, n = a[1] / PAGE_SIZE;
	switch (op) {
	case VR_OP_ALLOC: return alloc_frames(r, first, n);
	case VR_OP_FREE: return free_frames(r, first, n);
	case VR_OP_PIN: return pin(r, first, n, true);
	default: return pin(r, first, n, false);
	}
}

long vregion_control(int caller, long id, uint64_t op, const uint64_t *a)
{
	struct vregion *r = get(id);
	if (!r)
		return -E_BADID;
	if (!may_use(r, caller))
		return -E_NOTOWNER;
	switch (op) {
	case VR_OP_SIZE:
		return (long)(r->npages * PAGE_SIZE);
	case VR_OP_PADDR:
		if (a[0] >= r->npages * PAGE_SIZE)
			return -E_RANGE;
		if (!r->frames[a[0] / PAGE_SIZE])
			return -E_NOTBACKED;
		return (long)(r->frames[a[0] / PAGE_SIZE] + (a[0] & (PAGE_SIZE - 1)));
	case VR_OP_GRANT:
		return grant(r, caller, (int)a[0]);
	case VR_OP_ALLOC:
	case VR_OP_FREE:
	case VR_OP_PIN:
	case VR_OP_UNPIN:
		// A grantee uses the pages; their backing and pins are the owner's.
		return caller && caller != r->owner ? -E_NOTOWNER : range_op(r, op, a);
	case VR_OP_EXCHANGE:
		return vregion_exchange(caller, id, (long)a[1], a[0], a[2], a[3]);
	default:
		return -E_INVAL;
	}
}

// Both page ranges are backed and no frame in them is pinned: a pinned
// frame anywhere is reported before a page without one. One pass over both
// (a missing frame, 0, is never pinned).
static inline long check_pair(const paddr_t *f1, const paddr_t *f2, uint64_t n)
{
	bool holes = false;
	for (uint64_t i = 0; i < n; i++) {
		if (pmem_is_pinned(f1[i]) || pmem_is_pinned(f2[i]))
			return -E_BUSY;
		holes |= !f1[i] || !f2[i];
	}
	return holes ? -E_NOTBACKED : 0;
}

// Checks of exchange_pmem, in the order of its error codes. Bounds are in
// pages: once pages <= VR_MAX_PAGES, offset / PAGE_SIZE + pages cannot wrap.
static inline long exchange_decode(int caller, const struct vregion *r1, const struct vregion *r2,
				   uint64_t off1, uint64_t off2, uint64_t pages)
{
	if (!r1 || !r2)
		return -E_BADID;
	if (caller && (!may_use(r1, caller) || !may_use(r2, caller)))
		return -E_NOTOWNER;
	if (pages == 0)
		return -E_INVAL;
	if ((off1 | off2) & (PAGE_SIZE - 1))
		return -E_ALIGN;
	uint64_t p1 = off1 / PAGE_SIZE, p2 = off2 / PAGE_SIZE;
	if (pages > VR_MAX_PAGES || p1 + pages > r1->npages || p2 + pages > r2->npages)
		return -E_RANGE;
	if (r1 == r2 && p1 < p2 + pages && p2 < p1 + pages)
		return -E_OVERLAP;
	return check_pair(r1->frames + p1, r2->frames + p2, pages);
}

// Flattened: lookups, checks and both remaps inline, no call on the hot path.
__attribute__((flatten)) long vregion_exchange(int caller, long vr1, long vr2, uint64_t off1,
					       uint64_t off2, uint64_t pages)
{
	struct vregion *r1 = get(vr1), *r2 = get(vr2);
	long e = exchange_decode(caller, r1, r2, off1, off2, pages);
	if (e)
		return e;
	uint64_t p1 = off1 / PAGE_SIZE, p2 = off2 / PAGE_SIZE;
	paddr_t *f1 = r1->frames + p1, *f2 = r2->frames + p2;
	for (uint64_t i = 0; i < pages; i++) {
		paddr_t t = f1[i];
		f1[i] = f2[i];
		f2[i] = t;
	}
	remap(r1, p1, pages);
	remap(r2, p2, pages);
	return 0;
}

long vregion_att_room(long id)
{
	struct vregion *r = get(id);
	return !r ? -E_BADID : r->natt < VR_MAX_ATT ? 0 : -E_NOMEM;
}

long vregion_att_add(long id, long vuid)
{
	long e = vregion_att_room(id);
	if (!e) {
		struct vregion *r = get(id);
		r->att[r->natt++] = vuid;
	}
	return e;
}

void vregion_att_del(long id, long vuid)
{
	struct vregion *r = get_any(id);
	for (int i = 0; r && i < r->natt; i++)
		if (r->att[i] == vuid) {
			r->att[i] = r->att[--r->natt]; // kept dense for remap
			r->att[r->natt] = 0;
			return;
		}
}

// A process's exit: its regions go, and grants it held are withdrawn.
static void release(int owner)
{
	for (int i = 0; i < NVREGION; i++) {
		struct vregion *r = &regions[i];
		if (!r->h.used)
			continue;
		for (int g = 0; g < VR_MAX_GRANTS; g++)
			if (r->grants[g] == owner)
				r->grants[g] = 0;
		if (r->owner != owner)
			continue;
		if (!r->holds) {
			destroy(r);
			continue;
		}
		// Another process's channel holds it: unmapped and unnamed now,
		// its frames go when that channel lets go.
		while (r->natt)
			vuspace_detach(0, r->att[0]);
		r->dying = true;
	}
}

const struct res_ops vregion_ops = { .name = "vregion", .release = release, .live = vregion_live };

// Moves [off, off+size) between the region and its backing store on disk.
static long disk_io(int caller, long id, uint64_t off, uint64_t size, bool write)
{
	struct vregion *r = get(id);
	if (!r)
		return -E_BADID;
	if (!may_use(r, caller))
		return -E_NOTOWNER;
	const struct blkdev *b = blkdev_get();
	if (r->disk < 0 || !b)
		return -E_NODEV;
	long e = check_bounds(r, off, size);
	if (!e)
		e = check_frames(r, off / PAGE_SIZE, size / PAGE_SIZE);
	if (e)
		return e;
	uint64_t sectors_per_page = PAGE_SIZE / BLK_SECTOR;
	uint64_t lba = ((uint64_t)r->disk + off) / BLK_SECTOR;
	if (lba + size / BLK_SECTOR > b->sectors())
		return -E_RANGE;
	for (uint64_t p = off / PAGE_SIZE; p < (off + size) / PAGE_SIZE; p++, lba += sectors_per_page) {
		void *buf = arch_p2v(r->frames[p]);
		e = write ? b->write(lba, (uint32_t)sectors_per_page, buf)
			  : b->read(lba, (uint32_t)sectors_per_page, buf);
		if (e)
			return e;
	}
	return 0;
}

// System calls (lib/syscalls.def).
long sys_create_vr(const uint64_t *a)
{
	return vregion_create(proc_self(), a[0], (int)a[1], (int64_t)a[2]);
}

long sys_delete_vr(const uint64_t *a) { return vregion_delete(proc_self(), (long)a[0]); }

long sys_ctrl_vr(const uint64_t *a)
{
	return vregion_control(proc_self(), (long)a[0], a[1], a + 2);
}

long sys_exchange_pmem(const uint64_t *a)
{
	tlb_batch_begin(); // every attachment of both regions: one IPI per CPU
	long r = vregion_exchange(proc_self(), (long)a[0], (long)a[1], a[2], a[3], a[4]);
	tlb_batch_end();
	return r;
}

long sys_read_vr(const uint64_t *a)
{
	return disk_io(proc_self(), (long)a[0], a[1], a[2], false);
}

long sys_write_vr(const uint64_t *a)
{
	return disk_io(proc_self(), (long)a[0], a[1], a[2], true);
}
