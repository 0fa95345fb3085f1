// Application processors start here: the startup IPI's vector 0x08 makes
// them fetch at 0x8000 in real mode. smp.c copies these bytes there and fills
// in the data at the end; then protected mode, the boot page tables (below
// 4 GiB, identity), long mode, and a jump to smp_ap_entry on the CPU's own
// stack. Addresses are TRAMP_BASE plus the offset from tramp_start, since
// the code runs at a copy, not where it was linked.
#include "longmode.h"
#define TRAMP_BASE 0x8000
#define T(x) (TRAMP_BASE + (x) - tramp_start)

	.section .rodata
	.global tramp_start, tramp_end
	.code16
tramp_start:
	cli
	cld
	mov %cs, %ax
	mov %ax, %ds
	lgdtl (tr_gdt_ptr - tramp_start)
	mov %cr0, %eax
	or $1, %eax
	mov %eax, %cr0
	ljmpl $0x08, $T(tr32)

	.code32
tr32:
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	mov T(tr_boot_root), %eax
	mov %eax, %cr3
	LONG_MODE_ON
	ljmp $0x18, $T(tr64)

	.code64
tr64:
	FLAT_DATA_SEGMENTS
	mov T(tr_stack), %rsp
	mov T(tr_id), %rdi
	xor %rbp, %rbp
	mov T(tr_entry), %rax
	call *%rax
1:	cli
	hlt
	jmp 1b

	.align 8
tr_gdt:
	.quad 0
	.quad 0x00CF9A000000FFFF // 0x08: 32-bit code
	.quad 0x00CF92000000FFFF // 0x10: data
	.quad 0x00AF9A000000FFFF // 0x18: 64-bit code
tr_gdt_ptr:
	.short tr_gdt_ptr - tr_gdt - 1
	.long T(tr_gdt)
	.align 8
	.global tramp_data
tramp_data:               // struct tramp_data in smp.c
tr_boot_root: .quad 0
tr_stack: .quad 0
tr_id: .quad 0
tr_entry: .quad 0
tramp_end:
