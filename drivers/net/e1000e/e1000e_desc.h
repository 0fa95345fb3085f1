// The 82574's descriptors and ring arithmetic as pure functions: what the
// driver writes for a transmit piece, what it reads from a written-back
// receive descriptor, how ring indexes move. No device access, so the
// host unit tests (tests/host/test_e1000e.c) run them as they are.
#ifndef E1000E_DESC_H
#define E1000E_DESC_H
#include "e1000e_regs.h"
#include <stdbool.h>

// Bytes behind one transmit descriptor, as Linux's e1000e (E1000_MAX_PER_TXD):
// a longer piece takes several.
#define E1000E_TXD_MAX 8192u

// Index i advanced by k in a ring of n entries.
static inline uint32_t e1000e_ring_add(uint32_t i, uint32_t k, uint32_t n) { return (i + k) % n; }
// Entries from `from` up to (not including) `to`, going forward.
static inline uint32_t e1000e_ring_dist(uint32_t from, uint32_t to, uint32_t n)
{
	return (to + n - from) % n;
}

// Descriptors a piece of len bytes takes (0 for 0 bytes).
static inline uint32_t e1000e_tx_descs(uint32_t len) { return (len + E1000E_TXD_MAX - 1) / E1000E_TXD_MAX; }

// One data descriptor: addr, len bytes (1..E1000E_TXD_MAX), the last of
// its packet (EOP, and RS: status written back once per packet) or not.
void e1000e_tx_build(struct e1000e_tx_desc *d, uint64_t addr, uint32_t len, bool last);

// What a written-back receive descriptor says. done false: the NIC has
// not written it yet (the rest means nothing).
struct e1000e_rx_wb {
	bool done, eop, error;
	uint16_t len;
};
struct e1000e_rx_wb e1000e_rx_parse(const union e1000e_rx_desc *d);
// The read format: a buffer at addr, DD clear.
void e1000e_rx_post(union e1000e_rx_desc *d, uint64_t addr);
#endif
