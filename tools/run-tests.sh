#!/usr/bin/env bash
# make test's driver: runs each part (a make target) in turn, stops at the
# first that fails, and prints how long each took, the ten slowest first,
# and the total.
#
# The parts named by --beside run in a second lane, one after another,
# alongside the others: they start once the main lane's first part (which
# installs the packages and builds the kernel) has passed. They are parts
# that are not timing-sensitive (host programs, boots that only wait for
# console lines). The two lanes together never run more than TEST_VMS (4)
# VMs: --vms PART=N says how many a part runs at once (default 3 in the
# main lane, 1 beside), and a part waits until the other lane's current
# part leaves room for it. A beside part's output goes to LOGDIR/PART.log
# and is printed whole, between two parts of the main lane, once it has
# ended. A failure in either lane stops both.
# Usage: tools/run-tests.sh [--logs LOGDIR] [--beside PART]... [--vms PART=N]... PART...
# (MAKE names make; its flags pass through the environment)
set -uo pipefail
make=${MAKE:-make}
logdir=build/test-logs/run-tests
beside=()
while [ $# -gt 0 ]; do
	case "$1" in
	--logs) logdir=$2; shift 2 ;;
	--beside) beside+=("$2"); shift 2 ;;
	--vms) RUN_TESTS_VMS="${RUN_TESTS_VMS:-} $2"; shift 2 ;;
	--lane) logdir=$2; shift 2; lane=1; break ;;
	*) break ;;
	esac
done

export RUN_TESTS_VMS
max_vms=${TEST_VMS:-4}

# vms_take LANE PART DEFAULT: waits until PART's VMs (--vms, else DEFAULT)
# and those of the other lane's current part fit in max_vms, then records
# PART's as LANE's (LOGDIR/vms.main, vms.lane; the check and the record
# under one lock). vms_give LANE: LANE runs nothing.
vms_take() {
	local own=$1 other=main n=$3 o lock said=
	[ "$own" = main ] && other=lane
	for o in ${RUN_TESTS_VMS:-}; do [ "${o%%=*}" = "$2" ] && n=${o#*=}; done
	while :; do
		exec {lock}>"$logdir/vms.lock"
		flock "$lock"
		o=$(cat "$logdir/vms.$other" 2>/dev/null || echo 0)
		if [ $((o + n)) -le "$max_vms" ] || [ "$o" = 0 ]; then
			echo "$n" >"$logdir/vms.$own"
			exec {lock}>&-
			return 0
		fi
		exec {lock}>&-
		[ "$own" = main ] && [ -z "${said:-}" ] && said=1 &&
			echo "== make test: $2 waits for the part beside it (at most $max_vms VMs)"
		sleep 1
	done
}
vms_give() { echo 0 >"$logdir/vms.$1"; }

# The second lane, a session of its own so that it can be stopped whole:
# each part's output into LOGDIR/PART.log, then "SECONDS PART STATUS"
# appended to LOGDIR/lane; it stops at the first failure.
if [ -n "${lane:-}" ]; then
	for t in "$@"; do
		vms_take lane "$t" 1
		t0=$(date +%s)
		"$make" --no-print-directory "$t" >"$logdir/$t.log" 2>&1 </dev/null
		rc=$?
		vms_give lane
		echo "$(($(date +%s) - t0)) $t $rc" >>"$logdir/lane"
		[ $rc -eq 0 ] || exit $rc
	done
	exit 0
fi

main=()
for t in "$@"; do
	case " ${beside[*]} " in *" $t "*) ;; *) main+=("$t") ;; esac
done
times=()
start=$(date +%s)
lane_pid= shown=0 lane_failed=
mkdir -p "$logdir"
rm -f "$logdir/lane" "$logdir/vms.main" "$logdir/vms.lane" # an earlier run's

start_lane() {
	[ ${#beside[@]} -gt 0 ] && [ -z "$lane_pid" ] || return 0
	mkdir -p "$logdir"
	: >"$logdir/lane"
	echo "== make test: beside the others: ${beside[*]} (output in $logdir/)"
	setsid "$0" --lane "$logdir" "${beside[@]}" </dev/null &
	lane_pid=$!
}
stop_lane() {
	[ -n "$lane_pid" ] || return 0
	kill -TERM -- "-$lane_pid" 2>/dev/null
	wait "$lane_pid" 2>/dev/null
	lane_pid=
}
# Prints the beside parts that have ended since the last call.
drain() {
	local secs t rc n=0
	[ -f "$logdir/lane" ] || return 0
	while read -r secs t rc; do
		n=$((n + 1))
		[ $n -le $shown ] && continue
		shown=$n
		echo "== make test: $t (beside the others) $([ "$rc" = 0 ] && echo passed || echo FAILED) in $secs s:"
		cat "$logdir/$t.log"
		times+=("$secs $t(beside)")
		[ "$rc" = 0 ] || lane_failed="$t failed (status $rc)"
	done <"$logdir/lane"
}
summary() {
	local end status=$1
	end=$(date +%s)
	echo "== make test: the slowest parts"
	printf '%s\n' "${times[@]}" | sort -rn | head -10 | awk '{ printf "  %5d s  %s\n", $1, $2 }'
	echo "== make test: $((end - start)) s in all, $([ "$status" = 0 ] && echo passed || echo FAILED)"
}
fail() { # MESSAGE STATUS
	echo "== make test: $1"
	stop_lane
	drain
	summary 1
	exit "$2"
}
trap 'stop_lane; exit 130' INT TERM

for t in "${main[@]}"; do
	vms_take main "$t" 3
	t0=$(date +%s)
	"$make" --no-print-directory "$t"
	rc=$?
	vms_give main
	secs=$(($(date +%s) - t0))
	times+=("$secs $t")
	[ $rc -eq 0 ] || fail "$t failed (status $rc)" $rc
	echo "== make test: $t passed in $secs s ($((t0 + secs - start)) s so far)"
	start_lane
	drain
	[ -z "$lane_failed" ] || fail "$lane_failed" 1
done
start_lane
if [ -n "$lane_pid" ]; then
	echo "== make test: waiting for the parts beside the others"
	wait "$lane_pid"
	lane_pid=
	drain
	[ -z "$lane_failed" ] || fail "$lane_failed" 1
fi
summary 0
