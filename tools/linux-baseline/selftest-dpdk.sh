#!/usr/bin/env bash
# selftest-dpdk.sh [BUILD_DIR]: make test's smoke of the DPDK peer
# (dpdkbench in initrd-dpdk.gz).  One boot pair on the e1000, one guest
# running dpdkbench and the other pktbench (AF_PACKET): the DPDK guest is
# first the client, then (run-pair.sh --swap) the server, so that both of
# dpdkbench's roles and its wire format against both of pktbench's are
# exercised.  Each role runs a short rtt (64 and 8192 bytes) and a
# 128-frame burst per size, every payload verified by the receiving side.
# Fails (exit 1) if a side fails to run, loses or damages a frame, or times
# out; takes about 25 s.  NIC=virtio or e1000e picks another NIC model.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

NIC=${NIC:-e1000}
lb_selftest_guest "selftest-dpdk-$NIC" "${1:-}"
[ -f "$GUEST/initrd-dpdk.gz" ] || lb_die "no $GUEST/initrd-dpdk.gz: run $HERE/build.sh"
rm -rf "$LOGS"
mkdir -p "$LOGS"

out="$LOGS/pair.txt" pair_rc=0
"$HERE/run-pair.sh" --no-build --nic "$NIC" --guest "$GUEST" --timeout 150 --logdir "$LOGS/pair" --swap \
	--mode rtt,burst --variant dpdk --server-variant packet --sizes 64,8192 --runs 2 --warmup 1 >"$out" || pair_rc=$?

failed=0
# check CLIENT-VARIANT SERVER-VARIANT: one role of the pair, rtt then burst;
# prints a one-line verdict.
check() {
	local name=$1-to-$2 rtts bursts
	rtts=$(grep -c "^SUMMARY rtt variant=$1 " "$out" || true)
	bursts=$(grep -c "^SRVSTAT burst variant=$2 .* good=128 bad=0 missing=0" "$out" || true)
	# 2 sizes x (1 warm-up + 2 runs), each burst answered and checked.
	if [ $pair_rc = 0 ] && [ "$rtts" -eq 2 ] && [ "$bursts" -eq 6 ]; then
		printf 'PASS %-16s %s\n' "$name" "$(grep "^SUMMARY rtt variant=$1 " "$out" |
			awk '{ printf "%s %s | ", $4, $6 }')$bursts bursts verified"
		return
	fi
	printf 'FAIL %-16s (logs: %s)\n' "$name" "$LOGS/pair"
	failed=1
}

check dpdk packet
check packet dpdk
lb_log "DPDK selftest ($NIC) $([ $failed = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - START))s"
exit $failed
