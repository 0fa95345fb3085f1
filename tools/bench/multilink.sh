#!/usr/bin/env bash
# make bench-multilink: striped streams over 1-4 paced links, this kernel
# (tools/bench/multilink.py) and Linux bonding beside it
# (tools/linux-baseline/bench-multilink.sh, when present), then
# multilink.json, multilink.png and REPORT.md's multi-link section
# (tools/bench/multilink_report.py). Like run-all.sh, the VM pairs run in a
# private network namespace with net.unix.max_dgram_qlen=512; everything
# that needs the network is done first.
# Usage: tools/bench/multilink.sh KERNEL RUNS OUTDIR
# Environment: MULTILINK_LINKS (1,2,3,4), MULTILINK_SIZES (1500,4096,8192),
# MULTILINK_MBPS (the per-link rate; default: a fifth of one unpaced link),
# MULTILINK_SECONDS (per point, 2), BENCH_PY, LB_BUILD.
set -euo pipefail
kernel=$1 runs=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${BENCH_PY:-/usr/bin/python3}
guest=${LB_BUILD:-$root/build/linux-baseline}
linux=$root/tools/linux-baseline/bench-multilink.sh
if [ -z "${BENCH_IN_NETNS:-}" ]; then
	"$root/tools/deps.sh" build qemu bench linux
	[ -x "$linux" ] && "$root/tools/linux-baseline/build.sh" "$guest"
	if [ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null; then
		exec env BENCH_IN_NETNS=1 unshare -n "$0" "$@"
	fi
fi
if [ -n "${BENCH_IN_NETNS:-}" ] && sysctl -qw net.unix.max_dgram_qlen=512; then
	export BENCH_HOST_SETTING="net.unix.max_dgram_qlen=512 (private network namespace; host default 10)"
fi
mkdir -p "$out"
links=${MULTILINK_LINKS:-1,2,3,4} sizes=${MULTILINK_SIZES:-1500,4096,8192}
echo "bench-multilink: [1/3] this kernel, striped ($(date +%T))"
"$py" "$root/tools/bench/multilink.py" "$kernel" "$out" "$runs" --links "$links" --sizes "$sizes" \
	--seconds "${MULTILINK_SECONDS:-2}" ${MULTILINK_MBPS:+--mbps "$MULTILINK_MBPS"}
rm -f "$out/linux-multilink.json"
if [ -x "$linux" ]; then
	rate=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["link_mbps"])' "$out/kernel-multilink.json")
	echo "bench-multilink: [2/3] Linux bonding at $rate Mbit/s a link ($(date +%T))"
	LB_PREBUILT=1 LB_BUILD=$guest ML_BOOTS=$runs ML_LINKS=$links ML_SIZES=$sizes ML_MBPS=$rate \
		"$linux" "$out"
else
	echo "bench-multilink: [2/3] no Linux multi-link benchmark in this tree: kernel rows only"
fi
echo "bench-multilink: [3/3] merged results, plot, REPORT.md ($(date +%T))"
"$py" "$root/tools/bench/multilink_report.py" "$out"
