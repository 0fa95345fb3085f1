#!/usr/bin/env bash
# Boots each program of a cases file (by default the programs written by
# make new-program, tests/qemu/programs/cases.txt) on one VM whose two
# e1000 NICs are wired to each other: status 0, the log's patterns, no
# FAIL, every frame back at exit.
# Usage: tests/qemu/programs/run.sh KERNEL [CASES]
# Prints one TEST line per boot and "program tests: N passed, M failed".
kernel=$1
source "$(dirname "$0")/../lib.sh"
cases=${2:-$(dirname "$0")/cases.txt}
passed=0 failed=0

trim() { sed -e 's/^ *//' -e 's/ *$//' <<<"$1"; }

while IFS='|' read -r name tmo cmd pats; do
	name=$(trim "$name")
	[[ -z "$name" || "$name" == \#* ]] && continue
	log=$logs/program-$name.log start=$(date +%s)
	# shellcheck disable=SC2046
	SERIAL=$log "$root/tools/qemu-run.sh" "$kernel" "$(trim "$cmd")" "$(trim "$tmo")" \
		$(two_nics e1000) >/dev/null 2>"$log.err"
	got=$?
	IFS=';' read -ra want <<<"$pats"
	for i in "${!want[@]}"; do want[$i]=$(trim "${want[$i]}"); done
	why=$(check_log "$log" 0 "$got" "${want[@]}")
	if verdict "program-$name" "$why" "$log" $(($(date +%s) - start)); then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
done <"$cases"
echo "program tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
