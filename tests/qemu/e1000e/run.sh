#!/usr/bin/env bash
# Every e1000e (82574L, QEMU's -device e1000e) boot test, the driver's
# self-test e1000etest=MODES (drivers/net/e1000e/e1000e_test.c):
#   e1000e_loop  two NICs wired to each other: loop (every size both ways,
#                64 jumbo frames, one doorbell a batch, a long piece split,
#                an overrun counted, interrupt masking, bad input, frame
#                balance) and detach (sends in flight unpinned, every
#                frame back, attached again); about 5 s;
#   e1000e_link  set_link off/on in QEMU's monitor: link-down and link-up
#                interrupts (LSC); about 5 s;
#   e1000e_unwired  one NIC without a peer: attach, MAC, a broadcast batch
#                sent with one doorbell and reclaimed; about 2 s.
# Usage: tests/qemu/e1000e/run.sh KERNEL
# Prints one TEST line per test and "e1000e tests: N passed, M failed".
kernel=$1
source "$(dirname "$0")/../lib.sh"
passed=0
failed=0
count() { if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi; }

loop_pats="82574L 8086:10d3;msi vector;nvm checksum ok;TEST e1000e_loop_0_to_1 ... ok"
loop_pats+=";TEST e1000e_loop_1_to_0 ... ok;TEST e1000e_detach_frees_all ... ok;e1000etest: 14 passed, 0 failed"
# shellcheck disable=SC2046
count "$root/tests/qemu/e1000/boot.sh" "$kernel" e1000e_loop "run=hello e1000etest=loop,detach" \
	"$loop_pats" $(nic_pair e1000e a b 56 57 romfile=)
# shellcheck disable=SC2046
count link_case e1000e_link e1000etest e1000e $(nic_pair e1000e a b 56 57 romfile=)
count "$root/tests/qemu/e1000/boot.sh" "$kernel" e1000e_unwired "run=hello e1000etest=basic" \
	"TEST e1000e_basic_send ... ok;e1000etest: 3 passed, 0 failed" -device e1000e,romfile=
echo "e1000e tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
