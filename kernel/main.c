// Kernel entry: initialisation order only.
#include "bootinfo.h"
#include "cmdline.h"
#include "kprintf.h"
#include "progs.h"
#include "runner.h"
#include "heap.h"
#include "bench.h"
#include "res/pmem.h"
#include "res/vspace.h"
#include "res/proc.h"
#include "res/io.h"
#include "res/vregion.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/apic.h"
#include "arch/x86_64/timer.h"
#include "../drivers/serial/uart.h"
#include "../drivers/vga/vgatext.h"
#include "../drivers/pci/pci.h"
#include "../drivers/net/e1000/e1000.h"
#include "../drivers/net/virtio/virtio_net.h"
#include "../drivers/net/e1000e/e1000e.h"
#include "net/netdev.h"
#include "net/ceiling.h"
#include "dma.h"
#include "../drivers/ata/ata.h"
#include <string.h>

extern char __image_start[], __image_end[];
extern int kernel_icount;
static struct bootinfo bi;
static struct cmdline cmd;

static unsigned long strtoul_dec(const char *s)
{
	unsigned long v = 0;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (unsigned long)(*s++ - '0');
	return v;
}

// "a,b,c" -> out[0..max): the numbers given; the rest are left as they are.
static void parse_list(const char *v, uint64_t *out, int max)
{
	for (int k = 0; v && *v && k < max; k++) {
		out[k] = strtoul_dec(v);
		while (*v && *v++ != ',')
			;
	}
}

static void parse_rates(const char *v, uint32_t *mbps, int max)
{
	uint64_t r[8] = { 0 };
	parse_list(v, r, max < 8 ? max : 8);
	for (int k = 0; k < max && k < 8; k++)
		mbps[k] = r[k] > 100000 ? 100000 : (uint32_t)r[k];
}

static void apply_cmdline(void)
{
	if (cmdline_parse(&cmd, bi.cmdline) < 0)
		pr_warn("cmdline: too long or too many words, ignored: %s\n", bi.cmdline);
	const char *v = cmdline_get(&cmd, "log");
	if (v && *v >= '0' && *v <= '3')
		log_level = *v - '0';
	v = cmdline_get(&cmd, "icount");
	kernel_icount = v && *v == '1';
}

#define HEAP_PAGES 1024 // 4 MiB, reserved before the boot frame count

static void heap_setup(void)
{
	paddr_t first = 0;
	for (int i = 0; i < HEAP_PAGES; i++) {
		paddr_t pa = pmem_alloc_nozero();
		if (!pa || (first && pa != first + (paddr_t)i * PAGE_SIZE))
			panic("heap: no %d contiguous frames", HEAP_PAGES);
		first = first ? first : pa;
	}
	heap_init(arch_p2v(first), HEAP_PAGES * PAGE_SIZE);
}

static void memory_init(void)
{
	paddr_t lo = (paddr_t)__image_start, hi = PAGE_ROUND_UP((paddr_t)__image_end);
	pmem_init(bi.ram, bi.nram, lo, hi);
	vspace_init_kernel(pmem_top());
	heap_setup();
	pr_info("memory: %lu frames free (%lu MiB), kernel %lx-%lx\n", pmem_free_count(),
		pmem_free_count() >> 8, lo, hi);
}

// plimit=F,R,C: frames, regions and channels one process may hold; by
// default half the free frames, a quarter of the regions, half the channels.
static void set_limits(void)
{
	uint64_t lim[LIM_N] = { pmem_free_count() / 2, NVREGION / 4, NIO / 2 };
	parse_list(cmdline_get(&cmd, "plimit"), lim, LIM_N);
	proc_set_limits(lim);
	pr_info("limits: a process holds at most %lu frames, %lu regions, %lu channels\n",
		lim[LIM_FRAMES], lim[LIM_REGIONS], lim[LIM_CHANNELS]);
}

// Every timer tick: deadlines and time slices, then NICs in polling mode.
static void kernel_tick(void)
{
	proc_timer_tick();
	io_tick();
}

static bool option_is(const char *key, const char *val)
{
	const char *v = cmdline_get(&cmd, key);
	return v && !strcmp(v, val);
}

void kmain(uint32_t magic, uint32_t info)
{
	const char *v;
	uart_init();
	vga_init();
	console_add_sink(uart_write);
	console_add_sink(vga_write);
	if (bootinfo_parse(&bi, magic, (const void *)(uintptr_t)info) < 0)
		panic("boot: unknown boot loader magic %x", magic);
	kprintf("tender-x86_64: booted by %s, cmdline \"%s\"\n", bi.loader, bi.cmdline);
	apply_cmdline();
	cpu_init();
	trap_init();
	trap_set_hooks(&(struct trap_hooks){ .user_fault = proc_fault, .to_user = proc_preempt_point });
	memory_init();
	apic_init(bi.rsdp, dma_map_mmio);
	timer_init(kernel_tick);
	pci_init();
	netdev_probe_all(); // every NIC family in net/netdev.c's table, e1000 first
	syscall_msr_init();
	ata_init();
	proc_init();
	progs_list();
	// kfault=1: fault in kernel mode on purpose, to exercise the register
	// dump, backtrace and panic path (tests/qemu case "kernel_fault").
	v = cmdline_get(&cmd, "kfault");
	if (v && *v == '1')
		*(volatile uint64_t *)(MMIO_BASE - PAGE_SIZE) = 0xdead;
	// e1000test=, virtiotest=, e1000etest=MODE[,MODE]: a NIC driver's self-test,
	// on the bare driver before the I/O manager takes the NICs' interrupts; a
	// failure ends the run.
	v = cmdline_get(&cmd, "e1000test");
	if (v && e1000_selftest(v) != 0)
		arch_exit(1);
	if ((v = cmdline_get(&cmd, "virtiotest")) && virtio_net_selftest(v) != 0)
		arch_exit(1);
	if ((v = cmdline_get(&cmd, "e1000etest")) && e1000e_selftest(v) != 0)
		arch_exit(1);
	// ceiling=tx|rx: the emulated link's ceiling on the bare NIC 0 (the
	// benchmarks' reference rate, net/ceiling.h); a failure ends the run.
	if ((v = cmdline_get(&cmd, "ceiling")) && ceiling_run(v, &cmd) != 0)
		arch_exit(1);
	// Under -icount the TSC counts instructions: TLB misses cost none, so
	// the measurement would say nothing about the hardware being modelled.
	if (kernel_icount)
		pr_info("vspace: full TLB flush above %lu pages (default; not measured under icount)\n",
			tlb_flush_threshold);
	else
		tlb_flush_threshold = bench_tlb_threshold();
	v = cmdline_get(&cmd, "copy_threshold");
	struct io_options io = { .copy_threshold = v ? (long)strtoul_dec(v) : 0,
				 .threshold_measured = !v,
				 .poll_halts = option_is("poll", "timer"),
				 .rx_scrub = !option_is("rxscrub", "0") };
	if (!v && netdev_count())
		io.copy_threshold = bench_copy_threshold(io.rx_scrub);
	parse_rates(cmdline_get(&cmd, "nic_mbps"), io.nic_mbps, 8);
	io_init(&io);
	// idlepoll=spin: the idle CPU polls with interrupts kept off, as before
	// timers were let in; only for measuring the difference.
	sched_set_idle_work(io_idle_poll, option_is("idlepoll", "spin"));
	v = cmdline_get(&cmd, "kbench");
	if (v && !strcmp(v, "exchange"))
		bench_exchange(51);
	set_limits();
	runner_start(&cmd);
	sched_loop(runner_poll);
}
