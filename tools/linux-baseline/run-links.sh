#!/usr/bin/env bash
# run-links.sh: boot a server and a client Linux baseline guest joined by
# 1-4 point-to-point links (one QEMU dgram/unix wire per link, NIC K of one
# guest to NIC K of the other), run one pktbench mode over them, and print
# the measurement lines (RESULT from the client; SRVSTAT from the server) on
# stdout.  Exit status 0 only if both sides end with "DONE ok".
#
#   run-links.sh [--links N] [--bond none|rr|ab] [--mbps R[,R...]]
#                [--mode stream|burst|rtt|window[,...]] [--proto tcp|mptcp] [--variant packet|mmap|dpdk]
#                [--sizes 1500,8192] [--runs N] [--warmup N] [--bytes N]
#                [--cut SECONDS] [--then KEY:VALUE[,...]] [--icount] [--count]
#                [--timeout SECONDS] [--append "kernel args"] [--guest DIR] [--logdir DIR]
#                [--no-build] [--nic e1000|e1000e|virtio]
#
# --bond rr|ab puts each guest's NICs in bond0 (balance-rr, active-backup)
# with IPv4 10.0.0.1 (server) and 10.0.0.2 (client); without a bond NIC K
# has 10.0.K.1 and 10.0.K.2 (what MPTCP uses: --proto mptcp).  --mbps paces
# each NIC with tbf (one value for all).  --cut S: S seconds after the
# client's first "STREAM begin" (or first RESULT line in other modes), link
# 0 is cut on both sides (QMP set_link off on both guests' NIC 0: a visible
# cut, both drivers report the link down).  --then: a second phase in the
# same boot once every mode has run (init.sh's pkt.then, in both guests):
# the keys given are set anew (e.g. bond:ab,mode:stream,bytes:8000000:
# bond0 made again in active-backup) and the modes run again; a PHASE line
# separates the two phases' lines, and --cut counts from the second
# phase's first transfer.  --icount: -icount shift=0 (the guest TSC counts
# instructions; real-time fields become virtual time).
# --count: each guest loads insnplugin.so (build.sh builds it), which writes
# the instructions of each vCPU over every marked window (pktbench's stream
# connections, burst R1s) to LOGDIR/NAME.insns (WIN lines); Debian's 6.1
# kernel brings no other CPU up under -icount, so this is how a guest of
# several CPUs is counted.  Every guest has a QMP socket in the run's
# temporary directory.  Logs as in run-pair.sh.
# --variant dpdk: both guests boot initrd-dpdk.gz (768 MiB, 128 hugepages)
# and run dpdkbench on the NICs bound to uio_pci_generic, no bond; over
# several links its --mode window stripes the stream over all of them, one
# lcore a port (dpdk-guest.sh, dpdkstripe.h), the client told every
# server NIC's MAC.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

LINKS=1 BOND=none MBPS= MODE=stream PROTO=tcp VARIANT=packet SIZES=8192 RUNS=3 WARMUP=1
BYTES=16777216 CUT= TIMEOUT=300 APPEND= GUEST=$ROOT/build/linux-baseline LOGDIR= BUILD=1
NIC=${NIC:-e1000} GAP=2 ICOUNT= THEN= COUNT=
# NIC K of the server is 52:54:00:4c:4K:01, of the client ...:02.
mac() { printf '52:54:00:4c:4%d:%02d' "$2" "$1"; }

usage() { sed -n '2,/^set -euo/s/^# \{0,1\}//p' "$0" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case "$1" in
	--links) LINKS=$2; shift ;;
	--bond) BOND=$2; shift ;;
	--mbps) MBPS=$2; shift ;;
	--mode) MODE=$2; shift ;;
	--proto) PROTO=$2; shift ;;
	--variant) VARIANT=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--runs) RUNS=$2; shift ;;
	--warmup) WARMUP=$2; shift ;;
	--bytes) BYTES=$2; shift ;;
	--gap) GAP=$2; shift ;;
	--cut) CUT=$2; shift ;;
	--then) THEN=$2; shift ;;
	--icount) ICOUNT=1 ;;
	--count) COUNT=1 ;;
	--timeout) TIMEOUT=$2; shift ;;
	--append) APPEND=$2; shift ;;
	--guest) GUEST=$2; shift ;;
	--logdir) LOGDIR=$2; shift ;;
	--no-build) BUILD= ;;
	--nic) NIC=$2; shift ;;
	*) usage ;;
	esac
	shift
