#!/usr/bin/env bash
# make bench-fs: the file service against Linux NFS (issue 15; SRFS on Ether
# appendix A, RI2N/DRV Tables 2 and 4): [1/3] this kernel (tools/bench/fs.py:
# user/fsd.c and user/fsbench.c over 1 and 2 paced links, a read through a
# link cut, and 3.3 ms added by a Linux netem router guest), [2/3] Linux NFS
# (tools/linux-baseline/bench-fs.sh over links 1,2, then again with
# --delay-ms 3.3), [3/3] fs.json, fs.png and REPORT.md's file-service
# section (tools/bench/fs_report.py). Between [2/3] and [3/3], the CPU work
# (issue 26; tools/bench/fs_cpu.py): FS_CPU_RUNS rounds, each one -icount
# boot pair per system and mode, interleaved (this kernel paced, Linux
# paced, this kernel unpaced, Linux unpaced): busy instructions per byte at
# both ends (kernel-fs-cpu.json, linux-fs-cpu.json).
# Usage: tools/bench/fs.sh KERNEL OUTDIR
# Environment: FS_RUNS (this kernel's runs, 3), FS_LINUX_RUNS (1),
# FS_SIZES (MiB, 1,2,4,8,16,32), FS_LINKS (1,2), FS_DELAY_MS (3.3; 0: no
# delay cells), FS_DELAY_LINKS (1), FS_MBPS (100), FS_QUICK=1 (sizes 1,4,
# one run, Linux NFSv4.2 with 1 MiB rsize only, no settings sweep: the
# harness in a few minutes, not the benchmark), FS_SWEEP (the service's
# settings compared first, fs.py --sweep; default below, empty: none;
# about 40 s a setting), FS_SKIP_LINUX=1, FS_CPU_RUNS (3; 0: no CPU work;
# about 10 min a round), FS_CPU_LENS (bytes, fs_cpu.py's default:
# 8 KiB to 16 MiB), FS_CPU_OFFERED (Mbit/s, 40), BENCH_PY, LB_BUILD.
set -euo pipefail
kernel=$1 out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${BENCH_PY:-/usr/bin/python3}
guest=${LB_BUILD:-$root/build/linux-baseline}
linux=$root/tools/linux-baseline/bench-fs.sh
runs=${FS_RUNS:-3} lruns=${FS_LINUX_RUNS:-1} sizes=${FS_SIZES:-1,2,4,8,16,32} links=${FS_LINKS:-1,2}
delay=${FS_DELAY_MS-3.3} dlinks=${FS_DELAY_LINKS:-1} mbps=${FS_MBPS:-100}
sweep=${FS_SWEEP-default;streams=1;streams=4;chunk=65536;chunk=1048576;window=1;window=4;small_max=0}
lopts=() cruns=${FS_CPU_RUNS:-3} copts=(--offered-mbps "${FS_CPU_OFFERED:-40}" --link-mbps "$mbps")
[ -n "${FS_CPU_LENS:-}" ] && copts+=(--lens "$FS_CPU_LENS")
if [ -n "${FS_QUICK:-}" ]; then
	runs=1 lruns=1 sizes=${FS_SIZES:-1,4} sweep=${FS_SWEEP-} cruns=${FS_CPU_RUNS:-1}
	copts+=(--lens "${FS_CPU_LENS:-8192,4194304}" --bytes 4194304)
	lopts=(--vers 4.2 --rsize 1048576)
fi
"$root/tools/deps.sh" build qemu bench cluster linux
LB_NFS=1 "$root/tools/linux-baseline/build.sh" "$guest" # the NFS guest, also the kernel's delay router
mkdir -p "$out"
rm -f "$out/kernel-fs.json" "$out/kernel-fs-sweep.json" "$out/linux-fs.json" "$out"/linux-fs-delay*.json \
	"$out/kernel-fs-cpu.json" "$out/linux-fs-cpu.json" "$out/fs-cpu.samples.jsonl"
delays=0
case "$delay" in '' | 0) ;; *) delays="0,$delay" ;; esac
echo "bench-fs: [1/3] this kernel: $runs run(s), sizes $sizes MiB, links $links, delays $delays ms ($(date +%T))"
"$py" "$root/tools/bench/fs.py" "$kernel" "$out" "$runs" --sizes "$sizes" --links "$links" --mbps "$mbps" \
	--delays "$delays" --delay-links "$dlinks" --guest "$guest" ${sweep:+--sweep "$sweep"} ||
	echo "bench-fs: some kernel cells failed (see kernel-fs.json's cells)"
if [ -n "${FS_SKIP_LINUX:-}" ] || [ ! -x "$linux" ]; then
	echo "bench-fs: [2/3] Linux NFS skipped: kernel rows only"
else
	echo "bench-fs: [2/3] Linux NFS, links $links, $lruns run(s) ($(date +%T))"
	LB_PREBUILT=1 LB_BUILD=$guest "$linux" --runs "$lruns" --sizes "$sizes" --links "$links" --mbps "$mbps" \
		"${lopts[@]}" "$out/linux-fs.json" || echo "bench-fs: the Linux part failed"
	if [ "$delays" != 0 ]; then
		echo "bench-fs: [2/3] Linux NFS, +$delay ms, links $dlinks ($(date +%T))"
		LB_PREBUILT=1 LB_BUILD=$guest "$linux" --runs "$lruns" --sizes "$sizes" --links "$dlinks" \
			--mbps "$mbps" --delay-ms "$delay" "${lopts[@]}" "$out/linux-fs-delay$delay.json" ||
			echo "bench-fs: the Linux delay part failed"
	fi
fi
first=--first
for round in $(seq 1 "$cruns"); do
	for mode in cpu unpaced; do
		for sys in kernel linux; do
			[ "$sys" = linux ] && { [ -n "${FS_SKIP_LINUX:-}" ] || [ ! -x "$linux" ]; } && continue
			echo "bench-fs: [2/3] CPU work, round $round/$cruns, $sys, $mode, -icount ($(date +%T))"
			"$py" "$root/tools/bench/fs_cpu.py" "$sys" "$mode" "$kernel" "$out" $first --guest "$guest" \
				"${copts[@]}" || echo "bench-fs: CPU work $sys $mode failed or not verified"
			first=
		done
	done
done
echo "bench-fs: [3/3] merged results, plot, REPORT.md ($(date +%T))"
"$py" "$root/tools/bench/fs_report.py" "$out"
