#!/usr/bin/env bash
# Round-trip medians of several kernel images / configurations, boot pairs
# alternating between them (A B C .. A B C ..) so that the shared host's
# noise falls on all alike. Every sample of every pair is pooled per
# configuration and size (the bench's statistic: median of all samples).
# Usage: docs/rtt-profile/compare.sh OUTDIR REPS NAME=KERNEL[:QEMU_EXTRA[:KARGS]] ...
# Run it under the team's VM slot wrapper. Sizes: SIZES (64,1500,2048,8192),
# ITERS (100) timed round trips per size and pair after 5 warm ones.
set -uo pipefail
out=$1 reps=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd) root=$(cd "$here/../.." && pwd)
sizes=${SIZES:-64,1500,2048,8192} iters=${ITERS:-100}
mkdir -p "$out"
for ((r = 1; r <= reps; r++)); do
	for cfg in "$@"; do
		name=${cfg%%=*} rest=${cfg#*=}
		IFS=: read -r kernel extra kargs <<<"$rest"
		d=$out/$name.$r
		QEMU_EXTRA="$extra" timeout 400 "$root/tools/net-pair.sh" "$kernel" \
			"run=pingpong role=server peer=@CMAC0@ copy_threshold=128 $kargs" \
			"run=pingpong role=client peer=@SMAC0@ copy_threshold=128 sizes=$sizes iters=$iters warm=5 $kargs" \
			"$d" 300 >"$d.out" 2>&1 || echo "compare: $name pair $r failed (logs in $d)" >&2
		grep -h "^RTT " "$d/client.log" | sed "s/^/$name /" >>"$out/samples.txt"
	done
done
python3 - "$out/samples.txt" <<'PY'
import re, sys, statistics
v = {}
for line in open(sys.argv[1]):
    name = line.split()[0]
    b, ns = re.search(r"bytes=(\d+) ns=(\d+)", line).groups()
    v.setdefault(name, {}).setdefault(int(b), []).append(int(ns) / 1000)
sizes = sorted({s for d in v.values() for s in d})
print("| config | " + " | ".join(f"{s} B median (n)" for s in sizes) + " |")
print("|---|" + "---|" * len(sizes))
for name, d in v.items():
    print(f"| {name} | " + " | ".join(
        f"{statistics.median(d[s]):.1f} ({len(d[s])})" if s in d else "-" for s in sizes) + " |")
PY
