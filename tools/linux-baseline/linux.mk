# Linux baseline (tools/linux-baseline): a Debian kernel + busybox guest that
# runs the same benchmarks over AF_PACKET and PACKET_MMAP on the same emulated
# e1000 and QEMU backend.  Included by the top-level Makefile; paths are
# relative to the repository root.
#
#   make linux-baseline        build the guest (cached; rebuilt when inputs change)
#   make bench-linux-rtt       bench/results/linux-rtt.json   (~1.5 min idle host, TCG)
#   make bench-linux-burst     bench/results/linux-burst.json (~3 min idle host, TCG)
#   make bench-linux           both
#   make test-linux-baseline   short end-to-end check, every variant, rtt and
#                              burst in one boot pair (~30 s)
#   make test-linux-baseline-virtio  the same on virtio-net (NIC=virtio)
#   make test-linux-dpdk       the DPDK peer (dpdkbench, initrd-dpdk.gz) against
#                              pktbench both ways on the e1000, the roles swapped
#                              in one boot pair: rtt and bursts, every byte
#                              verified, then the striped windowed stream
#                              over 4 links (~50 s)
#   make test-linux-bond       two guests over two links, one boot pair:
#                              balance-rr TCP stream and raw bursts over bond0,
#                              then bond0 in active-backup with link 0 cut
#                              mid-stream (~50 s)
#   make bench-linux-multilink bench/results/linux-multilink.json: balance-rr TCP,
#                              raw bursts over the bond and MPTCP over 1-4 paced
#                              links (~25 min idle host; ML_* tunables, see
#                              tools/linux-baseline/bench-multilink.sh)
#   make bench-linux-failover  bench/results/linux-failover.json: bonding (rr, ab,
#                              miimon or ARP) and MPTCP through a cut and restored
#                              link (FO_LINKS=2,4 FO_RUNS=N; 10 runs per link count
#                              and run number, ~40 s each, ~2.5 min for a system
#                              that makes no connection: about 12 min for 2 links)
#   make test-linux-failover   one short run: MPTCP over 2 links, a visible cut,
#                              every byte delivered and verified (~45 s)
#   make test-linux-nfs        NFSv4.2 between two guests: 4 MiB written, read
#                              back after write and after a remount, verified (~45 s)
#   make bench-linux-fs        bench/results/linux-fs.json: Linux NFS (v3, v4.2;
#                              rsize 32 KiB, 1 MiB; noac or not) over 1 and 2
#                              links, SRFS's four patterns, a read through a cut
#                              (FS_RUNS=1 FS_LINKS=1,2 FS_MBPS=100 FS_SIZES=...)
#   make bench-linux-lb        bench/results/linux-lb.json: three senders over
#                              bonding balance-rr and balance-tlb (LBL_RUNS=20 per
#                              policy, LBL_SCALE=10; 65-77 s a run: ~50 min)
#   make test-linux-lb         one run per policy, every byte verified (~2.5 min;
#                              not part of make test)
#   make bench-linux-relay     bench/results/linux-relay.json: Linux guests in a
#                              line, the middle ones IP routers; TCP, UDP bursts
#                              and round trips at 0-2 hops, 1-2 links, routers'
#                              instructions per forwarded packet (RELAY_HOPS=0,1
#                              RELAY_LINKS=1,2 RELAY_RUNS=1; hops 2 boots 4 VMs)
#   make test-linux-relay      the relay self-check: one router under -icount,
#                              8192 bytes, verified (~1.5-2.5 min)
#   make bench-smp-linux       bench/results/linux-smp.json: munmap and mremap of
#                              pages a thread on the same or the other CPU touched
#                              (TLB shootdowns), batched and not, and a cold memcpy,
#                              in one guest of SMP_CPUS vCPUs (default 2); real time
#                              and instructions (insnplugin.so), SMP_RUNS boots of
#                              each (default 3; ~10 min); SMP_CPUS=4 adds the
#                              all-cpus layout, into linux-smp-4.json
#   make bench-smp-linux-rx    bench/results/linux-smp-rx.json: AF_PACKET bursts from
#                              the host (hostburst.py) into one -smp 2 guest, the
#                              receiver on the NIC interrupt's CPU or the other:
#                              Mbit/s and R1 (SMP_RUNS boots of each; ~8 min)
#   make test-linux-smp        the smoke of it: one -smp 2 guest, 2 sizes (~20 s;
#                              also part of test-linux-baseline)
# Tunables: LINUX_RESULTS (output directory), and LB_SIZES, LB_BOOTS, LB_RUNS,
# LB_WARMUP, LB_ICOUNT_RUNS, LB_MAX_OTHER in the environment (see
# tools/linux-baseline/bench.sh).

BUILD ?= build
LINUX_BASELINE_SRC := tools/linux-baseline
LINUX_BASELINE_OUT := $(BUILD)/linux-baseline
NIC ?= e1000
LINUX_RESULTS ?= bench/results$(if $(filter-out e1000,$(NIC)),/$(NIC))

