#!/usr/bin/env bash
# bench-rxcpu.sh [--runs N] [--smp N] [--sizes 64,1500,8192] [--bursts N]
#                [--quick] OUT.json
# Receive into a process on another CPU than the NIC interrupt's, against
# the same CPU (issue 27): one Linux guest of --smp vCPUs (default 2) with
# its e1000 interrupt routed to CPU 0 receives pktbench's AF_PACKET bursts
# from hostburst.py on the host (one VM), the receiver pinned to CPU 0
# (same-cpu) or CPU 1 (other-cpu).  Per layout --runs (3) real-time boots
# (Mbit/s on the host's clock, R1 in TSC ticks) and as many counted by
# insnplugin.so (R1 in instructions on every CPU), interleaved; rows via
# collect-rxcpu.py.  --quick: one boot of each, 2 sizes, 3 bursts.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

RUNS=3 SMP=2 SIZES=64,1500,8192 BURSTS=20 WARMUP=3 OUT=
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2; shift ;;
	--smp) SMP=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--bursts) BURSTS=$2; shift ;;
	--quick) RUNS=1 SIZES=64,8192 BURSTS=3 WARMUP=1 ;;
	-*) lb_usage ;;
	*) OUT=$1 ;;
	esac
	shift
done
lb_args_done
GUEST=${LB_BUILD:-$ROOT/build/linux-baseline}
lb_progress_start bench-rxcpu
lb_bench_guest python3 qemu-system-x86
RAW="$GUEST/raw/rxcpu"
lb_fresh_raw "$RAW" "$OUT"

REAL=() COUNT=() OTHER=()
for i in $(seq 1 "$RUNS"); do
	for layout in same-cpu other-cpu; do
		rx=0
		[ "$layout" = other-cpu ] && rx=1
		for kind in real count; do
			name=$layout-$kind-$i
			progress "$name (-smp $SMP, interrupt on CPU 0, receiver on CPU $rx; sizes $SIZES)"
			args=()
			[ "$kind" = count ] && args=(--count)
			lb_mark
			"$HERE/run-rxcpu.sh" --guest "$GUEST" --smp "$SMP" --irqcpu 0 --rxcpu $rx --sizes "$SIZES" \
				--bursts "$BURSTS" --warmup "$WARMUP" "${args[@]}" \
				--logdir "$RAW/$name" >"$RAW/$name.out" || lb_die "$name failed (logs: $RAW/$name)"
			if [ "$kind" = real ]; then
				OTHER+=("$(lb_other_cores)")
				REAL+=("$layout=$RAW/$name")
			else
				COUNT+=("$layout=$RAW/$name")
			fi
		done
	done
done

# shellcheck disable=SC1091
. "$GUEST/guest.env"
CPU=$(sed -n 's/^model name[[:space:]]*: //p;T;q' /proc/cpuinfo)
python3 "$HERE/collect-rxcpu.py" --out "$OUT" --warmup "$WARMUP" \
	--env accel=tcg --env clock=real+plugin --env "qemu=$(lb_qemu_version)" --env nic=e1000 \
	--env backend=dgram-unix --env "cpu=$CPU" --env "smp=$SMP" --env irq_cpu=0 --env other_cpu=1 \
	--env "bursts=$BURSTS" --env "warmup=$WARMUP" \
	--env "guest=Linux $KERNEL_RELEASE ($KERNEL_PKG $KERNEL_VER), busybox initramfs, 256 MiB, -cpu max, -smp $SMP" \
	--env "sender=hostburst.py on the host (pktbench's burst protocol over the dgram socket)" \
	--env "host_other_cores=$(IFS=,; echo "${OTHER[*]}")" \
	--real "${REAL[@]}" --count "${COUNT[@]}"
progress "wrote $OUT (other processes' cores per real-time boot: ${OTHER[*]})"
