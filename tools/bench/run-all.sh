#!/usr/bin/env bash
# make bench: every benchmark in one run, both systems side by side, then
# the merged JSON, the plots and bench/results/REPORT.md.
#
# Both systems' VM pairs run in a private network namespace whose unix
# datagram queue is raised from the host default of 10 to 512: QEMU's dgram
# backend sends a batch from inside one doorbell write and falls back to a
# slow wake-up-driven path once 10 datagrams are queued, an artefact no real
# link has. The setting is recorded in the results (env.host_setting).
# Usage: tools/bench/run-all.sh KERNEL RUNS
set -euo pipefail
kernel=$1 runs=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/bench/results
if [ -z "${BENCH_IN_NETNS:-}" ] && [ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null; then
	exec env BENCH_IN_NETNS=1 unshare -n "$0" "$@"
fi
if [ -n "${BENCH_IN_NETNS:-}" ] && sysctl -qw net.unix.max_dgram_qlen=512; then
	export BENCH_HOST_SETTING="net.unix.max_dgram_qlen=512 (private network namespace; host default 10)"
else
	export BENCH_HOST_SETTING="host defaults (net.unix.max_dgram_qlen=$(cat /proc/sys/net/unix/max_dgram_qlen))"
fi
echo "bench: $BENCH_HOST_SETTING"
py=$("$root/tools/bench/venv.sh" "$root/build/venv")
mkdir -p "$out"
step() { echo "bench: [$1/6] $2"; }
step 1 "exchange versus copy, in the kernel"
python3 "$root/tools/bench/exchange.py" "$kernel" "$out" "$runs" "$py"
step 2 "round trips, this kernel"
python3 "$root/tools/bench/kernelnet.py" rtt "$kernel" "$out" "$runs"
step 3 "round trips, Linux (AF_PACKET and PACKET_MMAP)"
LB_BOOTS=$runs "$root/tools/linux-baseline/bench.sh" rtt "$out"
step 4 "bursts, this kernel"
python3 "$root/tools/bench/kernelnet.py" burst "$kernel" "$out" "$runs"
step 5 "bursts, Linux (AF_PACKET and PACKET_MMAP)"
LB_BOOTS=$runs "$root/tools/linux-baseline/bench.sh" burst "$out"
step 6 "merged results, plots, REPORT.md"
python3 "$root/tools/bench/report.py" "$out" "$py"
