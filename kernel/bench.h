// In-kernel benchmarks, run at boot when the command line asks (kbench=).
#ifndef BENCH_H
#define BENCH_H
// Times copying S bytes against exchanging the pages behind S (Figure 3 of
// the Tender paper) and prints one "BENCH exchange ..." line per size.
void bench_exchange(int reps);
#endif
