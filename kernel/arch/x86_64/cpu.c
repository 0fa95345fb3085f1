// Per CPU: a GDT with user segments and a TSS, a double-fault stack and
// the per-CPU block %gs points at in kernel mode; the syscall/sysret MSRs.
#include "cpu.h"
#include <string.h>

struct tss {
	uint32_t rsvd0;
	uint64_t rsp[3];
	uint64_t rsvd1;
	uint64_t ist[7];
	uint64_t rsvd2;
	uint16_t rsvd3, iomap;
} __attribute__((packed));

static uint64_t gdt[MAXCPU][7];
static struct tss tss[MAXCPU];
static uint8_t ist1_stack[MAXCPU][8192] __attribute__((aligned(16))); // double fault
static struct percpu percpu[MAXCPU];

_Static_assert(__builtin_offsetof(struct percpu, kstack_top) == PCPU_KSTACK, "entry.S");
_Static_assert(__builtin_offsetof(struct percpu, user_rsp) == PCPU_USER_RSP, "entry.S");
_Static_assert(__builtin_offsetof(struct percpu, id) == PCPU_ID, "arch_cpu_id");

// %gs:PCPU_ID: kernel mode always runs with the kernel's GS base (the
// entry paths swapgs when they come from user mode).
int arch_cpu_id(void)
{
	int id;
	__asm__ volatile("movl %%gs:%c1, %0" : "=r"(id) : "i"(PCPU_ID));
	return id;
}

struct percpu *cpu_percpu(int id) { return &percpu[id]; }

struct desc_ptr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

#define MSR_EFER 0xc0000080
#define MSR_STAR 0xc0000081
#define MSR_LSTAR 0xc0000082
#define MSR_FMASK 0xc0000084
#define MSR_GS_BASE 0xc0000101
#define MSR_KERNEL_GS_BASE 0xc0000102

static uint64_t *cpu_gdt_of(int id) { return gdt[id]; }

static void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

static void load_gdt(uint64_t *gdt)
{
	struct desc_ptr p = { 7 * 8 - 1, (uint64_t)gdt };
	__asm__ volatile("lgdt %0\n"
			 "mov %1, %%ds\n mov %1, %%es\n mov %1, %%ss\n"
			 "pushq %2\n lea 1f(%%rip), %%rax\n pushq %%rax\n lretq\n1:\n"
			 "ltr %w3\n" ::"m"(p),
			 "r"((uint64_t)SEL_KDATA), "i"(SEL_KCODE), "r"((uint64_t)SEL_TSS)
			 : "rax", "memory");
}

// Descriptors: SDM vol. 3A 3.4.5; the TSS descriptor is 16 bytes in long mode.
void cpu_init(int id)
{
	uint64_t *gdt = cpu_gdt_of(id);
	struct tss *t = &tss[id];
	gdt[0] = 0;
	gdt[1] = 0x00AF9A000000FFFFull; // kernel code, 64-bit
	gdt[2] = 0x00CF92000000FFFFull; // kernel data
	gdt[3] = 0x00CFF2000000FFFFull; // user data (DPL 3)
	gdt[4] = 0x00AFFA000000FFFFull; // user code, 64-bit (DPL 3)
	uint64_t base = (uint64_t)t, limit = sizeof(*t) - 1;
	gdt[5] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ull << 40) |
		 (((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
	gdt[6] = base >> 32;
	memset(t, 0, sizeof(*t));
	t->iomap = sizeof(*t); // no I/O permission bitmap: ring 3 has no ports
	t->ist[0] = (uint64_t)(ist1_stack[id] + sizeof(ist1_stack[id]));
	load_gdt(gdt);
	percpu[id].self = &percpu[id];
	percpu[id].id = id;
	wrmsr(MSR_GS_BASE, (uint64_t)&percpu[id]);
	wrmsr(MSR_KERNEL_GS_BASE, 0); // user mode's, swapped in on the way out
}

void arch_set_kernel_stack(uint64_t top)
{
	int id = arch_cpu_id();
	tss[id].rsp[0] = top;
	percpu[id].kstack_top = top;
}

extern void syscall_entry(void);

// syscall loads CS=STAR[47:32], SS=+8; sysret loads SS=STAR[63:48]+8 and
// CS=+16 with RPL 3, hence user data before user code in the GDT.
void syscall_msr_init(void)
{
	wrmsr(MSR_STAR, ((uint64_t)(SEL_KDATA) << 48) | ((uint64_t)SEL_KCODE << 32));
	wrmsr(MSR_LSTAR, (uint64_t)syscall_entry);
	wrmsr(MSR_FMASK, (1 << 9) | (1 << 10) | (1 << 8)); // IF, DF, TF cleared on entry
}
