#!/usr/bin/env bash
# bench.sh rtt|burst|ceiling|window [RESULTS_DIR]: measure the Linux baseline
# (every variant, every size) and write RESULTS_DIR/linux-rtt.json or
# linux-burst.json (default RESULTS_DIR: bench/results under the repository);
# ceiling: DPDK's txonly sender into its rxonly receiver, per size, in
# RESULTS_DIR/linux-dpdk-ceiling.json; window: the windowed stream
# (pktwindow.h), a pair per variant, in RESULTS_DIR/linux-stream.json.
#
# Each boot pair measures every size of one variant; the variants alternate
# boot by boot, so slow drifts of the host hit both alike.  Burst runs add one
# boot pair per variant under -icount shift=0 for t1_insns.
#
# Two TCG guests need both host cores: another busy process slows a pair
# several-fold (bursts most).  So the CPU time that other processes take
# during each pair is measured, and a pair during which they took more than
# LB_MAX_OTHER cores is measured again (at most LB_BUSY_RETRIES times, then
# kept and reported in env.host_other_cores).  Tunables (env):
#   LB_SIZES        sizes in bytes (default 64,128,256,512,1024,1500,2048,4096,8192)
#   LB_BOOTS        boot pairs per variant, real time (default 5)
#   LB_RUNS         repetitions per size and boot (default rtt 100, burst 20)
#   LB_WARMUP       warm-up repetitions per size and boot (default rtt 10, burst 3)
#   LB_ICOUNT_RUNS  burst repetitions per size under -icount (default 30, R1's
#                   samples, insnplugin.so loaded in the server: --count-rx; 0: no
#                   -icount pair, and no t1_insns or R1: tools/bench/abab.py)
#   LB_CPU_MS       burst: after each size's runs, bursts for this long over
#                   which tools/bench/hostcpu.py reads the host CPU time of
#                   both guests (default 400; 0: none)
#   LB_MAX_OTHER    other processes' CPU, in cores, tolerated (default 0.25)
#   LB_BUSY_RETRIES (default 2)
#   LB_FAIL_RETRIES a pair that fails (a verification error, a lost packet, a
#                   timeout) is run again this many times (default 1; 0 in make
#                   bench-smoke, which is make test's check of the Linux guest)
#   LB_NIC          e1000 (default), virtio or e1000e: the guests' NIC (run-pair.sh --nic)
#   LB_VARIANTS     the Linux systems, space-separated (default "packet mmap xdp
#                   tuned tuned-mmap dpdk"): AF_PACKET, PACKET_MMAP, AF_XDP, the two
#                   tuned packet sockets (systems linux-packet, linux-mmap,
#                   linux-afxdp, linux-packet-tuned, linux-mmap-tuned) and dpdkbench
#                   (DPDK's poll-mode driver, in its own boot pairs: the NIC is bound
#                   to uio_pci_generic, not the kernel; linux-dpdk)
#   LB_ITR          e1000/e1000e InterruptThrottleRate for every variant (pkt.itr;
#                   default: the driver's own), recorded in env.itr
#   LB_CEIL_MS      ceiling: how long the sender sends per size (default 1000)
#   LB_RTT_IN_BURST=1  burst: each real-time pair runs its variant's round
#                   trips before its bursts (pkt.mode=rtt,burst, LB_RUNS
#                   each), and RESULTS_DIR/linux-rtt.json is written from
#                   them too: one boot pair less (make bench-smoke; a
#                   measurement runs bench.sh rtt, 100 round trips a size)
#   LB_BUILD        build directory (default build/linux-baseline)
#   LB_PREBUILT=1   use the guest already built there, never build it (make
#                   bench runs this inside a network namespace: no network)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

