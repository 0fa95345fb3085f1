# tender-x86_64: a resource-separated research kernel with zero-copy network I/O.
# `make run` boots the demo (two VMs exchanging packets); `make test` runs
# every test. Both install what is missing (Debian packages) first.

BUILD ?= build
CROSS ?=
CC := $(CROSS)gcc
OBJCOPY := $(CROSS)objcopy
ACCEL ?= tcg
export ACCEL

KCFLAGS := -std=gnu11 -O2 -g -flto=auto -Wall -Wextra -Werror -ffreestanding -fno-pie -fno-pic \
	-fno-stack-protector -fno-omit-frame-pointer -mno-red-zone -mgeneral-regs-only \
	-mcmodel=small -nostdinc -isystem $(shell $(CC) -print-file-name=include) \
	-Ilib/include -Ikernel -MMD -MP
KLDFLAGS := -nostdlib -static -no-pie -Wl,-T,linker.ld -Wl,-z,max-page-size=0x1000 \
	-Wl,--no-warn-rwx-segments -Wl,--build-id=none -Wl,-z,noexecstack
UCFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -ffreestanding -fpie -fno-stack-protector \
	-mno-red-zone -nostdinc -isystem $(shell $(CC) -print-file-name=include) -Ilib/include -MMD -MP
ULDFLAGS := -nostdlib -static -no-pie -Wl,-T,lib/user.ld -Wl,-z,max-page-size=0x1000 \
	-Wl,--build-id=none -Wl,-z,noexecstack
LIBGCC := $(shell $(CC) -print-libgcc-file-name)

KEXCLUDE ?=
KSRC := $(filter-out $(KEXCLUDE),$(wildcard kernel/*.c kernel/res/*.c kernel/net/*.c kernel/arch/x86_64/*.c \
	drivers/*/*.c drivers/*/*/*.c) lib/string.c lib/fmt.c lib/err.c lib/stats.c)
KASM := boot/multiboot.S kernel/arch/x86_64/entry.S kernel/arch/x86_64/trampoline.S
KOBJ := $(KSRC:%.c=$(BUILD)/k/%.o) $(KASM:%.S=$(BUILD)/k/%.o) $(BUILD)/k/progs.o

