#!/usr/bin/env bash
# Link changes: the self-test waits for a link-down and a link-up
# configuration interrupt while link_case (../lib.sh) cuts and restores
# NIC 0's link with `set_link` in QEMU's monitor (on a unix socket).
# Usage: tests/qemu/virtio/link.sh KERNEL. Prints one TEST line.
kernel=$1
source "$(dirname "$0")/../lib.sh"
# shellcheck disable=SC2046
link_case virtio_link virtiotest virtio-net $(virtio_pair a b 56 57 disable-legacy=on)