BENCH=${1:-}
case "$BENCH" in rtt | burst | ceiling | window) ;; *) echo "usage: $0 rtt|burst|ceiling|window [RESULTS_DIR]" >&2; exit 2 ;; esac
RESULTS=${2:-$ROOT/bench/results}
GUEST=${LB_BUILD:-$ROOT/build/linux-baseline}
SIZES=${LB_SIZES:-64,128,256,512,1024,1500,2048,4096,8192}
BOOTS=${LB_BOOTS:-5}
case "$BENCH" in
rtt) RUNS=${LB_RUNS:-100} WARMUP=${LB_WARMUP:-10} ;;
window) RUNS=${LB_RUNS:-5} WARMUP=${LB_WARMUP:-1} ;;
*) RUNS=${LB_RUNS:-20} WARMUP=${LB_WARMUP:-3} ;;
esac
ICOUNT_RUNS=${LB_ICOUNT_RUNS:-30}
ICOUNT_WARMUP=2
CPU_MS=${LB_CPU_MS:-400}
MAX_OTHER=${LB_MAX_OTHER:-0.25}
BUSY_RETRIES=${LB_BUSY_RETRIES:-2}
FAIL_RETRIES=${LB_FAIL_RETRIES:-1}
read -r -a VARIANTS <<<"${LB_VARIANTS:-packet mmap xdp tuned tuned-mmap dpdk}"
ITR=${LB_ITR:-}
ITR_ARGS=()
[ -n "$ITR" ] && ITR_ARGS=(--append "pkt.itr=$ITR")
# The socket variants share a boot pair where they can; DPDK has its own.
SOCK=() DPDK=
for v in "${VARIANTS[@]}"; do
	case "$v" in
	packet | mmap | xdp | xdp-sg | tuned | tuned-mmap) SOCK+=("$v") ;;
	dpdk) DPDK=1 ;;
	*) lb_die "LB_VARIANTS: $v is not packet, mmap, xdp, xdp-sg, tuned, tuned-mmap or dpdk" ;;
	esac
done
[ "$BENCH" != ceiling ] || [ -n "$DPDK" ] || lb_die "the ceiling needs the dpdk variant"
NIC=${LB_NIC:-${NIC:-e1000}}
case "$NIC" in
e1000) GUEST_NIC="e1000.ko RxDescriptors=4096, other parameters default; MTU 9000" ;;
virtio) GUEST_NIC="virtio_net.ko (virtio-net-pci,disable-legacy=on), parameters default; MTU 9000" ;;
e1000e) GUEST_NIC="e1000e.ko (82574L), parameters and rings (256 descriptors) default; MTU 9000" ;;
*) lb_die "LB_NIC=$NIC: e1000, virtio or e1000e" ;;
esac

lb_progress_start linux-baseline

too_busy() { awk -v x="$1" -v m="$MAX_OTHER" 'BEGIN { exit !(x > m) }'; }

lb_need_pkgs python3
lb_guest_ready "$GUEST" "$HERE"
RAW="$GUEST/raw/$BENCH"
LOGS="$GUEST/logs/$BENCH"
rm -rf "$RAW" "$LOGS"
mkdir -p "$RAW" "$LOGS" "$RESULTS"

# cpu_watch DIR: reads the host CPU time of the pair logging into DIR over the
# client's MARK windows (HOSTCPU lines into $RAW/$name.cpu); cpu_unwatch stops it
# (by itself it ends with the guests) and adds the lines to $RAW/$name.txt.
cpu_watch() {
	python3 "$ROOT/tools/bench/hostcpu.py" "$1" 900 >"$RAW/$name.cpu" &
	MON=$!
}
cpu_unwatch() {
	local i
	for i in $(seq 1 20); do kill -0 "$MON" 2>/dev/null || break; sleep 0.1; done
	kill "$MON" 2>/dev/null || true
	wait "$MON" 2>/dev/null || true
	cat "$RAW/$name.cpu" >>"$RAW/$name.txt"
}

