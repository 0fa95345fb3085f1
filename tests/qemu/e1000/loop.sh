#!/usr/bin/env bash
# One VM, two e1000 NICs wired to each other: the driver's self-test sends
# gathered batches (60, 1500, 4126, 8990 bytes, and 64 jumbo frames) both
# ways and checks every byte, the counters, interrupt masking, bad input,
# the frame balance, then detaches (all frames back) and attaches again.
# Usage: tests/qemu/e1000/loop.sh KERNEL [MODEL]   MODEL: e1000 (default),
#        e1000-82545em, e1000-82544gc. Prints one TEST line; exit 0 = pass.
kernel=$1
model=${2:-e1000}
source "$(dirname "$0")/../lib.sh"
name=e1000_loop
[ "$model" = e1000 ] || name=e1000_loop_${model#e1000-}
log=$logs/$name.log
start=$(date +%s)
# shellcheck disable=SC2046
SERIAL=$log "$root/tools/qemu-run.sh" "$kernel" "run=hello e1000test=loop,detach" 90 \
	$(two_nics "$model") >/dev/null 2>"$log.err"
got=$?
why=$(check_log "$log" 0 "$got" "mac 52:54:00:12:34:56" "mac 52:54:00:12:34:57" \
	"TEST e1000_loop_0_to_1 ... ok" "TEST e1000_loop_1_to_0 ... ok" \
	"TEST e1000_detach_frees_all ... ok" "e1000test: 13 passed, 0 failed")
verdict "$name" "$why" "$log" $(($(date +%s) - start))
