// Machine primitives behind arch.h: port I/O, MMIO, CR3, TLB, interrupts.
#include "arch.h"
#include "../../kprintf.h"

void *arch_p2v(paddr_t pa) { return (void *)(uintptr_t)pa; }
paddr_t arch_v2p(const void *va) { return (paddr_t)(uintptr_t)va; }

uint8_t arch_inb(uint16_t port)
{
	uint8_t v;
	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}
uint16_t arch_inw(uint16_t port)
{
	uint16_t v;
	__asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}
uint32_t arch_inl(uint16_t port)
{
	uint32_t v;
	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}
void arch_outb(uint16_t port, uint8_t v) { __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port)); }
void arch_outw(uint16_t port, uint16_t v) { __asm__ volatile("outw %0, %1" ::"a"(v), "Nd"(port)); }
void arch_outl(uint16_t port, uint32_t v) { __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port)); }

uint32_t arch_mmio_rd32(volatile void *addr) { return *(volatile uint32_t *)addr; }
void arch_mmio_wr32(volatile void *addr, uint32_t v) { *(volatile uint32_t *)addr = v; }
void arch_wmb(void) { __asm__ volatile("sfence" ::: "memory"); }

void arch_load_root(paddr_t pml4) { __asm__ volatile("mov %0, %%cr3" ::"r"(pml4) : "memory"); }
paddr_t arch_current_root(void)
{
	paddr_t v;
	__asm__ volatile("mov %%cr3, %0" : "=r"(v));
	return v;
}
void arch_invlpg(uint64_t va) { __asm__ volatile("invlpg (%0)" ::"r"(va) : "memory"); }
void arch_flush_tlb(void) { arch_load_root(arch_current_root()); }

uint64_t arch_irq_save(void)
{
	uint64_t f;
	__asm__ volatile("pushfq; pop %0; cli" : "=r"(f)::"memory");
	return f;
}
void arch_irq_restore(uint64_t f)
{
	if (f & (1 << 9))
		__asm__ volatile("sti" ::: "memory");
}
static volatile bool idling[MAXCPU];
static volatile uint64_t woke_tsc[MAXCPU];
void arch_idle(void)
{
	int c = arch_cpu_id();
	woke_tsc[c] = 0;
	idling[c] = true;
	__asm__ volatile("sti; hlt; cli" ::: "memory");
	idling[c] = false;
}
uint64_t arch_idle_woke(void) { return woke_tsc[arch_cpu_id()]; }
// From trap_dispatch: an interrupt that ends a halt stamps the wake-up.
void arch_idle_interrupted(void)
{
	int c = arch_cpu_id();
	if (idling[c] && !woke_tsc[c])
		woke_tsc[c] = arch_rdtsc();
}
// STI takes effect after the next instruction (SDM Vol. 2B, STI): the nop
// is where a pending interrupt is taken.
void arch_irq_window(void) { __asm__ volatile("sti; nop; cli" ::: "memory"); }
// insnplugin.c's poll markers (nopl with a displacement no compiler emits).
void arch_mark(enum arch_mark m)
{
	if (m == ARCH_MARK_POLL_BEGIN)
		__asm__ volatile("nopl 0x7ab1c0d7(%%rax)" ::: "memory");
	else
		__asm__ volatile("nopl 0x7ab1c0d8(%%rax)" ::: "memory");
}
uint64_t arch_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
void arch_pause(void) { __asm__ volatile("pause"); }

void arch_cache_flush_range(const void *p, size_t n)
{
	for (size_t o = 0; o < n; o += 64)
		__asm__ volatile("clflush (%0)" ::"r"((const char *)p + o) : "memory");
	__asm__ volatile("mfence" ::: "memory");
}

void arch_halt_forever(void)
{
	for (;;)
		__asm__ volatile("cli; hlt");
}

// QEMU's isa-debug-exit (port 0xf4) ends QEMU with (status << 1) | 1;
// Bochs ends on "Shutdown" written to port 0x8900. Elsewhere we just halt.
void arch_exit(int status)
{
	arch_outl(0xf4, (uint32_t)status);
	const char *s = "Shutdown";
	while (*s)
		arch_outb(0x8900, (uint8_t)*s++);
	arch_halt_forever();
}

// Walks saved frame pointers (the kernel is built with -fno-omit-frame-pointer).
void arch_backtrace(uint64_t rbp, int max)
{
	kprintf("backtrace:\n");
	for (int i = 0; i < max && rbp >= 0x100000 && rbp < 0x8000000000ull && !(rbp & 7); i++) {
		uint64_t *fp = (uint64_t *)rbp;
		if (!fp[1])
			break;
		kprintf("  #%d %p\n", i, (void *)fp[1]);
		rbp = fp[0];
	}
}
