#!/usr/bin/env bash
# make new-program's own test (run by make test-docs, about 15 s): names
# that are not C identifiers, too long, or of an existing program are
# refused with nothing written; then a program is generated into a scratch
# copy of the tree (sources linked, user/ and the cases file its own, the
# kernel's objects copied from BUILD so only the program and the link are
# new), built, and booted once on one VM by tests/qemu/programs/run.sh.
# The checkout itself is never written.
# Usage: tools/new-program/selftest.sh [BUILD]   (default: build)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$root" && realpath -m "${1:-build}")
gen=$root/tools/new-program/new-program.sh
tmp=$(mktemp -d /tmp/newprog.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

result() { # name ok(0|1)
	if [ "$2" = 0 ]; then echo "TEST new-program: $1 ... ok"; passed=$((passed + 1))
	else echo "TEST new-program: $1 ... FAIL"; failed=$((failed + 1)); fi
}

# The scratch tree: everything linked but user/ and the programs' cases.
for f in Makefile linker.ld boot kernel drivers lib tools; do ln -s "$root/$f" "$tmp/$f"; done
mkdir -p "$tmp/user" "$tmp/tests/qemu/programs" "$tmp/build"
ln -s "$root/tests/host" "$tmp/tests/host" # the Makefile includes host.mk
ln -s "$root/tests/qemu/lib.sh" "$tmp/tests/qemu/lib.sh"
ln -s "$root/tests/qemu/programs/run.sh" "$tmp/tests/qemu/programs/run.sh"
cp "$root/tests/qemu/programs/cases.txt" "$tmp/tests/qemu/programs/cases.txt"
cp "$root/user/hello.c" "$tmp/user/hello.c"

refused() { # what NAME: must fail and write nothing
	local before after
	before=$(ls "$tmp/user" | md5sum; md5sum <"$tmp/tests/qemu/programs/cases.txt")
	"$gen" "$2" "$tmp" >/dev/null 2>&1
	local rc=$?
	after=$(ls "$tmp/user" | md5sum; md5sum <"$tmp/tests/qemu/programs/cases.txt")
	[ "$rc" != 0 ] && [ "$before" = "$after" ]
	result "refuses $1 ($2)" $?
}
refused "a name starting with a digit" 1prog
refused "a name with a dash" my-prog
refused "a name with a slash" ../evil
refused "an empty name" ""
refused "an existing program" hello
refused "a name over 31 characters" abcdefghijklmnopqrstuvwxyz0123456

name=np_selftest
"$gen" "$name" "$tmp" >/dev/null
[ -f "$tmp/user/$name.c" ] && grep -q "run=$name" "$tmp/tests/qemu/programs/cases.txt"
result "writes user/$name.c and its case" $?
refused "the same name again" "$name"

# Build with the kernel's objects of BUILD (timestamps kept: up to date).
[ -d "$build/k" ] && cp -a "$build/k" "$tmp/build/k"
start=$(date +%s)
make -C "$tmp" BUILD=build build/kernel.elf >"$tmp/make.log" 2>&1
rc=$?
result "the skeleton builds ($(($(date +%s) - start)) s)" $rc
[ -f "$tmp/build/kernel.elf" ] || tail -20 "$tmp/make.log"

out=$("$tmp/tests/qemu/programs/run.sh" "$tmp/build/kernel.elf" 2>&1)
rc=$?
sed 's/^/    /' <<<"$out"
[ "$rc" = 0 ] && grep -q "TEST program-$name \.\.\. ok" <<<"$out"
result "the skeleton boots and passes its own test" $?
[ -e "$root/user/$name.c" ]
result "the checkout was not written" $((1 - $?))

echo "new-program tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
