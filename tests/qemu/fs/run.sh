#!/usr/bin/env bash
# make test-fs: the file service on two nodes of this kernel, joined by two
# links (dgram wires), on the cluster runner. The server (user/fsd.c) has
# its own disk image, formatted at the first boot (cache=unsafe: the
# kernel's ATA driver flushes after every page, and the host's fsync per
# page would take most of the test's time; what the test checks of crash
# consistency is the guest's order of writes, which this does not change).
# 1. phase 1: user/fsc_test.c runs every operation, files of 0 B to 32 MiB
#    verified byte for byte and by chunk checksums, every malformed request,
#    large overwrites refused after the go-ahead (k-mid read back unchanged),
#    writes and reads through a visible cut of link 1 (0.5 s after the
#    client prints FSCUT, restored 2 s later) and a silent one (3.5 s,
#    restored at 5.5 s: on a dgram wire the far NIC goes down, this one
#    stays up), fsync, 300 files (more than the server keeps in memory)
#    written and read back, BYE, then a request to the dead server (a
#    clear error within the timeout).
# 2. phase 2: the server boots again on the same disk: the kept files and
#    the 300 are listed with their sizes and read back intact; the table
#    is filled to FS_MAX_FILES, one more create refused.
# 3. the command-line tool (user/fsc.c) runs each of its commands once
#    against the server booted a third time.
# 4. the crash test's short form (crash.py): the server's VM killed at a
#    random moment FS_CRASH_CUTS (2) times, on a disk of its own, each
#    restart checked (fsync'ed files intact, the file in flight absent,
#    empty, whole, or old and new by sector): once serving from memory,
#    once with cache_mb=1 (evicting), each report read by a server of the
#    other kind; `make crashtest` is the long form.
# Both kernels exit 0 only with their frames and resources back to their
# boot counts. About 80 s.
# Usage: tests/qemu/fs/run.sh KERNEL
kernel=$(realpath "$1")
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
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
	local name=$1 phase=$2 out=$logs/$1 t0 why=()
	shift 2
	local prog=fsc_test more=" max_mb=$MAX_MB cut_mb=$CUT_MB timeout_ms=3000"
	[ "$phase" = 3 ] && prog=fsc more=" do=$FSC_DO"
	topology "$name" "$phase" "$prog" "$more" >"$logs/$name.json"
	t0=$(date +%s)
	cluster_run "$out" 120 "$logs/$name.json"
	cluster_need "$out" "$@"
	cluster_events_fired "$out"
	cluster_verdict "$name" "$out" "$t0" 'FAIL|fsd:' 12 || failed=$((failed + 1))
}

trap 'rm -rf "$tmp" "$disk" "$logs"/fs-phase1.json "$logs"/fs-phase2.json "$logs"/fs-tool.json' EXIT
rm -f "$disk"
truncate -s 128M "$disk"
check fs-phase1 1 "s|fsd: formatted 128 MiB" "s|fsd: bye" "c|~SUITE fsc_test: [0-9]+ passed, 0 failed" \
	"c|peer 0 link 1 dead" "s|peer 0 link 1 dead (link down)" "s|KERNEL_EXIT status=0" "c|KERNEL_EXIT status=0"
check fs-phase2 2 "s|~fsd: table copy [01] of generation [0-9]+ in force" "s|fsd: bye" \
	"c|~SUITE fsc_test: [0-9]+ passed, 0 failed" "s|KERNEL_EXIT status=0" "c|KERNEL_EXIT status=0"
check fs-tool 3 "s|fsd: bye" "c|fsc: read k-mid at 0: 300000 bytes" "c|fsc: read t at 100: 19900 bytes" \
	"c|fsc: read t at 0: 10 bytes" "c|fsc: t: 10 bytes" "c|fsc: stats: ok" "c|fsc: bye: ok" \
	"c|run: fsc exited with status 0" "s|KERNEL_EXIT status=0" "c|KERNEL_EXIT status=0"
/usr/bin/python3 "$root/tests/qemu/fs/crash.py" "$kernel" --cuts "${FS_CRASH_CUTS:-2}" \
	--seeds "${FS_CRASH_SEEDS:-1}" || failed=$((failed + 1))
[ "$failed" -eq 0 ]
