#!/usr/bin/env bash
# bench-failover.sh [--links 2,4] [--runs N] [--systems S,...] [--cuts visible,silent] OUT.json
#
# Linux beside the kernel's link-failure benchmark: per run, link count,
# system and cut, one boot pair (run-failover.py): a verified TCP (or MPTCP)
# flow over paced links, link 0 cut FO_CUT_AT s after the flow starts,
# restored FO_DOWN s later, FO_TAIL s more of flow.  Writes OUT.json
# ({"bench":"failover","env":{...},"rows":[...]}, one row per run, fields in
# collect-failover.py) and keeps every run's console logs in
# $LB_BUILD/raw/failover/.
#   systems  bond-rr      balance-rr, miimon 100 ms        -> linux-bond-rr-tcp
#            bond-ab      active-backup, miimon 100 ms     -> linux-bond-ab-tcp
#            bond-ab-arp  active-backup, ARP every 100 ms  -> linux-bond-ab-arp-tcp
#            bond-rr-arp  balance-rr, ARP every 100 ms     -> linux-bond-rr-arp-tcp
#            mptcp        MPTCP, one subflow per link      -> linux-mptcp
#   cuts     visible (the sender's NIC 0 loses its link), silent (the
#            receiver's NIC 0 does: the sender's NIC keeps its carrier)
# Tunables (env): FO_MBPS (100, tbf rate of every NIC), FO_SIZE (8192, the
# sender's write size), FO_CUT_AT (5), FO_DOWN (10), FO_TAIL (5) in seconds,
# LB_NIC (e1000), LB_BUILD, LB_PREBUILT=1 (as bench.sh), FO_RAW (where the
# runs' logs go, emptied first; default $LB_BUILD/raw/failover).  Each run takes
# about 40 s (boot, 20 s of flow, power-off); a run that fails (not a
# stalled flow nor a connection the system cannot make: those are results)
# is tried once more.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

LINKS_LIST=2 RUNS=1 SYSTEMS=bond-rr,bond-ab,bond-ab-arp,bond-rr-arp,mptcp CUTS=visible,silent OUT=
while [ $# -gt 0 ]; do
	case "$1" in
	--links) LINKS_LIST=$2; shift ;;
	--runs) RUNS=$2; shift ;;
	--systems) SYSTEMS=$2; shift ;;
	--cuts) CUTS=$2; shift ;;
	-*) lb_usage ;;
	*) [ -z "$OUT" ] || lb_usage; OUT=$1 ;;
	esac
	shift
done
[ -n "$OUT" ] || lb_usage
lb_check_runs "$RUNS"
for l in $(echo "$LINKS_LIST" | tr , ' '); do
	case "$l" in 2 | 3 | 4) ;; *) lb_die "--links $LINKS_LIST: 2 to 4 each" ;; esac
done
for s in $(echo "$SYSTEMS" | tr , ' '); do
	case "$s" in bond-rr | bond-ab | bond-ab-arp | bond-rr-arp | mptcp) ;; *) lb_die "unknown system $s" ;; esac
done
for c in $(echo "$CUTS" | tr , ' '); do
	case "$c" in visible | silent) ;; *) lb_die "unknown cut $c" ;; esac
done

GUEST=${LB_BUILD:-$ROOT/build/linux-baseline}
NIC=${LB_NIC:-${NIC:-e1000}}
MBPS=${FO_MBPS:-100} SIZE=${FO_SIZE:-8192}
CUT_AT=${FO_CUT_AT:-5} DOWN=${FO_DOWN:-10} TAIL=${FO_TAIL:-5}
lb_progress_start linux-failover

lb_bench_guest qemu-system-x86 python3
RAW=${FO_RAW:-$GUEST/raw/failover}
lb_fresh_raw "$RAW" "$OUT"

n=0
total=$((RUNS * $(echo "$LINKS_LIST" | tr , '\n' | grep -c .) * $(echo "$SYSTEMS" | tr , '\n' | grep -c .) *
	$(echo "$CUTS" | tr , '\n' | grep -c .)))
for run in $(seq 1 "$RUNS"); do
	for links in $(echo "$LINKS_LIST" | tr , ' '); do
		for sys in $(echo "$SYSTEMS" | tr , ' '); do
			for cut in $(echo "$CUTS" | tr , ' '); do
				n=$((n + 1))
				dir="$RAW/$sys-$links-$cut-$run"
				for try in 1 2; do
					progress "$n/$total: $sys, $links links, $cut cut, run $run (try $try)"
					rm -rf "$dir"
					rc=0
					"$HERE/run-failover.py" --system "$sys" --cut "$cut" --links "$links" --run "$run" \
						--mbps "$MBPS" --size "$SIZE" --cut-at "$CUT_AT" --down "$DOWN" --tail "$TAIL" \
						--guest "$GUEST" --nic "$NIC" --logdir "$dir" || rc=$?
					# 3: no connection at all, the system's own result.
					[ $rc = 0 ] || [ $rc = 3 ] && break
				done
			done
		done
	done
done

# shellcheck disable=SC1091
. "$GUEST/guest.env"
CPU=$(sed -n 's/^model name[[:space:]]*: //p;T;q' /proc/cpuinfo)
python3 "$HERE/collect-failover.py" --out "$OUT" \
	--env accel=tcg --env clock=real --env "qemu=$(lb_qemu_version)" --env "nic=$NIC" \
	--env backend=dgram-unix-per-link --env "cpu=$CPU" --env "runs=$RUNS" \
	--env "per_link_mbps_paced=$MBPS" --env mtu=9000 --env "write_bytes=$SIZE" \
	--env "pacing=tbf on every NIC of both guests (burst 4 ms of the rate + two jumbo frames, as the kernel pacer; limit 4 MiB)" \
	--env "timeline=cut ${CUT_AT} s after the receiver's FLOWSTART, restore ${DOWN} s later, sending ends ${TAIL} s after the restore" \
	--env "cut_visible=QMP set_link off on the sender's NIC 0 (its carrier drops; the receiver's NIC 0 stays up)" \
	--env "cut_silent=QMP set_link off on the receiver's NIC 0 (frames die both ways; the sender's NIC 0 keeps its carrier)" \
	--env "timestamps=host CLOCK_MONOTONIC stamps of every console line and QMP command, mapped onto the receiver's clock by the smallest (stamp - guest time) over its 100 ms FLOWBIN lines" \
	--env "bonding=bonding.ko: miimon 100 ms, or arp_interval 100 ms with arp_ip_target the peer; active-backup with primary eth0 on both guests; no updelay/downdelay; e1000 link changes reach the driver through its 2 s watchdog" \
	--env "guest=Linux $KERNEL_RELEASE ($KERNEL_PKG $KERNEL_VER), busybox initramfs, 256 MiB, -cpu max" \
	"$RAW"/*/
progress "wrote $OUT"
