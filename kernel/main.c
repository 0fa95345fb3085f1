// Kernel entry: initialisation order only.
#include "bootinfo.h"
#include "cmdline.h"
#include "kprintf.h"
#include "progs.h"
#include "runner.h"
#include "heap.h"
#include "bench.h"
#include "nics.h"
#include "fbcon.h"
#include "res/pmem.h"
#include "res/vspace.h"
#include "res/proc.h"
#include "res/io.h"
#include "res/vregion.h"
#include "res/tlb.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/apic.h"
#include "arch/x86_64/timer.h"
#include "arch/x86_64/smp.h"
#include "../drivers/serial/uart.h"
#include "../drivers/vga/vgatext.h"
#include "../drivers/pci/pci.h"
#include "../drivers/net/e1000/e1000.h"
#include "../drivers/net/virtio/virtio_net.h"
#include "../drivers/net/e1000e/e1000e.h"
#include "net/netdev.h"
#include "net/ceiling.h"
#include "net/worker.h"
#include "net/demux.h"
#include "dma.h"
#include "lock.h"
#include "../drivers/ata/ata.h"
#include <string.h>

extern char __image_start[], __image_end[];
extern int kernel_icount;
static struct bootinfo bi;
static struct cmdline cmd;

// "a,b,c" -> out[0..max): the numbers given; the rest are left as they are.
static void parse_list(const char *v, uint64_t *out, int max)
{
	for (int k = 0; v && *v && k < max; k++) {
		out[k] = cmdline_dec(v);
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
	// lockcheck=0: benchmarks only; every other boot checks every lock.
	v = cmdline_get(&cmd, "lockcheck");
	if (v && *v == '0') {
		lock_check_set(false);
		pr_info("lock: checker off (lockcheck=0)\n");
	}
}

#define HEAP_PAGES 1024 // 4 MiB, reserved before the boot frame count

// The heap takes HEAP_PAGES consecutive frames. Frames come lowest first;
// a UEFI memory map has holes low down, so frames before the first run long
// enough are set aside (chained through their first word) and freed after.
static void heap_setup(void)
{
	paddr_t first = 0, aside = 0;
	int got = 0;
	while (got < HEAP_PAGES) {
		paddr_t pa = pmem_alloc_nozero();
		if (!pa)
			panic("heap: no %d contiguous frames", HEAP_PAGES);
		if (got && pa != first + (paddr_t)got * PAGE_SIZE) {
			for (int i = 0; i < got; i++) {
				paddr_t f = first + (paddr_t)i * PAGE_SIZE;
				*(paddr_t *)arch_p2v(f) = aside;
				aside = f;
			}
			got = 0;
		}
		if (!got)
			first = pa;
		got++;
	}
	while (aside) {
		paddr_t next = *(paddr_t *)arch_p2v(aside);
		pmem_free(aside);
		aside = next;
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

static bool fb_mapped_at_boot(const struct boot_fb *fb)
{
	return fb->addr + (uint64_t)fb->pitch * fb->height <= (4ull << 30);
}

// The screen beside COM1: VGA text only where the loader says the machine
// is in text mode (a BIOS boot), a framebuffer console where it hands over
// an RGB framebuffer (UEFI), else none: nothing is written to 0xb8000.
// The boot page tables map the first 4 GiB; a framebuffer above waits for
// console_map.
static int screen = BOOT_CON_NONE;

static void console_setup(void)
{
	const struct boot_fb *fb = &bi.fb;
	if (fb->kind == BOOT_CON_EGA_TEXT && fb->addr == 0xb8000 && fb->width == 80 &&
	    fb->height == 25) {
		vga_init();
		console_add_sink(vga_write);
		screen = BOOT_CON_EGA_TEXT;
	} else if (fb->kind == BOOT_CON_RGB && fbcon_init(fb) == 0) {
		if (fb_mapped_at_boot(fb))
			fbcon_attach(arch_p2v(fb->addr));
		console_add_sink(fbcon_write);
		screen = BOOT_CON_RGB;
	}
}

static void report_console(void)
{
	const struct boot_fb *fb = &bi.fb;
	if (screen == BOOT_CON_EGA_TEXT)
		pr_info("console: COM1 and VGA text 80x25\n");
	else if (screen == BOOT_CON_RGB)
		pr_info("console: COM1 and framebuffer %ux%u, %u bits per pixel at %lx (%dx%d "
			"characters)\n",
			fb->width, fb->height, fb->bpp, fb->addr, fbcon_cols(), fbcon_rows());
	else
		pr_info("console: COM1 only (no screen the kernel can draw on)\n");
}

// What the firmware and the loader gave: a BIOS or UEFI boot, where the
// image went, the memory map's source, the RSDP, malformed tags.
static void report_boot(void)
{
	if (bootinfo_uefi(&bi))
		pr_info("boot: UEFI firmware, boot services %s, EFI system table %lx, "
			"%d EFI memory descriptors\n",
			bi.efi_bs_kept ? "still running" : "exited", bi.efi_systab, bi.efi_descs);
	else
		pr_info("boot: BIOS firmware\n");
	pr_info("boot: image at %lx, memory map from %s (%d RAM ranges), ACPI RSDP %s\n",
		bi.load_base ? bi.load_base : (uint64_t)(uintptr_t)__image_start, bi.mmap_from, bi.nram,
		bi.rsdp ? "from the loader" : "not given");
	report_console();
	if (bi.nbad)
		pr_warn("boot: %d malformed boot-information tag(s) ignored (types mask %x)\n", bi.nbad,
			bi.bad_types);
}

static void console_map(void)
{
	const struct boot_fb *fb = &bi.fb;
	if (screen == BOOT_CON_RGB && !fb_mapped_at_boot(fb))
		fbcon_attach((void *)dma_map_mmio(fb->addr, (uint64_t)fb->pitch * fb->height));
}

// plimit=F,R,C[,H]: frames, regions, channels and bytes of kernel heap
// (its channels' state) one process may hold; by default half the free
// frames, a quarter of the regions, half the channels, a quarter of the heap.
static void set_limits(void)
{
	uint64_t lim[LIM_N] = { pmem_free_count() / 2, NVREGION / 4, NIO / 2, HEAP_PAGES * PAGE_SIZE / 4 };
	parse_list(cmdline_get(&cmd, "plimit"), lim, LIM_N);
	proc_set_limits(lim);
	pr_info("limits: a process holds at most %lu frames, %lu regions, %lu channels\n",
		lim[LIM_FRAMES], lim[LIM_REGIONS], lim[LIM_CHANNELS]);
	pr_info("limits: and %lu bytes of kernel heap\n", lim[LIM_KHEAP]);
}

// Every timer tick: deadlines and time slices; the network's timers are
// only noted, for its worker (kernel/net/worker.c).
static void kernel_tick(void)
{
	proc_timer_tick();
	if (arch_cpu_id() == 0)
		worker_note_tick();
}

// The way back to user mode after an interrupt: the network worker's run
// (what the interrupt noted), then a preemption if one is due.
static void to_user(void)
{
	worker_run();
	proc_preempt_point();
}

// Each turn of the scheduler's loop (idle, or between processes).
static void kernel_poll(void)
{
	worker_run();
	runner_poll();
}

static bool option_is(const char *key, const char *val)
{
	const char *v = cmdline_get(&cmd, key);
	return v && !strcmp(v, val);
}

// The startup code's page (0x8000) must be RAM in the loader's map.
static bool low_page_free(paddr_t pa)
{
	for (int i = 0; i < bi.nram; i++)
		if (bi.ram[i].base <= pa && pa + PAGE_SIZE <= bi.ram[i].base + bi.ram[i].len)
			return true;
	return false;
}

// A further CPU, interrupts off, its state set up: it runs processes (the
// boot CPU alone polls the NICs and runs the runner and the network worker).
static void ap_poll(void) { worker_run_idle(); } // what a NIC's interrupt here noted

static void ap_main(int id)
{
	(void)id;
	timer_start_this_cpu();
	klock_lock();
	sched_loop(ap_poll);
}

// nicirq=C0,C1,..: NIC i's interrupt goes to CPU Ci (default: the boot CPU).
static void route_nic_irqs(void)
{
	uint64_t cpu[NETDEV_MAX];
	for (int i = 0; i < NETDEV_MAX; i++)
		cpu[i] = 0;
	const char *v = cmdline_get(&cmd, "nicirq");
	if (!v)
		return;
	parse_list(v, cpu, NETDEV_MAX);
	for (int i = 0; i < netdev_count(); i++) {
		struct netdev *nd = netdev_get(i);
		int c = (int)cpu[i];
		if (c >= smp_ncpu() || !nd->ops->irq_cpu || nd->ops->irq_cpu(nd, smp_apic_id(c)) < 0) {
			pr_warn("nicirq: NIC %d stays on CPU 0 (CPU %d %s)\n", i, c,
				c >= smp_ncpu() ? "does not run" : "cannot take it");
			continue;
		}
		demux_set_irq_cpu(i, c);
		pr_info("nicirq: NIC %d interrupts CPU %d\n", i, c);
	}
}

// nicqirq=C0,C1,..: receive queue q of every NIC of several queues
// (nicq=) interrupts CPU Cq; without it, CPU q (mod the CPUs running)
// unless nicirq= named the NIC's CPU.
static void route_queue_irqs(void)
{
	uint64_t cpu[NETDEV_RXQ_MAX];
	const char *v = cmdline_get(&cmd, "nicqirq");
	const char *nicirq = cmdline_get(&cmd, "nicirq");
	for (int q = 0; q < NETDEV_RXQ_MAX; q++)
		cpu[q] = (uint64_t)q % (uint64_t)smp_ncpu();
	if (v)
		parse_list(v, cpu, NETDEV_RXQ_MAX);
	else if (nicirq)
		return;
	for (int i = 0; i < netdev_count(); i++) {
		struct netdev *nd = netdev_get(i);
		for (int q = 0; q < nd->rx_queues && nd->ops->rxq_irq_cpu; q++) {
			int c = (int)cpu[q];
			if (c >= smp_ncpu() || nd->ops->rxq_irq_cpu(nd, q, smp_apic_id(c)) < 0) {
				pr_warn("nicqirq: NIC %d queue %d stays where it was (CPU %d)\n", i, q, c);
				continue;
			}
			kprintf("nicqirq: NIC %d queue %d interrupts CPU %d\n", i, q, c);
		}
	}
}

static void irq_nop(void *arg) { (void)arg; }

// The big lock: taken by every way into the kernel (system call, interrupt,
// fault), released by the way back to user mode and around an idle halt.
static void kernel_enter(void) { klock_lock(); }
static void kernel_exit(void) { klock_unlock(); }
static void kernel_leave(void)
{
	if (klock_held_by_me()) {
		tlb_batch_end();
		klock_release_all();
	}
}

static void tlb_ipi(void *arg)
{
	(void)arg;
	tlb_answer();
}

// cpus=N: at most N CPUs (default: every one the MADT lists).
static void smp_setup(void)
{
	const char *v = cmdline_get(&cmd, "cpus");
	int max = v ? (int)cmdline_dec(v) : MAXCPU;
	int n = smp_start(max < 1 ? 1 : max, low_page_free(0x8000), ap_main);
	pr_info("smp: %d CPU%s running (cpus=%s)\n", n, n == 1 ? "" : "s", v ? v : "all");
}

void kmain(uint32_t magic, uint32_t info)
{
	const char *v;
	cpu_init(0); // %gs first: locks (the console's too) name the CPU
	lock_init();
	klock_lock(); // the boot CPU's until its scheduler loop halts
	uart_init();
	console_add_sink(uart_write);
	if (bootinfo_parse(&bi, magic, (const void *)(uintptr_t)info) < 0)
		panic("boot: unknown boot loader magic %x", magic);
	console_setup();
	kprintf("tender-x86_64: booted by %s, cmdline \"%s\"\n", bi.loader, bi.cmdline);
	apply_cmdline();
	report_boot();
	trap_init();
	trap_set_hooks(&(struct trap_hooks){ .user_fault = proc_fault, .to_user = to_user,
					     .enter = kernel_enter, .exit = kernel_exit,
					     .leave_kernel = kernel_leave });
	irq_register(VEC_RESCHED, irq_nop, NULL); // the way back to user mode preempts
	irq_register_raw(VEC_TLB, tlb_ipi, NULL);  // answered even while another CPU
	lock_set_spin_hook(tlb_answer);            // holding the kernel lock waits
	memory_init();
	console_map();
	// No BIOS data area or ROM to scan for the RSDP after a UEFI boot.
	apic_init(bi.rsdp, !bootinfo_uefi(&bi), dma_map_mmio);
	timer_init(kernel_tick);
	smp_setup();
	pci_init();
	// promisc=1: NICs take every frame (the I/O manager still drops what
	// is not addressed to them); for tests of that check.
	netdev_set_promisc(option_is("promisc", "1"));
	// nicq=N: N receive queues (queue pairs) on a NIC that has several.
	if ((v = cmdline_get(&cmd, "nicq")))
		netdev_set_queues((int)cmdline_dec(v));
	nics_register();
	netdev_probe_all(); // every NIC family in kernel/nics.c's table, e1000 first
	route_nic_irqs();
	route_queue_irqs();
	syscall_msr_init();
	ata_init();
	proc_init(smp_ncpu());
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
	struct io_options io = { .copy_threshold = v ? (long)cmdline_dec(v) : 0,
				 .threshold_measured = !v,
				 .poll_halts = option_is("poll", "timer"),
				 .poll_irq = option_is("poll", "irq"),
				 .rx_scrub = !option_is("rxscrub", "0"),
				 .node = cmdline_get(&cmd, "node"), .nicdim = cmdline_get(&cmd, "nicdim"),
				 .nb = cmdline_get(&cmd, "nb") };
	if (!v && netdev_count())
		io.copy_threshold = bench_copy_threshold(io.rx_scrub);
	parse_rates(cmdline_get(&cmd, "nic_mbps"), io.nic_mbps, 8);
	// rxlock=fine: the receive path, input_io and a plain channel's
	// output_io without the kernel lock, under the NICs' and channels' own
	// locks; rxlock=kernel (the default): under the kernel lock. Not the
	// default on several CPUs yet: in real time, one VM of 2 vCPUs fed by
	// the host's injector received at 0.6x of 1 vCPU with it, against
	// 0.8-0.9x under the kernel lock (docs/design.md, "Locks and their
	// order").
	v = cmdline_get(&cmd, "rxlock");
	demux_fine = v && !strcmp(v, "fine");
	if (v && strcmp(v, "fine") && strcmp(v, "kernel"))
		pr_warn("rxlock=%s: neither fine nor kernel; the kernel lock is used\n", v);
	pr_info("io: the receive path and input_io/output_io run %s\n",
		demux_fine ? "under the NICs' and channels' locks (rxlock=fine)" : "under the kernel lock");
	io_init(&io);
	// idlepoll=spin: the idle CPU polls with interrupts kept off, as before
	// timers were let in; only for measuring the difference.
	sched_set_idle_work(io_idle_poll, io_idle_found, option_is("idlepoll", "spin"));
	// tickless=0: the boot CPU keeps its tick while idle (for comparison).
	if (!option_is("tickless", "0"))
		sched_set_idle_next(io_next_event);
	v = cmdline_get(&cmd, "kbench");
	if (v && !strcmp(v, "exchange"))
		bench_exchange(51);
	set_limits();
	runner_start(&cmd);
	sched_loop(kernel_poll);
}
