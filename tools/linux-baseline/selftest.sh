#!/usr/bin/env bash
# selftest.sh [BUILD_DIR]: build the Linux baseline guest and check that it
# works end to end: for each variant (AF_PACKET, PACKET_MMAP, AF_XDP and the
# two tuned sockets), a short rtt and a short burst of 64, 8192 and 8960
# bytes, every payload verified on both sides, all in one boot pair.  AF_XDP
# skips the frames over one UMEM chunk, so it runs at 64 bytes only.  Fails
# (exit 1) on any verification error, lost packet or timeout, or if a
# variant measured nothing in either mode; takes about 30 s.
# NIC=virtio runs the guests on virtio-net instead of the e1000.
# Then the TLB-shootdown smoke (smoke-smp.sh): one tlbbench guest with -smp 2
# (about 20 s; LB_SMP_SMOKE=0 leaves it out).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

NIC=${NIC:-e1000}
lb_selftest_guest "selftest-$NIC" "${1:-}"
rm -rf "$LOGS"
mkdir -p "$LOGS"

VARIANTS=packet,mmap,xdp,tuned,tuned-mmap

# missing FILE: the variants and modes with no RESULT line in FILE.
missing() {
	local v m
	for v in ${VARIANTS//,/ }; do
		for m in rtt burst; do
			grep -q "^RESULT $m variant=$v " "$1" || printf '%s ' "$v/$m"
		done
	done
}

# check NAME ARGS...: one boot pair; prints a one-line verdict.
failed=0
check() {
	local name=$1 out gone
	shift
	out="$LOGS/$name.txt"
	if "$HERE/run-pair.sh" --no-build --nic "$NIC" --guest "$GUEST" --timeout 240 --logdir "$LOGS/$name" "$@" >"$out"; then
		gone=$(missing "$out")
		if [ -n "$gone" ]; then
			printf 'FAIL %-12s no measurement from: %s(logs: %s)\n' "$name" "$gone" "$LOGS/$name"
			failed=1
			return
		fi
		printf 'PASS %-12s %s\n' "$name" "$(summary "$out")"
	else
		printf 'FAIL %-12s (logs: %s)\n' "$name" "$LOGS/$name"
		failed=1
	fi
}

# A short human-readable digest of one pair's output.
summary() {
	awk '
	/^SUMMARY rtt/ { for (i = 3; i <= NF; i++) if ($i ~ /^(bytes|median_us)=/) printf "%s ", $i; printf "| " }
	/^RESULT burst/ { for (i = 3; i <= NF; i++) if ($i ~ /^(bytes|mbps)=/) printf "%s ", $i; printf "| " }
	/^SRVSTAT burst/ { bursts++ }
	/^PORT variant=xdp/ { for (i = 3; i <= NF; i++) if ($i ~ /^xdp_mode=/) mode = $i }
	END { if (bursts) printf "server verified %d bursts", bursts; if (mode) printf " | AF_XDP %s", mode }' "$1"
}

# Every variant, rtt then burst, one after the other in one boot pair
# (init.sh): a boot pair costs more than all the runs.
check rtt-burst --mode rtt,burst --variant $VARIANTS --sizes 64,8192,8960 --runs 3 --warmup 1
if [ "${LB_SMP_SMOKE:-1}" != 0 ]; then
	if "$HERE/smoke-smp.sh" "$GUEST" "$LOGS/smp" >"$LOGS/smp.txt" 2>&1; then
		printf 'PASS %-12s %s\n' smp "$(tail -n 1 "$LOGS/smp.txt")"
	else
		printf 'FAIL %-12s (logs: %s)\n' smp "$LOGS/smp"
		failed=1
	fi
fi
lb_log "selftest ($NIC) $([ $failed = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - START))s"
exit $failed
