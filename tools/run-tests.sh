#!/usr/bin/env bash
# make test's driver: runs each part (a make target) in turn, stops at the
# first that fails, and prints how long each took, the ten slowest first,
# and the total. The parts run one after another, as make's prerequisites
# did: the VMs of one part must not slow another's timing.
# Usage: tools/run-tests.sh TARGET...   (MAKE names make; its flags pass
# through the environment)
set -uo pipefail
make=${MAKE:-make}
times=()
start=$(date +%s)
summary() {
	local end status=$1
	end=$(date +%s)
	echo "== make test: the slowest parts"
	printf '%s\n' "${times[@]}" | sort -rn | head -10 | awk '{ printf "  %5d s  %s\n", $1, $2 }'
	echo "== make test: $((end - start)) s in all, $([ "$status" = 0 ] && echo passed || echo FAILED)"
}
for t in "$@"; do
	t0=$(date +%s)
	"$make" --no-print-directory "$t"
	rc=$?
	times+=("$(($(date +%s) - t0)) $t")
	if [ $rc -ne 0 ]; then
		echo "== make test: $t failed (status $rc)"
		summary 1
		exit $rc
	fi
done
summary 0
