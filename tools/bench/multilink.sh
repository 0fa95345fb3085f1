#!/usr/bin/env bash
# make bench-multilink: striped streams over 1-4 paced links (and 6, 8), this kernel
# (tools/bench/multilink.py) and Linux bonding beside it
# (tools/linux-baseline/bench-multilink.sh, when present), then
# multilink.json, multilink.png and REPORT.md's multi-link section
# (tools/bench/multilink_report.py). Like run-all.sh, the VM pairs run in a
# private network namespace with net.unix.max_dgram_qlen=512; everything
# that needs the network is done first.
# Linux gets the kernel's run count (one measured connection a size per boot
# round, RUNS rounds) and stream length (MULTILINK_SECONDS of the paced rate).
# Then the CPU work (the figure that can tell the systems apart): every pair
# of both systems under -icount shift=0, busy instructions per packet at
# both ends, at a fixed offered load and unpaced (multilink.py --cpu;
# bench-multilink.sh ML_CPU_ONLY=1), one kernel run then one Linux boot
# round, MULTILINK_CPU_RUNS times (interleaved).
# Usage: tools/bench/multilink.sh KERNEL RUNS OUTDIR
# Environment: MULTILINK_LINKS (1,2,3,4), MULTILINK_WIDE_LINKS (6,8: this
# kernel alone, after the others, at their rate a link; empty: none),
# MULTILINK_SIZES (1500,4096,8192),
# MULTILINK_MBPS (the per-link rate; default: a fifth of one unpaced link),
# MULTILINK_SECONDS (per point, 2), BENCH_PY, LB_BUILD; CPU work:
# MULTILINK_CPU_RUNS (RUNS; 0: none), MULTILINK_CPU_LINKS (1,2,3,4),
# MULTILINK_CPU_SIZES (1500,8192), MULTILINK_CPU_MBPS (offered, per link,
# 25), MULTILINK_CPU_SECONDS (2, a paced stream), MULTILINK_CPU_BYTES
# (8388608, an unpaced stream), MULTILINK_CPU_ONLY=1 (skip the paced
# streams: their JSON in OUTDIR stays as it is), MULTILINK_POLL (irq, the
# default: the kernel's -icount pairs wait mid-batch for the NIC's
# interrupt, kernel/net/demux.c's poll=irq, as Linux's receiver does;
# timer: they poll on a 20 us tick).
set -euo pipefail
kernel=$1 runs=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${BENCH_PY:-/usr/bin/python3}
guest=${LB_BUILD:-$root/build/linux-baseline}
linux=$root/tools/linux-baseline/bench-multilink.sh
if [ -z "${BENCH_IN_NETNS:-}" ]; then
	"$root/tools/deps.sh" build qemu bench linux
	[ -x "$linux" ] && "$root/tools/linux-baseline/build.sh" "$guest"
	if [ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null; then
		exec env BENCH_IN_NETNS=1 unshare -n "$0" "$@"
	fi
fi
if [ -n "${BENCH_IN_NETNS:-}" ] && sysctl -qw net.unix.max_dgram_qlen=512; then
	export BENCH_HOST_SETTING="net.unix.max_dgram_qlen=512 (private network namespace; host default 10)"
fi
mkdir -p "$out"
links=${MULTILINK_LINKS:-1,2,3,4} sizes=${MULTILINK_SIZES:-1500,4096,8192}
cpu_runs=${MULTILINK_CPU_RUNS:-$runs} cpu_links=${MULTILINK_CPU_LINKS:-1,2,3,4}
cpu_sizes=${MULTILINK_CPU_SIZES:-1500,8192} cpu_mbps=${MULTILINK_CPU_MBPS:-25}
cpu_seconds=${MULTILINK_CPU_SECONDS:-2} cpu_bytes=${MULTILINK_CPU_BYTES:-8388608}
# cpu_work: the interleaved CPU-work runs of both systems.
cpu_work() {
	local r
	for r in $(seq 1 "$cpu_runs"); do
		echo "bench-multilink: [cpu $r/$cpu_runs] this kernel under -icount ($(date +%T))"
		"$py" "$root/tools/bench/multilink.py" "$kernel" "$out" 1 --cpu $([ "$r" = 1 ] && echo --cpu-first) \
			--links "$cpu_links" --sizes "$cpu_sizes" --cpu-mbps "$cpu_mbps" --cpu-seconds "$cpu_seconds" \
			--cpu-bytes "$cpu_bytes"
		[ -x "$linux" ] || continue
		echo "bench-multilink: [cpu $r/$cpu_runs] Linux under -icount ($(date +%T))"
		LB_PREBUILT=1 LB_BUILD=$guest ML_CPU_ONLY=1 ML_CPU_BOOT=$r ML_CPU_LINKS=$cpu_links \
			ML_CPU_SIZES=$cpu_sizes ML_CPU_MBPS=$cpu_mbps ML_CPU_SECONDS=$cpu_seconds ML_CPU_BYTES=$cpu_bytes \
			"$linux" "$out"
	done
}
if [ "${MULTILINK_CPU_ONLY:-0}" = 1 ]; then
	rm -f "$out/linux-multilink-cpu.json"
	cpu_work
	echo "bench-multilink: merged results, plot, REPORT.md ($(date +%T))"
	"$py" "$root/tools/bench/multilink_report.py" "$out"
	exec "$py" "$root/tools/bench/papers_report.py" "$out"
fi
echo "bench-multilink: [1/3] this kernel, striped ($(date +%T))"
"$py" "$root/tools/bench/multilink.py" "$kernel" "$out" "$runs" --links "$links" --sizes "$sizes" \
	--seconds "${MULTILINK_SECONDS:-2}" ${MULTILINK_MBPS:+--mbps "$MULTILINK_MBPS"}
# HXB's Table 4 goes to 6 and 8 links: this kernel alone, at the same rate
# a link (Linux's part, run-links.sh, drives at most 4 NICs a guest).
wide=${MULTILINK_WIDE_LINKS:-6,8}
if [ -n "$wide" ]; then
	rate=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["link_mbps"])' "$out/kernel-multilink.json")
	echo "bench-multilink: [1/3] this kernel over $wide links at $rate Mbit/s a link ($(date +%T))"
	"$py" "$root/tools/bench/multilink.py" "$kernel" "$out" "$runs" --links "$wide" --sizes "$sizes" \
		--seconds "${MULTILINK_SECONDS:-2}" --mbps "$rate" --merge
fi
rm -f "$out/linux-multilink.json"
if [ -x "$linux" ]; then
	rate=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["link_mbps"])' "$out/kernel-multilink.json")
	echo "bench-multilink: [2/3] Linux bonding at $rate Mbit/s a link ($(date +%T))"
	LB_PREBUILT=1 LB_BUILD=$guest ML_BOOTS=$runs ML_RUNS=1 ML_SECONDS=${MULTILINK_SECONDS:-2} \
		ML_LINKS=$links ML_SIZES=$sizes ML_MBPS=$rate \
		"$linux" "$out"
else
	echo "bench-multilink: [2/3] no Linux multi-link benchmark in this tree: kernel rows only"
fi
rm -f "$out/kernel-multilink-cpu.json" "$out/linux-multilink-cpu.json"
[ "$cpu_runs" = 0 ] || cpu_work
echo "bench-multilink: [3/3] merged results, plot, REPORT.md ($(date +%T))"
"$py" "$root/tools/bench/multilink_report.py" "$out"
"$py" "$root/tools/bench/papers_report.py" "$out"
