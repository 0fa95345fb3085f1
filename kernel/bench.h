// In-kernel benchmarks, run at boot when the command line asks (kbench=).
#ifndef BENCH_H
#define BENCH_H
#include <stdint.h>
#include <stdbool.h>
// Times copying S bytes against exchanging the pages behind S (Figure 3 of
// the Tender paper) and prints one "BENCH exchange ..." line per size.
void bench_exchange(int reps);
// The receive path's choice: the longest frame (64..4096 bytes, powers of
// two) that copying from a cold buffer moves faster than exchanging one
// page into an attached region, plus, when the receive path scrubs
// (scrub), zeroing the page past the frame. Measured at boot.
uint64_t bench_copy_threshold(bool scrub);
// The page count above which one full TLB flush is cheaper than one invlpg
// per page, for a process that touches the exchanged pages and a hot set
// of BENCH_HOT_PAGES others afterwards. Prints the costs it measured.
#define BENCH_HOT_PAGES 16
uint64_t bench_tlb_threshold(void);
#endif
