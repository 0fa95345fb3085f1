// insnplugin: a QEMU TCG plugin (plugin API version 1, QEMU 7.2) that
// counts each vCPU's guest instructions between two marker instructions
// the guest executes, for tlbbench under -smp N (where Debian's 6.1 kernel
// does not bring its other CPUs up under -icount, see run-tlb.sh).
//
// Markers are no-ops with a 32-bit displacement no compiler emits:
//   nopl 0x7ab1c0d0(%rax)  window start      (0f 1f 80 d0 c0 b1 7a)
//   nopl 0x7ab1c0d1(%rax)  window end        (0f 1f 80 d1 c0 b1 7a)
//   nopl 0x7ab1c0d2(%rax)  a spin loop's head: its block is not counted
// Busy-wait blocks are not counted either: a translation block holding a
// PAUSE (f3 90; the kernel's cpu_relax() and tlbbench's waits) is a spin
// whose length depends on how the host schedules the vCPU threads. The
// count is what is left: work, on every CPU.
//
// Counting is per translation block, added as the block starts; a marker
// subtracts the block's instructions from itself on, so a window counts
// exactly the instructions the marker's CPU executed between the markers
// (the other CPUs' to within one block each). The end may come on another
// vCPU than the start (a process that moved): own is then the end's vCPU's.
//
// Output: one line per window, in order, to the file named by the plugin
// argument out=FILE (-plugin FILE.so,out=PATH):
//   WIN n=N cpu=C own=I other=J cpus=K0,K1,.. user=U0,U1,.. idle=D0,D1,..
// C the vCPU that executed the markers, I its instructions, J the sum of
// the other vCPUs' over the same window, Kv each vCPU's (Kc = I), Uv of
// them those executed in user mode: Kv - Uv the kernel's. User mode is an
// address below USER_TOP (Linux's kernel lives above it) and at or above
// user_lo= (plugin argument, default 0; the Tender kernel runs low, its
// programs from 1 TiB: user_lo=0x10000000000). Dv: of Kv, the
// instructions the empty-poll markers below left out (a poll-mode
// program's polls that found nothing; 0 for a program without them).
//
// Receive windows (R1, issue 25) are a second kind, with markers of their
// own, so that the windows above keep their meaning:
//   nopl 0x7ab1c0d3(%rax)  receive window open: the receiver waits, idle
//   nopl 0x7ab1c0d4(%rax)  receive window close: it holds the last frame
//   nopl 0x7ab1c0d5(%rax)  payload check begins   } counted apart
//   nopl 0x7ab1c0d6(%rax)  payload check ends     }
//   nopl 0x7ab1c0d7(%rax)  a poll begins
//   nopl 0x7ab1c0d8(%rax)  the poll found nothing: every instruction since
//                          the last begin or empty marker is left out (the
//                          spin of a poll-mode receiver, this kernel's idle
//                          poll), and the next poll begins here
//   nopl 0x7ab1c0d9(%rax)  the same, but only the user-mode instructions
//                          are left out, the kernel's kept (a user-space
//                          ring spin, where the guest kernel's interrupts in
//                          between are real receive work)
// So a spin loop needs one begin marker before it and one empty marker at
// the end of each round that found nothing: the whole round, loop control
// included, is left out. An empty marker without a begin does nothing.
// Left-out instructions are left out of receive windows only (WIN windows
// count them, and give them apart: idle=). User mode is a block below 0x800000000000
// (Linux's split; this kernel uses only d8).
// Each closed receive window writes
//   RXW n=N cpu=C work=W check=K idle=I polls=P other=J
// W the instructions of every vCPU between the open and close markers,
// less the check's K and the left-out I (P polls); J the part of W the
// other vCPUs executed.
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

#define MAX_VCPUS 64
#define MARK_START 0xd0
#define MARK_END 0xd1
#define MARK_SPIN 0xd2
#define MARK_RX_OPEN 0xd3
#define MARK_RX_CLOSE 0xd4
#define MARK_CHECK_BEGIN 0xd5
#define MARK_CHECK_END 0xd6
#define MARK_POLL_BEGIN 0xd7
#define MARK_POLL_EMPTY 0xd8
#define MARK_POLL_EMPTY_USER 0xd9
#define MARK_LAST MARK_POLL_EMPTY_USER
#define USER_TOP 0x800000000000ull
static uint64_t user_lo; // user_lo=: user mode starts here (0: below USER_TOP is user mode)
#define USER_FLAG (1ul << 30)

