#!/usr/bin/env bash
# make bench-compare: this checkout's kernel against another commit's, in
# one run of the same harness (tools/bench/kernelnet.py rtt and burst with
# --kernel-variant): their boot pairs alternate, so a drift of the host
# hits both alike. The other commit is built in a worktree of its own.
# Writes OUTDIR/kernel-*.json, kernel-old-*.json, compare.json and
# compare.md (tools/bench/compare.py: NEW / OLD per size, and whether the
# per-boot medians overlap). Runs in a private network namespace with the
# unix datagram queue raised, as make bench does.
# Usage: tools/bench/compare-kernels.sh KERNEL REV RUNS OUTDIR [SIZES]
set -euo pipefail
kernel=$(realpath "$1") rev=$2 runs=$3 out=$4 sizes=${5:-64,1500,8192}
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${BENCH_PY:-/usr/bin/python3}
if [ -z "${COMPARE_IN_NETNS:-}" ]; then
	"$root/tools/deps.sh" build qemu bench
	src=$root/build/compare-src old=$root/build/compare-old
	rm -rf "$src" "$old"
	git -C "$root" worktree prune
	git -C "$root" worktree add --detach "$src" "$rev" >/dev/null
	trap 'git -C "$root" worktree remove --force "$src" 2>/dev/null || true' EXIT
	make -C "$src" BUILD="$old" "$old/kernel.elf" >/dev/null
	KERNEL_REV_KERNEL=$(git -C "$root" describe --always --dirty)
	KERNEL_REV_KERNEL_OLD=$(git -C "$src" rev-parse --short HEAD)
	echo "bench-compare: $KERNEL_REV_KERNEL against $KERNEL_REV_KERNEL_OLD"
	export COMPARE_OLD=$old/kernel.elf KERNEL_REV_KERNEL KERNEL_REV_KERNEL_OLD
	if [ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null; then
		COMPARE_IN_NETNS=1 unshare -n "$0" "$@"
		exit
	fi
fi
# T1 and R1 from three -icount pairs per kernel, so they have a spread.
export ICOUNT_PAIRS=${ICOUNT_PAIRS:-3}
[ -n "${COMPARE_IN_NETNS:-}" ] && sysctl -qw net.unix.max_dgram_qlen=512 || true
mkdir -p "$out"
for b in rtt burst; do
	"$py" "$root/tools/bench/kernelnet.py" "$b" "$kernel" "$out" "$runs" --sizes "$sizes" \
		--kernel-variant "kernel-old=$COMPARE_OLD" --nic "${NIC:-e1000}"
done
"$py" "$root/tools/bench/compare.py" "$out" kernel kernel-old
