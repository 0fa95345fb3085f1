#!/usr/bin/env bash
# Profiles both QEMU processes of a round-trip pair on the host with perf
# (software clock, call graphs) while the guests ping-pong one size.
# Usage: docs/rtt-profile/profile.sh kernel|linux SIZE OUTDIR [SECONDS]
# Run it under the team's VM slot wrapper; needs perf and root (or
# perf_event_paranoid <= 1). Writes OUTDIR/{server,client}.{dso,sym,comm}.txt
# (perf report --stdio summaries) and the serial logs; perf.data is removed.
set -uo pipefail
sys=$1 size=$2 out=$3 secs=${4:-8}
here=$(cd "$(dirname "$0")" && pwd) root=$(cd "$here/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
pair=
cleanup() {
	[ -n "$pair" ] && kill -- -"$pair" 2>/dev/null
	rm -f "$out"/*.data "$out"/*.data.old
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
names="-name guest,debug-threads=on"
if [ "$sys" = kernel ]; then
	# warm round trips are neither timed nor printed: no serial output
	# while perf runs.
	setsid env QEMU_EXTRA="$names" "$root/tools/net-pair.sh" "$root/build/kernel.elf" \
		"run=pingpong role=server peer=@CMAC0@" \
		"run=pingpong role=client peer=@SMAC0@ sizes=$size iters=10 warm=60000 timeout_ms=20000" \
		"$out" 300 >"$out/pair.out" 2>&1 &
	pair=$!
	start="run: pingpong role=client"
	slog=$out/server.log clog=$out/client.log
else
	setsid "$root/tools/linux-baseline/run-pair.sh" --mode rtt --sizes "$size" --runs 60000 \
		--warmup 10 --no-build --guest "${GUEST:-$root/build/linux-baseline}" --logdir "$out" \
		--timeout 300 >"$out/pair.out" 2>&1 &
	pair=$!
	start="READY"
	slog=$out/server.log clog=$out/client.log
fi
for ((t = 0; t < 1800; t++)); do
	grep -aq "$start" "$clog" 2>/dev/null && break
	sleep 0.1
done
sleep 2 # past the program's start (Linux: the readiness probes)
spid=$(pgrep -f "^qemu-system-x86_64 .*file:$slog") cpid=$(pgrep -f "^qemu-system-x86_64 .*file:$clog")
[ -n "$spid" ] && [ -n "$cpid" ] || { echo "profile: no QEMU found" >&2; exit 1; }
for side in server client; do
	pid=$spid
	[ $side = client ] && pid=$cpid
	perf record -q -e cpu-clock -F 4000 -g -p "$pid" -o "$out/$side.data" -- sleep "$secs" \
		>/dev/null 2>&1 &
done
# host CPU of each QEMU over the same window (utime+stime, clock ticks)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
s0=$(cpu "$spid") c0=$(cpu "$cpid") w0=$(date +%s.%N)
wait %2 %3 2>/dev/null; sleep 0.5
s1=$(cpu "$spid") c1=$(cpu "$cpid") w1=$(date +%s.%N)
hz=$(getconf CLK_TCK)
awk -v s="$((s1 - s0))" -v c="$((c1 - c0))" -v w0="$w0" -v w1="$w1" -v hz="$hz" \
	'BEGIN { printf "host CPU over %.2f s: server QEMU %.2f cores, client QEMU %.2f cores\n", w1 - w0, s / hz / (w1 - w0), c / hz / (w1 - w0) }' \
	>"$out/hostcpu.txt"
for side in server client; do
	d=$out/$side.data
	perf report -i "$d" --stdio --no-children --sort comm --percent-limit 0.5 -g none 2>/dev/null | grep -v "^$" >"$out/$side.comm.txt"
	perf report -i "$d" --stdio --no-children --sort comm,dso --percent-limit 0.5 -g none 2>/dev/null | grep -v "^$" >"$out/$side.dso.txt"
	perf report -i "$d" --stdio --no-children --sort comm,dso,sym --percent-limit 0.4 -g none 2>/dev/null | grep -v "^$" >"$out/$side.sym.txt"
	perf report -i "$d" --stdio --children --sort sym --percent-limit 3 -g none 2>/dev/null | grep -v "^$" >"$out/$side.children.txt"
done
cat "$out/hostcpu.txt"
