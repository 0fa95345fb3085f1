#!/usr/bin/env bash
# make bench-relay: direct, through one relay and through two (HXB section 5,
# Table 6): this kernel (tools/bench/relay.py: relays in the kernel's
# receive path) and Linux IP routers beside it
# (tools/linux-baseline/bench-relay.sh, when present), then relay.json,
# relay.png and REPORT.md's relaying section (tools/bench/relay_report.py).
# Usage: tools/bench/relay.sh KERNEL RUNS OUTDIR
# RUNS: runs per hop count and link count, the same for both systems, in
# interleaved rounds (round r: one run of this kernel's, then one of Linux's).
# Environment: RELAY_HOPS (0,1,2: two relays boot 4 VMs at once, ask for it
# only on a host with nothing else running), RELAY_LINKS (1,2),
# BENCH_HOST_SETTING (what else ran on the host, as
# the operator states it: recorded in both parts' env and the report),
# BENCH_PY, LB_BUILD.
# Then the CPU work (the figure the host cannot decide): one relay under
# -icount shift=0, the client's NICs paced (the same offered load for both
# systems), one kernel run then one Linux boot round, RELAY_CPU_RUNS (RUNS)
# times (interleaved): relay.py --cpu, bench-relay.sh --cpu-boot.
# RELAY_CPU_MBPS (25, offered per link), RELAY_CPU_PACKETS (2048 a stream),
# RELAY_CPU_ONLY=1 (only this part and the two below: kernel-relay.json and
# linux-relay.json in OUTDIR stay as they are).
# Then the throughput with the host's injector as the client (relay.py
# --inject: at most 2 VMs at a time, both systems), RELAY_INJECT_RUNS (RUNS;
# 0: none), and where the kernel relay's instructions go (relay_profile.py,
# RELAY_PROFILE=0 leaves it out).
set -euo pipefail
kernel=$1 runs=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${BENCH_PY:-/usr/bin/python3}
guest=${LB_BUILD:-$root/build/linux-baseline}
linux=$root/tools/linux-baseline/bench-relay.sh
hops=${RELAY_HOPS:-0,1,2} links=${RELAY_LINKS:-1,2}
"$root/tools/deps.sh" build qemu bench cluster
mkdir -p "$out"
cpu_runs=${RELAY_CPU_RUNS:-$runs} cpu_mbps=${RELAY_CPU_MBPS:-25} cpu_packets=${RELAY_CPU_PACKETS:-2048}
# cpu_work: the interleaved CPU-work runs of both systems.
cpu_work() {
	local r
	rm -f "$out/linux-relay-cpu.json"
	for r in $(seq 1 "$cpu_runs"); do
		echo "bench-relay: [cpu $r/$cpu_runs] this kernel's relay under -icount ($(date +%T))"
		"$py" "$root/tools/bench/relay.py" "$kernel" "$out" 1 --cpu $([ "$r" = 1 ] && echo --cpu-first) \
			--links "$links" --cpu-mbps "$cpu_mbps" --cpu-packets "$cpu_packets"
		[ -x "$linux" ] || continue
		echo "bench-relay: [cpu $r/$cpu_runs] a Linux router under -icount ($(date +%T))"
		LB_BUILD=$guest "$linux" --cpu-boot "$r" --links "$links" --mbps "$cpu_mbps" --packets "$cpu_packets" \
			"$out/linux-relay-cpu.json" || echo "bench-relay: the Linux CPU-work boot $r failed"
	done
}
# more_work: the injector's throughput and the relay's profile.
more_work() {
	local ir=${RELAY_INJECT_RUNS:-$runs}
	if [ "$ir" != 0 ]; then
		echo "bench-relay: the injector as the client, $ir run(s) ($(date +%T))"
		"$py" "$root/tools/bench/relay.py" "$kernel" "$out" "$ir" --inject \
			$([ -x "$linux" ] && echo --lb-guest "$guest") || echo "bench-relay: the injector runs failed"
	fi
	if [ "${RELAY_PROFILE:-1}" = 1 ]; then
		echo "bench-relay: where the relay's instructions go ($(date +%T))"
		"$py" "$root/tools/bench/relay_profile.py" "$kernel" "$out" --mbps "$cpu_mbps" --packets "$cpu_packets" ||
			echo "bench-relay: the profile failed"
	fi
}
if [ "${RELAY_CPU_ONLY:-0}" = 1 ]; then
	[ "$cpu_runs" = 0 ] || cpu_work # RELAY_CPU_RUNS=0: the injector and the profile alone
	more_work
	echo "bench-relay: merged results, plot, REPORT.md ($(date +%T))"
	exec "$py" "$root/tools/bench/relay_report.py" "$out"
fi
# The throughput rows: interleaved rounds, one kernel run then one Linux
# run (every boot of both on dgram wires, one per link and hop), RUNS of each.
[ -x "$linux" ] || echo "bench-relay: no Linux relay benchmark in this tree: kernel rows only"
rm -f "$out/linux-relay.json"
for r in $(seq 1 "$runs"); do
	echo "bench-relay: [round $r/$runs] this kernel, $hops relay(s), $links link(s) per hop ($(date +%T))"
	"$py" "$root/tools/bench/relay.py" "$kernel" "$out" 1 --hops "$hops" --links "$links" --first-run "$r" \
		$([ "$r" -gt 1 ] && echo --append)
	[ -x "$linux" ] || continue
	echo "bench-relay: [round $r/$runs] Linux IP routers ($(date +%T))"
	LB_BUILD=$guest "$linux" --runs 1 --first-run "$r" --logdir "$guest/raw/relay" --hops "$hops" --links "$links" \
		"$out/linux-relay.json" || echo "bench-relay: the Linux part failed in round $r"
done
[ "$cpu_runs" = 0 ] || cpu_work
more_work
echo "bench-relay: merged results, plot, REPORT.md ($(date +%T))"
"$py" "$root/tools/bench/relay_report.py" "$out"
