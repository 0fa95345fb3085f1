// Boot entry: Multiboot1 (QEMU -kernel, via the a.out kludge so an ELF64 file
// loads) and Multiboot2 (GRUB) headers, then the 32-bit switch to long mode.
// The kernel runs identity-mapped; kmain() builds the final page tables.
#define MB1_MAGIC 0x1BADB002
#define MB1_FLAGS ((1 << 1) | (1 << 16)) // memory info, load by header addresses
#define MB2_MAGIC 0xE85250D6
#define KSTACK_SIZE 16384
#include "../kernel/arch/x86_64/longmode.h"

	.section .multiboot, "a"
	.align 4
mb1_header:
	.long MB1_MAGIC
	.long MB1_FLAGS
	.long -(MB1_MAGIC + MB1_FLAGS)
	.long mb1_header        // header_addr
	.long __image_start     // load_addr
	.long __load_end        // load_end_addr
	.long __bss_end         // bss_end_addr
	.long _start32          // entry_addr

	.align 8
mb2_header:
	.long MB2_MAGIC
	.long 0                 // i386 protected mode
	.long mb2_end - mb2_header
	.long -(MB2_MAGIC + (mb2_end - mb2_header))
	.align 8                // entry address tag
	.short 3, 0
	.long 12
	.long _start32
	.align 8                // end tag
	.short 0, 0
	.long 8
mb2_end:

	.section .boot, "ax"
	.code32
	.global _start32
_start32:
	cli
	mov %eax, boot_magic
	mov %ebx, boot_info
	mov $boot_stack_top, %esp

	// Long mode needs CPUID leaf 0x80000001 bit 29.
	mov $0x80000000, %eax
	cpuid
	cmp $0x80000001, %eax
	jb no_long_mode
	mov $0x80000001, %eax
	cpuid
	test $(1 << 29), %edx
	jz no_long_mode

	// Identity-map the first 4 GiB with 2 MiB pages: PML4[0] -> PDPT -> 4 PDs.
	mov $boot_pdpt, %eax
	or $3, %eax
	mov %eax, boot_pml4
	xor %ecx, %ecx
1:	mov %ecx, %eax
	shl $12, %eax
	add $boot_pd, %eax
	or $3, %eax
	mov %eax, boot_pdpt(, %ecx, 8)
	inc %ecx
	cmp $4, %ecx
	jb 1b
	xor %ecx, %ecx
2:	mov %ecx, %eax
	shl $21, %eax
	or $0x83, %eax          // present, writable, 2 MiB
	mov %eax, boot_pd(, %ecx, 8)
	mov %ecx, %eax
	shr $11, %eax           // high dword: bits 32+ of the address
	mov %eax, boot_pd + 4(, %ecx, 8)
	inc %ecx
	cmp $2048, %ecx
	jb 2b

	mov $boot_pml4, %eax
	mov %eax, %cr3
	LONG_MODE_ON

	lgdt boot_gdt_ptr
	ljmp $0x08, $_start64

no_long_mode:
	// No long mode: say so on COM1 and stop.
	mov $no_lm_msg, %esi
3:	lodsb
	test %al, %al
	jz 4f
	mov $0x3f8, %dx
	out %al, %dx
	jmp 3b
4:	hlt
	jmp 4b

	.code64
_start64:
	FLAT_DATA_SEGMENTS
	mov $boot_stack_top, %rsp
	xor %rbp, %rbp
	mov boot_magic, %edi
	mov boot_info, %esi
	call kmain
5:	hlt
	jmp 5b

	.section .rodata
no_lm_msg:
	.asciz "boot: this CPU has no long mode (x86_64); cannot boot\r\n"
	.align 8
boot_gdt:
	.quad 0
	.quad 0x00AF9A000000FFFF // 64-bit code
	.quad 0x00CF92000000FFFF // data
boot_gdt_end:
boot_gdt_ptr:
	.short boot_gdt_end - boot_gdt - 1
	.long boot_gdt

	.section .data
	.align 4
boot_magic: .long 0
boot_info: .long 0

	.section .bss
	.align 4096
	.global boot_pml4
boot_pml4: .skip 4096
boot_pdpt: .skip 4096
boot_pd: .skip 4 * 4096
	.global boot_stack_top
boot_stack: .skip KSTACK_SIZE
boot_stack_top:
