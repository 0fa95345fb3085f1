#!/usr/bin/env bash
# One self-test boot with the given QEMU devices; passes when the kernel
# exits 0 with no FAIL, every pattern present and the frames balanced.
# Usage: tests/qemu/e1000/boot.sh KERNEL NAME "CMDLINE" "PAT1;PAT2" [qemu args...]
kernel=$1
name=$2
cmdline=$3
pats=$4
shift 4
source "$(dirname "$0")/../lib.sh"
log=$logs/$name.log
start=$(date +%s)
SERIAL=$log "$root/tools/qemu-run.sh" "$kernel" "$cmdline" 60 "$@" >/dev/null 2>"$log.err"
got=$?
IFS=';' read -ra arr <<<"$pats"
why=$(check_log "$log" 0 "$got" "${arr[@]}")
verdict "$name" "$why" "$log" $(($(date +%s) - start))
