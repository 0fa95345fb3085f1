// x86_64 descriptor tables, trap frames and the syscall MSRs.
#ifndef CPU_H
#define CPU_H
#include "arch.h"

#define SEL_KCODE 0x08
#define SEL_KDATA 0x10
#define SEL_UDATA (0x18 | 3)
#define SEL_UCODE (0x20 | 3)
#define SEL_TSS 0x28

#define VEC_IRQ_BASE 32       // IOAPIC pins 0..23 -> vectors 32..55
#define VEC_TIMER 0x40
#define VEC_RESCHED 0xf0      // IPI: run the scheduler (a process was queued here)
#define VEC_TLB 0xf1          // IPI: TLB shootdown request (kernel/res/tlb.c)
#define VEC_SPURIOUS 0xff
#define VEC_SYSCALL 0x100     // marks a trap frame built by the syscall entry

// Saved user (or kernel) state; layout matches trap.S.
// PUSH_REGS's order (entry.S): a system call's six arguments come first, in
// the order of the ABI (rdi, rsi, rdx, r10, r8, r9), so that the dispatcher
// hands the handler &tf->rdi as its argument array, with no copy.
struct trapframe {
	uint64_t rdi, rsi, rdx, r10, r8, r9;
	uint64_t r15, r14, r13, r12, r11, rbp, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;
};

// Offsets into struct percpu that entry.S uses.
#define PCPU_KSTACK 8
#define PCPU_USER_RSP 16
#define PCPU_ID 24

#ifndef __ASSEMBLER__
// What %gs points at in kernel mode, one per CPU.
struct percpu {
	struct percpu *self;
	uint64_t kstack_top; // kernel stack of the running process (syscall entry)
	uint64_t user_rsp;   // the user stack pointer while syscall_entry saves it
	int id;
};
struct percpu *cpu_percpu(int id);
#endif

// This CPU's descriptor tables and per-CPU block; id 0 is the boot CPU.
void cpu_init(int id);
void trap_init(void);
void trap_load_idt(void); // on each further CPU
// What the kernel above does at a trap (main.c installs them): a fault in
// user mode (status: the exit status, why: a description; must not return)
// and the return to user mode after an interrupt (preemption).
struct trap_hooks {
	void (*user_fault)(int status, const char *why);
	void (*to_user)(void);
	// Around an interrupt's handler (the big lock's take and release) ...
	void (*enter)(void);
	void (*exit)(void);
	// ... and last thing before any return to user mode (its release).
	void (*leave_kernel)(void);
};
void trap_set_hooks(const struct trap_hooks *h);
void syscall_msr_init(void);
// Enter user mode for the first time from a prepared trap frame.
void trap_return(void);

typedef void (*irq_handler_t)(void *arg);
int irq_register(int vector, irq_handler_t fn, void *arg);
// A handler that runs without the enter/exit hooks (no lock): for IPIs a
// CPU holding the big lock waits on.
int irq_register_raw(int vector, irq_handler_t fn, void *arg);
extern uint64_t trap_device_irqs[MAXCPU]; // device interrupts each CPU took

#endif