ULIB := lib/crt0.S lib/usys.S lib/ulib.c lib/utest.c lib/string.c lib/fmt.c lib/err.c lib/netutil.c
ULIBOBJ := $(patsubst %,$(BUILD)/u/%.o,$(basename $(ULIB)))
PROGS := $(basename $(notdir $(wildcard user/*.c)))
PROG_ELFS := $(PROGS:%=$(BUILD)/user/%.elf)

KERNEL := $(BUILD)/kernel.elf
ISO := $(BUILD)/tender.iso
DISK := $(BUILD)/disk.img

.PHONY: all run run-procs test iso debug clean deps test-host test-qemu test-bochs test-run fuzz \
	bench-exchange bench-rtt bench-burst bench-ceiling bench

all: $(KERNEL)

# No build product is an intermediate to delete: the user programs'
# objects would be, until their .d files (read by the next make) name them,
# and that next make would build every program and the kernel again; with
# make test's two lanes, two makes at once.
.SECONDARY:

deps:
	@tools/deps.sh build qemu

$(BUILD)/k/%.o: %.c
	@mkdir -p $(dir $@)
	@echo '  CC   $<'
	@$(CC) $(KCFLAGS) -c $< -o $@

# GCC emits calls to memcpy/memset itself: they must survive LTO's pruning.
$(BUILD)/k/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	@echo '  CC   $<'
	@$(CC) $(KCFLAGS) -fno-lto -c $< -o $@

$(BUILD)/k/%.o: %.S
	@mkdir -p $(dir $@)
	@echo '  CC   $<'
	@$(CC) $(KCFLAGS) -c $< -o $@

$(BUILD)/progs.S: $(PROG_ELFS) tools/mkprogs.sh
	@tools/mkprogs.sh $@ $(PROG_ELFS)

$(BUILD)/k/progs.o: $(BUILD)/progs.S
	@echo '  CC   $<'
	@$(CC) $(KCFLAGS) -c $< -o $@

$(KERNEL): $(KOBJ) linker.ld
	@echo '  LD   $@'
	@$(CC) $(KCFLAGS) $(KLDFLAGS) -o $@ $(KOBJ) $(LIBGCC)

$(BUILD)/u/%.o: %.c
	@mkdir -p $(dir $@)
	@echo '  UCC  $<'
	@$(CC) $(UCFLAGS) -c $< -o $@

$(BUILD)/u/%.o: %.S
	@mkdir -p $(dir $@)
	@echo '  UCC  $<'
	@$(CC) $(UCFLAGS) -c $< -o $@

$(BUILD)/user/%.elf: $(BUILD)/u/user/%.o $(ULIBOBJ) lib/user.ld
	@mkdir -p $(dir $@)
	@echo '  LD   $@'
	@$(CC) $(ULDFLAGS) -o $@ $< $(ULIBOBJ) $(LIBGCC)

# The file service's programs (user/fs*.c) also link its library (lib/fs*.c).
FSLIBOBJ := $(patsubst %,$(BUILD)/u/%.o,$(basename $(wildcard lib/fs*.c)))
$(BUILD)/user/fs%.elf: $(BUILD)/u/user/fs%.o $(ULIBOBJ) $(FSLIBOBJ) lib/user.ld
	@mkdir -p $(dir $@)
	@echo '  LD   $@'
	@$(CC) $(ULDFLAGS) -o $@ $< $(ULIBOBJ) $(FSLIBOBJ) $(LIBGCC)

# The disk behind regions created with a backing store (16 MiB, zeroed).
$(DISK):
	@mkdir -p $(dir $@)
	truncate -s 16M $@

# The demo: two VMs joined by an emulated wire run user/netdemo.c, server
# and client; both consoles on this terminal, each line led by its node's
# name (tools/run-demo.sh).
run: deps $(KERNEL)
	@tools/run-demo.sh $(KERNEL)

# The single-VM process demo (user/demo.c): spawns, faults, sleep, a disk
# round trip; its console on this terminal.
run-procs: deps $(KERNEL) $(DISK)
	tools/qemu-run.sh $(KERNEL) "run=demo" 120 -drive file=$(DISK),if=ide,format=raw

# QEMU waits for gdb on :1234; gdb loads the kernel's symbols.
debug: deps $(KERNEL)
	qemu-system-x86_64 -accel tcg -cpu max -m 256M -display none -serial stdio \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 -no-reboot -s -S \
		-kernel $(KERNEL) -append "run=demo" & \
	gdb -q $(KERNEL) -ex 'target remote :1234' -ex 'hbreak kmain' -ex continue; \
	kill %1 2>/dev/null || true

# One hybrid image booting by BIOS and by UEFI, from CD or USB (tools/mkiso.sh).
iso: $(ISO)
$(ISO): $(KERNEL) boot/grub.cfg tools/mkiso.sh
	@tools/deps.sh iso
	tools/mkiso.sh $(KERNEL) $@

# The ISO under UEFI firmware (OVMF: demo, exchange_test) and under SeaBIOS
# (demo), from QEMU's CD drive (about 20 s).
.PHONY: test-uefi
test-uefi: $(ISO)
	@tools/deps.sh qemu ovmf
	tests/qemu/uefi/run.sh $(KERNEL) $(ISO)

# A rack booting from the network (docs/netboot.md): GRUB's PXE and UEFI
# network builds, the kernel, a menu per node of NETBOOT_NODES and a
# dnsmasq configuration, in build/netboot/.
NETBOOT_NODES ?= tools/netboot/nodes.example
.PHONY: netboot test-netboot
netboot: $(KERNEL)
	@tools/deps.sh netboot
	tools/netboot/mknetboot.sh $(KERNEL) $(NETBOOT_NODES) $(BUILD)/netboot

# VMs booted from a namespace-local dnsmasq: two by BIOS PXE run the
# ping-pong over a bridge, one boots by UEFI, and the node list's checks
# (tests/netboot/run.sh; about 25 s).
test-netboot: $(KERNEL)
	@tools/deps.sh build qemu netboot ovmf
	tests/netboot/run.sh $(KERNEL)

# The Linux guest's e1000 self-test (test-linux-baseline) is not listed:
# bench-smoke runs the same verified AF_PACKET round trips and bursts on the
# e1000, and fails on any failed pair (LB_FAIL_RETRIES=0); every variant,
# PACKET_MMAP included, has its pair on virtio-net.
TESTS_KERNEL = test-docs deps test-layers test-host test-qemu test-uefi test-run test-cluster
TESTS_KERNEL += test-stripe test-failover
TESTS_KERNEL += test-fs
TESTS_KERNEL += test-relay
TESTS_KERNEL += test-lb
TESTS_KERNEL += test-bochs
TESTS_KERNEL += test-netboot
TESTS_KERNEL += test-smp
# test-linux-baseline-virtio runs every pktbench variant, AF_XDP (native XDP)
# and the tuned sockets included, round trips then bursts in one boot pair.
TESTS_LINUX = test-linux-baseline-virtio test-linux-dpdk test-linux-bond test-interop bench-smoke
# One part after another (tools/run-tests.sh), the ten slowest named at the
# end; TESTS_BESIDE (not timing-sensitive) run in a second lane beside the
# others, once the first part has installed the packages and built the
# kernel. The lanes together run at most 4 VMs: TESTS_VMS names the parts
# that run other than 3 at once (1 beside the others). The parts whose
# links live on heartbeats, or that measure, run alone (TESTS_ALONE, 4:
# nothing beside them) and last, once the second lane is done: a lane
# part beside them starved a VM long enough for its links to be declared
# dead by silence.
TESTS_BESIDE = test-layers test-host test-uefi test-bochs test-netboot
TESTS_ALONE = test-stripe test-failover test-fs test-relay test-lb test-smp bench-smoke
TESTS_VMS = test-docs=1 test-qemu=4 test-run=2 test-netboot=2 test-layers=0 test-host=0
TESTS_VMS += test-linux-baseline-virtio=2 test-linux-dpdk=2 test-linux-bond=2 test-interop=2
TESTS_VMS += $(addsuffix =4,$(TESTS_ALONE))
test:
	@tools/run-tests.sh --logs $(BUILD)/test-logs/run-tests $(addprefix --beside ,$(TESTS_BESIDE)) \
		$(addprefix --vms ,$(TESTS_VMS)) \
		$(filter-out $(TESTS_ALONE),$(TESTS_KERNEL) $(TESTS_LINUX)) $(TESTS_ALONE)

# make run's demo, without a terminal: its output checked, then interrupted
# mid-run, which must leave no QEMU and no socket behind.
test-run: $(KERNEL)
	tests/qemu/net/demo.sh $(KERNEL)

# The cluster runner (tools/cluster/): its topology checks, three nodes on a
# bridge with jumbo traffic, visible and silent link cuts, and cleanup after
# a timeout, SIGTERM and SIGKILL, the ssh and two-host paths (docs/multihost.md;
# about 35 s; at most 3 VMs at once).
.PHONY: test-cluster
test-cluster: $(KERNEL)
	@tools/deps.sh build qemu cluster
	/usr/bin/python3 tools/cluster/selftest.py $(KERNEL)

# Striped channels across three nodes of different link counts, on the
# cluster runner's bridges, then two nodes on two hosts (about 20 s).
.PHONY: test-stripe
test-stripe: $(KERNEL)
	@tools/deps.sh build qemu cluster
	tests/qemu/stripe/run.sh $(KERNEL)

# Reliable striped channels through visible, silent and per-pair link cuts,
# and a peer that closes its channel mid-stream, one case again across two
# hosts (tests/qemu/failover/run.sh; about 70 s).
.PHONY: test-failover
test-failover: $(KERNEL)
	@tools/deps.sh build qemu cluster
	tests/qemu/failover/run.sh $(KERNEL)

# The file service (user/fsd.c, lib/fs.c) on two nodes over two links: every
# operation, 0 B to 32 MiB verified, malformed requests, a link cut
# mid-write, 300 files, a restart on the same disk, the tool, and the
# server's VM killed twice mid-work (tests/qemu/fs/run.sh; six boot pairs,
# about 80 s).
.PHONY: test-fs
test-fs: $(KERNEL)
	@tools/deps.sh build qemu cluster
	tests/qemu/fs/run.sh $(KERNEL)

# The file service's crash test at length (tests/qemu/fs/crash.py): the
# server's VM killed at a random moment of its create/write/fsync loop
# CRASH_CUTS times on each of the disks of CRASH_SEEDS, every restart
# checked (40 cuts by default, about 6 min; test-fs runs 2).
CRASH_CUTS ?= 5
CRASH_SEEDS ?= 1,2,3,4,5,6,7,8
.PHONY: crashtest
crashtest: $(KERNEL)
	@tools/deps.sh build qemu cluster
	/usr/bin/python3 tests/qemu/fs/crash.py $(KERNEL) --name fs-crashtest --cuts $(CRASH_CUTS) \
		--seeds $(CRASH_SEEDS)

# The kernel's relay: a stream through a relay node, hop-limit and malformed
# routed frames dropped and counted, and relaying with every free frame taken
# (tests/qemu/relay/run.sh; about 12 s).
.PHONY: test-relay
test-relay: $(KERNEL)
	@tools/deps.sh build qemu cluster
	tests/qemu/relay/run.sh $(KERNEL)

# Balancing senders over two paced NICs (tests/qemu/lb/run.sh): the paper's
# three senders in short, tlb then history in one boot pair, every decision
# the kernel printed replayed against a model of the rule (about 30 s).
.PHONY: test-lb
test-lb: $(KERNEL)
	@tools/deps.sh build qemu cluster
	tests/qemu/lb/run.sh $(KERNEL)

# The repository stands on its own: nothing refers outside it, and every
# relative link in README.md and docs/ resolves; the system-call reference
# is what lib/syscalls.def and the headers say (cheap, so it runs first).
# Then make new-program's own test: bad names refused, a skeleton generated
# into a scratch tree, built and booted once (about 15 s; one VM).
.PHONY: test-docs syscalls-doc new-program docs-results
test-docs: deps $(KERNEL)
	tools/check-standalone.sh
	python3 tools/docs/syscalls.py --selftest
	python3 tools/docs/syscalls.py --check
	python3 tools/docs/results.py --selftest
	python3 tools/docs/results.py --check
	tools/new-program/selftest.sh $(BUILD)

# make new-program NAME=x: user/x.c from a tested skeleton (a channel on a
# VM's two wired NICs: a batch sent, received, every byte checked) and its
# boot case in tests/qemu/programs/cases.txt, which make test-qemu runs.
new-program:
	@tools/new-program/new-program.sh "$(NAME)"

# docs/syscalls.md from lib/syscalls.def and lib/include/*.h.
syscalls-doc:
	python3 tools/docs/syscalls.py

# The kernel and a Linux guest (tools/linux-baseline) exchange verified
# round trips over e1000 and virtio-net (the kernel as server) and e1000e
# (Linux as server): both sides send and receive every size in each, and
# each side is server once; on e1000 also the windowed stream both ways,
# the kernel's stream client into pktbench's window receiver and
# pktbench's window client into the kernel's stream server (make
# bench-abab's stream protocol, every byte checked); INTEROP_ALL=1: each
# side as server and the streams on every model (tests/interop/run.sh;
# about 15 s a test).
.PHONY: test-interop
test-interop: $(KERNEL) linux-baseline
	INTEROP_DIRS=$(if $(INTEROP_ALL),both,kernel-server) tests/interop/run.sh $(KERNEL) $(BUILD)/linux-baseline
	NIC=virtio INTEROP_DIRS=$(if $(INTEROP_ALL),both,kernel-server) INTEROP_WINDOW=$(if $(INTEROP_ALL),1,0) \
		tests/interop/run.sh $(KERNEL) $(BUILD)/linux-baseline
	NIC=e1000e INTEROP_DIRS=$(if $(INTEROP_ALL),both,linux-server) INTEROP_WINDOW=$(if $(INTEROP_ALL),1,0) \
		tests/interop/run.sh $(KERNEL) $(BUILD)/linux-baseline

# The include graph: drivers, managers and arch point one way.
.PHONY: test-layers
test-layers: $(KERNEL)
	python3 tools/check-layers.py --selftest
	python3 tools/check-layers.py --build $(BUILD)
	python3 tools/check-scratch.py --selftest
	python3 tools/check-scratch.py

test-qemu: $(KERNEL)
	tests/qemu/run-all.sh $(KERNEL) tests/qemu/cases.txt
	tests/qemu/e1000/run.sh $(KERNEL) skip-bochs
	tests/qemu/virtio/run.sh $(KERNEL)
	tests/qemu/e1000e/run.sh $(KERNEL)
	tests/qemu/net/run.sh $(KERNEL)
	tests/qemu/isolate/run.sh $(KERNEL)
	tests/qemu/programs/run.sh $(KERNEL)

# Many CPUs: the SMP boots and the stress test (tests/qemu/smp/cases.txt),
# a multiqueue virtio-net NIC on a tap whose two receive queues interrupt
# two CPUs (tests/qemu/smp/mq.sh: a private network namespace; root), then the boot, network (striped channels over 2 and 4 links included)
# and isolation suites again at -smp 2, the network's programs pinned to
# CPU 1 (runcpu=1) so that every received packet crosses from the CPU
# polling the NIC to the process's; test-uefi runs the stress test after a
# UEFI boot. test-smp-stripe: the three-node striping suite at -smp 2 (not
# in make test: three VMs whose idle CPU 0 spins polling oversubscribe this
# 2-core host, and a starved VM misses heartbeats). Last in make test's
# main lane, once the parts beside it are done: two 2-CPU VMs whose CPU 0
# spins are as much as the host takes without starving QEMU's own threads,
# so its network suite boots one pair at a time (SUITE_JOBS=1; elsewhere
# 2), and the isolation suite two single VMs.
.PHONY: test-smp test-smp-stripe
test-smp: $(KERNEL)
	@tools/deps.sh build qemu cluster
	tests/qemu/run-all.sh $(KERNEL) tests/qemu/smp/cases.txt
	tests/qemu/smp/mq.sh $(KERNEL)
	QEMU_SMP=2 tests/qemu/run-all.sh $(KERNEL) tests/qemu/cases.txt
	SUITE_JOBS=1 QEMU_SMP=2 CMD_EXTRA=runcpu=1 tests/qemu/net/run.sh $(KERNEL)
	QEMU_SMP=2 tests/qemu/isolate/run.sh $(KERNEL)

test-smp-stripe: $(KERNEL)
	@tools/deps.sh build qemu cluster
	QEMU_SMP=2 tests/qemu/stripe/run.sh $(KERNEL)

# The full-size system-call fuzzer (make test runs it at 100,000 calls).
FUZZ_N ?= 1000000
fuzz: deps $(KERNEL)
	@truncate -s 16M $(BUILD)/fuzz-disk.img
	SERIAL=$(BUILD)/fuzz.log tools/qemu-run.sh $(KERNEL) "run=fuzz n=$(FUZZ_N) seed=$${SEED:-1}" 900 \
		-drive file=$(BUILD)/fuzz-disk.img,if=ide,format=raw; \
	rc=$$?; grep -a -E '^fuzz:|SUITE|frames:' $(BUILD)/fuzz.log; exit $$rc

# Benchmarks (docs/benchmarks.md): JSON, PNG and REPORT.md in bench/results/
# (NIC=e1000, the default), bench/results/virtio/ (NIC=virtio: QEMU's
# virtio-net-pci,disable-legacy=on in both systems' VMs) or
# bench/results/e1000e/ (NIC=e1000e: QEMU's 82574L).
# The plots use Debian's python3-matplotlib, hence Debian's own interpreter.
NIC ?= e1000
BENCH_OUT = bench/results$(if $(filter-out e1000,$(NIC)),/$(NIC))
BENCH_SMOKE_OUT = $(BUILD)/bench-smoke$(if $(filter-out e1000,$(NIC)),-$(NIC))
BENCH_RUNS ?= 5
BENCH_PY ?= /usr/bin/python3
export BENCH_PY
.PHONY: bench-deps bench-smoke
bench-deps:
	@tools/deps.sh build qemu bench linux

bench-exchange: bench-deps $(KERNEL)
	$(BENCH_PY) tools/bench/exchange.py $(KERNEL) $(BENCH_OUT) $(BENCH_RUNS)

# Everything, both systems side by side: JSON, plots and REPORT.md in $(BENCH_OUT).
bench: bench-deps $(KERNEL) linux-baseline
	NIC=$(NIC) LB_BUILD=$(LINUX_BASELINE_OUT) R1_PAIRS=$(R1_PAIRS) ABAB_ROUNDS=$(ABAB_ROUNDS) \
		ABAB_MAX_ROUNDS=$(ABAB_MAX_ROUNDS) ABAB_PEERS=$(ABAB_PEERS) ABAB_BUDGET_MIN=$(ABAB_BUDGET_MIN) \
		tools/bench/run-all.sh $(KERNEL) $(BENCH_RUNS) $(BENCH_OUT)
	python3 tools/docs/results.py

# The measured figures in README.md, docs/ and the tools' READMEs, written
# again from bench/results/**/*.json between <!-- results: ... --> markers
# (tools/docs/results.py; make test-docs checks they agree).
docs-results:
	python3 tools/docs/results.py

# Many CPUs, both systems in one run (docs/benchmarks.md, "smp"): Linux's
# munmap/mremap under a remote TLB shootdown and its receive on either CPU
# (bench-smp-linux, bench-smp-linux-rx), then this kernel's exchange into a
# space live on another CPU against a local one and a copy (user/smpbench,
# tools/bench/smp.py: kernel-smp.json, smp.json, smp.png, REPORT.md's Many
# CPUs section) and its receive at -smp 2 with the process on the NIC's CPU
# or the other (smp-rx/); then the two steps below. About 75 min.
# R1 as receive work, every system side by side (issue 25; tools/bench/r1.py,
# rxwork.py): -icount boot pairs of this kernel, the Linux guest's socket
# variants and DPDK, the receiving VM's instructions counted by
# insnplugin.so from waiting idle for a burst to holding its last frame;
# R1_NICS (e1000 virtio) each give RESULTS/r1/NIC.json, R1_RX_REPS (30)
# timed bursts a size, R1_PAIRS (1) rounds; then REPORT.md's section.
R1_NICS ?= e1000 virtio
R1_PAIRS ?= 1
R1_SIZES ?= 64,1500,8192
.PHONY: bench-r1
bench-r1: bench-deps $(KERNEL) linux-baseline
	for n in $(R1_NICS); do $(BENCH_PY) tools/bench/r1.py --kernel $(KERNEL) --guest $(LINUX_BASELINE_OUT) \
		--nic $$n --sizes $(R1_SIZES) --pairs $(R1_PAIRS) --out $(BENCH_OUT)/r1/$$n.json || exit 1; done
	$(BENCH_PY) tools/bench/r1_report.py $(BENCH_OUT)

.PHONY: bench-smp
bench-smp: bench-deps $(KERNEL) linux-baseline
	$(MAKE) bench-smp-linux bench-smp-linux-rx
	$(BENCH_PY) tools/bench/smp.py $(KERNEL) $(BENCH_OUT) $(BENCH_RUNS) $(LINUX_RESULTS)/linux-smp.json
	QEMU_SMP=2 $(BENCH_PY) tools/bench/kernelnet.py burst $(KERNEL) $(BENCH_OUT)/smp-rx $(BENCH_RUNS) \
		--sizes 64,1500,8192 --variant kernel-rxcpu0=runcpu=0 --variant kernel-rxcpu1=runcpu=1
	$(MAKE) bench-smp-stripe bench-smp-inject

# A striped stream over 4 links (82574L, MSI) at 1, 2 and 4 CPUs a node,
# NIC i's interrupt on CPU i mod N: each CPU's instructions per packet at
# both ends (insnplugin.so) and, this kernel, its busy and lock-wait
# instructions under -icount; this kernel, then Linux balance-rr, then
# DPDK's striped windowed stream, one lcore a NIC's queue
# (tools/bench/smpstripe.py; SMPSTRIPE_RUNS rounds, SMPSTRIPE_BYTES a
# stream): smpstripe.json, smpstripe.png and REPORT.md's sub-section
# (tools/bench/smp_report.py). About 35 min.
SMPSTRIPE_RUNS ?= 3
SMPSTRIPE_BYTES ?= 8388608
.PHONY: bench-smp-stripe bench-smp-inject
bench-smp-stripe: bench-deps $(KERNEL) linux-baseline
	$(BENCH_PY) tools/bench/smpstripe.py $(KERNEL) $(BENCH_OUT) $(SMPSTRIPE_RUNS) --bytes $(SMPSTRIPE_BYTES) \
		--guest $(LINUX_BASELINE_OUT)
	$(BENCH_PY) tools/bench/smpstripe.py $(KERNEL) $(BENCH_OUT) $(SMPSTRIPE_RUNS) --bytes $(SMPSTRIPE_BYTES) \
		--guest $(LINUX_BASELINE_OUT) --linux
	$(BENCH_PY) tools/bench/smpstripe.py $(KERNEL) $(BENCH_OUT) $(SMPSTRIPE_RUNS) \
		--guest $(LINUX_BASELINE_OUT) --linux --variant dpdk
	$(BENCH_PY) tools/bench/smp_report.py $(BENCH_OUT)

# One VM receiving user/stream.c's stream from the host injector
# (tools/bench/inject.py --stream), 1 vCPU against 2 (nicirq=0 runcpu=1),
# real time, SMPINJECT_RUNS rounds alternating them: kernel-smpinject.json
# and REPORT.md's sub-section. About 8 min.
SMPINJECT_RUNS ?= 5
SMPINJECT_SECONDS ?= 3
bench-smp-inject: bench-deps $(KERNEL)
	$(BENCH_PY) tools/bench/smpinject.py $(KERNEL) $(BENCH_OUT) $(SMPINJECT_RUNS) --seconds $(SMPINJECT_SECONDS)
	$(BENCH_PY) tools/bench/smp_report.py $(BENCH_OUT)

# How the host's tap steers the wire format over a two-queue virtio-net NIC
# (docs/design.md, "Multiqueue NICs"): MQSTEER_RUNS rounds of four
# scenarios, each a stream into a server of -smp 2 and nicq=2 through
# taps in a private namespace (root): mqsteer.json. About 30 s a round.
MQSTEER_RUNS ?= 5
.PHONY: bench-mqsteer
bench-mqsteer: $(KERNEL)
	@tools/deps.sh build qemu cluster
	python3 tools/bench/mqsteer.py $(KERNEL) bench/results $(MQSTEER_RUNS)

# This kernel against another commit's (COMPARE_REV, default origin's main
# before this branch: HEAD~1), one run of the same harness, the kernels'
# pairs alternating: round trips, bursts, T1 and R1 per size, and NEW / OLD
# in $(BENCH_OUT)/compare/compare.md (tools/bench/compare-kernels.sh).
COMPARE_REV ?= HEAD~1
COMPARE_RUNS ?= 3
.PHONY: bench-compare
bench-compare: bench-deps $(KERNEL)
	tools/bench/compare-kernels.sh $(KERNEL) $(COMPARE_REV) $(COMPARE_RUNS) $(BUILD)/compare

# Striped streams over 1-4 paced links, this kernel and Linux bonding, then
# the CPU work of both (busy instructions per packet under -icount, both
# ends, at a fixed offered load and unpaced; about 30 min a round of
# MULTILINK_CPU_RUNS, default BENCH_RUNS; MULTILINK_CPU_ONLY=1 runs only
# that): multilink.json, multilink.png and REPORT.md's multi-link section.
.PHONY: bench-multilink
bench-multilink: bench-deps $(KERNEL) linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) tools/bench/multilink.sh $(KERNEL) $(BENCH_RUNS) $(BENCH_OUT)

# A verified stream over 2 and 4 paced links through a visible and a silent
# cut of one link, this kernel and Linux bonding/MPTCP, on e1000 and
# virtio-net, under -icount (the CPU work at both ends): failover.json,
# failover.png and REPORT.md's link-failure section (tools/bench/failover.sh).
.PHONY: bench-failover
# FAILOVER_RUNS (3) interleaved rounds: runs per system, NIC, link count and
# cut, the same for both systems (a round takes about 40 s a Linux cell).
# FAILOVER_UNPACED=1: the same with no link paced on either system, the CPU
# as the limit (failover-unpaced.json and the section's unpaced part).
FAILOVER_RUNS ?= 3
bench-failover: bench-deps $(KERNEL) linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) tools/bench/failover.sh $(KERNEL) $(FAILOVER_RUNS) $(BENCH_OUT)

# Direct, through one relay and through two, 1 and 2 links per hop, this
# kernel's relay and Linux IP routers: relay.json, relay.png and REPORT.md's
# relaying section (tools/bench/relay.sh). RELAY_RUNS (3) runs per cell for
# each system, both on dgram wires, in interleaved rounds (a kernel run,
# then a Linux run; about 25 s a kernel cell); RELAY_HOPS=0,1 leaves out the
# 4-VM line. Then the relay's instructions per forwarded packet at a fixed
# offered load against a Linux router's (interleaved, RELAY_CPU_RUNS), the
# throughput with the host's frame injector as the client (RELAY_INJECT_RUNS)
# and a profile of the kernel relay (RELAY_PROFILE); RELAY_CPU_ONLY=1 runs
# only those.
.PHONY: bench-relay
RELAY_RUNS ?= 3
bench-relay: bench-deps $(KERNEL) linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) tools/bench/relay.sh $(KERNEL) $(RELAY_RUNS) $(BENCH_OUT)

