// Starting the application processors (Intel SDM vol. 3A, 9.4 "Multiple-
// processor initialization"; the INIT-SIPI-SIPI sequence of 8.4.4.1 in
// older editions): the trampoline goes to 0x8000, then for each processor
// of the MADT an INIT, 10 ms, and two startup IPIs 200 us apart; the
// processor says it is up by setting its flag.
#include "smp.h"
#include "apic.h"
#include "cpu.h"
#include "timer.h"
#include "../../kprintf.h"
#include <string.h>

#define TRAMP_BASE 0x8000
#define AP_STACK 16384

struct tramp_data {
	uint64_t boot_root, stack, id, entry;
};

extern const char tramp_start[], tramp_end[], tramp_data[];
extern char boot_pml4[];

static uint32_t apic_ids[MAXCPU];
static int ncpu = 1;
static volatile bool online[MAXCPU];
static uint8_t ap_stacks[MAXCPU][AP_STACK] __attribute__((aligned(16)));
static paddr_t kernel_root;
static void (*ap_main_fn)(int id);

int smp_ncpu(void) { return ncpu; }
uint32_t smp_apic_id(int cpu) { return apic_ids[cpu]; }

void arch_send_ipi(int cpu, int vector) { smp_send_ipi(cpu, vector); }

void smp_send_ipi(int cpu, int vector)
{
	lapic_send_ipi(apic_ids[cpu], (uint32_t)vector); // fixed, physical, edge
}

static void delay_us(uint64_t us)
{
	uint64_t end = arch_rdtsc() + timer_us_to_tsc(us);
	while (arch_rdtsc() < end)
		arch_pause();
}

// trampoline.S jumps here on the new CPU's stack, on the boot page tables.
void smp_ap_entry(int id)
{
	arch_load_root(kernel_root);
	cpu_init(id);
	trap_load_idt();
	syscall_msr_init();
	lapic_enable();
	__atomic_store_n(&online[id], true, __ATOMIC_RELEASE);
	ap_main_fn(id);
	panic("smp: ap_main returned on CPU %d", id);
}

static bool start_one(int id, uint32_t apic_id)
{
	struct tramp_data *d = arch_p2v(TRAMP_BASE + (paddr_t)(tramp_data - tramp_start));
	d->boot_root = (uint64_t)(uintptr_t)boot_pml4;
	d->stack = (uint64_t)(uintptr_t)(ap_stacks[id] + AP_STACK);
	d->id = (uint64_t)id;
	d->entry = (uint64_t)(uintptr_t)smp_ap_entry;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	lapic_send_ipi(apic_id, 0x4500); // INIT, assert
	delay_us(10000);
	for (int k = 0; k < 2 && !online[id]; k++) {
		lapic_send_ipi(apic_id, 0x4600 | (TRAMP_BASE >> 12)); // startup
		delay_us(200);
	}
	// Under emulation a CPU may take a while to come up: up to a second.
	uint64_t end = arch_rdtsc() + timer_us_to_tsc(1000000);
	while (!__atomic_load_n(&online[id], __ATOMIC_ACQUIRE) && arch_rdtsc() < end)
		arch_pause();
	return online[id];
}

int smp_start(int max_cpus, bool tramp_ok, void (*ap_main)(int id))
{
	uint32_t ids[MAXCPU];
	int n = apic_cpus(ids, MAXCPU), me = (int)lapic_id();
	apic_ids[0] = (uint32_t)me;
	online[0] = true;
	if (max_cpus > MAXCPU)
		max_cpus = MAXCPU;
	if (n <= 1 || max_cpus <= 1)
		return ncpu;
	if (!tramp_ok) {
		pr_warn("smp: no RAM at %x for the startup code: one CPU\n", TRAMP_BASE);
		return ncpu;
	}
	ap_main_fn = ap_main;
	kernel_root = arch_current_root();
	memcpy(arch_p2v(TRAMP_BASE), tramp_start, (size_t)(tramp_end - tramp_start));
	for (int i = 0; i < n && ncpu < max_cpus; i++) {
		if ((int)ids[i] == me)
			continue;
		int id = ncpu;
		apic_ids[id] = ids[i];
		if (!start_one(id, ids[i])) {
			pr_warn("smp: CPU with LAPIC ID %u did not come up\n", ids[i]);
			continue;
		}
		ncpu++;
	}
	return ncpu;
}
