#!/usr/bin/env bash
# Checks that the layers point one way, from the #include lines:
#   - nothing under drivers/ includes anything under kernel/res/;
#   - nothing under kernel/res/ includes anything under drivers/;
#   - kernel/arch/ includes only kernel/arch/, lib/ and kernel/kprintf.h
#     (the console's interface: it calls no driver, see kernel/kprintf.c);
#   - kernel/res/ reaches NICs only through kernel/net/netdev.h (no driver
#     name in its includes);
#   - kernel/net/ (the transports, demux, shaper, relay) reaches no driver
#     either, and of kernel/res/ only the channel's state (io_priv.h), the
#     page pool (pmem.h) and the processes (proc.h: sleep, wake, charge);
#   - drivers reach kernel/net/ only through the seam, netdev.h.
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
			[[ $to == kernel/res/* ]] && violation "$f" "$name" "$to" "a driver reaches a manager"
			[[ $to == kernel/net/* && $to != kernel/net/netdev.h ]] &&
				violation "$f" "$name" "$to" "a driver reaches past the netdev seam" ;;
		kernel/res/*)
			[[ $to == drivers/* ]] && violation "$f" "$name" "$to" "a manager reaches a driver" ;;
		kernel/net/*)
			[[ $to == drivers/* ]] && violation "$f" "$name" "$to" "the network path reaches a driver"
			[[ $to == kernel/res/* && ! $to =~ ^kernel/res/(io_priv|io|res|pmem|proc)\.h$ ]] &&
				violation "$f" "$name" "$to" "the network path reaches a manager's inside" ;;
		kernel/arch/*)
			[[ $to == kernel/* && $to != kernel/arch/* && $to != kernel/kprintf.h ]] &&
				violation "$f" "$name" "$to" "arch reaches above itself"
			[[ $to == drivers/* ]] && violation "$f" "$name" "$to" "arch reaches a driver" ;;
		esac
	done < <(grep -E '^#include' "$f")
done < <(git ls-files 'kernel/*.[ch]' 'drivers/*.[ch]' 2>/dev/null || find kernel drivers -name '*.[ch]')

if [ $bad -eq 0 ]; then
	echo "layers: ok (drivers -/-> kernel/res and past netdev.h, kernel/res and kernel/net -/-> drivers, arch -/-> above)"
fi
exit $bad
