// Application processors: found in the MADT, started with INIT-SIPI-SIPI
// through the real-mode trampoline (trampoline.S), each with its own
// descriptor tables, per-CPU block and stack; and IPIs between CPUs.
#ifndef SMP_H
#define SMP_H
#include "arch.h"

// Starts up to max_cpus - 1 application processors (the boot CPU is CPU 0);
// each runs ap_main(id) with interrupts off once its CPU state is set up,
// and ap_main never returns. Returns the number of CPUs now running.
// tramp_ok: the page at 0x8000 is RAM the kernel does not use.
int smp_start(int max_cpus, bool tramp_ok, void (*ap_main)(int id));
int smp_ncpu(void);
// A fixed interrupt of `vector` to CPU `cpu` (index, not LAPIC ID).
void smp_send_ipi(int cpu, int vector);
uint32_t smp_apic_id(int cpu);
#endif
