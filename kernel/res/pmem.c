// Physical frame manager: a stack of free frame numbers and a state word
// per frame (allocated bit, DMA pin count). The arrays are carved out of
// the first usable range that can hold them.
//
// Safe under concurrent calls from several CPUs: the free stack, the
// reserve and the counts are under lk (LK_PMEM); a state word changes by
// atomic add (a pin or unpin) or compare-and-swap (a free), so pinning and
// unpinning (a NIC's send and its completion, per frame) take no lock, and
// the unpin that ends a deferred free takes lk only to put the frame back.
#include "pmem.h"
#include "tlb.h"
#include "../kprintf.h"
#include "../lock.h"
#include <string.h>

#define F_USED 0x8000u  // handed out by the allocator
#define F_RESV 0x4000u  // never managed: hole, low memory, kernel, frame table
#define F_DEFER 0x2000u // freed while pinned: back to the free list at the last unpin
#define F_PINS 0x1fffu
#define MAX_FRAMES (64ull << 30 >> PAGE_SHIFT) // manage at most 64 GiB

static uint16_t *state;     // per frame number, [0, nframes)
static uint32_t *free_stk;  // free frame numbers
static uint64_t *origin;    // per frame number: pmem_set_origin's mark, 0 when free
static uint64_t nframes, nfree, ntotal, ndeferred;
#define RESERVE_MAX 256
static paddr_t reserve[RESERVE_MAX];
static int nreserve;
static struct spinlock lk = SPINLOCK_INIT("pmem", LK_PMEM);