# sizes_run RAW: $SIZES less those the pair's variant skipped (SKIP lines:
# AF_XDP's frames over one UMEM chunk), which no CPU window can catch.
sizes_run() {
	local s out=
	for s in ${SIZES//,/ }; do
		grep -q "^SKIP .* bytes=$s " "$1" || out="$out,$s"
	done
	echo "${out#,}"
}

# [CPU_MS=N] pair NAME ARGS...: one boot pair into $RAW/NAME.txt, with host
# CPU windows of N ms per size.  A failed pair is run again LB_FAIL_RETRIES
# times; a pair disturbed by other processes is measured again, and so is one
# in which no host CPU window caught a size (HOSTCPU_RETRIES times; a size
# still uncaught then gets a null figure with its reason from collect.py).
OTHER=()
pair() {
	local name=$1 try=0 failures=0 other cpu=${CPU_MS:-0} lost cpu_tries=0
	shift
	[ "$cpu" -gt 0 ] && set -- "$@" --cpu-ms "$cpu"
	while :; do
		try=$((try + 1))
		lb_mark
		[ "$cpu" -gt 0 ] && cpu_watch "$LOGS/$name.$try"
		# A pair running every variant in turn gets 300 s for each.
		if ! "$HERE/run-pair.sh" --no-build --guest "$GUEST" --nic "$NIC" --sizes "$SIZES" \
			--timeout $((300 * ${#VARIANTS[@]})) "${ITR_ARGS[@]}" \
			--logdir "$LOGS/$name.$try" "$@" >"$RAW/$name.txt"; then
			[ "$cpu" -gt 0 ] && cpu_unwatch
			failures=$((failures + 1))
			progress "$name failed (try $try); logs in $LOGS/$name.$try"
			[ $failures -gt "$FAIL_RETRIES" ] && lb_die "$name failed $failures time(s)"
			continue
		fi
		[ "$cpu" -gt 0 ] && cpu_unwatch
		other=$(lb_other_cores)
		if [ "$cpu" -gt 0 ] && [ "$cpu_tries" -lt "${HOSTCPU_RETRIES:-2}" ]; then
			lost=$(python3 "$ROOT/tools/bench/hostcpu.py" uncaught "$RAW/$name.cpu" "$(sizes_run "$RAW/$name.txt")")
			if [ -n "$lost" ]; then
				cpu_tries=$((cpu_tries + 1))
				progress "$name: no host CPU window caught at $lost B; measuring again"
				continue
			fi
		fi
		if too_busy "$other" && [ $((try - failures - cpu_tries)) -le "$BUSY_RETRIES" ]; then
			progress "$name: other processes used $other cores meanwhile; measuring again"
			sleep 5
			continue
		fi
		OTHER+=("$other")
		return 0
	done
}

# Pairs with no host CPU windows (round trips, and bursts under -icount)
# run every variant in one boot pair, one after the other (init.sh), as
# their lines name their variant; real-time bursts keep a pair per
# variant, since a CPU window's line does not.
ALL=$(IFS=,; echo "${SOCK[*]}")
REAL=() ICOUNT=()
PAIR_MODE=$BENCH
[ "$BENCH" = burst ] && [ -n "${LB_RTT_IN_BURST:-}" ] && PAIR_MODE=rtt,burst
for boot in $(seq 1 "$BOOTS"); do
	if [ "$BENCH" = ceiling ]; then
		progress "ceiling dpdk txonly/rxonly ($NIC) boot $boot/$BOOTS: sizes $SIZES, ${LB_CEIL_MS:-1000} ms each"
		CPU_MS=0 pair "dpdk-ceiling-$boot" --mode ceiling --variant dpdk --runs 1 --warmup 0 \
			--append "pkt.ceilms=${LB_CEIL_MS:-1000}"
		REAL+=("$RAW/dpdk-ceiling-$boot.txt")
		continue
	fi
	if [ "$BENCH" = window ]; then
		for v in "${VARIANTS[@]}"; do
			progress "window $v ($NIC) boot $boot/$BOOTS: sizes $SIZES, $RUNS streams each"
			CPU_MS=0 pair "$v-window-$boot" --mode window --variant "$v" --runs "$RUNS" --warmup "$WARMUP"
			REAL+=("$RAW/$v-window-$boot.txt")
		done
		continue
	fi
	if [ "$BENCH" = rtt ]; then
		if [ -n "$ALL" ]; then
			progress "rtt $ALL ($NIC) boot $boot/$BOOTS: sizes $SIZES, $RUNS runs each"
			CPU_MS=0 pair "all-real-$boot" --mode rtt --variant "$ALL" --runs "$RUNS" --warmup "$WARMUP"
			REAL+=("$RAW/all-real-$boot.txt")
		fi
		if [ -n "$DPDK" ]; then
			progress "rtt dpdk ($NIC) boot $boot/$BOOTS: sizes $SIZES, $RUNS runs each"
			CPU_MS=0 pair "dpdk-real-$boot" --mode rtt --variant dpdk --runs "$RUNS" --warmup "$WARMUP"
			REAL+=("$RAW/dpdk-real-$boot.txt")
		fi
		continue
	fi
	for v in "${VARIANTS[@]}"; do
		progress "$PAIR_MODE $v ($NIC) boot $boot/$BOOTS: sizes $SIZES, $RUNS runs each"
		pair "$v-real-$boot" --mode "$PAIR_MODE" --variant "$v" --runs "$RUNS" --warmup "$WARMUP"
		REAL+=("$RAW/$v-real-$boot.txt")
	done
done
if [ "$BENCH" = burst ] && [ "$ICOUNT_RUNS" -gt 0 ]; then
	# Instruction counts do not depend on host load: no busy retries.
	for v in ${ALL:+"$ALL"} ${DPDK:+dpdk}; do
		progress "burst $v under -icount shift=0: $ICOUNT_RUNS runs each"
		CPU_MS=0 BUSY_RETRIES=0 pair "${v%%,*}-icount" --mode burst --variant "$v" --runs "$ICOUNT_RUNS" \
			--warmup "$ICOUNT_WARMUP" --icount --count-rx
		ICOUNT+=("$RAW/${v%%,*}-icount.txt")
	done
fi

# shellcheck disable=SC1091
. "$GUEST/guest.env"
CPU=$(sed -n 's/^model name[[:space:]]*: //p;T;q' /proc/cpuinfo)
ENV=(--env accel=tcg --env clock=real --env "qemu=$(lb_qemu_version)" --env nic=$NIC
	--env backend=dgram-unix --env "cpu=$CPU" --env "runs=$BOOTS"
	--env "boots=$BOOTS" --env "runs_per_boot=$RUNS" --env "warmup_per_boot=$WARMUP"
	--env "guest=Linux $KERNEL_RELEASE ($KERNEL_PKG $KERNEL_VER), busybox initramfs, 256 MiB, -cpu max"
	--env "guest_nic=$GUEST_NIC" --env "guest_kernel=$KERNEL_RELEASE" --env "itr=${ITR:-default}"
	--env "variants=${VARIANTS[*]}"
	--env "host_setting=${BENCH_HOST_SETTING:-host defaults (net.unix.max_dgram_qlen=$(cat /proc/sys/net/unix/max_dgram_qlen))}"
	--env "host_other_cores=$(IFS=,; echo "${OTHER[*]}")")
if [ -n "$DPDK" ]; then
	case "$NIC" in virtio) PMD=net_virtio ;; *) PMD=net_e1000_em ;; esac
	DPDK_ENV="DPDK $(dpkg-query -W -f='${Version}' libdpdk-dev 2>/dev/null) (Debian libdpdk-dev), PMD $PMD,"
	DPDK_ENV+=" NIC bound to uio_pci_generic, 64 x 2 MB hugepages, 512 MiB guest, one RX and one TX queue"
	DPDK_ENV+=" of 512 descriptors, 16 KiB mbufs; frames sent from mbufs built before T1 (no copy);"
	DPDK_ENV+=" the program polls (never sleeps)"
	ENV+=(--env "dpdk=$DPDK_ENV" --env "dpdk_pmd=$PMD")
fi
if [ "$BENCH" = ceiling ]; then
	OUT="$RESULTS/linux-dpdk-ceiling.json"
	python3 "$HERE/collect.py" ceiling --out "$OUT" "${ENV[@]}" --env "ceiling_ms=${LB_CEIL_MS:-1000}" "${REAL[@]}"
elif [ "$BENCH" = window ]; then
	OUT="$RESULTS/linux-stream.json"
	python3 "$HERE/collect.py" window --out "$OUT" "${ENV[@]}" --icount-warmup "$WARMUP" "${REAL[@]}"
elif [ "$BENCH" = rtt ]; then
	OUT="$RESULTS/linux-rtt.json"
	python3 "$HERE/collect.py" rtt --out "$OUT" "${ENV[@]}" "${REAL[@]}"
else
	OUT="$RESULTS/linux-burst.json"
	python3 "$HERE/collect.py" burst --out "$OUT" "${ENV[@]}" \
		--env "clock_t1_insns=icount" --env "icount=shift=0" --env "runs_icount=$ICOUNT_RUNS" \
		--icount-warmup "$ICOUNT_WARMUP" "${REAL[@]}" --icount "${ICOUNT[@]}"
	if [ "$PAIR_MODE" = rtt,burst ]; then
		python3 "$HERE/collect.py" rtt --out "$RESULTS/linux-rtt.json" "${ENV[@]}" "${REAL[@]}"
		progress "wrote $RESULTS/linux-rtt.json"
	fi
fi
progress "wrote $OUT (other processes' cores per pair: ${OTHER[*]})"
