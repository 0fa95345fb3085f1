#!/usr/bin/env bash
# run-rxcpu.sh: one Linux guest with several vCPUs receives pktbench bursts
# (AF_PACKET) from hostburst.py on the host (so the guest is the only VM),
# its NIC interrupt routed to one CPU and the receiver pinned to the same
# or another; prints the client's RESULT lines, then the server's PIN,
# SRVSTAT and IRQCPU lines (and with --count insnplugin.so's windows: one
# per burst, its R1).  Exit 0 only if every burst came back whole and the
# server ended with "DONE ok".
#
#   run-rxcpu.sh [--smp N] [--irqcpu C] [--rxcpu C] [--sizes 64,1500,8192]
#                [--bursts N] [--warmup N] [--count] [--nic e1000|e1000e]
#                [--timeout SECONDS] [--guest DIR] [--logdir DIR]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

SMP=2 IRQCPU=0 RXCPU=0 SIZES=64,1500,8192 BURSTS=20 WARMUP=3 COUNT= NIC=e1000 TIMEOUT=300
GUEST=$ROOT/build/linux-baseline LOGDIR=
SERVER_MAC=52:54:00:4c:42:01

usage() { sed -n '2,12s/^# \{0,1\}//p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--smp) SMP=$2; shift ;;
	--irqcpu) IRQCPU=$2; shift ;;
	--rxcpu) RXCPU=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--bursts) BURSTS=$2; shift ;;
	--warmup) WARMUP=$2; shift ;;
	--count) COUNT=1 ;;
	--nic) NIC=$2; shift ;;
	--timeout) TIMEOUT=$2; shift ;;
	--guest) GUEST=$2; shift ;;
	--logdir) LOGDIR=$2; shift ;;
	*) usage ;;
	esac
	shift
done
case "$NIC" in e1000 | e1000e) ;; *) usage ;; esac
lb_need_pkgs qemu-system-x86 python3
lb_guest_files initrd.gz "$COUNT"

SOCKDIR=$(mktemp -d /tmp/lb-rxcpu.XXXXXX)
[ -n "$LOGDIR" ] || LOGDIR=$SOCKDIR
mkdir -p "$LOGDIR"
VM_PID=
cleanup() {
	[ -n "$VM_PID" ] && kill "$VM_PID" 2>/dev/null
	wait 2>/dev/null || true
	if [ "$LOGDIR" = "$SOCKDIR" ]; then rm -rf "$SOCKDIR"; else rm -f "$SOCKDIR"/*.sock; rmdir "$SOCKDIR"; fi
}
trap cleanup EXIT

lb_count_args
lb_guest server initrd.gz 256M "pkt.nic=$NIC pkt.role=server pkt.mode=burst pkt.variant=packet pkt.sizes=$SIZES pkt.idle=60000 pkt.irqcpu=$IRQCPU pkt.rxcpu=$RXCPU" \
	-smp "$SMP" "${LB_COUNT_ARGS[@]}" \
	-netdev "dgram,id=n0,local.type=unix,local.path=$SOCKDIR/s.sock,remote.type=unix,remote.path=$SOCKDIR/c.sock" \
	-device "$NIC,netdev=n0,mac=$SERVER_MAC,romfile="
VM_PID=$BOOT_PID
crc=0
python3 "$HERE/hostburst.py" --local "$SOCKDIR/c.sock" --remote "$SOCKDIR/s.sock" --dst "$SERVER_MAC" \
	--sizes "$SIZES" --bursts "$BURSTS" --warmup "$WARMUP" >"$LOGDIR/client.txt" || crc=$?
src=0
for _ in $(seq 1 100); do kill -0 "$VM_PID" 2>/dev/null || break; sleep 0.2; done
kill "$VM_PID" 2>/dev/null && src=killed
wait "$VM_PID" 2>/dev/null || true
VM_PID=

tr -d '\r' <"$LOGDIR/server.log" >"$LOGDIR/server.txt"
grep -E '^(RESULT|ERROR) ' "$LOGDIR/client.txt" || true
# (The console's reset sequence may precede the first line on its line.)
grep -oE '(PIN|GUEST up) .*' "$LOGDIR/server.txt" || true
grep -E '^(SRVSTAT|IRQCPU0?) ' "$LOGDIR/server.txt" || true
[ -z "$COUNT" ] || cat "$LOGDIR/insns.txt" 2>/dev/null || true
fail=
[ "$crc" = 0 ] || fail="the host client failed ($crc)"
[ -z "$fail" ] && [ "$src" = killed ] && fail="the guest did not power off"
[ -z "$fail" ] && ! grep -qx 'DONE ok' "$LOGDIR/server.txt" && fail=$(grep '^DONE' "$LOGDIR/server.txt" || echo "no DONE line")
if [ -n "$fail" ]; then
	lb_log "rxcpu irq $IRQCPU rx $RXCPU failed: $fail (logs: $LOGDIR)"
	exit 1
fi
exit 0
