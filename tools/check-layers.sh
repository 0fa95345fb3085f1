#!/usr/bin/env bash
# Checks that the layers point one way, from the #include lines:
#   - nothing under drivers/ includes anything under kernel/res/;
#   - nothing under kernel/res/ includes anything under drivers/;
#   - kernel/arch/ includes only kernel/arch/, lib/ and kernel/kprintf.h
#     (the console's interface: it calls no driver, see kernel/kprintf.c);
#   - kernel/res/ reaches NICs only through kernel/net/netdev.h (no driver
#     name in its includes).
# Prints each violation as FILE: #include LINE -> RESOLVED; exits 1 if any.
# Usage: tools/check-layers.sh [ROOT]
set -uo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cd "$root"
bad=0

# The path an include names, as the build resolves it: next to the file,
# then -Ilib/include -Ilib -Ikernel.
resolve() { # file name
	local dir=$(dirname "$1") n=$2 d
	for d in "$dir" lib/include lib kernel; do
		[ -f "$d/$n" ] && { realpath --relative-to=. "$d/$n"; return; }
	done
	echo "$n" # a compiler header (<stdint.h>, ...)
}

violation() { echo "$1: #include $2 -> $3 ($4)"; bad=1; }

while IFS= read -r f; do
	while IFS= read -r inc; do
		name=$(sed -E 's/^#include[[:space:]]*[<"]([^">]+)[">].*/\1/' <<<"$inc")
		to=$(resolve "$f" "$name")
		case "$f" in
		drivers/*)
			[[ $to == kernel/res/* ]] && violation "$f" "$name" "$to" "a driver reaches a manager" ;;
		kernel/res/*)
			[[ $to == drivers/* ]] && violation "$f" "$name" "$to" "a manager reaches a driver" ;;
		kernel/arch/*)
			[[ $to == kernel/* && $to != kernel/arch/* && $to != kernel/kprintf.h ]] &&
				violation "$f" "$name" "$to" "arch reaches above itself"
			[[ $to == drivers/* ]] && violation "$f" "$name" "$to" "arch reaches a driver" ;;
		esac
	done < <(grep -E '^#include' "$f")
done < <(git ls-files 'kernel/*.[ch]' 'drivers/*.[ch]' 2>/dev/null || find kernel drivers -name '*.[ch]')

if [ $bad -eq 0 ]; then
	echo "layers: ok (drivers -/-> kernel/res, kernel/res -/-> drivers, arch -/-> above)"
fi
exit $bad
