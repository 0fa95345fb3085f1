#!/usr/bin/env bash
# make bench-failover: a verified stream over 2 and 4 paced links through a
# visible and a silent cut of one link, restored some seconds later (RI2N
# section 4.2): this kernel (tools/bench/failover.py) and Linux bonding and
# MPTCP beside it (tools/linux-baseline/bench-failover.sh, when present), on
# e1000 and virtio-net, then failover.json, failover.png and REPORT.md's
# link-failure section (tools/bench/failover_report.py).
# Both systems: the same backend (one QEMU dgram wire per link; a silent cut
# is the far NIC's set_link off), -icount shift=0 (busy ticks are guest
# instructions: the CPU work before, during and after the cut, both ends),
# the same run count, rounds interleaved (round r: this kernel's cells, then
# Linux's).
# Usage: tools/bench/failover.sh KERNEL RUNS OUTDIR
# RUNS: rounds (runs per system, NIC model, link count and cut).
# Environment: FAILOVER_LINKS (2,4), FAILOVER_NICS (e1000,virtio),
# FAILOVER_NIC_LINKS (per model, e.g. "virtio:4"; default FAILOVER_LINKS),
# FAILOVER_SYSTEMS (Linux's, bench-failover.sh --systems; default
# bond-rr,bond-ab,bond-ab-arp,bond-rr-arp,mptcp), FAILOVER_MBPS (per link,
# 20), FAILOVER_QUICK=1 (cut 4 s in, restored 4 s later, 3 s more; else 5,
# 10, 5), FAILOVER_ICOUNT (1; 0: the real clock, no CPU work), BENCH_PY,
# LB_BUILD.
# FAILOVER_UNPACED=1: the CPU-bound variant (issue 26): no NIC paced on
# either system (this kernel nic_mbps=0, Linux no tbf), under -icount
# shift=0 (FAILOVER_ICOUNT stays 1), into kernel-failover-unpaced.json and
# linux-failover-unpaced.json, merged in failover-unpaced.json and REPORT.md's
# unpaced sub-section of the link-failure section; FAILOVER_UNPACED_MBPS
# (MODEL:R,...; default failover.py's UNPACED_GUESS): the kernel stream's
# guessed total rate on the sender's clock, for its packet count.
# FAILOVER_CUTS (visible,silent): the kinds of cut, both systems. Unpaced,
# Linux's receiver waits 6 times the flow's length past its end (FO_GRACE_MS):
# its clock, idle, runs up to 4 times as fast as a busy sender's.
# FAILOVER_FIRST=R: go on from round R (the rounds before it already in
# OUTDIR, kept) to RUNS.
set -euo pipefail
kernel=$1 runs=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${BENCH_PY:-/usr/bin/python3}
guest=${LB_BUILD:-$root/build/linux-baseline}
linux=$root/tools/linux-baseline/bench-failover.sh
links=${FAILOVER_LINKS:-2,4} mbps=${FAILOVER_MBPS:-20} nics=${FAILOVER_NICS:-e1000,virtio}
nic_links=${FAILOVER_NIC_LINKS:-} cuts=${FAILOVER_CUTS:-visible,silent}
systems=${FAILOVER_SYSTEMS:-bond-rr,bond-ab,bond-ab-arp,bond-rr-arp,mptcp}
icount=${FAILOVER_ICOUNT:-1}
unpaced=${FAILOVER_UNPACED:-0} tag=failover
if [ "$unpaced" = 1 ]; then
	tag=failover-unpaced mbps=0 icount=1
fi
"$root/tools/deps.sh" build qemu bench cluster linux
[ -x "$linux" ] && "$root/tools/linux-baseline/build.sh" "$guest"
mkdir -p "$out"
first=${FAILOVER_FIRST:-1}
[ "$first" -gt 1 ] || rm -f "$out/kernel-$tag.json" "$out/linux-$tag.json"
if [ "${FAILOVER_QUICK:-0}" = 1 ]; then
	cut_at=4 down=4 tail=3
else
	cut_at=5 down=10 tail=5
fi
grace=3000
[ "$unpaced" = 1 ] && grace=$((6000 * (cut_at + down + tail)))
for r in $(seq "$first" "$runs"); do
	echo "bench-failover: [round $r/$runs] this kernel, reliable striped channel ($(date +%T))"
	"$py" "$root/tools/bench/failover.py" "$kernel" "$out" 1 --first-run "$r" $([ "$r" -gt 1 ] && echo --append) \
		--links "$links" --nics "$nics" ${nic_links:+--nic-links "$nic_links"} --mbps "$mbps" --cuts "$cuts" \
		$([ "${FAILOVER_QUICK:-0}" = 1 ] && echo --quick) \
		$([ "$icount" = 1 ] || echo --no-icount) \
		$([ "$unpaced" = 1 ] && echo --unpaced) ${FAILOVER_UNPACED_MBPS:+--unpaced-mbps "$FAILOVER_UNPACED_MBPS"}
	if [ -x "$linux" ]; then
		echo "bench-failover: [round $r/$runs] Linux bonding and MPTCP at $([ "$mbps" = 0 ] && echo "unpaced links" ||
			echo "$mbps Mbit/s a link") ($(date +%T))"
		LB_PREBUILT=1 LB_BUILD=$guest FO_MBPS=$mbps FO_GRACE_MS=$grace FO_RAW=$guest/raw/$tag FO_CUT_AT=$cut_at FO_DOWN=$down FO_TAIL=$tail \
			"$linux" --links "$links" --nics "$nics" ${nic_links:+--nic-links "$nic_links"} --runs 1 --cuts "$cuts" \
			--first-run "$r" $([ "$r" -gt 1 ] && echo --keep) --systems "$systems" \
			$([ "$icount" = 1 ] && echo --icount) "$out/linux-$tag.json"
	else
		echo "bench-failover: [round $r/$runs] no Linux failover benchmark in this tree: kernel rows only"
	fi
done
echo "bench-failover: merged results, plot, REPORT.md ($(date +%T))"
"$py" "$root/tools/bench/failover_report.py" "$out" $([ "$unpaced" = 1 ] && echo --unpaced)
