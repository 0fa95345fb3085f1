#!/usr/bin/env bash
# make test-run: the demo `make run` shows (tools/run-demo.sh), run without a
# terminal; its output must hold every part the demo promises. Then the
# same runner interrupted mid-run must leave no QEMU and no socket behind.
# Usage: tests/qemu/net/demo.sh KERNEL
set -uo pipefail
kernel=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
logs=$(dirname "$kernel")/test-logs/net
mkdir -p "$logs"
passed=0 failed=0

verdict() { # name reasons...
	local name=$1
	shift
	if [ $# -eq 0 ]; then
		echo "TEST $name ... ok"
		passed=$((passed + 1))
	else
		echo "TEST $name ... FAIL"
		printf '    %s\n' "$@"
		failed=$((failed + 1))
	fi
}

# 1. The whole demo, its output checked line by line.
out=$logs/demo.out
SIZES= RTTS= BURSTS= COLOR=0 LOGDIR=$logs/demo timeout -k 5 150 "$root/tools/run-demo.sh" "$kernel" 60 >"$out" 2>&1
rc=$?
why=()
[ $rc -eq 0 ] || why+=("tools/run-demo.sh exited $rc")
need() { grep -aqE -- "$1" "$out" || why+=("no line matching: $1"); }
need '^server \| READY netdemo server'
need '^client \| netdemo: first round trip [0-9]+ ms'
need '^client \| netdemo: .*measured at boot: [0-9]+ B there, [0-9]+ B here'
num='[0-9]+'
for size in 16 64 1500 4096 8192; do
	need "^client \| +$size B +$num us +$num\.[0-9] Mbit/s +$num (exchanged|copied) .* 1\.00 +[01]\.[0-9]{2} +[0-9.]+ (B|KiB|MiB)\$"
done
# Frames above 4096 bytes are always exchanged (the threshold is at most a
# page); the 30 bytes left in their last page are copied when the threshold
# is at least 30 bytes.
need '^client \| +4096 B .* 128 exchanged \((128 pages\), 3840 B|256 pages\), 0 B) copied '
need '^client \| +8192 B .* 128 exchanged \((256 pages\), 3840 B|384 pages\), 0 B) copied '
need '^client \| netdemo: verified end to end .*: [0-9.]+ MiB = .* 0 bad$'
need '^client \| netdemo: all packets intact'
need '^demo: server: frames free at boot ([0-9]+), at exit \1: all back'
need '^demo: client: frames free at boot ([0-9]+), at exit \1: all back'
need '^demo: ok in [0-9.]+ s'
grep -aqE 'FAIL|LEAK|PANIC' "$out" && why+=("FAIL, LEAK or PANIC in the output")
verdict demo_output "${why[@]}" ${why[@]:+"output: $out"}

# 2. Interrupted while both VMs run: nothing may be left behind.
dir=$logs/demo-interrupted
rm -f "$dir/server.log"
SIZES= RTTS= BURSTS= COLOR=0 LOGDIR=$dir timeout -k 5 150 "$root/tools/run-demo.sh" "$kernel" 60 >"$dir.out" 2>&1 &
runner=$!
for ((t = 0; t < 300; t++)); do
	grep -aq 'READY' "$dir/server.log" 2>/dev/null && break
	sleep 0.1
done
sock=$(pgrep -af -- "$dir/server.log" | grep -o '/tmp/netpair\.[A-Za-z0-9]*' | head -1)
kill -TERM $runner
wait $runner
rc=$?
sleep 0.5
why=()
[ $rc -eq 143 ] || why+=("runner exited $rc, not 143")
[ -n "$sock" ] || why+=("no socket directory seen while running")
[ -n "$sock" ] && [ -e "$sock" ] && why+=("socket directory $sock left behind")
pgrep -f -- "$dir/(server|client).log" >/dev/null && why+=("a QEMU of the demo still runs")
verdict demo_interrupted "${why[@]}"

echo "demo tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
