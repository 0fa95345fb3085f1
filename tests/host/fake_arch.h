// The host side of arch.h: simulated physical memory, a fake CR3 with TLB
// counters, port and MMIO registers, and a panic that returns control to the
// test. Test files include this; kernel files see only arch.h.
#ifndef FAKE_ARCH_H
#define FAKE_ARCH_H
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <CUnit/CUnit.h>
#include "arch/x86_64/arch.h"

// Physical memory [FAKE_PHYS_BASE, FAKE_PHYS_END): address 0 and the low
// megabyte are never backed, so a frame there is a bug the fake catches.
#define FAKE_PHYS_BASE 0x100000ull
#define FAKE_PHYS_SIZE (64ull << 20)
#define FAKE_PHYS_END (FAKE_PHYS_BASE + FAKE_PHYS_SIZE)
#define FAKE_POISON 0xa5 // fresh "RAM" contents: never zero by accident
#define FAKE_INVLPG_LOG 128 // addresses of the first arch_invlpg calls kept

struct fake_arch {
	paddr_t cr3;
	uint64_t load_root, invlpg, flush_tlb; // call counts
	uint64_t last_invlpg;                  // va of the last arch_invlpg
	uint64_t invlpg_va[FAKE_INVLPG_LOG];   // va of each of the first invlpg calls
	uint64_t idle, pause, wmb; // pause: atomic, spinning threads share it
	uint64_t tsc, tsc_step;
	uint64_t kernel_stack;
	uint64_t switches;
	uint64_t port_writes, port_reads;
	uint64_t cache_flushes, cache_flushed_bytes; // arch_cache_flush_range
	uint64_t ipis;                         // arch_send_ipi calls
	uint32_t ipi_cpus;                     // the CPUs they went to, a bit each
};
extern struct fake_arch fake;

extern uint8_t fake_ports[65536];  // byte-addressed I/O port space
extern uint32_t fake_mmio[1024];   // a 4 KiB register window for drivers
// Optional device models: called instead of the plain arrays when set.
extern uint32_t (*fake_port_in_hook)(uint16_t port, int width);
extern void (*fake_port_out_hook)(uint16_t port, int width, uint32_t v);

// Each host thread is one CPU with its own interrupt state: arch_cpu_id()
// returns what fake_set_cpu set on this thread (0 until then), and
// fake_irq_depth counts arch_irq_save calls not undone (0: interrupts on).
void fake_set_cpu(int cpu);
// arch_send_ipi counts, then calls this (when set) to deliver: it runs on
// the sender's thread, so a test answers as the target with fake_set_cpu.
extern void (*fake_ipi_hook)(int cpu, int vector);
extern _Thread_local uint64_t fake_irq_depth;

// Fills memory with FAKE_POISON and zeroes every counter and register.
void fake_reset(void);
bool fake_phys_ok(paddr_t pa, size_t n); // [pa, pa+n) is backed

// Console output of kprintf/klog since the last fake_reset (truncated).
extern char fake_console[65536];
extern size_t fake_console_len;

// Panic capture. panic() longjmps to fake_panic_env when it is set (see
// EXPECT_PANIC); otherwise it fails the current test fatally.
extern jmp_buf *volatile fake_panic_env;
extern char fake_panic_msg[512];
extern int fake_panic_count;

// When set, fake_fatal longjmps here instead of into CUnit: teardown code
// uses it, since CUnit's jump buffer would re-run the teardown forever.
extern jmp_buf *volatile fake_fatal_env;

// Fails the running test fatally (or aborts outside a test) with msg.
void fake_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

// Asserts that stmt panics. Locals written inside stmt must be volatile if
// they are read afterwards (setjmp rules).
#define EXPECT_PANIC(stmt)                                                              \
	do {                                                                            \
		jmp_buf jb_;                                                            \
		int before_ = fake_panic_count;                                         \
		fake_panic_env = &jb_;                                                  \
		if (setjmp(jb_) == 0) {                                                 \
			stmt;                                                           \
			fake_panic_env = NULL;                                          \
			CU_assertImplementation(CU_FALSE, __LINE__, "expected a panic: " #stmt, \
						__FILE__, "", CU_FALSE);                \
		} else {                                                                \
			fake_panic_env = NULL;                                          \
			CU_assertImplementation(fake_panic_count == before_ + 1, __LINE__,  \
						"panicked: " #stmt, __FILE__, "", CU_FALSE); \
		}                                                                       \
	} while (0)

#endif
