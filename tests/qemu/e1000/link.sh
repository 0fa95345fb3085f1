#!/usr/bin/env bash
# Link changes: the self-test waits for a link-down and a link-up interrupt
# (LSC) while link_case (../lib.sh) cuts and restores NIC 0's link with
# `set_link` in QEMU's monitor (on a unix socket).
# Usage: tests/qemu/e1000/link.sh KERNEL [MODEL]. Prints one TEST line.
kernel=$1
model=${2:-e1000}
source "$(dirname "$0")/../lib.sh"
name=e1000_link
[ "$model" = e1000 ] || name=e1000_link_${model#e1000-}
# shellcheck disable=SC2046
link_case "$name" e1000test e1000 $(two_nics "$model")
