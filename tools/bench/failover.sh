#!/usr/bin/env bash
# make bench-failover: a verified stream over 2 and 4 paced links through a
# visible and a silent cut of one link, restored 10 s later (RI2N section
# 4.2): this kernel (tools/bench/failover.py) and Linux bonding and MPTCP
# beside it (tools/linux-baseline/bench-failover.sh, when present), then
# failover.json, failover.png and REPORT.md's link-failure section
# (tools/bench/failover_report.py).
# Usage: tools/bench/failover.sh KERNEL RUNS OUTDIR
# RUNS: this kernel's runs per link count and cut (and of the idle cut).
# Environment: FAILOVER_LINUX_RUNS (1, per Linux system, link count and cut),
# FAILOVER_LINKS (2,4), FAILOVER_MBPS (per link, 20),
# FAILOVER_QUICK=1 (shorter timeline), BENCH_PY, LB_BUILD.
set -euo pipefail
kernel=$1 runs=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${BENCH_PY:-/usr/bin/python3}
guest=${LB_BUILD:-$root/build/linux-baseline}
linux=$root/tools/linux-baseline/bench-failover.sh
links=${FAILOVER_LINKS:-2,4} mbps=${FAILOVER_MBPS:-20}
"$root/tools/deps.sh" build qemu bench cluster linux
[ -x "$linux" ] && "$root/tools/linux-baseline/build.sh" "$guest"
mkdir -p "$out"
echo "bench-failover: [1/3] this kernel, reliable striped channel ($(date +%T))"
"$py" "$root/tools/bench/failover.py" "$kernel" "$out" "$runs" --links "$links" --mbps "$mbps" \
	${FAILOVER_QUICK:+--quick}
rm -f "$out/linux-failover.json"
if [ -x "$linux" ]; then
	echo "bench-failover: [2/3] Linux bonding and MPTCP at $mbps Mbit/s a link ($(date +%T))"
	LB_PREBUILT=1 LB_BUILD=$guest FO_MBPS=$mbps "$linux" --links "$links" --runs "${FAILOVER_LINUX_RUNS:-1}" \
		"$out/linux-failover.json"
else
	echo "bench-failover: [2/3] no Linux failover benchmark in this tree: kernel rows only"
fi
echo "bench-failover: [3/3] merged results, plot, REPORT.md ($(date +%T))"
"$py" "$root/tools/bench/failover_report.py" "$out"
