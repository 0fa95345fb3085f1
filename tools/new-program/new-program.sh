#!/usr/bin/env bash
# make new-program NAME=x: writes user/x.c from tools/new-program/template.c
# (a working, tested skeleton: a channel on one VM's two wired NICs, a
# batch sent, received and checked byte for byte) and its boot case in
# tests/qemu/programs/cases.txt, which make test-qemu runs.
# Refuses a NAME that is not a C identifier, is longer than a program name
# may be (31), or names a program or case that exists.
# Usage: tools/new-program/new-program.sh NAME [ROOT]   (ROOT: the checkout)
set -euo pipefail
name=${1:-}
root=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
here=$(cd "$(dirname "$0")" && pwd)
cases=$root/tests/qemu/programs/cases.txt

die() { echo "new-program: $*" >&2; exit 1; }
[ -n "$name" ] || die "usage: make new-program NAME=x (x a C identifier)"
[[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "'$name' is not a C identifier"
[ "${#name}" -le 31 ] || die "'$name' is longer than 31 characters (a program name's limit)"
[ ! -e "$root/user/$name.c" ] || die "user/$name.c exists"
! grep -qE "^$name[[:space:]]*\|" "$cases" 2>/dev/null || die "a case named $name exists in $cases"

sed "s/@NAME@/$name/g" "$here/template.c" >"$root/user/$name.c"
printf '%-12s | 60 | run=%s | SUITE %s: \n' "$name" "$name" "$name" >>"$cases"
echo "new-program: wrote user/$name.c and its boot case in tests/qemu/programs/cases.txt"
echo "new-program: make test-qemu (or tests/qemu/programs/run.sh build/kernel.elf) boots it"
