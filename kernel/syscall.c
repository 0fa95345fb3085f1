// System-call entry: the table is built from lib/syscalls.def; each sys_*
// decodes (checks everything, may fail) and then invokes.
#include "syscall.h"
#include "uaccess.h"
#include "kprintf.h"
#include "klimit.h"
#include "lock.h"
#include "res/proc.h"
#include "res/pmem.h"
#include "res/res.h"
#include "res/tlb.h"
#include "res/io.h"
#include "net/demux.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/timer.h"
#include <err.h>
#include <sys.h>
#include <stddef.h>

typedef long (*sys_fn)(const uint64_t *a);
uint64_t syscall_count;
uint64_t frames_at_boot; // set by the kernel when the first program starts
int kernel_icount;       // cmdline icount=1: the TSC counts instructions

#define SYSCALL(nr, name, ret, args) long sys_##name(const uint64_t *a);
#include "../lib/syscalls.def"
#undef SYSCALL

static const sys_fn table[] = {
#define SYSCALL(nr, name, ret, args) [nr] = sys_##name,
#include "../lib/syscalls.def"
#undef SYSCALL
};
#define NSYSCALL (sizeof(table) / sizeof(table[0]))

enum {
#define SYSCALL(nr, name, ret, args) NR_##name = nr,
#include "../lib/syscalls.def"
#undef SYSCALL
};

_Static_assert(offsetof(struct trapframe, r9) - offsetof(struct trapframe, rdi) == 5 * 8 &&
		       offsetof(struct trapframe, rsi) == offsetof(struct trapframe, rdi) + 8 &&
		       offsetof(struct trapframe, rdx) == offsetof(struct trapframe, rdi) + 16 &&
		       offsetof(struct trapframe, r10) == offsetof(struct trapframe, rdi) + 24 &&
		       offsetof(struct trapframe, r8) == offsetof(struct trapframe, rdi) + 32,
	       "the system call's arguments are not in the trapframe's order");

void syscall_dispatch(struct trapframe *tf)
{
	const uint64_t *a = &tf->rdi; // rdi, rsi, rdx, r10, r8, r9 (cpu.h)
	uint64_t nr = tf->rax;
	// Every call takes the kernel lock (trap_return's leave_kernel hook
	// releases it) but input_io and output_io with rxlock=fine, which
	// decide for themselves (io.c).
	if ((nr != NR_input_io && nr != NR_output_io) || !demux_fine)
		klock_lock();
	__atomic_add_fetch(&syscall_count, 1, __ATOMIC_RELAXED);
	tf->rax = nr < NSYSCALL && table[nr] ? (uint64_t)table[nr](a) : (uint64_t)-E_NOSYS;
	proc_preempt_point();
}

long sys_exit(const uint64_t *a)
{
	proc_exit((int)a[0]);
}

long sys_getpid(const uint64_t *a)
{
	(void)a;
	return proc_self();
}

long sys_write(const uint64_t *a)
{
	char buf[256];
	uptr_t u = a[0];
	uint64_t n = a[1];
	if (n > (1u << 20))
		return -E_2BIG;
	long r = uaccess_check(proc_vspace(proc_self()), u, n, false);
	if (r < 0)
		return r;
	for (uint64_t done = 0; done < n;) {
		size_t chunk = n - done < sizeof(buf) ? n - done : sizeof(buf);
		copy_from_user(buf, u + done, chunk);
		console_write(buf, chunk);
		done += chunk;
	}
	return (long)n;
}

long sys_sleep(const uint64_t *a)
{
	if (a[0] > 3600ull * 1000000)
		return -E_INVAL;
	proc_sleep(NULL, timer_deadline(a[0]));
	return 0;
}

long sys_spawn(const uint64_t *a)
{
	char name[PROC_NAME], args[256];
	long r = strncpy_from_user(name, a[0], sizeof(name));
	if (r < 0)
		return r;
	args[0] = 0;
	if (a[1] && (r = strncpy_from_user(args, a[1], sizeof(args))) < 0)
		return r;
	return proc_spawn(name, args, (int)a[2], proc_self());
}

long sys_wait(const uint64_t *a)
{
	int status = 0;
	long pid = (long)a[0];
	if (a[1]) {
		long r = uaccess_check(proc_vspace(proc_self()), a[1], sizeof(int), true);
		if (r < 0)
			return r;
	}
	long r = proc_wait(pid, &status);
	if (r > 0 && a[1])
		copy_to_user(a[1], &status, sizeof(status));
	return r;
}

long sys_time(const uint64_t *a)
{
	(void)a;
	return (long)timer_now_us();
}

long sys_yield(const uint64_t *a)
{
	(void)a;
	proc_yield();
	return 0;
}

long sys_setprio(const uint64_t *a)
{
	return proc_setprio(proc_self(), (long)a[0], (int)a[1]);
}

long sys_setaffinity(const uint64_t *a)
{
	return proc_setaffinity(proc_self(), (long)a[0], a[1]);
}

long sys_sysinfo(const uint64_t *a)
{
	struct sysinfo si = {
		.frames_free = pmem_free_count(), .frames_total = pmem_total(),
		.frames_boot = frames_at_boot, .tsc_hz = tsc_hz, .nprocs = (uint64_t)proc_count(),
		.uptime_us = timer_now_us(), .icount = (uint64_t)kernel_icount,
		.vregions = (uint64_t)res_live(RES_VREGION),
		.attachments = (uint64_t)res_live(RES_VUSPACE), .syscalls = syscall_count,
		.idle_tsc = proc_idle_tsc(), .log_suppressed = klimit_suppressed,
		.ncpu = (uint64_t)proc_ncpu(), .cpu = (uint64_t)arch_cpu_id(),
		.tlb_ipis = tlb_ipis, .tlb_requests = tlb_requests, .tlb_deferred = tlb_deferred,
		.tlb_wait_tsc = tlb_wait_tsc, .tlb_answer_tsc = tlb_answer_tsc,
		.tlb_answers = tlb_answers, .rx_unlocked = demux_unlocked, .rx_settles = demux_settles,
		.poll_mode = io_poll_halts ? SYS_POLL_TIMER : demux_irq_wait ? SYS_POLL_IRQ : SYS_POLL_SPIN,
		.rx_fine = demux_fine,
	};
	for (int c = 0; c < proc_ncpu() && c < 8; c++) {
		si.cpu_idle_tsc[c] = proc_cpu_idle_tsc(c);
		si.cpu_spin_tsc[c] = lock_spin_tsc(c);
	}
	return copy_to_user(a[0], &si, sizeof(si));
}
