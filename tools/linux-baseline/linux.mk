# Linux baseline (tools/linux-baseline): a Debian kernel + busybox guest that
# runs the same benchmarks over AF_PACKET and PACKET_MMAP on the same emulated
# e1000 and QEMU backend.  Included by the top-level Makefile; paths are
# relative to the repository root.
#
#   make linux-baseline        build the guest (cached; rebuilt when inputs change)
#   make bench-linux-rtt       bench/results/linux-rtt.json   (~1.5 min idle host, TCG)
#   make bench-linux-burst     bench/results/linux-burst.json (~3 min idle host, TCG)
#   make bench-linux           both
#   make test-linux-baseline   short end-to-end check, both variants (~35 s)
#   make test-linux-baseline-virtio  the same on virtio-net (NIC=virtio)
#   make test-linux-bond       two guests over two links: balance-rr TCP stream
#                              and raw bursts over bond0, active-backup with link
#                              0 cut mid-stream (~70 s)
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
# Tunables: LINUX_RESULTS (output directory), and LB_SIZES, LB_BOOTS, LB_RUNS,
# LB_WARMUP, LB_ICOUNT_RUNS, LB_MAX_OTHER in the environment (see
# tools/linux-baseline/bench.sh).

BUILD ?= build
LINUX_BASELINE_SRC := tools/linux-baseline
LINUX_BASELINE_OUT := $(BUILD)/linux-baseline
NIC ?= e1000
LINUX_RESULTS ?= bench/results$(if $(filter-out e1000,$(NIC)),/$(NIC))

.PHONY: linux-baseline bench-linux bench-linux-rtt bench-linux-burst test-linux-baseline \
	test-linux-baseline-virtio test-linux-bond bench-linux-multilink bench-linux-failover \
	test-linux-failover

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
