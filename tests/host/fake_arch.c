// Host implementation of arch.h and of kprintf.h's output and panic, for the
// unit tests. Physical memory is one aligned host allocation; a physical
// address outside it fails the test instead of touching host memory.
#include "fake_arch.h"
#include "kprintf.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fake_arch fake;
uint8_t fake_ports[65536];
uint32_t fake_mmio[1024];
uint32_t (*fake_port_in_hook)(uint16_t port, int width);
void (*fake_port_out_hook)(uint16_t port, int width, uint32_t v);
char fake_console[65536];
size_t fake_console_len;
jmp_buf *volatile fake_panic_env;
jmp_buf *volatile fake_fatal_env;
char fake_panic_msg[512];
int fake_panic_count;
int log_level = LOG_INFO;

static _Thread_local int fake_cpu;
_Thread_local uint64_t fake_irq_depth;

static uint8_t *phys; // FAKE_PHYS_SIZE bytes backing FAKE_PHYS_BASE

void fake_fatal(const char *fmt, ...)
{
	static char msg[512]; // CUnit copies the text into its failure record
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jmp_buf *env = fake_fatal_env;
	if (env) {
		fprintf(stderr, "fatal in teardown: %s\n", msg);
		fake_fatal_env = NULL;
		longjmp(*env, 1);
	}
	if (CU_get_current_test())
		CU_assertImplementation(CU_FALSE, 0, msg, "fake_arch", "", CU_TRUE);
	fprintf(stderr, "fatal outside a test: %s\n", msg);
	abort();
}

void fake_reset(void)
{
	if (!phys) {
		phys = aligned_alloc(1 << 21, FAKE_PHYS_SIZE);
		if (!phys)
			abort();
	}
	memset(phys, FAKE_POISON, FAKE_PHYS_SIZE);
	memset(&fake, 0, sizeof(fake));
	fake.tsc_step = 1000;
	fake_cpu = 0;
	fake_irq_depth = 0;
	memset(fake_ports, 0, sizeof(fake_ports));
	memset(fake_mmio, 0, sizeof(fake_mmio));
	fake_port_in_hook = NULL;
	fake_port_out_hook = NULL;
	fake_console_len = 0;
	fake_console[0] = 0;
	fake_panic_env = NULL;
	fake_panic_msg[0] = 0;
	log_level = LOG_INFO;
}

bool fake_phys_ok(paddr_t pa, size_t n)
{
	return phys && pa >= FAKE_PHYS_BASE && pa <= FAKE_PHYS_END && n <= FAKE_PHYS_END - pa;
}

void *arch_p2v(paddr_t pa)
{
	if (!fake_phys_ok(pa, 1))
		fake_fatal("arch_p2v: physical address %#lx is not backed", (unsigned long)pa);
	return phys + (pa - FAKE_PHYS_BASE);
}

// The kernel image's bounds (kernel/dma.c refuses its frames as receive
// buffers): the image is not in simulated RAM, so both translate to 0, an
// empty range.
char __image_start[1], __image_end[1];

paddr_t arch_v2p(const void *va)
{
	const uint8_t *p = va;
	if (p == (const uint8_t *)__image_start || p == (const uint8_t *)__image_end)
		return 0;
	if (!phys || p < phys || p >= phys + FAKE_PHYS_SIZE)
		fake_fatal("arch_v2p: %p is not in simulated RAM", va);
	return FAKE_PHYS_BASE + (paddr_t)(p - phys);
}

static uint32_t port_in(uint16_t port, int width)
{
	fake.port_reads++;
	if (fake_port_in_hook)
		return fake_port_in_hook(port, width);
	uint32_t v = 0;
	for (int i = 0; i < width; i++)
		v |= (uint32_t)fake_ports[(uint16_t)(port + i)] << (8 * i);
	return v;
}

static void port_out(uint16_t port, int width, uint32_t v)
{
	fake.port_writes++;
	if (fake_port_out_hook) {
		fake_port_out_hook(port, width, v);
		return;
	}
	for (int i = 0; i < width; i++)
		fake_ports[(uint16_t)(port + i)] = (uint8_t)(v >> (8 * i));
}