done
case "$LINKS" in [1-4]) ;; *) lb_die "--links $LINKS: 1 to 4" ;; esac
case "$BOND" in none | rr | ab) ;; *) usage ;; esac
for m in $(echo "$MODE" | tr , ' '); do
	case "$m" in stream | burst | rtt | window) ;; *) usage ;; esac
done
NMODES=$(echo "$MODE" | tr , '\n' | grep -c .)
if [ -n "$THEN" ]; then # the second phase's modes: its own, or the same again
	then_mode=$(echo "$THEN" | tr , '\n' | sed -n 's/^mode://p')
	NMODES=$((NMODES + $(echo "${then_mode:-$MODE}" | tr ,+ '\n\n' | grep -c .)))
fi
case "$PROTO" in tcp | mptcp) ;; *) usage ;; esac
INITRD=initrd.gz MEM=256M PEER=$(mac 1 0)
case "$VARIANT" in
packet | mmap) [ "$MODE" != window ] || lb_die "--mode window runs over dpdk only" ;;
dpdk)
	[ "$BOND" = none ] || lb_die "--variant dpdk takes the NICs from the kernel: --bond none"
	[ "$MODE" = window ] || [ "$LINKS" = 1 ] || lb_die "--variant dpdk over several links: --mode window"
	INITRD=initrd-dpdk.gz MEM=768M APPEND="pkt.hugepages=128 $APPEND"
	PEER=$(for k in $(seq 0 $((LINKS - 1))); do mac 1 "$k"; echo; done | paste -sd,) ;;
*) usage ;;
esac
case "$NIC" in
e1000) NIC_DEV=e1000 ;;
e1000e) NIC_DEV=e1000e ;;
virtio) NIC_DEV=virtio-net-pci,disable-legacy=on ;;
*) usage ;;
esac
[ "$BOND" != none ] && [ "$PROTO" = mptcp ] && lb_die "MPTCP runs over separate NICs: --bond none"
case "$VARIANT,$MODE," in
dpdk,*) ;;
*,burst,* | *,rtt,*)
	[ "$BOND" = none ] && [ "$LINKS" -gt 1 ] && lb_die "raw modes over several links need a bond (--bond rr|ab)" ;;
esac

lb_need_pkgs qemu-system-x86 python3
[ -n "$BUILD" ] && "$HERE/build.sh" "$GUEST"
[ -z "$COUNT" ] || [ -f "$GUEST/insnplugin.so" ] || lb_die "no $GUEST/insnplugin.so (run build.sh)"
[ -f "$GUEST/vmlinuz" ] && [ -f "$GUEST/$INITRD" ] || lb_die "no guest in $GUEST (run build.sh)"

SOCKDIR=$(mktemp -d /tmp/lb-links.XXXXXX)
if [ -z "$LOGDIR" ]; then LOGDIR=$SOCKDIR; fi
mkdir -p "$LOGDIR"
SERVER_PID= CLIENT_PID= CUT_PID=

