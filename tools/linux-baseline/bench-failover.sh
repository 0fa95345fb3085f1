#!/usr/bin/env bash
# bench-failover.sh [--links 2,4] [--runs N] [--systems S,...] [--cuts visible,silent]
#                   [--nics e1000,virtio] [--nic-links MODEL:L,L;...] [--first-run R] [--keep]
#                   [--icount] OUT.json
#
# Linux beside the kernel's link-failure benchmark: per run, NIC model, link
# count, system and cut, one boot pair (run-failover.py): a verified TCP (or
# MPTCP) flow over paced links, link 0 cut FO_CUT_AT s after the flow
# starts, restored FO_DOWN s later, FO_TAIL s more of flow (the cut and
# restore on the sender's FLOWMARK lines: its clock).  Writes OUT.json
# ({"bench":"failover","env":{...},"rows":[...]}, one row per run, fields in
# collect-failover.py) and keeps every run's console logs in
# $LB_BUILD/raw/failover/.
#   systems  bond-rr      balance-rr, miimon 10 ms                -> linux-bond-rr-tcp
#            bond-ab      active-backup, miimon 10 ms             -> linux-bond-ab-tcp
#            bond-ab-arp  active-backup, ARP every 50 ms          -> linux-bond-ab-arp-tcp
#            bond-rr-arp  balance-rr, ARP every 50 ms             -> linux-bond-rr-arp-tcp
#            mptcp        MPTCP, one subflow per link, stale_loss_cnt 1 -> linux-mptcp
#            (run-failover.py's tuned(): arp_missed_max on e1000, and why)
#   cuts     visible (the sender's NIC 0 loses its link), silent (the
#            receiver's NIC 0 does: the sender's NIC keeps its carrier)
#   --nics   NIC models, each a cell (virtio: instant link events; e1000:
#            its 2 s watchdog); --nic-links virtio:4 gives a model its own
#            link counts (default --links)
#   --icount -icount shift=0 on both guests and both ends' busy ns sampled
#            every 500 ms (FLOWCPU lines): the CPU work
#   --first-run R --keep  number the runs from R and keep the earlier runs'
#            logs (tools/bench/failover.sh interleaves rounds: one call a round)
# Tunables (env): FO_MBPS (100, tbf rate of every NIC; 0: no tbf, unpaced),
# FO_GRACE_MS (3000: the receiver's wait past the flow's duration, on its
# clock; unpaced under -icount give more, as a busy sender's clock runs
# slower than an idle receiver's), FO_SIZE (8192, the
# sender's write size), FO_CUT_AT (5), FO_DOWN (10), FO_TAIL (5) in seconds,
# LB_NIC (e1000, when no --nics), LB_BUILD, LB_PREBUILT=1 (as bench.sh), FO_RAW
# (where the runs' logs go, emptied first unless --keep; default
# $LB_BUILD/raw/failover).  Each run takes about 40 s (boot, 20 s of flow,
# power-off; more under -icount on a busy host); a run that fails (not a
# stalled flow nor a connection the system cannot make: those are results)
# is tried once more.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

LINKS_LIST=2 RUNS=1 SYSTEMS=bond-rr,bond-ab,bond-ab-arp,bond-rr-arp,mptcp CUTS=visible,silent OUT=
NICS= NIC_LINKS= FIRST=1 KEEP= ICOUNT=
while [ $# -gt 0 ]; do
	case "$1" in
	--links) LINKS_LIST=$2; shift ;;
	--nics) NICS=$2; shift ;;
	--nic-links) NIC_LINKS=$2; shift ;;
	--first-run) FIRST=$2; shift ;;
	--keep) KEEP=1 ;;
	--icount) ICOUNT=--icount ;;
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
for c in $(echo "${NICS:-e1000}" | tr , ' '); do
	case "$c" in e1000 | virtio) ;; *) lb_die "unknown NIC model $c" ;; esac
done
for s in $(echo "$SYSTEMS" | tr , ' '); do
	case "$s" in bond-rr | bond-ab | bond-ab-arp | bond-rr-arp | mptcp) ;; *) lb_die "unknown system $s" ;; esac
done
for c in $(echo "$CUTS" | tr , ' '); do
	case "$c" in visible | silent) ;; *) lb_die "unknown cut $c" ;; esac
done

GUEST=${LB_BUILD:-$ROOT/build/linux-baseline}
NIC=${LB_NIC:-${NIC:-e1000}}
NICS=${NICS:-$NIC}
# links_of MODEL: its link counts (--nic-links, else --links)
links_of() {
	local e
	for e in $(echo "$NIC_LINKS" | tr ';' ' '); do
		[ "${e%%:*}" = "$1" ] && { echo "${e#*:}" | tr , ' '; return; }
	done
	echo "$LINKS_LIST" | tr , ' '
}
MBPS=${FO_MBPS:-100} SIZE=${FO_SIZE:-8192} GRACE=${FO_GRACE_MS:-3000}
CUT_AT=${FO_CUT_AT:-5} DOWN=${FO_DOWN:-10} TAIL=${FO_TAIL:-5}
lb_progress_start linux-failover

