#include "uaccess.h"
#include "res/proc.h"
#include "res/vspace.h"
#include <err.h>
#include <string.h>

// Kernel address of user byte `va` in space vs, if mapped user-accessible
// (and writable when `write`); NULL otherwise.
static uint8_t *user_byte(long vs, uptr_t va, bool write)
{
	if (va < USER_BASE || va >= USER_TOP)
		return NULL;
	uint64_t *pte = vspace_pte(vs, PAGE_ROUND_DOWN(va));
	if (!pte || (*pte & (PTE_P | PTE_U)) != (PTE_P | PTE_U) || (write && !(*pte & PTE_W)))
		return NULL;
	return (uint8_t *)arch_p2v(*pte & PTE_ADDR_MASK) + (va & (PAGE_SIZE - 1));
}

long uaccess_check(long vs, uptr_t addr, size_t n, bool write)
{
	if (n == 0)
		return 0;
	if (addr + n < addr)
		return -E_FAULT;
	for (uptr_t va = PAGE_ROUND_DOWN(addr); va < addr + n; va += PAGE_SIZE)
		if (!user_byte(vs, va < addr ? addr : va, write))
			return -E_FAULT;
	return 0;
}

// Moves n bytes between kernel buffer k and user range u, page by page.
static long move(uptr_t u, void *k, size_t n, bool to_user)
{
	long vs = proc_vspace(proc_self());
	long r = uaccess_check(vs, u, n, to_user);
	if (r < 0)
		return r;
	uint8_t *kb = k;
	while (n > 0) {
		size_t chunk = PAGE_SIZE - (u & (PAGE_SIZE - 1));
		if (chunk > n)
			chunk = n;
		uint8_t *ub = user_byte(vs, u, to_user);
		if (to_user)
			memcpy(ub, kb, chunk);
		else
			memcpy(kb, ub, chunk);
		u += chunk;
		kb += chunk;
		n -= chunk;
	}
	return 0;
}

long copy_from_user(void *dst, uptr_t src, size_t n) { return move(src, dst, n, false); }
long copy_to_user(uptr_t dst, const void *src, size_t n) { return move(dst, (void *)src, n, true); }

long strncpy_from_user(char *dst, uptr_t src, size_t max)
{
	long vs = proc_vspace(proc_self());
	for (size_t i = 0; i < max; i++) {
		uint8_t *b = user_byte(vs, src + i, false);
		if (!b || src + i < src)
			return -E_FAULT;
		dst[i] = (char)*b;
		if (!*b)
			return (long)i;
	}
	return -E_2BIG;
}
