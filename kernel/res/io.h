// I/O resource manager: channels on NICs with batched, zero-copy send and
// receive (Tender section 4.4, Table 3; docs/design.md, "The I/O resource").
#ifndef IO_H
#define IO_H
#include <stdbool.h>
#include <stdint.h>

#define NIO 16 // channels in the table

// Boot options (kernel command line).
struct io_options {
	long copy_threshold;     // frames up to this many bytes are copied
	bool threshold_measured; // measured at boot, not copy_threshold=N
	bool poll_halts;     // poll=timer: halt between polls on a fast tick
	bool poll_irq;       // poll=irq: an empty ring waits for the NIC's interrupt
	bool rx_scrub;       // rxscrub=0 turns the receive-tail scrub off, to
	                     // measure its cost; it lets stale bytes reach users
	uint32_t nic_mbps[8]; // nic_mbps=a,b,..: NIC i sends at most that many
	                      // Mbit/s (0: as fast as the device takes frames)
	const char *node, *nicdim, *nb; // the hyper-crossbar (kernel/net/route.h); node NULL: none
};

// Attaches the manager to the NICs the driver found; measures or takes the
// copy threshold, and prints it.
void io_init(const struct io_options *o);
// Scheduler idle work: finished sends reclaimed, then the worker's run.
// True while a NIC is polled.
bool io_idle_poll(void);
extern bool io_poll_halts; // poll=timer
uint64_t io_next_event(uint64_t now); // the network timers' next work (UINT64_MAX: none)
// True when frames were taken from a NIC since its last call.
bool io_idle_found(void);
long io_live(void);
#endif