.PHONY: linux-baseline bench-linux bench-linux-rtt bench-linux-burst test-linux-baseline \
	test-linux-baseline-virtio test-linux-dpdk test-linux-bond bench-linux-multilink bench-linux-failover \
	test-linux-failover test-linux-nfs bench-linux-fs bench-linux-lb test-linux-lb \
	bench-linux-relay test-linux-relay bench-smp-linux bench-smp-linux-rx test-linux-smp

linux-baseline:
	$(LINUX_BASELINE_SRC)/build.sh $(LINUX_BASELINE_OUT)

bench-linux: bench-linux-rtt bench-linux-burst

bench-linux-rtt: linux-baseline
	LB_NIC=$(NIC) LB_BUILD=$(LINUX_BASELINE_OUT) $(LINUX_BASELINE_SRC)/bench.sh rtt $(LINUX_RESULTS)

bench-linux-burst: linux-baseline
	LB_NIC=$(NIC) LB_BUILD=$(LINUX_BASELINE_OUT) $(LINUX_BASELINE_SRC)/bench.sh burst $(LINUX_RESULTS)

# The self-tests use the guest the linux-baseline target (once per make run)
# has just checked or built.
test-linux-baseline: linux-baseline
	LB_PREBUILT=1 $(LINUX_BASELINE_SRC)/selftest.sh $(LINUX_BASELINE_OUT)

test-linux-baseline-virtio: linux-baseline
	LB_PREBUILT=1 NIC=virtio $(LINUX_BASELINE_SRC)/selftest.sh $(LINUX_BASELINE_OUT)

test-linux-dpdk: linux-baseline
	LB_PREBUILT=1 $(LINUX_BASELINE_SRC)/selftest-dpdk.sh $(LINUX_BASELINE_OUT)

test-linux-bond: linux-baseline
	LB_PREBUILT=1 $(LINUX_BASELINE_SRC)/selftest-bond.sh $(LINUX_BASELINE_OUT)

bench-linux-multilink: linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) $(LINUX_BASELINE_SRC)/bench-multilink.sh $(LINUX_RESULTS)

FO_LINKS ?= 2
FO_RUNS ?= 1

bench-linux-failover: linux-baseline
	LB_NIC=$(NIC) LB_BUILD=$(LINUX_BASELINE_OUT) $(LINUX_BASELINE_SRC)/bench-failover.sh \
		--links $(FO_LINKS) --runs $(FO_RUNS) $(LINUX_RESULTS)/linux-failover.json

test-linux-failover:
	$(LINUX_BASELINE_SRC)/selftest-failover.sh $(LINUX_BASELINE_OUT)

FS_RUNS ?= 1
FS_LINKS ?= 1,2
FS_MBPS ?= 100
FS_SIZES ?= 1,2,4,8,16,32

test-linux-nfs:
	$(LINUX_BASELINE_SRC)/selftest-nfs.sh $(LINUX_BASELINE_OUT)

bench-linux-fs: linux-baseline
	LB_NIC=$(NIC) LB_BUILD=$(LINUX_BASELINE_OUT) $(LINUX_BASELINE_SRC)/bench-fs.sh --runs $(FS_RUNS) \
		--links $(FS_LINKS) --mbps $(FS_MBPS) --sizes $(FS_SIZES) $(LINUX_RESULTS)/linux-fs.json

LBL_RUNS ?= 20
LBL_SCALE ?= 10

bench-linux-lb: linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) $(LINUX_BASELINE_SRC)/bench-lb.sh --runs $(LBL_RUNS) --scale $(LBL_SCALE) \
		$(LINUX_RESULTS)/linux-lb.json

test-linux-lb: linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) $(LINUX_BASELINE_SRC)/bench-lb.sh --quick --check $(BUILD)/linux-lb-quick.json

RELAY_HOPS ?= 0,1
RELAY_LINKS ?= 1,2
RELAY_RUNS ?= 1

bench-linux-relay: linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) $(LINUX_BASELINE_SRC)/bench-relay.sh --runs $(RELAY_RUNS) \
		--hops $(RELAY_HOPS) --links $(RELAY_LINKS) $(LINUX_RESULTS)/linux-relay.json

test-linux-relay: linux-baseline
	LB_BUILD=$(LINUX_BASELINE_OUT) $(LINUX_BASELINE_SRC)/bench-relay.sh --quick $(BUILD)/linux-relay-quick.json

SMP_RUNS ?= 3
SMP_CPUS ?= 2

bench-smp-linux: linux-baseline
	LB_PREBUILT=1 LB_BUILD=$(LINUX_BASELINE_OUT) $(LINUX_BASELINE_SRC)/bench-smp.sh --runs $(SMP_RUNS) \
		--smp $(SMP_CPUS) $(LINUX_RESULTS)/linux-smp$(if $(filter-out 2,$(SMP_CPUS)),-$(SMP_CPUS)).json

bench-smp-linux-rx: linux-baseline
	LB_PREBUILT=1 LB_BUILD=$(LINUX_BASELINE_OUT) $(LINUX_BASELINE_SRC)/bench-rxcpu.sh --runs $(SMP_RUNS) \
		--smp $(SMP_CPUS) $(LINUX_RESULTS)/linux-smp-rx.json

test-linux-smp: linux-baseline
	LB_PREBUILT=1 $(LINUX_BASELINE_SRC)/smoke-smp.sh $(LINUX_BASELINE_OUT)
