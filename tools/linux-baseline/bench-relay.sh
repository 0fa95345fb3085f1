#!/usr/bin/env bash
# bench-relay.sh: the Linux side of the relay benchmark: Linux guests in a
# line, the middle ones IP routers (ip_forward=1, static routes), a TCP
# stream, UDP bursts and UDP round trips end to end, and the routers'
# instructions per forwarded packet under -icount (README.md, "Relaying").
#
#   bench-relay.sh [--runs N] [--hops 0,1[,2]] [--links 1[,2]] [--sizes 1500,8192]
#                  [--no-icount] [--quick] [--logdir DIR] [--first-run R] OUT.json
#   bench-relay.sh --cpu-boot N [--links 1,2] [--sizes 1500,8192] [--mbps R] [--packets P] OUT.json
#
# Per run (--runs, default 1) and per hop count and link count: one
# real-time boot (TCP: 3 connections of 8 MiB per size after a warm-up;
# raw: 20 bursts of 128 datagrams per size; rtt: 50 round trips per size).
# Then, per run, per hop count >= 1 and link count: one boot with the
# routers under -icount shift=0 (2 connections, 10 bursts per size) for
# relay_insns_per_pkt (the median over the runs' boots).  hops 2 boots 4 VMs (client, two routers, server):
# ask for it only when nothing else runs on the host.  --quick: the
# self-check, one boot of 3 VMs (1 router, 1 link, 8192 bytes, router under
# -icount), every byte verified, rows written (about 90 s, more on a busy
# host).  Boots that fail are retried once, then listed in env.boots.failed.
# --cpu-boot N: CPU work at a fixed offered load instead (bench/relay.sh
# interleaves it with this kernel's runs): boot round N (1 starts the raw
# directory GUEST/raw/relay-cpu afresh), one boot per link count of client,
# one router under -icount shift=0 and server, the client's NICs alone paced
# to --mbps (25) each with tbf, P/128 UDP bursts of 128 datagrams per size
# (--packets, 2048; the first burst the warm-up, inside the router's window);
# then OUT.json (rows of mode cpu, collect-relay.py --cpu) from every round
# so far.
# --first-run R (with --logdir DIR): the runs numbered from R, the boots of
# the earlier runs kept in DIR and collected with this call's (OUT.json
# from every run so far: bench/relay.sh interleaves one Linux run with one
# kernel run).
# Boots VMs: run it under the team's VM slot wrapper if there is one.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

RUNS=1 HOPS=0,1 LINKS=1,2 SIZES=1500,8192 ICOUNT=1 QUICK= LOGDIR= OUT= CPU_BOOT= MBPS=25 PACKETS=2048 FIRST=
GUEST=${LB_BUILD:-$ROOT/build/linux-baseline}
usage() { sed -n '2,/^set -euo/s/^# \{0,1\}//p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2; shift ;;
	--hops) HOPS=$2; shift ;;
	--links) LINKS=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--no-icount) ICOUNT= ;;
	--quick) QUICK=1 ;;
	--logdir) LOGDIR=$2; shift ;;
	--cpu-boot) CPU_BOOT=$2; shift ;;
	--mbps) MBPS=$2; shift ;;
	--packets) PACKETS=$2; shift ;;
	--first-run) FIRST=$2; shift ;;
	-*) usage ;;
	*) [ -z "$OUT" ] || usage; OUT=$1 ;;
	esac
	shift
done
[ -n "$OUT" ] || usage
for h in $(echo "$HOPS" | tr , ' '); do case "$h" in 0 | 1 | 2) ;; *) lb_die "--hops: 0, 1 or 2" ;; esac; done
for l in $(echo "$LINKS" | tr , ' '); do case "$l" in 1 | 2) ;; *) lb_die "--links: 1 or 2" ;; esac; done
case "$RUNS" in [1-9] | [1-9][0-9]) ;; *) lb_die "--runs $RUNS" ;; esac

lb_need_pkgs qemu-system-x86 python3
"$HERE/build-relay.sh" "$GUEST"
lb_lock "$GUEST/.run.lock"
# shellcheck disable=SC1091
. "$GUEST/guest.env"

KEEP_LOGS=1
if [ -n "$CPU_BOOT" ]; then
	case "$CPU_BOOT" in [1-9] | [1-9][0-9]) ;; *) lb_die "--cpu-boot $CPU_BOOT" ;; esac
	case "$PACKETS" in *[!0-9]* | "") lb_die "--packets $PACKETS" ;; esac
	[ $((PACKETS % 128)) = 0 ] && [ "$PACKETS" -ge 256 ] || lb_die "--packets: a multiple of 128, at least 256"
	LOGDIR=$GUEST/raw/relay-cpu
	[ "$CPU_BOOT" = 1 ] && rm -rf "$LOGDIR"
fi
if [ -n "$FIRST" ]; then
	case "$FIRST" in [1-9] | [1-9][0-9]) ;; *) lb_die "--first-run $FIRST" ;; esac
	[ -n "$LOGDIR" ] || lb_die "--first-run needs --logdir"
	[ "$FIRST" = 1 ] && rm -rf "$LOGDIR"
fi
if [ -z "$LOGDIR" ]; then
	LOGDIR=$(mktemp -d /tmp/lb-relay-bench.XXXXXX)
	KEEP_LOGS=
