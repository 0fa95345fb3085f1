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
//   WIN n=N cpu=C own=I other=J cpus=K0,K1,..
// C the vCPU that executed the markers, I its instructions, J the sum of
// the other vCPUs' over the same window, Kv each vCPU's (Kc = I).
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qemu_plugin_api.h"

#define MAX_VCPUS 64
#define MARK_START 0xd0
#define MARK_END 0xd1
#define MARK_SPIN 0xd2

// Instructions per vCPU; each slot written only by its vCPU's thread.
static volatile uint64_t counts[MAX_VCPUS];
static uint64_t start[MAX_VCPUS];
static unsigned start_cpu = MAX_VCPUS, nvcpus = 1;
static uint64_t windows;
static FILE *out;

// The marker kind of an instruction (MARK_*), or 0.
static int marker(const struct qemu_plugin_insn *insn)
{
	static const uint8_t head[] = {0x0f, 0x1f, 0x80};
	const uint8_t *d = qemu_plugin_insn_data(insn);
	if (qemu_plugin_insn_size(insn) != 7 || memcmp(d, head, 3) || d[4] != 0xc0 || d[5] != 0xb1 || d[6] != 0x7a)
		return 0;
	return d[3] >= MARK_START && d[3] <= MARK_SPIN ? d[3] : 0;
}

static bool is_pause(const struct qemu_plugin_insn *insn)
{
	const uint8_t *d = qemu_plugin_insn_data(insn);
	return qemu_plugin_insn_size(insn) == 2 && d[0] == 0xf3 && d[1] == 0x90;
}

static void on_tb(unsigned int vcpu, void *n)
{
	if (vcpu < MAX_VCPUS)
		counts[vcpu] += (uintptr_t)n;
}

// userdata: the marker kind << 16 | the instructions of its block from the
// marker on (already added by on_tb).
static void on_mark(unsigned int vcpu, void *udata)
{
	uintptr_t u = (uintptr_t)udata;
	if (vcpu >= MAX_VCPUS)
		return;
	uint64_t own = counts[vcpu] - (u & 0xffff);
	if (u >> 16 == MARK_START) {
		for (unsigned v = 0; v < nvcpus; v++)
			start[v] = counts[v];
		start[vcpu] = own;
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
		fprintf(out, "\n");
	}
	start_cpu = MAX_VCPUS;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	size_t n = qemu_plugin_tb_n_insns(tb);
	bool counted = true;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		int m = marker(insn);
		if (m == MARK_SPIN || is_pause(insn))
			counted = false;
		else if (m && n - i < 0x10000)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)((unsigned)m << 16 | (n - i)));
	}
	if (counted)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)n);
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
	if (!out)
		return -1;
	setvbuf(out, NULL, _IOLBF, 0);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_exit, NULL);
	return 0;
}
