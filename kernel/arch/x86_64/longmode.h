// The switch from 32-bit protected mode to long mode, for the boot CPU
// (boot/multiboot.S) and the others (trampoline.S): with CR3 already
// loaded, PAE and global pages on, SSE allowed, EFER's long mode, NX and
// syscall on, then paging with write protection. Assembly only.
// In 64-bit code: the flat data selector 0x10 in DS, ES, SS; FS, GS null.
.macro FLAT_DATA_SEGMENTS
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	xor %ax, %ax
	mov %ax, %fs
	mov %ax, %gs
.endm

.macro LONG_MODE_ON
	mov %cr4, %eax
	or $((1 << 5) | (1 << 7) | (1 << 9) | (1 << 10)), %eax // PAE, PGE, OSFXSR, OSXMMEXCPT
	mov %eax, %cr4
	mov $0xC0000080, %ecx   // EFER: LME, NXE, SCE
	rdmsr
	or $((1 << 8) | (1 << 11) | (1 << 0)), %eax
	wrmsr
	mov %cr0, %eax
	and $~((1 << 2) | (1 << 30) | (1 << 29)), %eax // no EM, caches on
	or $((1 << 31) | (1 << 16) | (1 << 1) | (1 << 5)), %eax // PG, WP, MP, NE
	mov %eax, %cr0
.endm
