#!/usr/bin/env bash
# Five e1000 NICs: the driver attaches four (its limit) and names the fifth;
# NICs 0-1 and 2-3 are wired pairs (they share INTx lines) and the loop
# self-test runs on both pairs.
# Usage: tests/qemu/e1000/four.sh KERNEL. Prints one TEST line.
kernel=$1
source "$(dirname "$0")/../lib.sh"
name=e1000_four
log=$logs/$name.log
start=$(date +%s)
# shellcheck disable=SC2046
SERIAL=$log "$root/tools/qemu-run.sh" "$kernel" "run=hello e1000test=loop,detach" 120 \
	$(nic_pair e1000 a b 56 57) $(nic_pair e1000 c d 58 59) \
	-device e1000,mac=52:54:00:12:34:5a >/dev/null 2>"$log.err"
got=$?
why=$(check_log "$log" 0 "$got" "mac 52:54:00:12:34:59" "more than 4 NICs" \
	"TEST e1000_loop_2_to_3 ... ok" "TEST e1000_loop_3_to_2 ... ok" \
	"TEST e1000_detach_frees_all ... ok" "e1000test: 15 passed, 0 failed")
grep -q "mac 52:54:00:12:34:5a" "$log" && why+=$'\n'"the fifth NIC was attached"
verdict "$name" "$why" "$log" $(($(date +%s) - start))
