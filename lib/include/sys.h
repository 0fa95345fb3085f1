// System calls as seen from user programs; prototypes come from
// lib/syscalls.def so kernel and library cannot disagree.
#ifndef LIB_SYS_H
#define LIB_SYS_H
#include <stdint.h>
#include <err.h>
#include <region.h> // create_vr's VR_MEM_*, ctrl_vr's VR_OP_*

#define PRIO_MIN 0      // lowest priority
#define PRIO_MAX 7      // highest
#define PRIO_DEFAULT 3

// Exit statuses the kernel gives a process it kills for a fault.
#define EXIT_KILLED_PF 0x100  // page fault
#define EXIT_KILLED_GP 0x101  // general protection
#define EXIT_KILLED_UD 0x102  // invalid opcode
#define EXIT_KILLED_DE 0x103  // divide error
#define EXIT_KILLED_OTHER 0x1ff

struct sysinfo {
	uint64_t frames_free;   // free page frames now
	uint64_t frames_total;  // frames the allocator manages
	uint64_t frames_boot;   // free frames when the first program started
	uint64_t tsc_hz;        // calibrated TSC frequency
	uint64_t nprocs;        // live processes
	uint64_t uptime_us;
	uint64_t icount;        // 1 when the TSC counts guest instructions (-icount)
	uint64_t vregions;      // live virtual regions (all processes)
	uint64_t attachments;   // live virtual user spaces (attached regions)
	uint64_t syscalls;      // system calls served since boot
	uint64_t idle_tsc;      // TSC ticks the CPU spent halted since boot: busy time is
	                        // elapsed minus this (under -icount: guest instructions)
	uint64_t log_suppressed; // kernel log lines a process or a peer caused that the
	                        // console's rate limits dropped since boot (kernel/klimit.h)
	uint64_t ncpu;          // CPUs running processes (cmdline cpus= limits them)
	uint64_t cpu;           // the CPU the caller ran on when it made this call
	uint64_t cpu_idle_tsc[8]; // idle_tsc per CPU (idle_tsc is their sum)
	uint64_t tlb_ipis;      // TLB-shootdown IPIs sent since boot (one per CPU per request)
	uint64_t tlb_requests;  // shootdown requests (one per batch or unbatched change)
	uint64_t tlb_deferred;  // flushes left to a CPU running no process (no IPI)
	uint64_t tlb_wait_tsc;  // TSC ticks requesters waited for acknowledgements
	uint64_t tlb_answer_tsc; // TSC ticks targets spent answering (tlb_answers of them)
	uint64_t tlb_answers;
	uint64_t cpu_spin_tsc[8]; // TSC ticks each CPU waited for kernel locks (part of its busy time)
	uint64_t rx_unlocked;   // frames the receive path took without the kernel lock
	uint64_t rx_settles;    // the kernel-lock sections it took for them (one per poll round)
	uint64_t poll_mode;     // how an idle CPU polls its NICs (poll=): SYS_POLL_SPIN,
	                        // SYS_POLL_IRQ or SYS_POLL_TIMER
	uint64_t rx_fine;       // 1: rxlock=fine (I/O without the kernel lock), 0: rxlock=kernel
};

#define SYS_POLL_SPIN 0  // spins while its NICs are polled (the default)
#define SYS_POLL_IRQ 1   // halts once their rings are empty, woken by the next interrupt
#define SYS_POLL_TIMER 2 // halts between polls, woken by a fast tick

#define SYSCALL(nr, name, ret, args) ret name args;
#include "../syscalls.def"
#undef SYSCALL

#endif
