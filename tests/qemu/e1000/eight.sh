#!/usr/bin/env bash
# Nine e1000 NICs: the driver attaches eight (the registry's limit) and
# names the ninth; NICs 0-1, 2-3, 4-5 and 6-7 are wired pairs (they share
# INTx lines) and the loop self-test runs on every pair.
# Usage: tests/qemu/e1000/eight.sh KERNEL. Prints one TEST line.
kernel=$1
source "$(dirname "$0")/../lib.sh"
name=e1000_eight
log=$logs/$name.log
start=$(date +%s)
# shellcheck disable=SC2046
SERIAL=$log "$root/tools/qemu-run.sh" "$kernel" "run=hello e1000test=loop,detach" 120 \
	$(nic_pair e1000 a b 56 57) $(nic_pair e1000 c d 58 59) $(nic_pair e1000 e f 5a 5b) \
	$(nic_pair e1000 g h 5c 5d) -device e1000,mac=52:54:00:12:34:5e >/dev/null 2>"$log.err"
got=$?
why=$(check_log "$log" 0 "$got" "mac 52:54:00:12:34:5d" "more than 8 NICs" \
	"TEST e1000_loop_2_to_3 ... ok" "TEST e1000_loop_7_to_6 ... ok" \
	"TEST e1000_detach_frees_all ... ok" "e1000test: 19 passed, 0 failed")
grep -q "mac 52:54:00:12:34:5e" "$log" && why+=$'\n'"the ninth NIC was attached"
verdict "$name" "$why" "$log" $(($(date +%s) - start))