uint8_t arch_inb(uint16_t port) { return (uint8_t)port_in(port, 1); }
uint16_t arch_inw(uint16_t port) { return (uint16_t)port_in(port, 2); }
uint32_t arch_inl(uint16_t port) { return port_in(port, 4); }
void arch_outb(uint16_t port, uint8_t v) { port_out(port, 1, v); }
void arch_outw(uint16_t port, uint16_t v) { port_out(port, 2, v); }
void arch_outl(uint16_t port, uint32_t v) { port_out(port, 4, v); }
uint32_t arch_mmio_rd32(volatile void *addr) { return *(volatile uint32_t *)addr; }
void arch_mmio_wr32(volatile void *addr, uint32_t v) { *(volatile uint32_t *)addr = v; }
void arch_wmb(void) { fake.wmb++; }

void arch_load_root(paddr_t pml4)
{
	if (pml4 & (PAGE_SIZE - 1) || !fake_phys_ok(pml4, PAGE_SIZE))
		fake_fatal("arch_load_root: bad root %#lx", (unsigned long)pml4);
	fake.cr3 = pml4;
	fake.load_root++;
}

paddr_t arch_current_root(void) { return fake.cr3; }

void arch_invlpg(uint64_t va)
{
	if (fake.invlpg < FAKE_INVLPG_LOG)
		fake.invlpg_va[fake.invlpg] = va;
	fake.invlpg++;
	fake.last_invlpg = va;
}

void arch_flush_tlb(void) { fake.flush_tlb++; }

void fake_set_cpu(int cpu)
{
	if (cpu < 0 || cpu >= MAXCPU)
		fake_fatal("fake_set_cpu: no cpu %d", cpu);
	fake_cpu = cpu;
}
int arch_cpu_id(void) { return fake_cpu; }
// LAPIC IDs as the drivers see them (smp.h): CPU c's is 0x10 + c, so no
// code can mistake an index for an ID.
uint32_t smp_apic_id(int cpu) { return 0x10u + (uint32_t)cpu; }
void (*fake_ipi_hook)(int cpu, int vector);
void arch_send_ipi(int cpu, int vector)
{
	fake.ipis++;
	fake.ipi_cpus |= 1u << cpu;
	if (fake_ipi_hook)
		fake_ipi_hook(cpu, vector);
}
uint64_t arch_irq_save(void) { return fake_irq_depth++; }
void arch_irq_restore(uint64_t flags) { fake_irq_depth = flags; }
void arch_idle(void) { fake.idle++; }
uint64_t arch_idle_woke(void) { return 0; }
void arch_mark(enum arch_mark m) { (void)m; }
uint64_t arch_rdtsc(void) { return fake.tsc += fake.tsc_step; }
// A pause takes time, as on a CPU: time-bounded spins end.
void arch_pause(void)
{
	__atomic_add_fetch(&fake.pause, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&fake.tsc, 1000, __ATOMIC_RELAXED);
}

void arch_cache_flush_range(const void *p, size_t n)
{
	(void)p;
	fake.cache_flushes++;
	fake.cache_flushed_bytes += n;
}

void arch_exit(int status) { fake_fatal("arch_exit(%d)", status); }
void arch_halt_forever(void) { fake_fatal("arch_halt_forever"); }
void arch_backtrace(uint64_t rbp, int max) { (void)rbp, (void)max; }

void arch_switch(struct context **from, struct context *to)
{
	(void)from, (void)to;
	fake.switches++;
}

void arch_set_kernel_stack(uint64_t top) { fake.kernel_stack = top; }

// kprintf.h: the console is a buffer (echoed to stderr with FAKE_CONSOLE=1).
void console_write(const char *s, size_t n)
{
	size_t room = sizeof(fake_console) - 1 - fake_console_len;
	size_t k = n < room ? n : room;
	memcpy(fake_console + fake_console_len, s, k);
	fake_console_len += k;
	fake_console[fake_console_len] = 0;
	if (getenv("FAKE_CONSOLE"))
		fwrite(s, 1, n, stderr);
}

int kvprintf(const char *fmt, va_list ap)
{
	char buf[512];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	console_write(buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	return n;
}

int kprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = kvprintf(fmt, ap);
	va_end(ap);
	return n;
}

void klog(int level, const char *fmt, ...)
{
	if (level > log_level)
		return;
	va_list ap;
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
}

void panic(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(fake_panic_msg, sizeof(fake_panic_msg), fmt, ap);
	va_end(ap);
	fake_panic_count++;
	jmp_buf *env = fake_panic_env;
	if (env) {
		fake_panic_env = NULL;
		longjmp(*env, 1);
	}
	fake_fatal("unexpected panic: %s", fake_panic_msg);
}
