#!/usr/bin/env bash
# selftest-dpdk.sh [BUILD_DIR]: make test's smoke of the DPDK peer
# (dpdkbench in initrd-dpdk.gz).  One boot pair on the e1000, one guest
# running dpdkbench and the other pktbench (AF_PACKET): the DPDK guest is
# first the client, then (run-pair.sh --swap) the server, so that both of
# dpdkbench's roles and its wire format against both of pktbench's are
# exercised.  Each role runs a short rtt (64 and 8192 bytes) and a
# 128-frame burst per size, every payload verified by the receiving side.
# Then (LB_DPDK_STRIPE=0: not) the striped windowed stream (dpdkstripe.h):
# two DPDK guests at -smp 2 joined by 4 links (82574L), one stream of 4096
# packets at 1500 and at 8192 bytes striped over the 4 ports, two lcores
# serving two ports each, every byte checked by the lcore that received
# it, acknowledged only when every port delivered in order.
# Fails (exit 1) if a side fails to run, loses or damages a frame, or times
# out; takes about 50 s.  NIC=virtio or e1000e picks another NIC model for
# the first pair.
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

# The striped stream: both streams whole at the receiver, no packet out of
# order or damaged, every port carrying its quarter of each timed window.
stripe() {
	local out="$LOGS/stripe.txt" rc=0 streams whole ports
	LB_SMP=2 "$HERE/run-links.sh" --no-build --nic e1000e --guest "$GUEST" --timeout 150 --logdir "$LOGS/stripe" \
		--variant dpdk --mode window --links 4 --sizes 1500,8192 --runs 1 --warmup 0 >"$out" || rc=$?
	streams=$(grep -c '^SRVSTAT window variant=dpdk bytes=[0-9]* packets=4096 ' "$out" || true)
	whole=$(grep -c '^SRVSTAT window total streams=2 packets=8192 bad=0$' "$out" || true)
	ports=$(grep -cE '^STRIPE role=server bytes=.* rx=([1-9][0-9]*,){3}[1-9][0-9]*$' \
		"$LOGS/stripe/server.txt" 2>/dev/null || true)
	if [ $rc = 0 ] && [ "$streams" = 2 ] && [ "$whole" = 1 ] && [ "$ports" = 2 ]; then
		printf 'PASS %-16s %s\n' stripe-4-ports "$(grep '^SRVSTAT window variant=dpdk ' "$out" |
			awk '{ printf "%s %s | ", $4, $8 }')2 streams of 4096 verified over 4 ports, 2 lcores"
		return
	fi
	printf 'FAIL %-16s (logs: %s)\n' stripe-4-ports "$LOGS/stripe"
	failed=1
}
[ "${LB_DPDK_STRIPE:-1}" = 0 ] || stripe
lb_log "DPDK selftest ($NIC) $([ $failed = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - START))s"
exit $failed
