// The IDT and trap dispatch: exceptions from user mode kill the process with
// a message naming the fault; from kernel mode they panic with a register
// dump and a backtrace. Device interrupts go to registered handlers.
#include "cpu.h"
#include "apic.h"
#include "../../kprintf.h"
#include <fmt.h>
#include <sys.h>

struct idt_gate {
	uint16_t off_lo, sel;
	uint8_t ist, type;
	uint16_t off_mid;
	uint32_t off_hi, rsvd;
} __attribute__((packed));

static struct idt_gate idt[256];
extern char trap_stubs[];

#define NVEC 256
static struct {
	irq_handler_t fn;
	void *arg;
	bool raw; // runs outside the kernel's enter/exit hooks (the big lock)
} handlers[NVEC];

static const char *const exc_name[32] = {
	"divide error", "debug", "NMI", "breakpoint", "overflow", "bound range",
	"invalid opcode", "device not available", "double fault", "coprocessor overrun",
	"invalid TSS", "segment not present", "stack fault", "general protection",
	"page fault", "reserved", "x87 error", "alignment check", "machine check",
	"SIMD error", "virtualization", "control protection",
};

static void set_gate(int v, uint64_t addr, int dpl, int ist)
{
	idt[v] = (struct idt_gate){
		.off_lo = addr & 0xffff, .sel = SEL_KCODE, .ist = (uint8_t)ist,
		.type = (uint8_t)(0x8e | (dpl << 5)), .off_mid = (addr >> 16) & 0xffff,
		.off_hi = (uint32_t)(addr >> 32),
	};
}

void trap_init(void)
{
	for (int v = 0; v < 256; v++)
		set_gate(v, (uint64_t)(trap_stubs + 16 * v), 0, v == 8 ? 1 : 0);
	trap_load_idt();
}

// Each CPU loads the one IDT.
void trap_load_idt(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) p = { sizeof(idt) - 1, (uint64_t)idt };
	__asm__ volatile("lidt %0" ::"m"(p));
}

int irq_register(int vector, irq_handler_t fn, void *arg)
{
	if (vector < VEC_IRQ_BASE || vector >= NVEC || handlers[vector].fn)
		return -1;
	handlers[vector].fn = fn;
	handlers[vector].arg = arg;
	return 0;
}

int irq_register_raw(int vector, irq_handler_t fn, void *arg)
{
	int r = irq_register(vector, fn, arg);
	if (r == 0)
		handlers[vector].raw = true;
	return r;
}

static uint64_t read_cr2(void)
{
	uint64_t v;
	__asm__ volatile("mov %%cr2, %0" : "=r"(v));
	return v;
}

static void dump_regs(const struct trapframe *tf)
{
	kprintf("  rip %016lx  cs %lx  rflags %016lx  rsp %016lx  ss %lx\n", tf->rip, tf->cs,
		tf->rflags, tf->rsp, tf->ss);
	kprintf("  rax %016lx  rbx %016lx  rcx %016lx  rdx %016lx\n", tf->rax, tf->rbx,
		tf->rcx, tf->rdx);
	kprintf("  rsi %016lx  rdi %016lx  rbp %016lx  r8  %016lx\n", tf->rsi, tf->rdi,
		tf->rbp, tf->r8);
	kprintf("  r9  %016lx  r10 %016lx  r11 %016lx  r12 %016lx\n", tf->r9, tf->r10,
		tf->r11, tf->r12);
	kprintf("  r13 %016lx  r14 %016lx  r15 %016lx  cr2 %016lx  err %lx\n", tf->r13,
		tf->r14, tf->r15, read_cr2(), tf->error);
}

static int fault_status(uint64_t v)
{
	switch (v) {
	case 14: return EXIT_KILLED_PF;
	case 13: return EXIT_KILLED_GP;
	case 6: return EXIT_KILLED_UD;
	case 0: return EXIT_KILLED_DE;
	default: return EXIT_KILLED_OTHER;
	}
}

static struct trap_hooks hooks;

void trap_set_hooks(const struct trap_hooks *h) { hooks = *h; }

// entry.S, on every way back to user mode.
void trap_leave_kernel(void)
{
	if (hooks.leave_kernel)
		hooks.leave_kernel();
}

// Describes the fault and lets the kernel kill the process (no return).
static void user_fault(struct trapframe *tf)
{
	const char *name = tf->vector < 32 && exc_name[tf->vector] ? exc_name[tf->vector] : "exception";
	char why[160];
	if (tf->vector == 14)
		fmt_snprintf(why, sizeof(why), "page fault at %p (%s, %s) rip %p", (void *)read_cr2(),
			     tf->error & 1 ? "protection" : "not present",
			     tf->error & 2 ? "write" : (tf->error & 16 ? "fetch" : "read"), (void *)tf->rip);
	else
		fmt_snprintf(why, sizeof(why), "%s (vector %lu, error %lx) rip %p", name, tf->vector,
			     tf->error, (void *)tf->rip);
	hooks.user_fault(fault_status(tf->vector), why);
}

static void kernel_fault(struct trapframe *tf)
{
	const char *name = tf->vector < 32 && exc_name[tf->vector] ? exc_name[tf->vector] : "exception";
	kprintf("\nkernel exception: %s (vector %lu)\n", name, tf->vector);
	dump_regs(tf);
	arch_backtrace(tf->rbp, 16);
	panic("unhandled %s in kernel mode at %p", name, (void *)tf->rip);
}

// Device interrupts taken per CPU (not the timer's, not IPIs).
uint64_t trap_device_irqs[MAXCPU];

void trap_dispatch(struct trapframe *tf)
{
	bool from_user = (tf->cs & 3) == 3;
	if (tf->vector < 32) {
		if (from_user) {
			if (hooks.enter)
				hooks.enter();
			user_fault(tf);
		}
		kernel_fault(tf);
	}
	if (tf->vector == VEC_SPURIOUS)
		return;
	arch_idle_interrupted();
	if (tf->vector != VEC_TIMER && tf->vector < VEC_RESCHED)
		trap_device_irqs[arch_cpu_id()]++;
	bool raw = handlers[tf->vector].raw;
	if (!raw && hooks.enter)
		hooks.enter();
	if (handlers[tf->vector].fn)
		handlers[tf->vector].fn(handlers[tf->vector].arg);
	lapic_eoi();
	if (raw)
		return;
	if (from_user) {
		if (hooks.to_user)
			hooks.to_user();
		return; // trap_return's leave_kernel ends the kernel's part
	}
	if (hooks.exit)
		hooks.exit();
}