fi
mkdir -p "$LOGDIR"
RUN_PID=
cleanup() {
	if [ -n "$RUN_PID" ]; then
		kill "$RUN_PID" 2>/dev/null || true
		wait "$RUN_PID" 2>/dev/null || true
	fi
	if [ -z "$KEEP_LOGS" ]; then rm -rf "$LOGDIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

DIRS=()
# boot NAME ARGS...: one run-relay.py boot into LOGDIR/NAME, retried once.
boot() {
	local name=$1 try
	shift
	for try in 1 2; do
		rm -rf "${LOGDIR:?}/$name"
		"$HERE/run-relay.py" --guest "$GUEST" --logdir "$LOGDIR/$name" "$@" >/dev/null &
		RUN_PID=$!
		if wait "$RUN_PID"; then
			RUN_PID=
			break
		fi
		RUN_PID=
		lb_log "$name: attempt $try failed"
	done
	DIRS+=("$LOGDIR/$name")
}

start=$(date +%s)
if [ -n "$CPU_BOOT" ]; then
	for l in $(echo "$LINKS" | tr , ' '); do
		lb_log "cpu work, boot $CPU_BOOT: 1 router, $l link(s), offered $MBPS Mbit/s a link, -icount"
		boot "cpu-b$CPU_BOOT-h1-l$l" --hops 1 --links "$l" --icount --modes raw --sizes "$SIZES" \
			--bursts $((PACKETS / 128 - 1)) --warmup 1 --rtts 0 --mbps "$MBPS" --pace client --timeout 900
	done
	mkdir -p "$(dirname "$OUT")"
	"$HERE/collect-relay.py" --cpu --out "$OUT" --sizes "$SIZES" \
		--env "guest=Linux $KERNEL_RELEASE ($KERNEL_PKG $KERNEL_VER), busybox initramfs, 256 MiB, -cpu max" \
		--env "guest_nic=e1000.ko RxDescriptors=4096; MTU 9000; 2 links: bonding.ko balance-rr miimon 100 per segment" \
		--env "topology=client, one router (ip_forward=1, static routes), server, joined by dgram/unix wires (one per link)" \
		--env "icount=shift=0, router only" --env "cpu_mbps_per_link=$MBPS" --env "cpu_packets=$PACKETS" \
		--env "raw=UDP bursts of 128 datagrams through tbf on the client's NICs only, answered with the count received" \
		"$LOGDIR"/cpu-b* || lb_die "no rows (logs: $LOGDIR)"
	lb_log "wrote $OUT (boot round $CPU_BOOT) in $(($(date +%s) - start))s"
	exit 0
fi
if [ -n "$QUICK" ]; then
	SIZES=8192 RUNS=1
	boot quick --hops 1 --links 1 --icount --sizes 8192 --runs 1 --bursts 5 --rtts 20 --timeout 400
else
	for r in $(seq "${FIRST:-1}" $((${FIRST:-1} + RUNS - 1))); do
		for h in $(echo "$HOPS" | tr , ' '); do
			for l in $(echo "$LINKS" | tr , ' '); do
				lb_log "run $r/$((${FIRST:-1} + RUNS - 1)): hops=$h links=$l"
				boot "r$r-h$h-l$l" --hops "$h" --links "$l" --sizes "$SIZES" --timeout 600
			done
		done
		[ -n "$ICOUNT" ] || continue
		for h in $(echo "$HOPS" | tr , ' '); do
			[ "$h" = 0 ] && continue
			for l in $(echo "$LINKS" | tr , ' '); do
				lb_log "run $r/$((${FIRST:-1} + RUNS - 1)), icount: hops=$h links=$l"
				boot "icount-r$r-h$h-l$l" --hops "$h" --links "$l" --icount --sizes "$SIZES" \
					--modes tcp,raw --runs 2 --bursts 10 --timeout 900
			done
		done
	done
fi
secs=$(($(date +%s) - start))
if [ -n "$FIRST" ]; then # every run so far
	RUNS=$((FIRST + RUNS - 1))
	DIRS=()
	for d in "$LOGDIR"/r[0-9]*-h* "$LOGDIR"/icount-r[0-9]*-h*; do [ -d "$d" ] && DIRS+=("$d"); done
fi
mkdir -p "$(dirname "$OUT")"
"$HERE/collect-relay.py" --out "$OUT" --sizes "$SIZES" --runs "$RUNS" \
	--env "guest=Linux $KERNEL_RELEASE ($KERNEL_PKG $KERNEL_VER), busybox initramfs, 256 MiB, -cpu max" \
	--env "guest_nic=e1000.ko RxDescriptors=4096; MTU 9000; 2 links: bonding.ko balance-rr miimon 100 per segment" \
	--env "topology=line of guests joined by dgram/unix wires (one per link), routers: ip_forward=1 and static routes" \
	--env "icount=shift=0, routers only" \
	--env "tcp=relaybench: 8 MiB per connection, receiver-timed, every byte verified" \
	--env "raw=UDP bursts of 128 datagrams (AF_PACKET frames are not routed), answered with the count received" \
	--env "quick=${QUICK:-0}" --env "bench_seconds=$secs" "${DIRS[@]}" ||
	lb_die "no rows (logs: $LOGDIR)"
# The self-check's verdict (collect-relay.py --check-quick): both modes
# measured, every TCP byte verified, no burst datagram lost, the router's
# forwarded packets and instructions counted.
if [ -n "$QUICK" ] && ! "$HERE/collect-relay.py" --check-quick "$OUT"; then
	KEEP_LOGS=1
	lb_die "self-check failed (logs kept in $LOGDIR)"
fi
KEEP_LOGS=${KEEP_LOGS:-$(python3 -c 'import json,sys; print(1 if json.load(open(sys.argv[1]))["env"]["boots"]["failed"] else "")' "$OUT")}
[ -n "$KEEP_LOGS" ] && lb_log "logs kept in $LOGDIR"
lb_log "wrote $OUT in ${secs}s"
