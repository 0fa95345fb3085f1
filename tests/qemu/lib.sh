# Shared by the QEMU boot tests (e1000/, virtio/, isolate/, and fs/,
# failover/, relay/, stripe/ on the cluster runner, on one host or two): temporary sockets, NICs
# wired in pairs, the log checks and the verdict, the link test driven
# through QEMU's monitor, a cluster run and its checks. Source it; it
# expects $kernel.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
logs=$(dirname "$kernel")/test-logs
mkdir -p "$logs"
tmp=$(mktemp -d "/tmp/$(basename "$(dirname "$0")")test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Two NICs of model $1 wired to each other through unix datagram sockets
# (docs/design.md, "What the code relies on in the emulated hardware":
# lossless with back-pressure, jumbo frames pass): netdevs $2 and $3, MACs
# 52:54:00:12:34:$4 and 52:54:00:12:34:$5, then device options $6 for the
# first NIC and $7 for the second (default $6).
nic_pair() {
	local model=$1 x=$2 y=$3 opt1=${6:+,$6} opt2=${7-${6:-}}
	opt2=${opt2:+,$opt2}
	echo -netdev "dgram,id=$x,local.type=unix,local.path=$tmp/$x,remote.type=unix,remote.path=$tmp/$y" \
		-device "$model,netdev=$x,mac=52:54:00:12:34:$4$opt1" \
		-netdev "dgram,id=$y,local.type=unix,local.path=$tmp/$y,remote.type=unix,remote.path=$tmp/$x" \
		-device "$model,netdev=$y,mac=52:54:00:12:34:$5$opt2"
}
two_nics() { nic_pair "$1" a b 56 57; }

# virtio-net pairs: netdevs $1 and $2, MACs :$3 and :$4, device options $5
# (e.g. disable-legacy=on; empty: the transitional device) and $6 for the
# second NIC (default $5). romfile= keeps iPXE's option ROM from touching
# the devices before us.
virtio_pair() {
	local opt1=${5:-} opt2=${6-${5:-}}
	nic_pair virtio-net-pci "$1" "$2" "$3" "$4" "romfile=${opt1:+,$opt1}" "romfile=${opt2:+,$opt2}"
}

# A suite's boots side by side: par FUNC ARGS... runs FUNC in the
# background (at most SUITE_JOBS, default 2, at once), with a temporary
# directory of its own as $tmp (its NICs' sockets) and its output kept
# apart; par_wait prints each one's output in the order they were started
# and adds their verdicts to $passed and $failed (FUNC returns 0: passed).
par_dirs=()
par() {
	local d
	while [ "$(jobs -rp | wc -l)" -ge "${SUITE_JOBS:-2}" ]; do
		wait -n
	done
	d=$(mktemp -d "$tmp/par.XXXXXX")
	par_dirs+=("$d")
	( tmp=$d; "$@" >"$d/out" 2>&1; echo $? >"$d/status" ) &
}
par_wait() {
	local d
	wait
	for d in "${par_dirs[@]}"; do
		cat "$d/out"
		if [ "$(cat "$d/status" 2>/dev/null)" = 0 ]; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
		fi
	done
	par_dirs=()
}

# Prints the reasons a log fails: kernel status, FAIL lines, missing
# patterns (one per argument), free frames at exit differing from boot.
check_log() {
	local log=$1 want=$2 got=$3 why=()
	shift 3
	[ "$got" = "$want" ] || why+=("kernel status $got, want $want")
	grep -q '\.\.\. FAIL' "$log" && why+=("a TEST failed: $(grep -m3 '\.\.\. FAIL' "$log" | tr '\n' ' ')")
	for p in "$@"; do
		grep -qF -- "$p" "$log" || why+=("missing '$p'")
	done
	local f
	f=$(grep -o 'frames: boot=[0-9]* exit=[0-9]*' "$log" | tail -1)
	[[ "$f" =~ boot=([0-9]+)\ exit=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] ||
		why+=("free frames at exit differ from boot ($f)")
	printf '%s\n' "${why[@]}"
}

# TEST line and exit status from the reasons, one a line (none, or only
# empty lines = pass).
verdict() {
	local name=$1 why=$2 log=$3 secs=$4
	why=$(sed '/^$/d' <<<"$why")
	if [ -z "$why" ]; then
		echo "TEST $name ... ok (${secs}s)"
		return 0
	fi
	echo "TEST $name ... FAIL"
	sed 's/^/    /' <<<"$why"
	echo "    log: $log"
	tail -8 "$log" | sed 's/^/    | /'
	return 1
}

# Sends one command to QEMU's monitor (HMP) on unix socket $1.
monitor() {
	python3 - "$1" "$2" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(5)
s.sendall((sys.argv[2] + "\n").encode())
time.sleep(0.3)
s.close()
PY
}

# Waits (bounded) until log $1 holds $3, while process $2 runs.
wait_for() {
	for _ in $(seq 1 300); do
		grep -qF -- "$3" "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# Link changes: boots with the self-test SELFTEST=link (e1000test,
# virtiotest) and the NICs of the qemu args, netdev a among them. When the
# self-test prints "SELFTEST: waiting for link down" (then "... up"), this
# cuts (then restores) a's link with set_link in QEMU's monitor. Passes when
# the driver saw both ("FAMILY 0: link down", "... up") and the self-test's
# TEST lines <SELFTEST without "test">_link_down_irq and _link_up_irq are ok.
# Usage: link_case NAME SELFTEST FAMILY qemu-args... Prints one TEST line.
link_case() {
	local name=$1 st=$2 family=$3 log=$logs/$1.log mon=$tmp/monitor start qpid got why
	local steps=()
	shift 3
	rm -f "$log"
	start=$(date +%s)
	SERIAL=$log "$root/tools/qemu-run.sh" "$kernel" "run=hello $st=link" 90 "$@" \
		-monitor "unix:$mon,server,nowait" >/dev/null 2>"$log.err" &
	qpid=$!
	wait_for "$log" "$qpid" "$st: waiting for link down" && monitor "$mon" "set_link a off" &&
		steps+=(off)
	wait_for "$log" "$qpid" "$st: waiting for link up" && monitor "$mon" "set_link a on" &&
		steps+=(on)
	wait "$qpid"
	got=$?
	why=$(check_log "$log" 0 "$got" "$family 0: link down" "$family 0: link up" \
		"TEST ${st%test}_link_down_irq ... ok" "TEST ${st%test}_link_up_irq ... ok")
	[ "${steps[*]}" = "off on" ] || why+=$'\n'"monitor steps done: '${steps[*]}'"
	verdict "$name" "$why" "$log" $(($(date +%s) - start))
}

# The cluster runner's tests: a run and its checks, each adding the reasons
# it fails to the caller's array why.

# cluster_run OUT TIMEOUT TOPOLOGY [runner options]: runs TOPOLOGY with the
# nodes' logs in OUT (emptied first), the runner's output in OUT.runner.
cluster_run() {
	local out=$1 timeout=$2 topo=$3 rc
	shift 3
	rm -rf "$out"
	mkdir -p "$(dirname "$out")"
	"$root/tools/cluster/run" "$topo" "$@" --out "$out" --timeout "$timeout" >"$out.runner" 2>&1
	rc=$?
	[ $rc -eq 0 ] || why+=("the runner exited $rc (a node failed or timed out)")
}

# cluster_need OUT CHECK...: each CHECK is "node|pattern" (a fixed string
# in OUT/node.log), "node|!pattern" (must not appear) or "node|~regex"
# (extended regex).
cluster_need() {
	local out=$1 c node pat
	shift
	for c in "$@"; do
		node=${c%%|*} pat=${c#*|}
		case ${pat:0:1} in
		'!') grep -aqF -- "${pat:1}" "$out/$node.log" 2>/dev/null && why+=("$node: has '${pat:1}'") ;;
		'~') grep -aqE -- "${pat:1}" "$out/$node.log" 2>/dev/null || why+=("$node: nothing matches '${pat:1}'") ;;
		*) grep -aqF -- "$pat" "$out/$node.log" 2>/dev/null || why+=("$node: missing '$pat'") ;;
		esac
	done
}

# cluster_events_fired OUT: every event of the run (cut, restore) fired
# without an error, as OUT/summary.json says.
cluster_events_fired() {
	/usr/bin/python3 -c 'import json,sys; e=[x for x in json.load(open(sys.argv[1]))["events"] if x.get("error") or not x.get("fired")]; sys.exit(1 if e else 0)' \
		"$1/summary.json" 2>/dev/null || why+=("an event did not fire cleanly (summary.json)")
}

# cluster_crossed OUT: a run across hosts (--hosts) really was one: its
# nodes on two hosts at least, every VXLAN device carried frames both ways
# (OUT/summary.json), and no namespace of the run is left.
cluster_crossed() {
	/usr/bin/python3 - "$1/summary.json" <<'PY' || why+=("not a clean run across hosts (summary.json: hosts, vxlan)")
import json, subprocess, sys
s = json.load(open(sys.argv[1]))
used = {n["host"] for n in s["nodes"]}
vx = [d for h in s["vxlan"].values() for d in h.values()]
left = [h["namespace"] for h in s["hosts"] if h["namespace"] in subprocess.run(
    ["ip", "netns", "list"], capture_output=True, text=True).stdout.split()]
sys.exit(0 if len(used) >= 2 and vx and all(d["tx_packets"] and d["rx_packets"] for d in vx) and not left else 1)
PY
}

# cluster_verdict NAME OUT T0 SHOW LINES: no TEST line FAILed in OUT's
# logs, then the TEST line; on failure the reasons and at most LINES log
# lines matching regex SHOW. Returns 0 if it passed.
cluster_verdict() {
	local name=$1 out=$2 t0=$3 show=$4 lines=$5
	grep -aq '\.\.\. FAIL' "$out"/*.log 2>/dev/null && why+=("a TEST failed")
	if [ ${#why[@]} -eq 0 ]; then
		echo "TEST $name ... ok ($(($(date +%s) - t0))s)"
		return 0
	fi
	echo "TEST $name ... FAIL"
	printf '    %s\n' "${why[@]}" "logs: $out"
	grep -a -h -E "$show" "$out"/*.log 2>/dev/null | head -"$lines" | sed 's/^/    | /'
	return 1
}
