// Faults on purpose, as told by kind=: the kernel must kill this process
// with a message naming the fault and go on.
#include <ulib.h>

// Its frame alone is larger than the 64 KiB stack.
static __attribute__((noinline)) int overflow_stack(void)
{
	volatile char big[1 << 20];
	big[0] = 1;
	return big[0];
}

int main(int argc, char **argv)
{
	const char *kind = arg_get(argc, argv, "kind", "pf");
	printf("fault: about to cause '%s'\n", kind);
	if (!strcmp(kind, "pf")) {
		*(volatile int *)0x7ff000000000ull = 1; // unmapped user address
	} else if (!strcmp(kind, "kernel")) {
		(void)*(volatile int *)0x100000; // kernel memory: supervisor-only
	} else if (!strcmp(kind, "null")) {
		(void)*(volatile int *)0;
	} else if (!strcmp(kind, "gp")) {
		__asm__ volatile("cli"); // privileged in ring 3
	} else if (!strcmp(kind, "ud")) {
		__asm__ volatile("ud2");
	} else if (!strcmp(kind, "de")) {
		// Explicit div: GCC turns 1 / z into a compare, with no division.
		uint64_t z = 0, q = 1, d = 0;
		__asm__ volatile("div %2" : "+a"(q), "+d"(d) : "r"(z));
	} else if (!strcmp(kind, "stack")) {
		return overflow_stack();
	} else if (!strcmp(kind, "exec")) {
		uint64_t stack_code = 0xc3; // ret, on the non-executable stack
		((void (*)(void))&stack_code)();
	}
	printf("fault: '%s' did not fault\n", kind);
	return 0;
}
