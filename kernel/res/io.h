// I/O resource manager: channels on NICs with batched, zero-copy send and
// receive (Tender section 4.4, Table 3; DESIGN.md section 2).
#ifndef IO_H
#define IO_H
#include <stdbool.h>
#include <stdint.h>

// Attaches the manager to the NICs the driver found; measures (threshold
// < 0) or takes the copy threshold, and prints it.
void io_init(long threshold, bool poll_halts);
// Scheduler idle work: polls NICs in polling mode. True while any is.
bool io_idle_poll(void);
long io_live(void);
#endif
