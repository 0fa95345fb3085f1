// Trap entry: one stub per vector pushes (error, vector) and joins
// trap_common, which saves registers as struct trapframe (cpu.h) and calls
// trap_dispatch. System calls enter at syscall_entry and build the same frame.
// In kernel mode %gs is the CPU's struct percpu (cpu.h): every way in from
// user mode swaps it in, every way out swaps the user's back.
#define VEC_SYSCALL 0x100
#define PCPU_KSTACK 8   // cpu.h, checked there
#define PCPU_USER_RSP 16
	.text

.macro PUSH_REGS
	push %rax
	push %rbx
	push %rcx
	push %rbp
	push %r11
	push %r12
	push %r13
	push %r14
	push %r15
	push %r9
	push %r8
	push %r10
	push %rdx
	push %rsi
	push %rdi
.endm

.macro POP_REGS
	pop %rdi
	pop %rsi
	pop %rdx
	pop %r10
	pop %r8
	pop %r9
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %r11
	pop %rbp
	pop %rcx
	pop %rbx
	pop %rax
.endm

// Vectors where the CPU pushes an error code: 8, 10-14, 17, 21, 29, 30.
.macro STUB n
	.align 16
	.if (\n == 8) || (\n >= 10 && \n <= 14) || (\n == 17) || (\n == 21) || (\n == 29) || (\n == 30)
	.else
	push $0
	.endif
	push $\n
	jmp trap_common
.endm

	.align 16
	.global trap_stubs
trap_stubs:
	.altmacro
	.set i, 0
	.rept 256
	STUB %i
	.set i, i + 1
	.endr
	.noaltmacro

trap_common:
	testb $3, 3*8(%rsp)             // cs: from user mode?
	jz 1f
	swapgs
1:	cld
	PUSH_REGS
	mov %rsp, %rdi
	xor %rbp, %rbp
	call trap_dispatch
	.global trap_return
trap_return:
	testb $3, 18*8(%rsp)            // back to user mode: leave the kernel
	jz 2f
	call trap_leave_kernel
2:	cmpq $VEC_SYSCALL, 15*8(%rsp)
	je syscall_return
	POP_REGS
	add $16, %rsp
	testb $3, 8(%rsp)
	jz 3f
	swapgs
3:	iretq

// syscall: rcx = user rip, r11 = user rflags, interrupts off (FMASK).
	.global syscall_entry
syscall_entry:
	swapgs
	mov %rsp, %gs:PCPU_USER_RSP
	mov %gs:PCPU_KSTACK, %rsp
	push $0x1b                      // ss: user data
	push %gs:PCPU_USER_RSP
	push %r11
	push $0x23                      // cs: user code
	push %rcx
	push $0
	push $VEC_SYSCALL
	PUSH_REGS
	mov %rsp, %rdi
	xor %rbp, %rbp
	call syscall_dispatch
	jmp trap_return

syscall_return:
	POP_REGS
	add $16, %rsp
	pop %rcx                        // user rip
	add $8, %rsp
	pop %r11                        // user rflags
	pop %rsp
	swapgs
	sysretq

// arch_switch(struct context **from, struct context *to): save callee-saved
// registers on this stack, store the stack pointer in *from, continue on `to`.
	.global arch_switch
arch_switch:
	push %rbp
	push %rbx
	push %r12
	push %r13
	push %r14
	push %r15
	mov %rsp, (%rdi)
	mov %rsi, %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbx
	pop %rbp
	ret
