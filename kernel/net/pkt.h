// A received packet: the ring buffers (whole pages) a NIC filled, in order.
// It crosses the receive path as it is (demux, relay, stripe order, the
// channel's sink) and its buffers go back to the ring of the NIC it came
// from (demux_give_back) or become a slot's pages.
#ifndef NET_PKT_H
#define NET_PKT_H
#include <stdint.h>
#include "arch/x86_64/arch.h"

#define PKT_MAX_BUFS 3 // receive buffers of the longest packet (9018 bytes)

// nbuf == 0 in a channel's pend queue is a gap marker: the hole input_io reports with -E_GAP (len unused).
struct pkt {
	paddr_t buf[PKT_MAX_BUFS];
	uint8_t nbuf;
	uint8_t nic;   // the NIC it came from: its buffers go back to that ring
	uint16_t len;
};
#endif
