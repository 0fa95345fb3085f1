#!/usr/bin/env bash
# bench-multilink.sh [RESULTS_DIR]: Linux over 1-4 links, written to
# RESULTS_DIR/linux-multilink.json (default bench/results; schema: the
# multilink rows of the benchmark format) by collect-multilink.py.
#
#  1. Calibration: one boot pair over one unpaced link (no tbf): a TCP
#     stream and raw bursts at every size.  The per-link rate is a fifth of
#     the slowest of these medians, rounded down to 5 Mbit/s, so that four
#     paced links ask for at most 4/5 of what the emulator carried over one.
#  2. Per boot round and link count (run-links.sh, two guests, one dgram
#     wire per link, every NIC paced with tbf at that rate):
#       rr     bond0 in balance-rr: a TCP stream at each write size, then
#              raw AF_PACKET bursts of each frame payload over the bond;
#       mptcp  no bond, one IP per NIC: one MPTCP connection whose server
#              announces its other addresses (one subflow per link).
#  3. -icount shift=0 pairs at 1 and 4 links, unpaced (a paced receiver
#     would count the virtual time it waits for the next frame): raw bursts
#     only, for the burst receiver's instructions per packet.
#  4. CPU work (ML_CPU=1), every pair under -icount shift=0, both ends'
#     busy instructions (pktbench's busy_ns: CLOCK_MONOTONIC less idle
#     time) per connection: kind cpu-rr/cpu-mptcp with every NIC paced to
#     ML_CPU_MBPS (the offered load; ML_CPU_SECONDS a connection) and
#     unp-rr/unp-mptcp unpaced (ML_CPU_BYTES a connection), over
#     ML_CPU_LINKS at ML_CPU_SIZES, ML_CPU_RUNS connections per size after
#     one warm-up.  ML_CPU_ONLY=1 runs only this phase, one boot round
#     numbered ML_CPU_BOOT (1 starts its raw directory afresh), and writes
#     RESULTS_DIR/linux-multilink-cpu.json from every round so far: what
#     multilink.sh calls between the kernel's runs, interleaved.
# balance-rr pairs raise net.ipv4.tcp_reordering to ML_TCP_REORDERING (127)
# on both guests, as bonding's documentation advises for balance-rr.
# Stream connections carry ML_SECONDS of the paced aggregate rate.
# Tunables (env): ML_BOOTS (3), ML_LINKS (1,2,3,4), ML_SIZES (1500,4096,8192),
# ML_RUNS (3) and ML_WARMUP (1) per size and boot, ML_SECONDS (1.5),
# ML_MBPS (skip the calibration, use this per-link rate), ML_MPTCP (1; 0: no
# MPTCP pairs), ML_ICOUNT (1), LB_NIC (e1000 or virtio), LB_BUILD,
# LB_PREBUILT=1 (as bench.sh), ML_KEEP_RAW=1 (keep the boot pairs of an
# earlier run and collect them with the new ones, e.g. ML_KEEP_RAW=1
# ML_BOOTS=0 ML_MBPS=10 measures only the -icount pairs again).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

RESULTS=${1:-$ROOT/bench/results}
GUEST=${LB_BUILD:-$ROOT/build/linux-baseline}
BOOTS=${ML_BOOTS:-3}
LINKS_LIST=${ML_LINKS:-1,2,3,4}
SIZES=${ML_SIZES:-1500,4096,8192}
RUNS=${ML_RUNS:-3}
WARMUP=${ML_WARMUP:-1}
SECONDS_PER_CONN=${ML_SECONDS:-1.5}
MBPS=${ML_MBPS:-}
DO_MPTCP=${ML_MPTCP:-1}
DO_ICOUNT=${ML_ICOUNT:-1}
ICOUNT_RUNS=5 ICOUNT_WARMUP=2
DO_CPU=${ML_CPU:-0} CPU_ONLY=${ML_CPU_ONLY:-0} CPU_BOOT=${ML_CPU_BOOT:-1}
CPU_LINKS=${ML_CPU_LINKS:-$LINKS_LIST} CPU_SIZES=${ML_CPU_SIZES:-1500,8192} CPU_MBPS=${ML_CPU_MBPS:-25}
CPU_SECONDS=${ML_CPU_SECONDS:-2} CPU_BYTES=${ML_CPU_BYTES:-8388608} CPU_RUNS=${ML_CPU_RUNS:-1}
REORDER="pkt.sysctl=net.ipv4.tcp_reordering:${ML_TCP_REORDERING:-127}"
NIC=${LB_NIC:-${NIC:-e1000}}
case "$NIC" in
e1000) GUEST_NIC="e1000.ko RxDescriptors=4096" ;;
virtio) GUEST_NIC="virtio_net.ko (virtio-net-pci,disable-legacy=on)" ;;
*) lb_die "LB_NIC=$NIC: e1000 or virtio" ;;
esac

