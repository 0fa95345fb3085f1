#include "runner.h"
#include "kprintf.h"
#include "res/proc.h"
#include "res/pmem.h"
#include "res/res.h"
#include "net/netdev.h"
#include "arch/x86_64/arch.h"
#include "arch/x86_64/timer.h"
#include "arch/x86_64/cpu.h"
#include <string.h>
#include <fmt.h>
#include <sys.h>

#define MAX_RUN 16

static char runbuf[256];
static char *run[MAX_RUN];
static int nrun, next, failed;
static long running_pid = -1;
static char args[512];
static uint64_t frames_boot;
static uint64_t run_cpus = ~0ull; // runcpu=N: the programs run on CPU N only
extern uint64_t frames_at_boot;

static void start_next(void)
{
	while (next < nrun) {
		const char *name = run[next++];
		kprintf("run: %s %s\n", name, args);
		long pid = proc_spawn(name, args, PRIO_DEFAULT, 0);
		if (pid > 0 && run_cpus != ~0ull && proc_setaffinity(0, pid, run_cpus) < 0)
			kprintf("run: runcpu names no running CPU; %s runs anywhere\n", name);
		if (pid > 0) {
			running_pid = pid;
			return;
		}
		kprintf("run: cannot start %s: error %ld\n", name, pid);
		failed++;
	}
	running_pid = -1;
}

static void finish(void)
{
	uint64_t now = pmem_free_count();
	long vr = res_live(RES_VREGION), vu = res_live(RES_VUSPACE), io = res_live(RES_IO);
	bool leak = now != frames_boot || vr || vu || io;
	kprintf("run: %d program(s), %d failed\n", nrun, failed);
	kprintf("resources: vregion=%ld vuspace=%ld io=%ld%s\n", vr, vu, io,
		vr || vu || io ? " LEAK" : "");
	kprintf("frames: boot=%lu exit=%lu%s\n", frames_boot, now, leak ? " LEAK" : "");
	uint64_t lost = proc_lost_wakeups();
	kprintf("sched: lost_wakeups=%lu%s\n", lost, lost ? " LOST" : "");
	kprintf("irqs:");
	for (int c = 0; c < proc_ncpu(); c++)
		kprintf(" cpu%d=%lu", c, trap_device_irqs[c]);
	kprintf("\n");
	for (int i = 0; i < netdev_count(); i++) { // a NIC of several receive queues: each one's share
		struct netdev *nd = netdev_get(i);
		struct netdev_stats st;
		if (nd->rx_queues < 2)
			continue;
		nd->ops->get_stats(nd, &st);
		kprintf("nicq: NIC %d rx", i);
		for (int q = 0; q < nd->rx_queues; q++)
			kprintf(" q%d=%lu", q, st.rxq_frames[q]);
		kprintf(" irqs");
		for (int q = 0; q < nd->rx_queues; q++)
			kprintf(" q%d=%lu", q, st.rxq_irqs[q]);
		kprintf(" tx_moves=%lu first=q%d\n", st.txq_moves, st.rxq_first);
	}
	int status = failed || leak || lost ? 1 : 0;
	kprintf("KERNEL_EXIT status=%d uptime_us=%lu\n", status, timer_now_us());
	arch_exit(status);
}

void runner_start(const struct cmdline *c)
{
	const char *r = cmdline_get(c, "run");
	strlcpy(runbuf, r && *r ? r : "demo", sizeof(runbuf));
	nrun = cmdline_split(runbuf, ',', run, MAX_RUN);
	size_t off = 0;
	for (int i = 0; i < c->n; i++) {
		if (!strcmp(c->key[i], "run"))
			continue;
		off += (size_t)fmt_snprintf(args + off, off < sizeof(args) ? sizeof(args) - off : 0,
					    "%s%s%s%s", off ? " " : "", c->key[i], *c->val[i] ? "=" : "",
					    c->val[i]);
	}
	const char *cpu = cmdline_get(c, "runcpu");
	if (cpu && *cpu >= '0' && *cpu <= '9')
		run_cpus = cmdline_dec(cpu) < 64 ? 1ull << cmdline_dec(cpu) : 0; // 0: refused
	frames_boot = frames_at_boot = pmem_free_count();
	kprintf("frames: free at boot %lu\n", frames_boot);
	start_next();
}

// Each turn of the scheduler's loop: the table is scanned for the kernel's
// children only once a process exited since the last scan (an idle turn
// then costs a load, not a walk over NPROC slots: the relay's profile
// showed about 0.5 M instructions a second in that walk).
void runner_poll(void)
{
	static uint64_t seen = ~0ull;
	int status;
	long pid;
	uint64_t exits = proc_exits();
	if (exits == seen && running_pid >= 0)
		return;
	seen = exits;
	while ((pid = proc_reap(0, -1, &status)) > 0) {
		if (pid != running_pid)
			continue; // an orphan
		kprintf("run: %s exited with status %d\n", run[next - 1], status);
		if (status != 0)
			failed++;
		start_next();
	}
	if (running_pid < 0 && proc_count() == 0)
		finish();
}
