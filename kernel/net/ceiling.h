// The emulated link's ceiling (docs/benchmarks.md, "ceiling"): the highest
// rate a NIC model and its backend carry between two VMs on this host when
// the guests do nothing but feed and drain the rings. Runs at boot on the
// bare network-device seam (net/netdev.h), so it is the same code for every
// NIC family, before the I/O manager takes the NICs.
//
// Kernel command line: ceiling=tx on the sending VM (with peer=MAC, the
// receiver's NIC 0) and ceiling=rx on the receiving one (which prints
// READY once it polls), plus
//   ceiling_sizes=a,b,..   payload bytes S (wire.h frames of S+30 bytes)
//   ceiling_ms=N           length of one timed window (default 100)
//   ceiling_reps=N         windows per size and mode (default 3)
//   ceiling_modes=m,..     how both guests wait for their ring: spin
//                          (pause and poll again) or halt (hlt until an
//                          interrupt); default spin,halt
// The sender fills a ring-full of packets once (each a whole frame in one
// buffer of its own: one segment, the fewest descriptors a NIC can be
// given), then for each mode, size and window re-numbers and re-queues
// every packet the NIC has finished, one doorbell per batch, for ceiling_ms.
// It keeps no more frames unaccounted for than the receiver's ring holds:
// the receiver sends a credit (its count of frames taken) every quarter
// ring. Without it the sender outruns the receiver, QEMU's e1000 drops what
// it has too few buffers for and the sender's QEMU queues and drops the
// rest, which costs CPU the receiving side needs.
// The receiver takes buffers out with rx_poll and gives the same pages back
// with rx_refill at once, checks each frame's headers, length and payload
// ends, and times each window by the TSC from the first poll that brought
// one of its frames to the last; it prints one line per window at the end:
//   CEILING rx mode=M bytes=S win=W frames=N timed=K tsc=T tsc_hz=H lost=L
// (timed: frames after the window's first poll, taken in T ticks; lost:
// gaps in the sender's numbering). The sender prints CEILING tx lines with
// what it queued. Either side fails (returns nonzero) on a bad frame, a
// timeout, or a frame not given back.
#ifndef CEILING_H
#define CEILING_H
#include "cmdline.h"

// Runs the side `role` (tx or rx) on NIC 0; 0 on success.
int ceiling_run(const char *role, const struct cmdline *c);
#endif
