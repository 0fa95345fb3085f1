// Virtual region: a memory image of N pages, backed page by page by frames
// (physical memory resources). The manager owns the region table; others
// name regions by id and reach frames only through this interface.
#ifndef VREGION_H
#define VREGION_H
#include "../arch/x86_64/arch.h"
#include "res.h"
// The ABI (shared with user programs, lib/include): VR_OP_* for ctrl_vr,
// VR_MEM_* for create_vr, VR_MAX_PAGES, VR_MAX_GRANTS; arguments, errors.
#include "region.h"

#define NVREGION 256
#define VR_MAX_ATT 4

long vregion_create(int owner, uint64_t size, int mem, int64_t disk);
long vregion_delete(int caller, long id);
long vregion_control(int caller, long id, uint64_t op, const uint64_t *a);
long vregion_exchange(int caller, long vr1, long vr2, uint64_t off1, uint64_t off2, uint64_t pages);

// 0 when caller owns the region or was granted it; -E_BADID, -E_NOTOWNER.
long vregion_access(int caller, long id);
uint64_t vregion_pages(long id); // 0 for a bad id
// A number no other region ever had (a 64-bit count of creations: an id's
// generation may come round again, this never does); 0 for a bad id.
uint64_t vregion_serial(long id);
paddr_t vregion_frame(long id, uint64_t page); // 0 when not backed
// The frames behind id's pages, read-only, *npages of them (0: not backed),
// for a caller that reads many in one go (output_io's gather); valid until
// the region's pages change or it is freed. 0 or -E_BADID.
long vregion_frame_table(long id, const paddr_t **frames, uint64_t *npages);
int64_t vregion_disk(long id);
// Checks [off, off+len) is page-aligned, inside, backed and unpinned.
long vregion_check_range(long id, uint64_t off, uint64_t len);
// Puts frames in[i] behind pages first+i and returns the old ones in out[i];
// the caller checked the range with vregion_check_range. Cannot fail.
void vregion_replace(long id, uint64_t first, uint64_t n, const paddr_t *in, paddr_t *out);

// For the attachment manager.
long vregion_att_room(long id); // 0 when one more attachment fits, else -E_NOMEM
long vregion_att_add(long id, long vuid);
void vregion_att_del(long id, long vuid);
long vregion_live(void);

// A channel's registration: while held, the region cannot be deleted
// (-E_BUSY), so its id keeps naming it. 0, or -E_BADID / -E_NOTOWNER for a
// caller that may not use it. When the owner exits while a hold remains,
// the region becomes unnamed (every lookup fails) and is destroyed at the
// last unhold.
long vregion_hold(int caller, long id);
void vregion_unhold(long id);
// True when only `caller` can reach region id: it owns it, has granted it
// to nobody, and no more than `holds` channels (the caller's one) registered
// it. Then nothing but the caller's own calls changes its frames, its
// grants or its attachments (only the owner grants, attaches it in its own
// space, or registers it): an input_io may remap into it without the
// kernel lock (io.c).
bool vregion_private(int caller, long id, uint32_t holds);
#endif
