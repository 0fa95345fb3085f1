#!/usr/bin/env bash
# Guest instructions per round trip: one pair under -icount shift=0 (the
# guest TSC counts instructions) with pingpong idle=1, which prints the
# client's busy (not halted) part of each round trip and the server's busy
# time per echo cycle by size.
# Usage: docs/rtt-profile/icount.sh KERNEL OUTDIR   (under the VM slot wrapper)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd) root=$(cd "$here/../.." && pwd)
QEMU_EXTRA="-icount shift=0" "$root/tools/net-pair.sh" "$1" \
	"run=pingpong role=server peer=@CMAC0@ copy_threshold=128 idle=1 icount=1" \
	"run=pingpong role=client peer=@SMAC0@ copy_threshold=128 sizes=64,1500,2048,8192 iters=200 warm=5 idle=1 icount=1" \
	"$2" 300 >/dev/null 2>&1
grep -h "^IDLE\|^SUITE" "$2/client.log" "$2/server.log"