lb_bench_guest qemu-system-x86 python3
RAW=${FO_RAW:-$GUEST/raw/failover}
if [ -n "$KEEP" ]; then
	mkdir -p "$RAW" "$(dirname "$OUT")"
else
	lb_fresh_raw "$RAW" "$OUT"
fi

n=0 total=0
for nic in $(echo "$NICS" | tr , ' '); do
	total=$((total + RUNS * $(links_of "$nic" | wc -w) * $(echo "$SYSTEMS" | tr , '\n' | grep -c .) *
		$(echo "$CUTS" | tr , '\n' | grep -c .)))
done
for run in $(seq "$FIRST" $((FIRST + RUNS - 1))); do
	for nic in $(echo "$NICS" | tr , ' '); do
		for links in $(links_of "$nic"); do
			for sys in $(echo "$SYSTEMS" | tr , ' '); do
				for cut in $(echo "$CUTS" | tr , ' '); do
					n=$((n + 1))
					dir="$RAW/$sys-$nic-$links-$cut-$run"
					for try in 1 2; do
						progress "$n/$total: $sys, $nic, $links links, $cut cut, run $run (try $try)"
						rm -rf "$dir"
						rc=0
						"$HERE/run-failover.py" --system "$sys" --cut "$cut" --links "$links" --run "$run" \
							--mbps "$MBPS" --size "$SIZE" --cut-at "$CUT_AT" --down "$DOWN" --tail "$TAIL" \
							--grace-ms "$GRACE" --guest "$GUEST" --nic "$nic" --logdir "$dir" $ICOUNT || rc=$?
						# 3: no connection at all, the system's own result.
						[ $rc = 0 ] || [ $rc = 3 ] && break
					done
				done
			done
		done
	done
done

# shellcheck disable=SC1091
. "$GUEST/guest.env"
PACING="tbf on every NIC of both guests (burst 4 ms of the rate + two jumbo frames, as the kernel pacer; limit 4 MiB)"
[ "$MBPS" = 0 ] && PACING="none: no tbf on any NIC (FO_MBPS=0), the flow as fast as both guests' CPUs and TCP let it go"
CPU=$(sed -n 's/^model name[[:space:]]*: //p;T;q' /proc/cpuinfo)
python3 "$HERE/collect-failover.py" --out "$OUT" \
	--env accel=tcg --env "clock=$([ -n "$ICOUNT" ] && echo icount || echo real)" \
	--env "qemu=$(lb_qemu_version)" --env "nic=$NICS" \
	--env backend=dgram-unix-per-link --env "cpu=$CPU" --env "runs=$((FIRST + RUNS - 1))" \
	--env "per_link_mbps_paced=$MBPS" --env "flow_grace_ms=$GRACE" --env mtu=9000 --env "write_bytes=$SIZE" \
	--env "pacing=$PACING" \
	--env "timeline=cut ${CUT_AT} s after the sender's start (its FLOWMARK line), restore ${DOWN} s later, sending ends ${TAIL} s after the restore" \
	--env "cut_visible=QMP set_link off on the sender's NIC 0 (its carrier drops; the receiver's NIC 0 stays up)" \
	--env "cut_silent=QMP set_link off on the receiver's NIC 0 (frames die both ways; the sender's NIC 0 keeps its carrier)" \
	--env "timestamps=the cut and restore on the sender's clock (its FLOWMARK lines, plus the host's time from the line to the QMP command); on the receiver's clock through host CLOCK_MONOTONIC stamps of its live FLOWBIN lines (the smallest stamp - guest time of those 3 s before to 1 s after)" \
	--env "bonding=bonding.ko: miimon 10 ms, or arp_interval 50 ms with arp_ip_target the peer (arp_missed_max 4, or 24 for active-backup on e1000: QEMU e1000's 1 s receive hold-off after each RCTL write); active-backup with primary eth0 on both guests; no updelay/downdelay; e1000 link changes reach the driver through its 2 s watchdog" \
	--env "mptcp=in-kernel path manager: limits NICS-1 subflows and addresses, the server announces 10.0.K.1 (K >= 1) as signal endpoints, net.mptcp.stale_loss_cnt=1" \
	--env "guest=Linux $KERNEL_RELEASE ($KERNEL_PKG $KERNEL_VER), busybox initramfs, 256 MiB, -cpu max" \
	"$RAW"/*/
progress "wrote $OUT"
