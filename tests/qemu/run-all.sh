#!/usr/bin/env bash
# Boots the kernel once per line of a cases file, headless under QEMU, and
# checks the kernel's exit status, the log's patterns, and that the free-frame
# count at exit equals the one at boot. Logs: $BUILD/test-logs/NAME.log
# A sixth field adds QEMU arguments; @DISK@ in it names a 16 MiB disk image
# made empty at the start of the run and shared by the cases in order (so a
# boot can read what an earlier one wrote).
# Usage: tests/qemu/run-all.sh KERNEL CASES [name-filter-regex]
set -uo pipefail
kernel=$1
cases=$2
filter=${3:-.}
here=$(cd "$(dirname "$0")" && pwd)
logs=$(dirname "$kernel")/test-logs
mkdir -p "$logs"
disk=$logs/disk.img
rm -f "$disk"
truncate -s 16M "$disk"
passed=0
failed=0
failed_names=()

trim() { sed -e 's/^ *//' -e 's/ *$//' <<<"$1"; }

check_log() { # log expected-status got-status patterns
	local log=$1 want=$2 got=$3 pats=$4 why=()
	[ "$got" = "$want" ] || why+=("kernel status $got, want $want")
	IFS=';' read -ra arr <<<"$pats"
	for p in "${arr[@]}"; do
		p=$(sed -e 's/^ //' -e 's/ *$//' <<<"$p")
		[ -z "$p" ] || grep -aqF -- "$p" "$log" || why+=("missing '$p'")
	done
	if [ "$want" = 0 ]; then
		grep -aq '\.\.\. FAIL' "$log" && why+=("a TEST failed")
		local f
		f=$(grep -ao 'frames: boot=[0-9]* exit=[0-9]*' "$log" | tail -1)
		[[ "$f" =~ boot=([0-9]+)\ exit=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] ||
			why+=("free frames at exit differ from boot ($f)")
	fi
	printf '%s\n' "${why[@]}"
}

while IFS='|' read -r name tmo cmd want pats extra; do
	name=$(trim "$name")
	[[ -z "$name" || "$name" == \#* ]] && continue
	[[ "$name" =~ $filter ]] || continue
	log="$logs/$name.log"
	read -ra qargs <<<"${extra//@DISK@/$disk}"
	t0=$(date +%s)
	SERIAL=$log "$here/../../tools/qemu-run.sh" "$kernel" "$(trim "$cmd")" "$(trim "$tmo")" \
		"${qargs[@]}" </dev/null >/dev/null 2>"$log.err"
	got=$?
	why=$(check_log "$log" "$(trim "$want")" "$got" "$pats")
	if [ -z "$why" ]; then
		echo "TEST $name ... ok ($(($(date +%s) - t0))s)"
		passed=$((passed + 1))
	else
		echo "TEST $name ... FAIL"
		sed 's/^/    /' <<<"$why"
		echo "    log: $log"
		tail -5 "$log" "$log.err" 2>/dev/null | sed 's/^/    | /'
		failed=$((failed + 1))
		failed_names+=("$name")
	fi
done <"$cases"

echo "qemu boot tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
