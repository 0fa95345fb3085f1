// The one shaper: per NIC, a token bucket that models a wire of the rate
// nic_mbps= sets (docs/design.md "Pacing"). Every sender (a channel's
// send, the reliable transport's pump, the relay, control frames) counts
// its frames' wire time here, by one formula.
#ifndef NET_SHAPER_H
#define NET_SHAPER_H
#include <stdbool.h>
#include <stdint.h>
#include "netdev.h"

#define SHAPER_DEPTH_US 4000 // a paced NIC's queue: wire time a sender may run ahead (+2 frames)

// Sets nic's rate in Mbit/s (0: unpaced) and empties its queue.
void shaper_set(int nic, uint32_t mbps);
bool shaper_paced(int nic);
// The wire time (TSC) of one frame of `bytes` on nic: the one formula
// (preamble, FCS and gap add 24 bytes; a short frame is padded). 0 unpaced.
uint64_t shaper_cost(int nic, uint32_t bytes);
// How many of p[0..n) nic's wire takes now (0: its queue is full); they
// are counted as on the wire.
int shaper_take(int nic, const struct netpkt *p, int n);
// A packet shaper_take counted that the ring did not take.
void shaper_undo(int nic, const struct netpkt *p);
// A control or forwarded frame: on the wire too, but never held back.
void shaper_charge(int nic, uint32_t bytes);
// Wire time (TSC) nic may still be given now without waiting (INT64_MAX
// unpaced); changes nothing.
int64_t shaper_budget(int nic, uint64_t now);
// When a full queue of nic has room again: half of it gone out.
uint64_t shaper_room_at(int nic);
uint64_t shaper_depth(int nic); // the queue's depth (TSC)
// TSC per kilobit at nic's rate (0: unpaced): a balancer's capacity.
uint64_t shaper_tsc_per_kbit(int nic);
#endif
