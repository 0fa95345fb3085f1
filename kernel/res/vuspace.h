// Virtual user space: a region attached ("pasted") into a user virtual
// space at an address. The manager owns the attachment table.
#ifndef VUSPACE_H
#define VUSPACE_H
#include "../arch/x86_64/arch.h"
#include "res.h"

#define NVUSPACE 256

// Attaches region vr into space vs (0: the caller's own) at va.
long vuspace_attach(int caller, long vr, long vs, uint64_t va);
long vuspace_detach(int caller, long id);
// Pages [first, first+n) of the attached region now have frames f[0..n)
// (0: none); rewrites the PTEs and invalidates the TLB. Cannot fail.
void vuspace_update(long id, uint64_t first, uint64_t n, const paddr_t *f);
uint64_t vuspace_addr(long id); // 0 for a bad id
long vuspace_live(void);
#endif