cleanup() {
	local p
	for p in $SERVER_PID $CLIENT_PID $CUT_PID; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ "$LOGDIR" = "$SOCKDIR" ]; then rm -rf "$SOCKDIR"; else rm -f "$SOCKDIR"/*.sock; rmdir "$SOCKDIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# boot NAME INDEX(1 server, 2 client) KERNEL-ARGS: one guest with LINKS NICs
# in the background under a hard timeout; sets BOOT_PID.
boot() {
	local name=$1 idx=$2 args=$3 k other
	local nets=()
	other=$((3 - idx))
	for k in $(seq 0 $((LINKS - 1))); do
		nets+=(-netdev "dgram,id=n$k,local.type=unix,local.path=$SOCKDIR/$idx.$k.sock,remote.type=unix,remote.path=$SOCKDIR/$other.$k.sock"
			-device "$NIC_DEV,netdev=n$k,id=nic$k,mac=$(mac "$idx" "$k"),romfile=")
	done
	local extra=()
	[ -n "$ICOUNT" ] && extra+=(-icount shift=0)
	[ -n "$COUNT" ] && extra+=(-plugin "$GUEST/insnplugin.so,out=$LOGDIR/$name.insns")
	lb_guest "$name" "$INITRD" "$MEM" "pkt.nic=$NIC $args $APPEND" "${LB_SMP_ARGS[@]}" "${extra[@]}" \
		-qmp "unix:$SOCKDIR/$name.qmp,server=on,wait=off" "${nets[@]}"
}

# qmp_set_link NAME NIC on|off: QMP set_link on one guest's NIC (lbqmp.py).
qmp_set_link() { python3 "$HERE/lbqmp.py" "$SOCKDIR/$1.qmp" "$2" "$3"; }

# cut_link_later: once the client starts its first transfer (with --then,
# its second phase's first), wait CUT seconds and cut link 0 on both
# guests.  Runs in the background.
cut_link_later() {
	local mark='^STREAM begin' from=1 modes=$MODE
	if [ -n "$THEN" ]; then
		from='/^PHASE 2 /' modes=${then_mode:-$MODE}
	fi
	case "$modes" in stream*) ;; *) mark='^RESULT ' ;; esac
	for _ in $(seq 1 $((TIMEOUT * 10))); do
		{ tr -d '\r' <"$LOGDIR/client.log"; } 2>/dev/null | sed -n "$from,\$p" | grep -q "$mark" && break
		sleep 0.1
	done
	sleep "$CUT"
	# Both guests at once: on a loaded host each QMP client takes a while
	# to start, and the cut must land inside the stream.
	local a=0 b=0
	qmp_set_link server nic0 off & a=$!
	qmp_set_link client nic0 off & b=$!
	wait "$a" && wait "$b" && echo "CUT link=0 at $(date +%s.%N)" >>"$LOGDIR/cut.txt"
}

common="pkt.idle=60000 pkt.nics=$LINKS pkt.bond=$BOND pkt.mode=$MODE pkt.proto=$PROTO pkt.variant=$VARIANT"
common="$common pkt.sizes=$SIZES pkt.runs=$RUNS pkt.warmup=$WARMUP pkt.bytes=$BYTES pkt.gap=$GAP"
[ -n "$MBPS" ] && common="$common pkt.mbps=$MBPS"
[ -n "$THEN" ] && common="$common pkt.then=$THEN"
boot server 1 "pkt.role=server pkt.host=1 pkt.peerhost=2 $common"
SERVER_PID=$BOOT_PID
boot client 2 "pkt.role=client pkt.host=2 pkt.peerhost=1 pkt.peer=$PEER $common"
CLIENT_PID=$BOOT_PID
if [ -n "$CUT" ]; then
	cut_link_later &
	CUT_PID=$!
fi

# The client's "bye" stops the server; give it a moment to power off.
lb_wait_pair
lb_stop "$CUT_PID"

for side in client server; do
	touch "$LOGDIR/$side.log"
	tr -d '\r' <"$LOGDIR/$side.log" >"$LOGDIR/$side.txt"
done
grep -E '^(RESULT|SUMMARY|PHASE) ' "$LOGDIR/client.txt" || true
grep -E '^(SRVSTAT|PHASE) ' "$LOGDIR/server.txt" || true
[ -f "$LOGDIR/cut.txt" ] && cat "$LOGDIR/cut.txt"

verdict() { # SIDE: empty if every mode ended well, else why not
	[ "$(grep -cx 'DONE ok' "$LOGDIR/$1.txt")" = "$NMODES" ] && return 0
	echo "$1: $(grep -m1 '^DONE fail' "$LOGDIR/$1.txt" || echo "$(grep -cx 'DONE ok' "$LOGDIR/$1.txt") of $NMODES modes ended")"
}
fail=
[ "$crc" = 124 ] && fail="client QEMU timed out after ${TIMEOUT}s"
[ -z "$fail" ] && [ "$src" = 124 ] && fail="server QEMU timed out after ${TIMEOUT}s"
[ -z "$fail" ] && fail=$(verdict client)
[ -z "$fail" ] && fail=$(verdict server)
[ -z "$fail" ] && [ -n "$CUT" ] && [ ! -f "$LOGDIR/cut.txt" ] && fail="link 0 was not cut"
if [ -n "$fail" ]; then
	lb_log "links=$LINKS bond=$BOND $MODE/$PROTO failed: $fail (logs: $LOGDIR)"
	[ "$LOGDIR" = "$SOCKDIR" ] && tail -n 8 "$LOGDIR"/client.txt "$LOGDIR"/server.txt "$LOGDIR"/*.qemu >&2
	exit 1
fi
exit 0