// A snapshot (the checks of a DMA buffer, the pin count); every change goes
// through an atomic read-modify-write, which orders. A volatile load, as
// Linux's READ_ONCE: one untorn read of the aligned word, and, unlike
// __atomic_load_n, no reload of state and nframes around it, which cost a
// send 2-3 instructions a page in netpkt_check_batch's loop (T1 +2.5 %).
static uint16_t state_of(uint64_t pfn) { return *(const volatile uint16_t *)&state[pfn]; }
static void state_set(uint64_t pfn, uint16_t v) { __atomic_store_n(&state[pfn], v, __ATOMIC_RELEASE); }
// state[pfn] from *old to v if no other CPU changed it meanwhile; else
// false, with *old what it is now.
static bool state_cas(uint64_t pfn, uint16_t *old, uint16_t v)
{
	return __atomic_compare_exchange_n(&state[pfn], old, v, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

// Pops a free frame (state: allocated), under lk; 0 when none.
static paddr_t pop_locked(void)
{
	if (nfree == 0)
		return 0;
	uint32_t pfn = free_stk[--nfree];
	state_set(pfn, F_USED);
	origin[pfn] = 0;
	return (paddr_t)pfn << PAGE_SHIFT;
}

static void push_locked(uint64_t pfn)
{
	origin[pfn] = 0;
	state_set(pfn, 0);
	free_stk[nfree++] = (uint32_t)pfn;
}

static bool covered(const struct mem_range *ram, int n, paddr_t pa)
{
	for (int i = 0; i < n; i++)
		if (pa >= ram[i].base && pa + PAGE_SIZE <= ram[i].base + ram[i].len)
			return true;
	return false;
}

// Finds room for the frame arrays in a usable range, outside [lo, hi).
static paddr_t place_arrays(const struct mem_range *ram, int n, paddr_t lo, paddr_t hi,
			    uint64_t bytes)
{
	for (int i = 0; i < n; i++) {
		paddr_t b = PAGE_ROUND_UP(ram[i].base < 0x100000 ? 0x100000 : ram[i].base);
		paddr_t e = PAGE_ROUND_DOWN(ram[i].base + ram[i].len);
		if (b < hi && e > lo)
			b = PAGE_ROUND_UP(hi) > b ? PAGE_ROUND_UP(hi) : b;
		if (e > b && e - b >= bytes && (b >= hi || b + bytes <= lo))
			return b;
	}
	panic("pmem: no room for the frame table (%lu bytes)", bytes);
}

void pmem_init(const struct mem_range *ram, int n, paddr_t resv_lo, paddr_t resv_hi)
{
	paddr_t top = 0;
	for (int i = 0; i < n; i++)
		if (ram[i].base + ram[i].len > top)
			top = ram[i].base + ram[i].len;
	nframes = top >> PAGE_SHIFT;
	if (nframes > MAX_FRAMES)
		nframes = MAX_FRAMES;
	uint64_t bytes = PAGE_ROUND_UP(nframes * (sizeof(*origin) + sizeof(*state) + sizeof(*free_stk)));
	paddr_t arr = place_arrays(ram, n, resv_lo, resv_hi, bytes);
	origin = arch_p2v(arr); // 8-byte words first: each array stays aligned
	state = (uint16_t *)(origin + nframes);
	free_stk = (uint32_t *)(state + nframes);
	// origin needs no zeroing: an allocation clears a frame's mark
	// (pop_locked), and nothing reads one it did not hand out.
	memset(state, 0, nframes * sizeof(*state));
	nfree = 0;
	nreserve = 0;
	ndeferred = 0;
	// Push in descending order so low frames are handed out first. Holes
	// keep state 0 (never free, never allocated); RAM the kernel keeps (the
	// first MiB: BIOS data, VGA, ROMs; the image; the frame table) is F_RESV.
	for (uint64_t pfn = nframes; pfn-- > 0;) {
		paddr_t pa = pfn << PAGE_SHIFT;
		if (!covered(ram, n, pa))
			continue;
		bool kept = (pa >= arr && pa < arr + bytes) || pa < 0x100000 ||
			    (pa + PAGE_SIZE > resv_lo && pa < resv_hi);
		if (kept)
			state[pfn] = F_RESV;
		else
			free_stk[nfree++] = (uint32_t)pfn;
	}
	ntotal = nfree;
}

paddr_t pmem_alloc_nozero(void)
{
	spin_lock(&lk);
	paddr_t pa = pop_locked();
	if (!pa && nreserve)
		pa = reserve[--nreserve];
	spin_unlock(&lk);
	return pa;
}

// Word-wise, 64 bytes a step once aligned (the range ends at the page's
// end): about 0.19 guest instructions a byte, memset's loop 0.5.
void pmem_zero_tail(paddr_t pa, uint32_t from)
{
	if (from >= PAGE_SIZE)
		return;
	uint8_t *page = arch_p2v(pa & ~(paddr_t)(PAGE_SIZE - 1));
	uint32_t w = (from + 7) & ~7u;
	memset(page + from, 0, w - from); // up to the first whole word
	uint64_t *q = (uint64_t *)(page + w), *end = (uint64_t *)(page + PAGE_SIZE);
	for (; q < end && ((uintptr_t)q & 63); q++)
		*q = 0;
	for (; q < end; q += 8)
		q[0] = q[1] = q[2] = q[3] = q[4] = q[5] = q[6] = q[7] = 0;
}

paddr_t pmem_alloc(void)
{
	paddr_t pa = pmem_alloc_nozero();
	if (pa)
		pmem_zero_tail(pa, 0);
	return pa;
}

// A frame a device still holds (pinned) cannot be reused yet: its owner is
// done with it, so it goes back at the last unpin (a send that never
// completes keeps it, and the leak check at exit says so).
void pmem_free(paddr_t pa)
{
	uint64_t pfn = pa >> PAGE_SHIFT;
	tlb_batch_sync(); // no CPU keeps a translation to a frame that is free
	if ((pa & (PAGE_SIZE - 1)) || pfn >= nframes || (state_of(pfn) & ~F_PINS) != F_USED)
		panic("pmem_free: bad frame %lx (state %x)", pa, pfn < nframes ? state_of(pfn) : 0);
	origin[pfn] = 0; // still the caller's frame
	spin_lock(&lk); // (an unpin may change the pins meanwhile, nothing else)
	for (uint16_t s = state_of(pfn);;) {
		if ((s & ~F_PINS) != F_USED)
			panic("pmem_free: bad frame %lx (state %x)", pa, s);
		if (s & F_PINS) { // the last unpin frees it
			if (!state_cas(pfn, &s, s | F_DEFER))
				continue; // an unpin came between: look again
			ndeferred++;
			break;
		}
		if (state_cas(pfn, &s, 0)) {
			free_stk[nfree++] = (uint32_t)pfn;
			break;
		}
	}
	spin_unlock(&lk);
}

uint64_t pmem_deferred(void) { return ndeferred; }

uint64_t pmem_free_count(void) { return nfree + (uint64_t)nreserve; }
uint64_t pmem_total(void) { return ntotal; }
paddr_t pmem_top(void) { return nframes << PAGE_SHIFT; }

bool pmem_is_allocated(paddr_t pa)
{
	uint64_t pfn = pa >> PAGE_SHIFT;
	return pfn < nframes && (state_of(pfn) & (F_USED | F_RESV));
}

// The unpin's refusal and deferred free, out of line: the unpin of every
// page of a completed send then saves no register.
static __attribute__((noinline)) void unpin_refused(uint64_t pfn, paddr_t pa, int undo)
{
	if (undo)
		__atomic_fetch_add(&state[pfn], 1, __ATOMIC_ACQ_REL); // as it was
	panic("pmem_unpin: frame %lx not pinned", pa);
}

static __attribute__((noinline)) void free_deferred(uint64_t pfn)
{
	spin_lock(&lk);
	push_locked(pfn);
	ndeferred--;
	spin_unlock(&lk);
}

// Frames the kernel keeps (its image, the first MiB) never move or get
// freed, so a DMA from them needs no pin: pinning one is a no-op. The
// state is checked before the add, the old code's shape, so the pin of
// every page of a send stays a few instructions without a stack frame (a
// pin racing its frame's free is its caller's bug, which the check then
// may miss).
void pmem_pin(paddr_t pa)
{
	uint64_t pfn = pa >> PAGE_SHIFT;
	uint16_t s = pfn < nframes ? state_of(pfn) : 0;
	if (s == F_RESV) // never changes once the manager is up
		return;
	if (!(s & F_USED) || (s & (F_PINS | F_DEFER)) >= F_PINS)
		panic("pmem_pin: bad frame %lx", pa);
	__atomic_fetch_add(&state[pfn], 1, __ATOMIC_ACQ_REL);
}

void pmem_unpin(paddr_t pa)
{
	uint64_t pfn = pa >> PAGE_SHIFT;
	if (__builtin_expect(pfn >= nframes, 0))
		return unpin_refused(pfn, pa, 0);
	if (state_of(pfn) == F_RESV)
		return;
	uint16_t s = __atomic_fetch_sub(&state[pfn], 1, __ATOMIC_ACQ_REL);
	if (__builtin_expect(!(s & F_PINS), 0))
		return unpin_refused(pfn, pa, 1);
	if (s - 1 == (F_USED | F_DEFER)) // its owner freed it meanwhile: no one else may touch it now
		free_deferred(pfn);
}

// Set by the frame's holder (the receive path: io_slot.c), read by the
// next one it hands the frame to; an allocation and a free clear it.
void pmem_set_origin(paddr_t pa, uint64_t mark)
{
	uint64_t pfn = pa >> PAGE_SHIFT;
	if (pfn < nframes)
		origin[pfn] = mark;
}

uint64_t pmem_origin(paddr_t pa)
{
	uint64_t pfn = pa >> PAGE_SHIFT;
	return pfn < nframes ? origin[pfn] : 0;
}

bool pmem_is_pinned(paddr_t pa)
{
	uint64_t pfn = pa >> PAGE_SHIFT;
	return pfn < nframes && (state_of(pfn) & F_PINS);
}

unsigned pmem_pin_count(paddr_t pa)
{
	uint64_t pfn = pa >> PAGE_SHIFT;
	return pfn < nframes ? state_of(pfn) & F_PINS : 0;
}

int pmem_take_n(paddr_t *out, int n)
{
	int k = 0;
	spin_lock(&lk);
	while (k < n && nreserve)
		out[k++] = reserve[--nreserve];
	int zeroed = k;
	for (paddr_t pa; k < n && (pa = pop_locked()); k++)
		out[k] = pa;
	spin_unlock(&lk);
	for (int i = zeroed; i < k; i++)
		pmem_zero_tail(out[i], 0);
	return k;
}

paddr_t pmem_take(void)
{
	paddr_t pa;
	return pmem_take_n(&pa, 1) ? pa : 0;
}

// Up to 16 frames a lock turn, zeroed outside the lock: another CPU may
// take or fill meanwhile.
void pmem_reserve_fill(int max)
{
	paddr_t got[16];
	// Full (the idle CPU's usual case, once per halt): no lock taken. A stale
	// read only delays a fill to the next halt, or takes the lock for nothing.
	if (__atomic_load_n(&nreserve, __ATOMIC_RELAXED) >= RESERVE_MAX)
		return;
	while (max > 0) {
		int want = max < 16 ? max : 16, n = 0;
		spin_lock(&lk);
		while (n < want && nreserve + n < RESERVE_MAX && (got[n] = pop_locked()))
			n++;
		spin_unlock(&lk);
		if (!n)
			return;
		for (int i = 0; i < n; i++)
			pmem_zero_tail(got[i], 0);
		spin_lock(&lk);
		for (int i = 0; i < n; i++)
			if (nreserve < RESERVE_MAX)
				reserve[nreserve++] = got[i];
			else
				push_locked(got[i] >> PAGE_SHIFT);
		spin_unlock(&lk);
		if (n < want)
			return;
		max -= n;
	}
}
