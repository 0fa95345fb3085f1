// profplugin: a QEMU TCG plugin (API version 1, QEMU 7.2) that counts, for
// every translation block the guest executes, how many times it ran, so
// that tools/bench/insnprof.py can say how many instructions each function
// of the kernel and of the program took (make profile-t1).
//
// windowed=1 counts only between the no-op markers the guest executes
// (insnplugin.c has them: nopl 0x7ab1c0d0(%rax) opens a window, ...d1
// closes it; user/burst.c puts them around its output_io); skip=N leaves
// out the first N windows (a warm-up), count=N counts N windows at most;
// marks=rx takes insnplugin.c's receive windows instead (0xd3 opens, 0xd4
// closes: a burst server's wait for a burst to holding its last frame, its
// payload check included, as blocks of their own) and, as insnplugin.c,
// leaves out the blocks of a poll round that found nothing (0xd7 begins a
// round, 0xd8 ends one that found nothing; the whole round: this kernel's
// idle-loop poll), so that the profile adds up to R1 as receive work. A block is
// counted as it starts, so a window takes whole blocks: the one holding
// the closing marker in, the one holding the opening marker out.
//
// Output, at QEMU's exit, to out=PATH.PID (net-pair.sh gives both VMs the
// same arguments; the process id keeps their files apart): one line per
// counted window, "window N INSTRUCTIONS", then one line per block that
// ran, "VADDR INSNS EXECUTIONS" (hex, decimal, decimal). A block
// translated twice has two lines.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../linux-baseline/qemu_plugin_api.h"

struct block {
	uint64_t vaddr, insns, runs;
	struct block *next;
};

static struct block *blocks;
static int windowed, skip, limit = -1;
static int mark_open = 0xd0, mark_close = 0xd1; // marks=rx: 0xd3, 0xd4
static volatile int open_window; // a single vCPU's windows (the profiled guest runs one)
// marks=rx: the blocks run since the poll round began (undone when it found
// nothing); a round longer than the log is kept whole.
#define ROUND_LOG 4096
static struct block *round_log[ROUND_LOG];
static unsigned round_n;
static int rounds; // marks=rx
static uint64_t window_insns, nwindows;
static uint64_t window_log[1024]; // each counted window's instructions
static FILE *out;

static void on_block(unsigned int vcpu, void *b)
{
	(void)vcpu;
	if (!windowed || open_window) {
		((struct block *)b)->runs++;
		window_insns += ((struct block *)b)->insns;
		if (rounds && round_n < ROUND_LOG)
			round_log[round_n++] = b;
		else if (rounds)
			round_n = ROUND_LOG + 1; // too long: kept
	}
}

// A poll round's begin (0xd7) or its end having found nothing (0xd8).
static void on_round(unsigned int vcpu, void *kind)
{
	(void)vcpu;
	if ((uintptr_t)kind == 0xd8 && round_n <= ROUND_LOG)
		for (unsigned i = 0; i < round_n; i++) {
			round_log[i]->runs--;
			window_insns -= round_log[i]->insns;
		}
	round_n = 0;
}

static void on_mark(unsigned int vcpu, void *kind)
{
	(void)vcpu;
	if ((int)(uintptr_t)kind == mark_open) {
		open_window = skip || (limit >= 0 && nwindows >= (uint64_t)limit) ? 0 : 1;
		window_insns = 0;
	} else if (open_window || !skip) {
		if (open_window && nwindows < 1024)
			window_log[nwindows++] = window_insns;
		open_window = 0;
	}
	else
		skip--; // a skipped window's end
}

// The marker's kind (mark_open, mark_close), or 0.
static int marker(const struct qemu_plugin_insn *insn)
{
	static const uint8_t head[] = { 0x0f, 0x1f, 0x80 };
	const uint8_t *d = qemu_plugin_insn_data(insn);
	if (qemu_plugin_insn_size(insn) != 7 || memcmp(d, head, 3) || d[4] != 0xc0 || d[5] != 0xb1 || d[6] != 0x7a)
		return 0;
	return d[3] == mark_open || d[3] == mark_close || (rounds && (d[3] == 0xd7 || d[3] == 0xd8)) ? d[3] : 0;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	struct block *b = calloc(1, sizeof(*b));
	if (!b)
		return;
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->insns = qemu_plugin_tb_n_insns(tb);
	b->next = blocks;
	blocks = b;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
	for (size_t i = 0; windowed && i < b->insns; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		int m = marker(insn);
		if (m)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, m == 0xd7 || m == 0xd8 ? on_round : on_mark,
							       QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)m);
	}
}

static void on_exit_qemu(qemu_plugin_id_t id, void *p)
{
	(void)id, (void)p;
	for (uint64_t w = 0; w < nwindows && out; w++)
		fprintf(out, "window %llu %llu\n", (unsigned long long)w, (unsigned long long)window_log[w]);
	for (struct block *b = blocks; b && out; b = b->next)
		if (b->runs)
			fprintf(out, "%llx %llu %llu\n", (unsigned long long)b->vaddr, (unsigned long long)b->insns,
				(unsigned long long)b->runs);
	if (out)
		fclose(out);
	out = NULL;
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	(void)info;
	char path[4096] = "";
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "windowed=1"))
			windowed = 1;
		else if (!strncmp(argv[i], "skip=", 5))
			skip = atoi(argv[i] + 5);
		else if (!strcmp(argv[i], "marks=rx"))
			mark_open = 0xd3, mark_close = 0xd4, rounds = 1;
		else if (!strncmp(argv[i], "count=", 6))
			limit = atoi(argv[i] + 6);
		else if (!strncmp(argv[i], "out=", 4))
			snprintf(path, sizeof(path), "%s.%d", argv[i] + 4, (int)getpid());
	}
	if (!path[0] || !(out = fopen(path, "w")))
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_exit_qemu, NULL);
	return 0;
}