# The file service against Linux NFS (issue 15): SRFS's four patterns per
# I/O length over 1 and 2 paced links, a read through a link cut, 4 KiB
# round trips, and the same with 3.3 ms added by a netem router guest:
# fs.json, fs.png and REPORT.md's file-service section (tools/bench/fs.sh).
# FS_RUNS (3) kernel runs, FS_LINUX_RUNS (1); FS_QUICK=1 tries the harness.
.PHONY: bench-fs
bench-fs: bench-deps $(KERNEL) linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) tools/bench/fs.sh $(KERNEL) $(BENCH_OUT)

# The seed papers' file-service figures bench-fs leaves out (issue 26):
# RI2N/DRV Tables 2 and 4, SRFS Table 3 and its Fig. 3 with the B tables,
# this kernel beside Linux, pairs interleaved: fs-paper.json,
# kernel-fs-srfsb.json, linux-fs-srfsb.json and REPORT.md's section
# (tools/bench/fs_paper.sh; FSP_PARTS, FSP_RUNS there; about 35 minutes).
.PHONY: bench-fs-paper
bench-fs-paper: bench-deps $(KERNEL) linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) tools/bench/fs_paper.sh $(KERNEL) $(BENCH_OUT)

# The balancing scenario (Taniguchi et al. section 4.2) under rr, tlb and
# history in this kernel, LB_RUNS (20) runs each, and Linux bonding
# balance-rr and balance-tlb, LB_LINUX_RUNS (20) each: lb.json, lb.png and
# REPORT.md's balancing section (tools/bench/lb.sh; about 45 s a kernel
# run, 70 s a Linux run).
.PHONY: bench-lb
LB_RUNS ?= 20
LB_LINUX_RUNS ?= 20
bench-lb: bench-deps $(KERNEL) linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) LB_LINUX_RUNS=$(LB_LINUX_RUNS) tools/bench/lb.sh $(KERNEL) $(LB_RUNS) $(BENCH_OUT)

