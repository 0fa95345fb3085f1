#!/usr/bin/env bash
# make bench-relay: direct, through one relay and through two (HXB section 5,
# Table 6): this kernel (tools/bench/relay.py: relays in the kernel's
# receive path) and Linux IP routers beside it
# (tools/linux-baseline/bench-relay.sh, when present), then relay.json,
# relay.png and REPORT.md's relaying section (tools/bench/relay_report.py).
# Usage: tools/bench/relay.sh KERNEL RUNS OUTDIR
# RUNS: this kernel's runs per hop count and link count.
# Environment: RELAY_HOPS (0,1,2: two relays boot 4 VMs at once, ask for it
# only on a host with nothing else running), RELAY_LINKS (1,2),
# RELAY_LINUX_RUNS (RUNS: the same run count for both systems, real-time
# and -icount boots alike), BENCH_HOST_SETTING (what else ran on the host, as
# the operator states it: recorded in both parts' env and the report),
# BENCH_PY, LB_BUILD.
set -euo pipefail
kernel=$1 runs=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${BENCH_PY:-/usr/bin/python3}
guest=${LB_BUILD:-$root/build/linux-baseline}
linux=$root/tools/linux-baseline/bench-relay.sh
hops=${RELAY_HOPS:-0,1,2} links=${RELAY_LINKS:-1,2}
"$root/tools/deps.sh" build qemu bench cluster
mkdir -p "$out"
echo "bench-relay: [1/3] this kernel, $hops relay(s), $links link(s) per hop ($(date +%T))"
"$py" "$root/tools/bench/relay.py" "$kernel" "$out" "$runs" --hops "$hops" --links "$links"
rm -f "$out/linux-relay.json"
if [ -x "$linux" ]; then
	echo "bench-relay: [2/3] Linux IP routers ($(date +%T))"
	LB_BUILD=$guest "$linux" --runs "${RELAY_LINUX_RUNS:-$runs}" --hops "$hops" --links "$links" \
		"$out/linux-relay.json" || echo "bench-relay: the Linux part failed: kernel rows only"
else
	echo "bench-relay: [2/3] no Linux relay benchmark in this tree: kernel rows only"
fi
echo "bench-relay: [3/3] merged results, plot, REPORT.md ($(date +%T))"
"$py" "$root/tools/bench/relay_report.py" "$out"
