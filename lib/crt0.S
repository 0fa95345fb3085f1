// User program entry: the kernel starts a process here with argc in rdi and
// argv in rsi (strings and pointer array on the stack), 16-byte aligned rsp.
	.text
	.global _start
_start:
	xor %rbp, %rbp
	call main
	mov %eax, %edi
	call exit
1:	jmp 1b