lb_progress_start linux-multilink

lb_need_pkgs python3
lb_guest_ready "$GUEST" "$HERE"
RAW="$GUEST/raw/multilink"
LOGS="$GUEST/logs/multilink"
if [ "$CPU_ONLY" = 1 ]; then
	DO_CPU=1 RAW="$GUEST/raw/multilink-cpu" LOGS="$GUEST/logs/multilink-cpu"
	[ "$CPU_BOOT" != 1 ] || rm -rf "$RAW" "$LOGS"
else
	[ -n "${ML_KEEP_RAW:-}" ] || rm -rf "$RAW" "$LOGS"
fi
mkdir -p "$RAW" "$LOGS" "$RESULTS"

# pair NAME "PAIR-FIELDS" ARGS...: one boot pair into $RAW/NAME.txt (its
# first line the PAIR fields); a failed pair is tried once more.
pair() {
	local name=$1 head=$2 try
	shift 2
	for try in 1 2; do
		if { echo "PAIR $head"; "$HERE/run-links.sh" --no-build --guest "$GUEST" --nic "$NIC" --timeout 600 \
			--logdir "$LOGS/$name.$try" "$@"; } >"$RAW/$name.tmp"; then
			mv "$RAW/$name.tmp" "$RAW/$name.txt"
			return 0
		fi
		progress "$name failed (try $try); logs in $LOGS/$name.$try"
	done
	lb_die "$name failed twice"
}

# cpu_round BOOT: the CPU-work pairs of one boot round (step 4).
cpu_round() {
	local boot=$1 links b kind bond proto extra
	for links in $(echo "$CPU_LINKS" | tr , ' '); do
		for kind in rr mptcp; do
			[ "$kind" = mptcp ] && [ "$DO_MPTCP" != 1 ] && continue
			if [ "$kind" = rr ]; then bond=rr proto=tcp extra=(--append "$REORDER"); else bond=none proto=mptcp extra=(); fi
			b=$(awk -v l="$links" -v r="$CPU_MBPS" -v s="$CPU_SECONDS" 'BEGIN { printf "%d", l * r * 1e6 / 8 * s }')
			progress "cpu work, boot $boot, $links link(s), $kind: offered $CPU_MBPS Mbit/s a link, -icount"
			pair "cpu-$kind-$links-$boot" "kind=cpu-$kind links=$links boot=$boot warmup=1 mbps=$CPU_MBPS" \
				--links "$links" --bond "$bond" --proto "$proto" --mbps "$CPU_MBPS" --mode stream \
				--sizes "$CPU_SIZES" --runs "$CPU_RUNS" --warmup 1 --bytes "$b" --icount "${extra[@]}"
			progress "cpu work, boot $boot, $links link(s), $kind: unpaced, -icount"
			pair "unp-$kind-$links-$boot" "kind=unp-$kind links=$links boot=$boot warmup=1 mbps=0" \
				--links "$links" --bond "$bond" --proto "$proto" --mode stream \
				--sizes "$CPU_SIZES" --runs "$CPU_RUNS" --warmup 1 --bytes "$CPU_BYTES" --icount "${extra[@]}"
		done
	done
}

