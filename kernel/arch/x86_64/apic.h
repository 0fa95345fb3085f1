// Local APIC, IOAPIC (routing of device interrupts), the legacy PIC masked.
#ifndef APIC_H
#define APIC_H
#include "arch.h"
#include <stdint.h>
#include <stdbool.h>

// Finds the LAPIC and IOAPIC (MADT, else the defaults) and maps their
// registers with map_mmio (the kernel's, given by main.c: arch maps nothing).
// rsdp_hint is the loader's RSDP or 0; bios_scan allows looking for one in
// the BIOS areas (not after a UEFI boot).
void apic_init(uint64_t rsdp_hint, bool bios_scan,
	       volatile uint32_t *(*map_mmio)(paddr_t pa, uint64_t len));
void lapic_eoi(void);
// Route a global system interrupt to a vector. PCI INTx: level, active low.
int ioapic_route(int gsi, int vector, bool level, bool active_low);
void ioapic_mask(int gsi, bool masked);
// The GSI an ISA IRQ arrives on (MADT interrupt source overrides).
int isa_irq_to_gsi(int irq, bool *level, bool *active_low);
// Route it to the CPU whose LAPIC ID is apic_id.
int ioapic_route_to(int gsi, int vector, bool level, bool active_low, uint32_t apic_id);
volatile uint32_t *lapic_regs(void);
uint32_t lapic_id(void);  // this CPU's
void lapic_enable(void);  // this CPU's LAPIC on (each CPU once)
// Sends ICR low word `lo` (vector, delivery mode, level) to apic_id.
void lapic_send_ipi(uint32_t apic_id, uint32_t lo);
// The MADT's enabled processors' LAPIC IDs, boot processor first; 0 when
// the MADT is absent or lists none.
int apic_cpus(uint32_t *ids, int max);
#endif
