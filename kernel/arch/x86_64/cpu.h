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
#define VEC_SPURIOUS 0xff
#define VEC_SYSCALL 0x100     // marks a trap frame built by the syscall entry

// Saved user (or kernel) state; layout matches trap.S.
struct trapframe {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;
};

void cpu_init(void);
void trap_init(void);
// What the kernel above does at a trap (main.c installs them): a fault in
// user mode (status: the exit status, why: a description; must not return)
// and the return to user mode after an interrupt (preemption).
struct trap_hooks {
	void (*user_fault)(int status, const char *why);
	void (*to_user)(void);
};
void trap_set_hooks(const struct trap_hooks *h);
void syscall_msr_init(void);
// Enter user mode for the first time from a prepared trap frame.
void trap_return(void);
extern uint64_t cpu_kstack_top;

typedef void (*irq_handler_t)(void *arg);
int irq_register(int vector, irq_handler_t fn, void *arg);

#endif