# The seed papers' tables and figures beside this tree's committed results
# (tools/bench/papers_report.py, the papers' numbers in tools/bench/papers.py):
# REPORT.md's paper sections rewritten from $(BENCH_OUT)'s JSON, nothing run.
# make bench, bench-multilink and bench-lb end with the same step.
.PHONY: bench-papers
bench-papers:
	$(BENCH_PY) tools/bench/papers_report.py $(BENCH_OUT)

# Interleaved boot pairs (docs/benchmarks.md, "abab"; tools/bench/abab.py):
# rounds of a kernel pair and right after it a peer's pair, per peer, bursts
# and the windowed stream, the host's load and steal per pair (a disturbed
# pair drops its round for every system), kernel / peer ratios with a
# bootstrap 95 % interval, the link's ceiling in every round (the kernel's
# loop, and DPDK's txonly/rxonly with the dpdk peer) and every burst and
# stream as a fraction of it, into $(BENCH_OUT)/abab/. ABAB_ROUNDS kept rounds wanted (at
# most ABAB_MAX_ROUNDS run, default 0: twice as many), ABAB_BUDGET_MIN (0:
# none) stops starting rounds.
# About 2 min a round with dpdk and xdp at 3 sizes, the ceilings included,
# on a host with other load (bench/results/abab/smoke-dpdk-xdp); add about
# 30 s for packet.
# bench-abab-smoke: 2 rounds, 1500 bytes, linux-packet only (about 2 min;
# not part of bench-smoke, whose budget it would exceed).
ABAB_ROUNDS ?= 10
ABAB_SIZES ?= 64,1500,8192
ABAB_PEERS ?= packet,dpdk,xdp
ABAB_BUDGET_MIN ?= 0
ABAB_MAX_ROUNDS ?= 0
.PHONY: bench-abab bench-abab-smoke
bench-abab: bench-deps $(KERNEL) linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) $(BENCH_PY) tools/bench/abab.py $(KERNEL) $(BENCH_OUT)/abab \
		--rounds $(ABAB_ROUNDS) --max-rounds $(ABAB_MAX_ROUNDS) --sizes $(ABAB_SIZES) --peers $(ABAB_PEERS) \
		--budget-min $(ABAB_BUDGET_MIN) --nic $(NIC)
