#!/usr/bin/env bash
# Every e1000/PCI boot test: the loop on the three QEMU models, eight NICs
# (plus a ninth refused), link changes, MSI, an unwired NIC, Bochs.
# Usage: tests/qemu/e1000/run.sh KERNEL [skip-bochs]
# Prints one TEST line per test and "e1000 tests: N passed, M failed".
kernel=$1
d=$(dirname "$0")
# shellcheck source=../lib.sh
. "$d/../lib.sh"
passed=0
failed=0
# Two at a time (par, ../lib.sh): each script has its own sockets and log.
run() { par "$@"; }
run "$d/loop.sh" "$kernel" e1000
run "$d/loop.sh" "$kernel" e1000-82545em
run "$d/loop.sh" "$kernel" e1000-82544gc
run "$d/eight.sh" "$kernel"
run "$d/link.sh" "$kernel"
# A NIC with no peer: attach, MAC and a send that goes nowhere.
run "$d/boot.sh" "$kernel" e1000_unwired "run=hello e1000test=basic" \
	"TEST e1000_basic_send ... ok;e1000test: 3 passed, 0 failed" -device e1000
run "$d/boot.sh" "$kernel" pci_msi "run=hello e1000test=msi" \
	"TEST pci_msi_edu ... ok;16 of 16 interrupts" -nic none -device edu
if [ "${2:-}" != skip-bochs ] && command -v bochs >/dev/null && command -v grub-mkrescue >/dev/null; then
	run "$d/bochs.sh" "$kernel"
fi
par_wait
echo "e1000 tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
