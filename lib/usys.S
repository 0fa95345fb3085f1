// User-side system-call stubs, one per line of syscalls.def.
#define SYSCALL(nr, name, ret, args) STUB name, nr
.macro STUB name, nr
	.global \name
	.type \name, @function
\name:
	mov $\nr, %eax
	mov %rcx, %r10
	syscall
	ret
.endm
	.text
#include "syscalls.def"
