#!/usr/bin/env bash
# make bench-fs-paper: the file-service figures of the seed papers still
# missing (issue 26), this kernel beside Linux, the systems interleaved
# pair by pair, the same run count for both:
#   [1/4] RI2N/DRV Table 2: a sequential write in 8 KiB and 32 KiB writes,
#         1 and 2 links, MB/s and the client's CPU % (fs_paper.py seq);
#         part seqicount: once more per system on 1 link under -icount,
#         busy instructions per byte at both ends
#   [2/4] RI2N/DRV Table 4: 32 KiB writes through a 10 s cut of one of two
#         links (fs_paper.py wcut), FSP_ROUNDS pairs per system
#   [3/4] SRFS Table 3: a netperf-like stream with a 128 KiB window,
#         directly and with FSP_STREAM_DELAYS ms added (fs_paper.py stream,
#         unpaced links: the window, not a pacer, is the limit)
#   [4/4] SRFS Fig. 3 and the B tables: the four patterns at I/O lengths
#         FSP_B_SIZES with FSP_B_DELAY ms added (fs.py --out-name
#         kernel-fs-srfsb.json; Linux NFSv3, rsize 1 MiB, with and without
#         noac: bench-fs.sh, linux-fs-srfsb.json)
# then REPORT.md's sections (tools/bench/fs_paper_report.py).
# Usage: tools/bench/fs_paper.sh KERNEL OUTDIR
# Environment: FSP_PARTS (seq,seqicount,wcut,stream,srfsb), FSP_RUNS (3),
# FSP_SEQ_BYTES (33554432), FSP_ROUNDS (3), FSP_STREAM_DELAYS (0,3.3,4.0),
# FSP_B_SIZES (8k,64k,256k,1,4,16), FSP_B_DELAY (4.0), FSP_MBPS (100),
# BENCH_PY, LB_BUILD. About 35 minutes on an idle host.
set -euo pipefail
kernel=$1 out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${BENCH_PY:-/usr/bin/python3}
guest=${LB_BUILD:-$root/build/linux-baseline}
parts=${FSP_PARTS:-seq,seqicount,wcut,stream,srfsb} runs=${FSP_RUNS:-3} rounds=${FSP_ROUNDS:-3} mbps=${FSP_MBPS:-100}
fp=("$py" "$root/tools/bench/fs_paper.py")
common=("$kernel" "$out" --guest "$guest" --mbps "$mbps")
"$root/tools/deps.sh" build qemu bench cluster linux
LB_NFS=1 "$root/tools/linux-baseline/build.sh" "$guest"
mkdir -p "$out"
has() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }
# step FIRSTVAR MESSAGE WHAT ARGS...: MESSAGE with the time, then
# fs_paper.py ARGS and the value of the variable FIRSTVAR (--first on a
# part's first run, which starts its rows afresh), which is then cleared;
# "bench-fs-paper: WHAT failed" if it fails.
step() {
	local var=$1 msg=$2 what=$3
	shift 3
	echo "bench-fs-paper: $msg ($(date +%T))"
	"${fp[@]}" "$@" ${!var} || echo "bench-fs-paper: $what failed"
	printf -v "$var" ''
}
if has seq; then
	first=--first
	for links in 1 2; do
		for sys in kernel linux; do
			step first "[1/4] RI2N Table 2, $sys, $links link(s), $runs run(s)" "seq $sys $links" \
				seq "$sys" "${common[@]}" --links "$links" --runs "$runs" --bytes "${FSP_SEQ_BYTES:-33554432}"
		done
	done
fi
if has seqicount; then
	first=--first
	for sys in kernel linux; do
		step first "[1/4] RI2N Table 2 under -icount, $sys, 1 link, 1 run" "seq -icount $sys" \
			seq "$sys" "${common[@]}" --links 1 --runs 1 --icount --bytes "${FSP_SEQ_BYTES:-33554432}"
	done
fi
if has wcut; then
	first=--first
	for r in $(seq 1 "$rounds"); do
		for sys in kernel linux; do
			step first "[2/4] RI2N Table 4, round $r/$rounds, $sys" "wcut $sys" wcut "$sys" "${common[@]}" --links 2
		done
	done
fi
if has stream; then
	first=--first firstrtt=--first
	for d in $(echo "${FSP_STREAM_DELAYS:-0,3.3,4.0}" | tr , ' '); do
		for r in $(seq 1 "$runs"); do
			step first "[3/4] SRFS Table 3, +$d ms, kernel run $r/$runs" "stream kernel +$d" \
				stream kernel "$kernel" "$out" --guest "$guest" --mbps 0 --delay "$d"
		done
		for r in $(seq 1 "$runs"); do
			step firstrtt "[3/4] SRFS Table 3, +$d ms, kernel round trip $r/$runs" "rtt kernel +$d" \
				rtt kernel "$kernel" "$out" --guest "$guest" --mbps 0 --delay "$d"
		done
		step first "[3/4] SRFS Table 3, +$d ms, Linux, $runs run(s)" "stream linux +$d" \
			stream linux "$kernel" "$out" --guest "$guest" --mbps 0 --delay "$d" --runs "$runs"
	done
fi
if has srfsb; then
	sizes=${FSP_B_SIZES:-8k,64k,256k,1,4,16} delay=${FSP_B_DELAY:-4.0}
	echo "bench-fs-paper: [4/4] SRFS B tables, kernel, +$delay ms, $runs run(s) ($(date +%T))"
	"$py" "$root/tools/bench/fs.py" "$kernel" "$out" "$runs" --sizes "$sizes" --links 1 --mbps "$mbps" \
		--delays "$delay" --delay-links 1 --fsync-mb 0 --guest "$guest" --out-name kernel-fs-srfsb.json ||
		echo "bench-fs-paper: srfsb kernel failed"
	echo "bench-fs-paper: [4/4] SRFS B tables, Linux NFSv3, +$delay ms, $runs run(s) ($(date +%T))"
	LB_PREBUILT=1 LB_BUILD=$guest "$root/tools/linux-baseline/bench-fs.sh" --runs "$runs" --sizes "$sizes" \
		--links 1 --mbps "$mbps" --vers 3 --rsize 1048576 --noac 0,1 --delay-ms "$delay" \
		"$out/linux-fs-srfsb.json" || echo "bench-fs-paper: srfsb Linux failed"
fi
echo "bench-fs-paper: REPORT.md's sections ($(date +%T))"
"$py" "$root/tools/bench/fs_paper_report.py" "$out"
