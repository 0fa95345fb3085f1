// slotbits.h: the free slots of a fixed pool (a reliable channel's header
// slots, the relay's forwarded frames), kept on a stack under their
// holder's lock, and given back from any CPU: a NIC's completion is
// reclaimed under a transmit lock that ranks below the holder's, so it
// cannot take that lock. It sets the slot's bit by atomic or
// (slotbits_give), and the stack takes the set bits under the holder's
// lock before it is read (slotbits_take).
#ifndef SLOTBITS_H
#define SLOTBITS_H
#include <stdint.h>

static inline void slotbits_give(uint64_t *bits, uint32_t slot)
{
	__atomic_fetch_or(&bits[slot / 64], 1ull << (slot % 64), __ATOMIC_RELEASE);
}

// The slots whose bits are set (words of them), onto stack, which holds n
// of cap: the new n. The holder's lock held.
static inline uint32_t slotbits_take(uint64_t *bits, uint32_t words, uint16_t *stack, uint32_t n, uint32_t cap)
{
	for (uint32_t w = 0; w < words; w++) {
		if (!__atomic_load_n(&bits[w], __ATOMIC_RELAXED))
			continue;
		for (uint64_t m = __atomic_exchange_n(&bits[w], 0, __ATOMIC_ACQUIRE); m; m &= m - 1)
			if (n < cap)
				stack[n++] = (uint16_t)(w * 64 + (uint32_t)__builtin_ctzll(m));
	}
	return n;
}
#endif
