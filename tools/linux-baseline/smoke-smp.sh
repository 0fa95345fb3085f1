#!/usr/bin/env bash
# smoke-smp.sh [BUILD_DIR] [LOGDIR]: the TLB-shootdown smoke (part of
# selftest.sh; make test-linux-smp alone): one guest with -smp 2 runs
# tlbbench at 64 and 8192 bytes, 3 repetitions, under insnplugin.so; fails
# unless both CPUs came up, the second thread ran on the other CPU (in at
# least one window of each row), every
# moved or copied byte matched, a remote munmap sent a TLB-shootdown IPI
# (in at least one repetition of each row),
# the plugin's windows match tlbbench's lines (collect-smp.py) and the rows
# are in the smp format (tools/bench/check_schema.py).  About
# 20 s; the guest must be built (LB_PREBUILT) or is built first.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

GUEST=${1:-$ROOT/build/linux-baseline}
LOGS=${2:-$GUEST/logs/smoke-smp}
lb_bench_guest python3 qemu-system-x86
rm -rf "$LOGS"
mkdir -p "$LOGS"
"$HERE/run-tlb.sh" --no-build --guest "$GUEST" --smp 2 --count --sizes 64,8192 --reps 3 \
	--opt batch-reps:3 --timeout 180 --logdir "$LOGS/boot" >"$LOGS/boot.out"
python3 "$HERE/collect-smp.py" --out "$LOGS/smp.json" --real "$LOGS/boot" --count "$LOGS/boot" \
	--env accel=tcg --env clock=plugin --env "qemu=$(lb_qemu_version)" --env nic=none --env backend=none \
	--env "cpu=$(sed -n 's/^model name[[:space:]]*: //p;T;q' /proc/cpuinfo)" >"$LOGS/table.txt"
python3 - "$LOGS/smp.json" "$ROOT/tools/bench" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
import check_schema  # noqa: E402
faults = check_schema.check_file(sys.argv[1], "smp", None)
assert not faults, f"not the smp format: {faults}"
rows = json.load(open(sys.argv[1]))["rows"]
remote = [r for r in rows if r["system"] == "linux-munmap" and r["op"] == "exchange_remote"]
# ipis is the mean over the row's repetitions. Linux skips the IPI to a CPU
# that left the address space for a moment (lazy TLB: it flushes as it
# comes back), which the host's scheduling of the vCPUs decides: one of
# three munmaps at 64 B without one failed make test once (0.67). Each row
# must show the shootdown in at least one repetition.
assert remote and all(r["ipis"] > 0 for r in remote), "no TLB-shootdown IPI in a remote munmap"
# The other CPU's thread spins in a window unless the host gave its vCPU
# no time then (a timing matter, not a fault): at least one window of each
# row must have it, and the IPI check above shows the shootdown.
assert all(int(r["remote_ran"].split("/")[0]) >= 1
           for r in rows if r["layout"] == "other-cpu"), "the other CPU's thread spun in no window"
local = [r for r in rows if r["op"] == "exchange_local"]
assert local and all(r["ipis"] == 0 for r in local), "an IPI in a one-CPU exchange"
r = remote[-1]
print(f"munmap 8 KiB on the other CPU: {r['insns']:.0f} insns, {r['ipis']:.0f} IPI; "
      f"{len(rows)} rows")
PY
