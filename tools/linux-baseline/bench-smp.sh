#!/usr/bin/env bash
# bench-smp.sh [--runs N] [--smp N] [--sizes 64,...] [--reps N] [--batch-reps N]
#              [--quick] OUT.json
# Linux's side of make bench-smp: tlbbench (munmap and mremap of pages that
# a thread on the same or another CPU touched, one call for 128 packets or
# 128 calls, and a cold memcpy; tlbbench.c) in one guest of --smp vCPUs
# (default 2), --runs boots in real time (multi-threaded TCG) and --runs
# boots counted by insnplugin.so, alternating; writes the smp rows via
# collect-smp.py (docs/benchmarks.md, "smp").  --quick: the smoke (one boot
# of each kind, sizes 64 and 8192, 3 repetitions; OUT gets its rows too).
# Defaults: 3 runs, Figure 3's sizes (64 to 65536 bytes), 51 repetitions
# per size, 11 for the 128-packet rows.  The guest is built first unless
# LB_PREBUILT=1 (then it must be in LB_BUILD, default build/linux-baseline).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

RUNS=3 SMP=2 SIZES=64,128,256,512,1024,2048,4096,8192,16384,32768,65536 REPS=51 BATCH_REPS=11 QUICK= OUT=
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2; shift ;;
	--smp) SMP=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--batch-reps) BATCH_REPS=$2; shift ;;
	--quick) QUICK=1 ;;
	-*) lb_usage ;;
	*) OUT=$1 ;;
	esac
	shift
done
[ -n "$OUT" ] || lb_usage
[ -n "$QUICK" ] && RUNS=1 SIZES=64,8192 REPS=3 BATCH_REPS=3
lb_check_runs "$RUNS"
GUEST=${LB_BUILD:-$ROOT/build/linux-baseline}
lb_progress_start bench-smp-linux
lb_bench_guest python3 qemu-system-x86
RAW="$GUEST/raw/smp"
lb_fresh_raw "$RAW" "$OUT"

# boot NAME [--count]: one tlbbench boot, logs in $RAW/NAME.
boot() {
	local name=$1
	shift
	"$HERE/run-tlb.sh" --no-build --guest "$GUEST" --smp "$SMP" --sizes "$SIZES" --reps "$REPS" \
		--opt "batch-reps:$BATCH_REPS" --logdir "$RAW/$name" "$@" >"$RAW/$name.out" ||
		lb_die "$name failed (log: $RAW/$name/tlb.txt)"
}

REAL=() COUNT=() OTHER=()
for i in $(seq 1 "$RUNS"); do
	progress "real time, boot $i/$RUNS (-smp $SMP; sizes $SIZES; $REPS repetitions)"
	lb_mark
	boot "real-$i"
	OTHER+=("$(lb_other_cores)")
	REAL+=("$RAW/real-$i")
	progress "counted, boot $i/$RUNS"
	boot "count-$i" --count
	COUNT+=("$RAW/count-$i")
done

# shellcheck disable=SC1091
. "$GUEST/guest.env"
CPU=$(sed -n 's/^model name[[:space:]]*: //p;T;q' /proc/cpuinfo)
python3 "$HERE/collect-smp.py" --out "$OUT" \
	--env accel=tcg --env clock=real+plugin --env "qemu=$(lb_qemu_version)" --env nic=none \
	--env backend=none --env "cpu=$CPU" --env "smp=$SMP" --env "reps=$REPS" --env "batch_reps=$BATCH_REPS" \
	--env "guest=Linux $KERNEL_RELEASE ($KERNEL_PKG $KERNEL_VER), busybox initramfs, 256 MiB, -cpu max, -smp $SMP" \
	--env "guest_kernel=$KERNEL_RELEASE" \
	--env "tcg=multi-threaded (real time); insnplugin.so counts instructions in other boots" \
	--env "host_other_cores=$(IFS=,; echo "${OTHER[*]}")" \
	--real "${REAL[@]}" --count "${COUNT[@]}"
progress "wrote $OUT (other processes' cores per real-time boot: ${OTHER[*]})"