// Instructions per vCPU; each slot written only by its vCPU's thread.
static volatile uint64_t counts[MAX_VCPUS];
static uint64_t start[MAX_VCPUS], ustart[MAX_VCPUS], dstart[MAX_VCPUS]; // a window's start: all, user-mode, left out
static unsigned start_cpu = MAX_VCPUS, nvcpus = 1;
static uint64_t windows;
static FILE *out;

// Receive windows: each vCPU's user-mode instructions, those left out (and
// the polls that left them out), the payload checks' and the open poll and
// check; a window's start values.
static volatile uint64_t ucounts[MAX_VCPUS], dropped[MAX_VCPUS], npolls[MAX_VCPUS], checked[MAX_VCPUS];
static uint64_t poll_all[MAX_VCPUS], poll_user[MAX_VCPUS], check_at[MAX_VCPUS];
static bool poll_open[MAX_VCPUS], check_open[MAX_VCPUS];
static uint64_t rx_kept[MAX_VCPUS], rx_dropped, rx_polls, rx_checked;
static unsigned rx_cpu = MAX_VCPUS;
static uint64_t rx_windows;

// The marker kind of an instruction (MARK_*), or 0.
static int marker(const struct qemu_plugin_insn *insn)
{
	static const uint8_t head[] = {0x0f, 0x1f, 0x80};
	const uint8_t *d = qemu_plugin_insn_data(insn);
	if (qemu_plugin_insn_size(insn) != 7 || memcmp(d, head, 3) || d[4] != 0xc0 || d[5] != 0xb1 || d[6] != 0x7a)
		return 0;
	return d[3] >= MARK_START && d[3] <= MARK_LAST ? d[3] : 0;
}

static bool is_pause(const struct qemu_plugin_insn *insn)
{
	const uint8_t *d = qemu_plugin_insn_data(insn);
	return qemu_plugin_insn_size(insn) == 2 && d[0] == 0xf3 && d[1] == 0x90;
}

// n: the block's instructions, USER_FLAG set for a user-mode block.
static void on_tb(unsigned int vcpu, void *n)
{
	uintptr_t u = (uintptr_t)n;
	if (vcpu >= MAX_VCPUS)
		return;
	counts[vcpu] += u & (USER_FLAG - 1);
	if (u & USER_FLAG)
		ucounts[vcpu] += u & (USER_FLAG - 1);
}

static uint64_t sum(volatile uint64_t *a)
{
	uint64_t t = 0;
	for (unsigned v = 0; v < nvcpus; v++)
		t += a[v];
	return t;
}

// A receive-window marker on vCPU v; all and user: that vCPU's
// instructions (all, user-mode) before the marker; kept: all less those
// left out.
static void on_rx_mark(unsigned v, int m, uint64_t all, uint64_t user)
{
	uint64_t kept = all - dropped[v];
	switch (m) {
	case MARK_POLL_BEGIN:
		poll_all[v] = all, poll_user[v] = user, poll_open[v] = true;
		break;
	case MARK_POLL_EMPTY:
	case MARK_POLL_EMPTY_USER:
		if (!poll_open[v])
			break;
		dropped[v] += m == MARK_POLL_EMPTY ? all - poll_all[v] : user - poll_user[v];
		npolls[v]++;
		poll_all[v] = all, poll_user[v] = user; // the next round begins
		break;
	case MARK_CHECK_BEGIN:
		check_at[v] = kept, check_open[v] = true;
		break;
	case MARK_CHECK_END:
		if (check_open[v])
			checked[v] += kept - check_at[v];
		check_open[v] = false;
		break;
	case MARK_RX_OPEN:
		for (unsigned u = 0; u < nvcpus; u++)
			rx_kept[u] = counts[u] - dropped[u];
		rx_kept[v] = kept;
		rx_dropped = sum(dropped), rx_polls = sum(npolls), rx_checked = sum(checked);
		rx_cpu = v;
		break;
	case MARK_RX_CLOSE: {
		if (rx_cpu == MAX_VCPUS)
			break;
		uint64_t total = 0, other = 0;
		for (unsigned u = 0; u < nvcpus; u++) {
			uint64_t k = (u == v ? kept : counts[u] - dropped[u]) - rx_kept[u];
			total += k;
			if (u != v)
				other += k;
		}
		uint64_t check = sum(checked) - rx_checked;
		if (out)
			fprintf(out, "RXW n=%" PRIu64 " cpu=%u work=%" PRIu64 " check=%" PRIu64 " idle=%" PRIu64
				     " polls=%" PRIu64 " other=%" PRIu64 "\n",
				rx_windows++, v, total - check, check, sum(dropped) - rx_dropped, sum(npolls) - rx_polls,
				other);
		rx_cpu = MAX_VCPUS;
		break;
	}
	}
}

