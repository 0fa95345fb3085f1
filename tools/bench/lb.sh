#!/usr/bin/env bash
# make bench-lb: balancing three senders over two NICs (Taniguchi et al.
# section 4.2, Table 2, scaled by 1/10 in volume and link rate): this
# kernel under rr, tlb and history (tools/bench/lb.py), Linux bonding
# balance-rr and balance-tlb beside it (tools/linux-baseline/bench-lb.sh,
# when present), then lb.json, lb.png and REPORT.md's balancing section
# (tools/bench/lb_report.py), and the load-balancing paper's Figure 4 beside
# it (tools/bench/papers_report.py).
# Usage: tools/bench/lb.sh KERNEL RUNS OUTDIR
# RUNS: this kernel's runs per policy (one boot pair per policy).
# Environment: LB_LINUX_RUNS (per Linux policy; default RUNS), LB_POLICIES
# (rr,tlb,history), LB_QUICK=1 (this kernel's timing / 5: a look, not the
# benchmark), LB_TOGETHER=1 (this kernel's part and Linux's run at the same
# time, 2 + 2 VMs: half the wall time; the senders are paced to 10 Mbit/s
# and mostly idle, and both systems share the same host load; recorded as
# host_setting in both parts' env and in the report), BENCH_PY, LB_BUILD.
set -euo pipefail
kernel=$1 runs=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${BENCH_PY:-/usr/bin/python3}
guest=${LB_BUILD:-$root/build/linux-baseline}
linux=$root/tools/linux-baseline/bench-lb.sh
"$root/tools/deps.sh" build qemu bench cluster linux
[ -x "$linux" ] && "$root/tools/linux-baseline/build.sh" "$guest"
mkdir -p "$out"
kernel_part() {
	echo "bench-lb: [1/3] this kernel: ${LB_POLICIES:-rr,tlb,history}, $runs run(s) each ($(date +%T))"
	"$py" "$root/tools/bench/lb.py" "$kernel" "$out" "$runs" --policies "${LB_POLICIES:-rr,tlb,history}" \
		${LB_QUICK:+--quick}
}
linux_part() {
	if [ -x "$linux" ]; then
		echo "bench-lb: [2/3] Linux bonding balance-rr and balance-tlb, ${LB_LINUX_RUNS:-$runs} run(s) each ($(date +%T))"
		LB_PREBUILT=1 LB_BUILD=$guest "$linux" --runs "${LB_LINUX_RUNS:-$runs}" --scale 10 --mbps 10 "$out/linux-lb.json"
	else
		echo "bench-lb: [2/3] no Linux balancing benchmark in this tree: kernel rows only"
	fi
}
rm -f "$out/linux-lb.json"
if [ -n "${LB_TOGETHER:-}" ]; then
	export BENCH_HOST_SETTING="this kernel's part and Linux's ran at the same time (2 + 2 VMs)${BENCH_HOST_SETTING:+; $BENCH_HOST_SETTING}"
	kernel_part &
	kpid=$!
	trap 'kill $kpid 2>/dev/null' EXIT
	linux_part || echo "bench-lb: the Linux part failed: kernel rows only"
	wait $kpid
	trap - EXIT
else
	export BENCH_HOST_SETTING="${BENCH_HOST_SETTING:-one part at a time}"
	kernel_part
	linux_part
fi
echo "bench-lb: [3/3] merged results, plot, REPORT.md ($(date +%T))"
"$py" "$root/tools/bench/lb_report.py" "$out"
"$py" "$root/tools/bench/papers_report.py" "$out"
