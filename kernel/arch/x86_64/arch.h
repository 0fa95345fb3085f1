// The hardware boundary. Kernel logic includes this header and nothing else
// machine-specific; the host test build links a fake implementation
// (tests/host/fake_arch.c) that simulates physical memory and registers.
#ifndef ARCH_H
#define ARCH_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

#define PAGE_SIZE 4096ul
#define PAGE_SHIFT 12
#define PAGE_ROUND_UP(x) (((x) + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1))
#define PAGE_ROUND_DOWN(x) ((x) & ~(PAGE_SIZE - 1))

// Page-table entry bits (Intel SDM vol. 3A, 4.5 "4-level paging").
#define PTE_P (1ull << 0)
#define PTE_W (1ull << 1)
#define PTE_U (1ull << 2)
#define PTE_PWT (1ull << 3)
#define PTE_PCD (1ull << 4)
#define PTE_A (1ull << 5)
#define PTE_D (1ull << 6)
#define PTE_PS (1ull << 7)
#define PTE_G (1ull << 8)
#define PTE_NX (1ull << 63)
#define PTE_ADDR_MASK 0x000ffffffffff000ull

// Virtual layout: the kernel identity-maps RAM in the low 512 GiB (PML4[0],
// supervisor only); user space starts at 1 TiB; device windows sit at the top.
#define USER_BASE 0x0000010000000000ull
#define USER_TOP 0x00007ffffffff000ull
#define MMIO_BASE 0xffffff0000000000ull

typedef uint64_t paddr_t;

// CPUs: at most MAXCPU, numbered from 0 (the boot CPU); per-CPU tables
// are indexed by this number.
#define MAXCPU 8
int arch_cpu_id(void); // index 0..MAXCPU-1 of the CPU running this code
void arch_send_ipi(int cpu, int vector); // a fixed interrupt to CPU `cpu`

// Physical memory is reachable from the kernel at this address.
void *arch_p2v(paddr_t pa);
paddr_t arch_v2p(const void *va);

// Port I/O and MMIO.
uint8_t arch_inb(uint16_t port);
uint16_t arch_inw(uint16_t port);
uint32_t arch_inl(uint16_t port);
void arch_outb(uint16_t port, uint8_t v);
void arch_outw(uint16_t port, uint16_t v);
void arch_outl(uint16_t port, uint32_t v);
uint32_t arch_mmio_rd32(volatile void *addr);
void arch_mmio_wr32(volatile void *addr, uint32_t v);
void arch_wmb(void);

// Translation: load a page-table root, invalidate one page or everything.
void arch_load_root(paddr_t pml4);
paddr_t arch_current_root(void);
void arch_invlpg(uint64_t va);
void arch_flush_tlb(void);

// Interrupt state. The kernel runs with interrupts off except when idle.
uint64_t arch_irq_save(void);
void arch_irq_restore(uint64_t flags);
void arch_idle(void);        // enable interrupts, halt until one arrives
// The TSC when the last arch_idle's halt ended: the first interrupt's entry,
// before its handler ran (the handlers' work is not idle time); 0 if none came.
uint64_t arch_idle_woke(void);
void arch_idle_interrupted(void); // trap_dispatch, on every interrupt
void arch_irq_window(void);  // let pending interrupts in, then off again
// Marks for the receive-work counter (tools/linux-baseline/insnplugin.c):
// no-ops a TCG plugin sees. A poll begins; that poll found nothing, so its
// instructions are not receive work.
enum arch_mark { ARCH_MARK_POLL_BEGIN, ARCH_MARK_POLL_EMPTY };
void arch_mark(enum arch_mark m);
uint64_t arch_rdtsc(void);
void arch_pause(void);
// Writes back and evicts [p, p+n) from every cache level (clflush + mfence).
void arch_cache_flush_range(const void *p, size_t n);

// Leave the machine: QEMU isa-debug-exit (status), Bochs shutdown port, halt.
void arch_exit(int status) __attribute__((noreturn));
void arch_halt_forever(void) __attribute__((noreturn));
void arch_backtrace(uint64_t rbp, int max);

// Per-process kernel context (callee-saved registers) and the switch.
struct context {
	uint64_t r15, r14, r13, r12, rbx, rbp, rip;
};
void arch_switch(struct context **from, struct context *to);
void arch_set_kernel_stack(uint64_t top);

#endif
