#!/usr/bin/env bash
# selftest-dpdk.sh [BUILD_DIR]: make test's smoke of the DPDK peer
# (dpdkbench in initrd-dpdk.gz).  Two boot pairs on the e1000, each a short
# rtt (64 and 8192 bytes) and a 128-frame burst per size, every payload
# verified by the receiving side: a DPDK client facing a pktbench (AF_PACKET)
# server, then a pktbench client facing a DPDK server, so that both of
# dpdkbench's roles and its wire format against pktbench's are exercised.
# Fails (exit 1) if a side fails to run, loses or damages a frame, or times
# out; takes about 40 s.  NIC=virtio or e1000e picks another NIC model.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

GUEST=${1:-$ROOT/build/linux-baseline}
NIC=${NIC:-e1000}
LOGS="$GUEST/logs/selftest-dpdk-$NIC"
START=$(date +%s)
lb_guest_ready "$GUEST" "$HERE"
[ -f "$GUEST/initrd-dpdk.gz" ] || lb_die "no $GUEST/initrd-dpdk.gz: run $HERE/build.sh"
rm -rf "$LOGS"
mkdir -p "$LOGS"

failed=0
# check NAME CLIENT-VARIANT SERVER-VARIANT: one boot pair, rtt then burst.
check() {
	local name=$1 out="$LOGS/$1.txt" bursts
	if "$HERE/run-pair.sh" --no-build --nic "$NIC" --guest "$GUEST" --timeout 90 --logdir "$LOGS/$name" \
		--mode rtt,burst --variant "$2" --server-variant "$3" --sizes 64,8192 --runs 2 --warmup 1 >"$out"; then
		bursts=$(grep -c '^SRVSTAT burst .* good=128 bad=0 missing=0' "$out" || true)
		# 2 sizes x (1 warm-up + 2 runs), each burst answered and checked.
		if [ "$bursts" -eq 6 ] && [ "$(grep -c '^SUMMARY rtt' "$out")" -eq 2 ]; then
			printf 'PASS %-16s %s\n' "$name" "$(grep '^SUMMARY rtt' "$out" | awk '{ printf "%s %s | ", $4, $6 }')$bursts bursts verified"
			return
		fi
	fi
	printf 'FAIL %-16s (logs: %s)\n' "$name" "$LOGS/$name"
	failed=1
}

check dpdk-to-packet dpdk packet
check packet-to-dpdk packet dpdk
lb_log "DPDK selftest ($NIC) $([ $failed = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - START))s"
exit $failed
