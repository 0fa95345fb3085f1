// The virtual region ABI (Tender, Table 1): the arguments of create_vr and
// the operations of ctrl_vr. Shared by the kernel (kernel/res/vregion.h)
// and user programs, so neither hard-codes a number.
//
// Every call below returns a negative -E_* code (lib/include/err.h) on
// failure; for ctrl_vr these come first, whatever the operation:
//   -E_BADID     vrid names no live region (deleted, or a stale generation)
//   -E_NOTOWNER  the caller neither owns the region nor was granted it
//   -E_INVAL     op is none of the VR_OP_* below
// Offsets and sizes are in bytes. A "range" (a0 = offset, a1 = size) must be
// page-aligned (-E_ALIGN), not empty (-E_INVAL) and inside the region
// (-E_RANGE), checked in that order.
#ifndef LIB_REGION_H
#define LIB_REGION_H

// ---------------------------------------------------------------- create_vr
// create_vr(size, mem, disk): a region of size bytes, rounded up to pages,
// owned by the caller. Returns its id (> 0).
//   size  1 .. VR_MAX_PAGES pages
//   mem   VR_MEM_NONE or VR_MEM_ALL
//   disk  byte offset of its backing store on the disk (page-aligned),
//         used by read_vr/write_vr; -1: none
// Errors: -E_INVAL (size 0, another mem, disk < -1 or not page-aligned),
// -E_2BIG (more than VR_MAX_PAGES pages), -E_NOMEM (region table full, or
// too few free frames for VR_MEM_ALL), -E_LIMIT (the caller's share of
// regions or frames is used up).
#define VR_MEM_NONE 1 // no frames yet: pages are backed by VR_OP_ALLOC
#define VR_MEM_ALL 2  // a frame behind every page now

#define VR_MAX_PAGES 16384 // 64 MiB: the largest region
#define VR_MAX_GRANTS 4    // processes one region can be granted to

// ------------------------------------------------------------------ ctrl_vr
// ctrl_vr(vrid, op, a0, a1, a2, a3); arguments an operation does not name
// are ignored. 0x4, 0x400 and 0x800 are this kernel's, the rest Tender's.

// Size of the region in bytes (pages * 4096).
#define VR_OP_SIZE 0x1

// Physical address of byte a0 of the region.
// Errors: -E_RANGE (a0 past the end), -E_NOTBACKED (that page has no frame).
#define VR_OP_PADDR 0x2

// Lets process a0 (a pid) use the region as its owner does, except that
// only the owner may grant, alloc, free, pin, unpin or delete. Granting a
// process that already has it succeeds.
// Errors: -E_NOTOWNER (the caller is a grantee), -E_SRCH (no process a0),
// -E_NOMEM (VR_MAX_GRANTS processes hold grants already).
#define VR_OP_GRANT 0x4

// Backs every page of the range a0, a1 with a new zeroed frame, charged to
// the owner. Owner only.
// Errors: the range's; -E_NOTOWNER (a grantee), -E_EXIST (a page already
// backed; nothing allocated), -E_NOMEM (too few free frames), -E_LIMIT.
#define VR_OP_ALLOC 0x100

// Gives the frames behind the range a0, a1 back: the pages are unbacked,
// and unmapped in every attachment, until allocated again. Owner only.
// Errors: the range's; -E_NOTOWNER, -E_BUSY (a frame is pinned: by
// VR_OP_PIN or a DMA in flight), -E_NOTBACKED (a page has no frame).
#define VR_OP_FREE 0x200

// Pins the frames behind the range a0, a1 (counted, up to 255 per page):
// a pinned frame cannot be freed or exchanged. Owner only.
// Errors: the range's; -E_NOTOWNER, -E_NOTBACKED, -E_2BIG (a page's count
// is at 255).
#define VR_OP_PIN 0x400

// Drops one pin of every page of the range a0, a1. Owner only.
// Errors: the range's; -E_NOTOWNER, -E_NOTBACKED, -E_INVAL (a page is not
// pinned; nothing unpinned).
#define VR_OP_UNPIN 0x800

// exchange_pmem(vrid, a1, a0, a2, a3): swaps the frames behind a3 pages at
// byte a0 of this region with those at byte a2 of region a1 (owner or
// grantee of both); attachments of both see the new frames at once.
// Errors: -E_BADID (a1), -E_NOTOWNER, -E_INVAL (a3 = 0), -E_ALIGN (an
// offset not page-aligned), -E_RANGE (a3 > VR_MAX_PAGES or past an end),
// -E_OVERLAP (one region, overlapping ranges), -E_BUSY (a frame pinned),
// -E_NOTBACKED (a page without a frame).
#define VR_OP_EXCHANGE 0x8000

#endif
