#!/usr/bin/env bash
# make test-fs: the file service on two nodes of this kernel, joined by two
# links (dgram wires), on the cluster runner. The server (user/fsd.c) has
# its own disk image, formatted at the first boot (cache=unsafe: the
# kernel's ATA driver flushes after every page, and the host's fsync per
# page would take most of the test's time; what the test checks of crash
# consistency is the guest's order of writes, which this does not change).
# 1. phase 1: user/fsc_test.c runs every operation, files of 0 B to 32 MiB
#    verified byte for byte and by chunk checksums, every malformed request,
#    writes and reads through a visible cut of link 1 (0.5 s after the
#    client prints FSCUT, restored 2 s later) and a silent one (3.5 s,
#    restored at 5.5 s: on a dgram wire the far NIC goes down, this one
#    stays up), fsync, BYE, then a request to the dead server (a clear
#    error within the timeout).
# 2. phase 2: the server boots again on the same disk: the kept files are
#    listed with their sizes and read back intact.
# 3. the command-line tool (user/fsc.c) runs each of its commands once
#    against the server booted a third time.
# Both kernels exit 0 only with their frames and resources back to their
# boot counts. About 40 s.
# Usage: tests/qemu/fs/run.sh KERNEL
set -uo pipefail
kernel=$(realpath "$1")
root=$(cd "$(dirname "$0")/../../.." && pwd)
logs=$(dirname "$kernel")/test-logs
mkdir -p "$logs"
disk=$logs/fs-disk.img
failed=0
MAX_MB=${FS_MAX_MB:-32}
CUT_MB=${FS_CUT_MB:-2}

# Phase 3 runs the command-line tool: every command once.
# (A program's arguments are at most 255 bytes.)
FSC_DO="list+stat:k-mid+read:k-mid:0:300000:3+create:t+write:t:0:20000:5+read:t:100:20000:5+truncate:t:10"
FSC_DO+="+stat:t+fsync:t+close:t+open:t+read:t:0:99:5+fsync+unlink:t+stats+bye"

# topology NAME PHASE PROGRAM ARGS: the two nodes on two dgram wires; the
# client runs PROGRAM with ARGS.
topology() {
	local cut_events=""
	[ "$2" = 1 ] && cut_events='
  {"after": {"node": "c", "line": "FSCUT"}, "delay": 0.5, "action": "cut-visible", "node": "c", "nic": 1},
  {"after": {"node": "c", "line": "FSCUT"}, "delay": 2.5, "action": "restore", "node": "c", "nic": 1},
  {"after": {"node": "c", "line": "FSCUT"}, "delay": 3.5, "action": "cut-silent", "node": "c", "nic": 1},
  {"after": {"node": "c", "line": "FSCUT"}, "delay": 5.5, "action": "restore", "node": "c", "nic": 1}'
	cat <<JSON
{"name": "$1", "timeout": 120,
 "networks": [{"name": "w0", "wire": "dgram"}, {"name": "w1", "wire": "dgram"}],
 "nodes": [
  {"name": "s", "kernel": "$kernel", "mem": "384M",
   "append": "run=fsd nics=0,1 peer=@MAC:c:0@,@MAC:c:1@ disk_mb=128 idle_s=90",
   "nics": [{"net": "w0"}, {"net": "w1"}],
   "qemu_extra": ["-drive", "file=$disk,if=ide,format=raw,cache=unsafe"]},
  {"name": "c", "kernel": "$kernel", "mem": "384M",
   "append": "run=$3 phase=$2 nics=0,1 peer=@MAC:s:0@,@MAC:s:1@ $4",
   "nics": [{"net": "w0"}, {"net": "w1"}],
   "start_after": {"node": "s", "line": "READY fsd"}}
 ],
 "events": [$cut_events
 ]}
JSON
}

# name phase, then checks "node|pattern" (fixed string) or "node|~regex".
check() {
	local name=$1 phase=$2 out=$logs/$1 t0 rc why=()
	shift 2
	rm -rf "$out"
	local prog=fsc_test more=" max_mb=$MAX_MB cut_mb=$CUT_MB timeout_ms=3000"
	[ "$phase" = 3 ] && prog=fsc more=" do=$FSC_DO"
	topology "$name" "$phase" "$prog" "$more" >"$logs/$name.json"
	t0=$(date +%s)
	"$root/tools/cluster/run" "$logs/$name.json" --out "$out" --timeout 120 >"$out.runner" 2>&1
	rc=$?
	[ $rc -eq 0 ] || why+=("the runner exited $rc (a node failed or timed out)")
	for c in "$@"; do
		local node=${c%%|*} pat=${c#*|}
		case ${pat:0:1} in
		'~') grep -aqE -- "${pat:1}" "$out/$node.log" 2>/dev/null || why+=("$node: nothing matches '${pat:1}'") ;;
		*) grep -aqF -- "$pat" "$out/$node.log" 2>/dev/null || why+=("$node: missing '$pat'") ;;
		esac
	done
	/usr/bin/python3 -c 'import json,sys; e=[x for x in json.load(open(sys.argv[1]))["events"] if x.get("error") or not x.get("fired")]; sys.exit(1 if e else 0)' \
		"$out/summary.json" 2>/dev/null || why+=("an event did not fire cleanly (summary.json)")
	grep -aq '\.\.\. FAIL' "$out"/*.log 2>/dev/null && why+=("a TEST failed")
	if [ ${#why[@]} -eq 0 ]; then
		echo "TEST $name ... ok ($(($(date +%s) - t0))s)"
		return
	fi
	echo "TEST $name ... FAIL"
	printf '    %s\n' "${why[@]}" "logs: $out"
	grep -a -h -E 'FAIL|fsd:' "$out"/*.log 2>/dev/null | head -12 | sed 's/^/    | /'
	failed=$((failed + 1))
}

trap 'rm -f "$disk" "$logs"/fs-phase1.json "$logs"/fs-phase2.json "$logs"/fs-tool.json' EXIT
rm -f "$disk"
truncate -s 128M "$disk"
check fs-phase1 1 "s|fsd: formatted 128 MiB" "s|fsd: bye" "c|~SUITE fsc_test: [0-9]+ passed, 0 failed" \
	"c|peer 0 link 1 dead" "s|peer 0 link 1 dead (link down)" "s|KERNEL_EXIT status=0" "c|KERNEL_EXIT status=0"
check fs-phase2 2 "s|~fsd: table copy [01] of generation [0-9]+ in force" "s|fsd: bye" \
	"c|~SUITE fsc_test: [0-9]+ passed, 0 failed" "s|KERNEL_EXIT status=0" "c|KERNEL_EXIT status=0"
check fs-tool 3 "s|fsd: bye" "c|fsc: read k-mid at 0: 300000 bytes" "c|fsc: read t at 100: 19900 bytes" \
	"c|fsc: read t at 0: 10 bytes" "c|fsc: t: 10 bytes" "c|fsc: stats: ok" "c|fsc: bye: ok" \
	"c|run: fsc exited with status 0" "s|KERNEL_EXIT status=0" "c|KERNEL_EXIT status=0"
[ "$failed" -eq 0 ]