bench-abab-smoke: bench-deps $(KERNEL) linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) $(BENCH_PY) tools/bench/abab.py $(KERNEL) $(BUILD)/bench-abab-smoke \
		--rounds 2 --max-rounds 2 --sizes 1500 --peers packet --quick --nic $(NIC)

# The whole harness in a few minutes (one boot pair per system, two sizes,
# few repetitions) into a scratch directory, then the format check. One
# kernel configuration beside the plain kernel runs the variant path as
# well as two (make bench measures both).
BENCH_SMOKE_VARIANTS ?= kernel-spin=idlepoll=spin
bench-smoke: bench-deps $(KERNEL) linux-baseline
	$(BENCH_PY) tools/bench/selftest.py
	rm -rf $(BENCH_SMOKE_OUT)
	NIC=$(NIC) BENCH_SIZES=64,8192 BENCH_QUICK=1 LB_BUILD=$(LINUX_BASELINE_OUT) \
		BENCH_VARIANTS="$(BENCH_SMOKE_VARIANTS)" \
		tools/bench/run-all.sh $(KERNEL) 1 $(BENCH_SMOKE_OUT)

# bench-ceiling: the emulated link's ceiling alone (ceiling.json; kernel/net/ceiling.h).
bench-rtt bench-burst bench-ceiling: deps $(KERNEL)
	python3 tools/bench/kernelnet.py $(@:bench-%=%) $(KERNEL) $(BENCH_OUT) $(BENCH_RUNS) --nic $(NIC)

# Where a send's instructions go: a per-function profile of T1 (the client's
# output_io of 128 packets) under -icount, counted by a TCG plugin
# (tools/bench/insnprof.py; PROFILE_SIZES=64,8192 PROFILE_REPS=3), beside T1 itself.
PROFILE_SIZES ?= 64
PROFILE_REPS ?= 3
.PHONY: profile-t1
profile-t1: deps $(KERNEL)
	python3 tools/bench/insnprof.py --kernel $(KERNEL) --build $(BUILD) --sizes $(PROFILE_SIZES) --reps $(PROFILE_REPS)

# The same for the burst server's receive windows (R1 as receive work).
.PHONY: profile-r1
profile-r1: deps $(KERNEL)
	python3 tools/bench/insnprof.py --rx --kernel $(KERNEL) --build $(BUILD) --sizes $(PROFILE_SIZES) --reps $(PROFILE_REPS)

test-bochs: $(ISO) $(DISK)
	@tools/deps.sh bochs
	tests/bochs/smoke.sh $(ISO) 300 $(DISK)
	tests/qemu/e1000/bochs.sh $(KERNEL)

include tests/host/host.mk
include tools/linux-baseline/linux.mk

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