if [ "$CPU_ONLY" = 1 ]; then
	cpu_round "$CPU_BOOT"
	# shellcheck disable=SC1091
	. "$GUEST/guest.env"
	OUT="$RESULTS/linux-multilink-cpu.json"
	python3 "$HERE/collect-multilink.py" --out "$OUT" \
		--env accel=tcg --env clock=icount --env "qemu=$(lb_qemu_version)" --env "nic=$NIC" \
		--env backend=dgram-unix-per-link --env "cpu=$(sed -n 's/^model name[[:space:]]*: //p;T;q' /proc/cpuinfo)" \
		--env "runs=$CPU_BOOT" --env "boots=$CPU_BOOT" --env "runs_per_boot=$CPU_RUNS" \
		--env "cpu_mbps_per_link=$CPU_MBPS" --env "cpu_seconds=$CPU_SECONDS" --env "cpu_bytes_unpaced=$CPU_BYTES" \
		--env "guest=Linux $KERNEL_RELEASE ($KERNEL_PKG $KERNEL_VER), busybox initramfs, 256 MiB, -cpu max" \
		--env "guest_nic=$GUEST_NIC; MTU 9000; balance-rr: bonding.ko miimon 100, $REORDER; MPTCP: in-kernel path manager, one signal endpoint per further NIC, limits links-1" \
		--env "icount=shift=0, both guests" "$RAW"/*.txt
	progress "wrote $OUT"
	exit 0
fi

if [ -z "$MBPS" ]; then
	progress "calibration: one unpaced link, TCP stream and raw bursts at $SIZES"
	pair calib "kind=calib links=1 boot=0 warmup=$WARMUP mbps=0" --links 1 --bond none \
		--mode stream,burst --sizes "$SIZES" --runs "$RUNS" --warmup "$WARMUP" --bytes 16000000
	CAL=$(python3 "$HERE/collect-multilink.py" --calibration --out /dev/null "$RAW/calib.txt")
	MBPS=$(python3 -c 'import json, sys
c = json.loads(sys.argv[1])
print(max(5, int(min(list(c["tcp"].values()) + list(c["packet"].values())) / 5 // 5 * 5)))' "$CAL")
	progress "unpaced one link: $CAL; per-link rate $MBPS Mbit/s"
fi
# Bytes per connection: ML_SECONDS at the aggregate paced rate.
bytes_for() { awk -v l="$1" -v r="$MBPS" -v s="$SECONDS_PER_CONN" 'BEGIN { printf "%d", l * r * 1e6 / 8 * s }'; }

for boot in $(seq 1 "$BOOTS"); do
	for links in $(echo "$LINKS_LIST" | tr , ' '); do
		b=$(bytes_for "$links")
		progress "boot $boot/$BOOTS, $links link(s) at $MBPS Mbit/s: balance-rr TCP and raw bursts"
		pair "rr-$links-$boot" "kind=rr links=$links boot=$boot warmup=$WARMUP mbps=$MBPS" \
			--links "$links" --bond rr --mbps "$MBPS" --mode stream,burst --sizes "$SIZES" \
			--runs "$RUNS" --warmup "$WARMUP" --bytes "$b" --append "$REORDER"
		if [ "$DO_MPTCP" = 1 ]; then
			progress "boot $boot/$BOOTS, $links link(s): MPTCP"
			pair "mptcp-$links-$boot" "kind=mptcp links=$links boot=$boot warmup=$WARMUP mbps=$MBPS" \
				--links "$links" --bond none --proto mptcp --mbps "$MBPS" --mode stream \
				--sizes "$SIZES" --runs "$RUNS" --warmup "$WARMUP" --bytes "$b"
		fi
	done
done
if [ "$DO_ICOUNT" = 1 ]; then
	for links in 1 4; do
		progress "raw bursts over $links link(s) under -icount shift=0"
		pair "icount-$links" "kind=icount links=$links boot=0 warmup=$ICOUNT_WARMUP mbps=0" \
			--links "$links" --bond rr --mode burst --sizes "$SIZES" \
			--runs "$ICOUNT_RUNS" --warmup "$ICOUNT_WARMUP" --icount
	done
fi

if [ "$DO_CPU" = 1 ]; then
	for boot in $(seq 1 "$BOOTS"); do cpu_round "$boot"; done
fi

# shellcheck disable=SC1091
. "$GUEST/guest.env"
CPU=$(sed -n 's/^model name[[:space:]]*: //p;T;q' /proc/cpuinfo)
OUT="$RESULTS/linux-multilink.json"
python3 "$HERE/collect-multilink.py" --out "$OUT" \
	--env accel=tcg --env clock=real --env "qemu=$(lb_qemu_version)" --env "nic=$NIC" \
	--env backend=dgram-unix-per-link --env "cpu=$CPU" --env "runs=$BOOTS" --env "boots=$BOOTS" \
	--env "runs_per_boot=$RUNS" --env "warmup_per_boot=$WARMUP" \
	--env "per_link_mbps_paced=$MBPS" \
	--env "pacing=tbf on every NIC of both guests (burst 4 ms of the rate + two jumbo frames, as the kernel pacer; limit 4 MiB); rate = 1/5 of the slowest unpaced one-link median (TCP stream or raw burst, any size), rounded down to 5 Mbit/s" \
	--env "stream_seconds_per_conn=$SECONDS_PER_CONN" \
	--env "guest=Linux $KERNEL_RELEASE ($KERNEL_PKG $KERNEL_VER), busybox initramfs, 256 MiB, -cpu max" \
	--env "guest_nic=$GUEST_NIC; bonding.ko balance-rr miimon 100, $REORDER; MTU 9000" \
	--env "clock_r1_insns=icount" --env "icount=shift=0" \
	"$RAW"/*.txt
progress "wrote $OUT"