// userdata: the marker kind << 16 | the instructions of its block from the
// marker on (already added by on_tb).
static void on_mark(unsigned int vcpu, void *udata)
{
	uintptr_t u = (uintptr_t)udata;
	if (vcpu >= MAX_VCPUS)
		return;
	uint64_t own = counts[vcpu] - (u & 0xffff);
	if ((u >> 16 & 0xff) >= MARK_RX_OPEN) {
		on_rx_mark(vcpu, (int)(u >> 16 & 0xff), own, ucounts[vcpu] - (u >> 24 ? (u & 0xffff) : 0));
		return;
	}
	uint64_t own_user = ucounts[vcpu] - (u >> 24 ? (u & 0xffff) : 0);
	if ((u >> 16 & 0xff) == MARK_START) {
		for (unsigned v = 0; v < nvcpus; v++)
			start[v] = counts[v], ustart[v] = ucounts[v], dstart[v] = dropped[v];
		start[vcpu] = own, ustart[vcpu] = own_user;
		start_cpu = vcpu;
		return;
	}
	if (start_cpu == MAX_VCPUS) // an end without its start: no window
		return; // (an end on another vCPU than the start's closes it: the program moved)
	uint64_t other = 0, each[MAX_VCPUS];
	for (unsigned v = 0; v < nvcpus; v++) {
		each[v] = v == vcpu ? own - start[v] : counts[v] - start[v];
		if (v != vcpu)
			other += each[v];
	}
	if (out) {
		fprintf(out, "WIN n=%" PRIu64 " cpu=%u own=%" PRIu64 " other=%" PRIu64 " cpus=", windows++, vcpu,
			own - start[vcpu], other);
		for (unsigned v = 0; v < nvcpus; v++)
			fprintf(out, "%s%" PRIu64, v ? "," : "", each[v]);
		fprintf(out, " user=");
		for (unsigned v = 0; v < nvcpus; v++)
			fprintf(out, "%s%" PRIu64, v ? "," : "", (v == vcpu ? own_user : ucounts[v]) - ustart[v]);
		fprintf(out, " idle=");
		for (unsigned v = 0; v < nvcpus; v++)
			fprintf(out, "%s%" PRIu64, v ? "," : "", dropped[v] - dstart[v]);
		fprintf(out, "\n");
	}
	start_cpu = MAX_VCPUS;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	size_t n = qemu_plugin_tb_n_insns(tb);
	uint64_t va = qemu_plugin_tb_vaddr(tb);
	bool counted = true, user = va < USER_TOP && va >= user_lo;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		int m = marker(insn);
		if (m == MARK_SPIN || is_pause(insn))
			counted = false;
		else if (m && n - i < 0x10000)
			qemu_plugin_register_vcpu_insn_exec_cb(
				insn, on_mark, QEMU_PLUGIN_CB_NO_REGS,
				(void *)(uintptr_t)((uintptr_t)user << 24 | (unsigned)m << 16 | (n - i)));
	}
	if (counted && n < USER_FLAG)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb, QEMU_PLUGIN_CB_NO_REGS,
						     (void *)(uintptr_t)(n | (user ? USER_FLAG : 0)));
}

static void on_exit(qemu_plugin_id_t id, void *p)
{
	(void)id;
	(void)p;
	if (out)
		fclose(out);
	out = NULL;
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	if (info->system_emulation)
		nvcpus = (unsigned)(info->system.max_vcpus < MAX_VCPUS ? info->system.max_vcpus : MAX_VCPUS);
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out = fopen(argv[i] + 4, "w");
		else if (!strncmp(argv[i], "user_lo=", 8))
			user_lo = strtoull(argv[i] + 8, NULL, 0);
	if (!out)
		return -1;
	setvbuf(out, NULL, _IOLBF, 0);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_exit, NULL);
	return 0;
}
