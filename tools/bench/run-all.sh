#!/usr/bin/env bash
# make bench (and make bench-smoke): every benchmark in one run, both systems
# side by side, then the merged JSON, the plots, REPORT.md and the check of
# every file against the format (docs/benchmarks.md).
#
# Both systems' VM pairs run in a private network namespace whose unix
# datagram queue is raised from the host default of 10 to 512: QEMU's dgram
# backend sends a batch from inside one doorbell write and falls back to a
# slow wake-up-driven path once 10 datagrams are queued, an artefact no real
# link has. The setting is recorded in the results (env.host_setting).
# Nothing can be fetched inside the namespace, so everything that needs the
# network (Debian packages, the Linux guest's kernel package) is done first.
#
# The emulated link's ceiling (tools/bench/kernelnet.py ceiling: the kernel's
# ceiling=tx/rx boot mode, which only feeds and drains the rings) is measured
# between the two systems' bursts; REPORT.md gives every burst as a fraction.
#
# The kernel's round trips and bursts are also measured in configurations
# that turn a fix off by a boot option (BENCH_VARIANTS, NAME=WORDS each;
# commas separate several words), for REPORT.md's cost of the fixes.
#
# Usage: tools/bench/run-all.sh KERNEL RUNS OUTDIR
# Environment: NIC (e1000, the default; virtio: QEMU's
# virtio-net-pci,disable-legacy=on; e1000e: QEMU's 82574L; in every VM of both systems), BENCH_SIZES (packet sizes, e.g. 64,8192; default all),
# BENCH_QUICK=1 (a few repetitions per size, for make bench-smoke; Linux's
# AF_PACKET only unless LB_VARIANTS names others, its round trips in its
# real-time burst pair: LB_RTT_IN_BURST),
# LB_VARIANTS (the Linux systems, default "packet mmap xdp tuned tuned-mmap
# dpdk", tools/linux-baseline/bench.sh; with dpdk, step 5
# also measures DPDK's txonly/rxonly ceiling),
# BENCH_VARIANTS (default "kernel-noscrub=rxscrub=0 kernel-spin=idlepoll=spin"),
# BENCH_PY (a Python that has Debian's python3-matplotlib; default
# /usr/bin/python3), LB_BUILD (the Linux guest's directory).
set -euo pipefail
kernel=$1 runs=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${BENCH_PY:-/usr/bin/python3}
guest=${LB_BUILD:-$root/build/linux-baseline}
nic=${NIC:-e1000}
case "$nic" in e1000 | virtio | e1000e) ;; *) echo "bench: NIC=$nic: e1000, virtio or e1000e" >&2; exit 2 ;; esac
export NIC=$nic LB_NIC=$nic
if [ -z "${BENCH_IN_NETNS:-}" ]; then
	"$root/tools/deps.sh" build qemu bench linux
	"$root/tools/linux-baseline/build.sh" "$guest"
	if [ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null; then
		exec env BENCH_IN_NETNS=1 unshare -n "$0" "$@"
	fi
fi
if [ -n "${BENCH_IN_NETNS:-}" ] && sysctl -qw net.unix.max_dgram_qlen=512; then
	export BENCH_HOST_SETTING="net.unix.max_dgram_qlen=512 (private network namespace; host default 10)"
else
	export BENCH_HOST_SETTING="host defaults (net.unix.max_dgram_qlen=$(cat /proc/sys/net/unix/max_dgram_qlen))"
fi
echo "bench: NIC $nic; $BENCH_HOST_SETTING"
sizes=()
[ -n "${BENCH_SIZES:-}" ] && sizes=(--sizes "$BENCH_SIZES") && export LB_SIZES=$BENCH_SIZES
quick=()
if [ -n "${BENCH_QUICK:-}" ]; then
	quick=(--quick)
	export LB_WARMUP=1 LB_ICOUNT_RUNS=1 LB_BUSY_RETRIES=0 LB_FAIL_RETRIES=0 LB_CPU_MS=200
	# make test's budget: PACKET_MMAP, AF_XDP and the tuned variants have
	# their smoke in test-linux-baseline-virtio (selftest.sh), DPDK in
	# test-linux-dpdk; the harness smoke keeps to AF_PACKET unless asked
	# (each further variant is one more real-time boot pair).
	export LB_VARIANTS=${LB_VARIANTS:-packet}
fi
variants=()
for v in ${BENCH_VARIANTS-kernel-noscrub=rxscrub=0 kernel-spin=idlepoll=spin}; do
	variants+=(--variant "$v")
done
lb() { # BENCH: the Linux guest pair, guest built above (no network here)
	local n=10
	[ "$1" = burst ] && n=3
	[ -n "${BENCH_QUICK:-}" ] && export LB_RUNS=$n
	LB_PREBUILT=1 LB_BUILD=$guest LB_BOOTS=$runs "$root/tools/linux-baseline/bench.sh" "$1" "$out"
}
mkdir -p "$out"
step() { echo "bench: [$1/9] $2 ($(date +%T))"; }
step 1 "exchange versus copy, in the kernel (no NIC involved)"
"$py" "$root/tools/bench/exchange.py" "$kernel" "$out" "$runs"
step 2 "round trips, this kernel (and its configurations)"
"$py" "$root/tools/bench/kernelnet.py" rtt "$kernel" "$out" "$runs" "${sizes[@]}" "${quick[@]}" \
	"${variants[@]}" --nic "$nic"
step 3 "round trips, Linux (AF_PACKET, PACKET_MMAP, AF_XDP, tuned sockets, DPDK)"
# A smoke takes them in its burst pairs, before the bursts (step 6).
if [ -n "${BENCH_QUICK:-}" ]; then echo "bench: in step 6's boot pairs"; else lb rtt; fi
step 4 "bursts, this kernel (and its configurations)"
"$py" "$root/tools/bench/kernelnet.py" burst "$kernel" "$out" "$runs" "${sizes[@]}" "${quick[@]}" \
	"${variants[@]}" --nic "$nic"
step 5 "the emulated link's ceiling (in-kernel ring feeder and drainer; DPDK txonly/rxonly)"
"$py" "$root/tools/bench/kernelnet.py" ceiling "$kernel" "$out" "$runs" "${sizes[@]}" "${quick[@]}" \
	--nic "$nic"
# DPDK's txonly sender into its rxonly receiver, beside it (linux-dpdk-ceiling.json).
case " ${LB_VARIANTS:-dpdk} " in *" dpdk "*) LB_CEIL_MS=${LB_CEIL_MS:-${BENCH_QUICK:+300}} lb ceiling ;; esac
step 6 "bursts, Linux (AF_PACKET, PACKET_MMAP, AF_XDP, tuned sockets, DPDK)"
LB_RTT_IN_BURST=${BENCH_QUICK:+1} lb burst
# R1 as receive work and the interleaved pairs take tens of minutes: a
# smoke leaves them to their own targets (bench-r1, bench-abab-smoke).
step 7 "R1 as receive work, every system, the same events (-icount)"
if [ -n "${BENCH_QUICK:-}" ]; then echo "bench: not in a smoke (make bench-r1)"; else
	"$py" "$root/tools/bench/r1.py" --kernel "$kernel" --guest "$guest" --nic "$nic" \
		--sizes "${BENCH_SIZES:-64,1500,8192}" --pairs "${R1_PAIRS:-1}" --out "$out/r1/$nic.json"
fi
step 8 "interleaved pairs: bursts and streams against DPDK, AF_XDP, AF_PACKET"
if [ -n "${BENCH_QUICK:-}" ]; then echo "bench: not in a smoke (make bench-abab-smoke)"; else
	"$py" "$root/tools/bench/abab.py" "$kernel" "$out/abab" --rounds "${ABAB_ROUNDS:-10}" \
		--max-rounds "${ABAB_MAX_ROUNDS:-0}" --sizes "${BENCH_SIZES:-64,1500,8192}" \
		--peers "${ABAB_PEERS:-packet,dpdk,xdp}" --budget-min "${ABAB_BUDGET_MIN:-0}" --nic "$nic"
fi
step 9 "merged results, plots, REPORT.md"
"$py" "$root/tools/bench/report.py" "$out"
"$py" "$root/tools/bench/peers_report.py" "$out"
"$py" "$root/tools/bench/papers_report.py" "$out"
if [ -d "$out/r1" ]; then "$py" "$root/tools/bench/r1_report.py" "$out"; fi
if [ -f "$out/abab/abab.json" ]; then "$py" "$root/tools/bench/abab_report.py" "$out/abab" "$out"; fi
"$py" "$root/tools/bench/check_schema.py" "$out"
