#!/usr/bin/env bash
# run-pair.sh: boot a server and a client Linux baseline guest joined by a
# QEMU dgram/unix link, run one pktbench mode in them, and print the
# measurement lines (RESULT, SUMMARY from the client; SRVSTAT from the
# server) on stdout.  Exit status 0 only if both sides end with "DONE ok".
#
#   run-pair.sh [--mode rtt|burst|rtt,burst|ceiling|window] [--variant V[,V...]]
#               [--server-variant V[,V...]] [--sizes 64,8192]
#               [--runs N] [--warmup N] [--icount] [--timeout SECONDS]
#               [--gap MS] [--cpu-ms MS] [--append "kernel args"]
#               [--guest DIR] [--logdir DIR] [--no-build] [--nic e1000|virtio|e1000e]
#               [--smp N] [--swap] [--count-rx]
#
# --nic (default $NIC, else e1000) picks the guests' NIC: QEMU's e1000, a
# modern virtio-net-pci (disable-legacy=on) driven by virtio_net.ko, or
# QEMU's e1000e (82574L) driven by e1000e.ko.
# --smp N (default $LB_SMP, else 1) gives each guest N vCPUs; not with
# --icount (Linux does not bring its other CPUs up under -icount).
# --icount runs both guests under -icount shift=0, where the guest TSC counts
# executed instructions.  --cpu-ms makes the burst client follow each size
# with MS of bursts between two MARK lines (tools/bench/hostcpu.py reads the
# host CPU time of both guests over them).  The client starts measuring only
# after the server has echoed one of its probes (pktbench retries them), so
# the two boots need no other synchronisation.  Serial logs go to --logdir
# (kept) or to a temporary directory (removed).
# --variant dpdk runs dpdkbench (the NIC in a DPDK poll-mode driver) in both
# guests, --server-variant in the server only (e.g. a DPDK client facing a
# pktbench server); either boots initrd-dpdk.gz with 512 MiB in both guests.
# --mode ceiling (dpdk only): a txonly sender into an rxonly receiver.
# --mode window: the windowed stream (pktwindow.h), every variant.
# --count-rx: the server's QEMU loads insnplugin.so (built by build.sh),
# whose receive windows (R1 as receive work, rxmark.h) are printed after
# the server's lines as "SRVSTAT rxw n=.. work=.. check=.. idle=.. polls=..",
# in the order of the server's "SRVSTAT rxwin" lines they belong to; the
# server gets pkt.rxcount=1 (pktbench and dpdkbench --rx-count: its lines
# between bursts kept for its end, no interrupt counts read).
# --swap: once every mode has run, the guests swap roles in the same boot
# (init.sh's pkt.then) and run every mode again: the client guest
# (--variant) serves, the server guest (--server-variant) measures; the
# lines of both roles are printed from both guests, and both must have
# swapped.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

MODE=rtt VARIANT=packet SIZES=64 RUNS=20 WARMUP=3 ICOUNT= TIMEOUT=300 GAP=2 CPU_MS=0 COUNT_RX=
APPEND= GUEST=$ROOT/build/linux-baseline SERVER_VARIANT= LOGDIR= BUILD=1 NIC=${NIC:-e1000} SWAP=
SERVER_MAC=52:54:00:4c:42:01
CLIENT_MAC=52:54:00:4c:42:02

usage() { sed -n '2,/^set -euo/s/^# \{0,1\}//p' "$0" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case "$1" in
	--mode) MODE=$2; shift ;;
	--variant) VARIANT=$2; shift ;;
	--server-variant) SERVER_VARIANT=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--runs) RUNS=$2; shift ;;
	--warmup) WARMUP=$2; shift ;;
	--icount) ICOUNT=1 ;;
	--timeout) TIMEOUT=$2; shift ;;
	--gap) GAP=$2; shift ;;
	--cpu-ms) CPU_MS=$2; shift ;;
	--append) APPEND=$2; shift ;;
	--guest) GUEST=$2; shift ;;
	--logdir) LOGDIR=$2; shift ;;
	--no-build) BUILD= ;;
	--nic) NIC=$2; shift ;;
	--smp) lb_smp_set "$2"; shift ;;
	--swap) SWAP=1 ;;
	--count-rx) COUNT_RX=1 ;;
	*) usage ;;
	esac
	shift
done
SERVER_VARIANT=${SERVER_VARIANT:-$VARIANT}
case "$MODE" in rtt | burst | rtt,burst | ceiling | window) ;; *) usage ;; esac
for v in ${VARIANT//,/ } ${SERVER_VARIANT//,/ }; do
	case "$v" in packet | mmap | xdp | xdp-sg | tuned | tuned-mmap | dpdk) ;; *) usage ;; esac
done
INITRD=initrd.gz MEM=256M
case " $VARIANT $SERVER_VARIANT " in *" dpdk "*) INITRD=initrd-dpdk.gz MEM=512M ;; esac
[ "$MODE" != ceiling ] || [ "$VARIANT$SERVER_VARIANT" = dpdkdpdk ] || usage
case "$NIC" in
e1000) NIC_DEV=e1000 ;;
virtio) NIC_DEV=virtio-net-pci,disable-legacy=on ;;
e1000e) NIC_DEV=e1000e ;;
*) usage ;;
esac
# pkt.rxd/txd/itr are e1000.ko's module parameters: meaningless for virtio;
# e1000e.ko takes only pkt.itr.
case " $APPEND " in
*" pkt.rxd="* | *" pkt.txd="* | *" pkt.itr="*)
	[ "$NIC" = virtio ] && lb_die "pkt.rxd, pkt.txd and pkt.itr are e1000 options, not for --nic virtio" ;;
esac
case " $APPEND " in
*" pkt.rxd="* | *" pkt.txd="*)
	[ "$NIC" = e1000e ] && lb_die "pkt.rxd and pkt.txd are e1000 options, not for --nic e1000e" ;;
esac

lb_need_pkgs qemu-system-x86
[ -z "$ICOUNT" ] || [ ${#LB_SMP_ARGS[@]} = 0 ] || lb_die "--icount with -smp ${LB_SMP}: Linux does not bring its other CPUs up under -icount"
command -v qemu-system-x86_64 >/dev/null || lb_die "qemu-system-x86_64 not found"
[ -n "$BUILD" ] && "$HERE/build.sh" "$GUEST"
lb_guest_files "$INITRD" "$COUNT_RX"

SOCKDIR=$(mktemp -d /tmp/lb-pair.XXXXXX)
if [ -z "$LOGDIR" ]; then LOGDIR=$SOCKDIR; fi
mkdir -p "$LOGDIR"
SERVER_PID= CLIENT_PID=

cleanup() {
	local p
	for p in $SERVER_PID $CLIENT_PID; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ "$LOGDIR" = "$SOCKDIR" ]; then rm -rf "$SOCKDIR"; else rm -f "$SOCKDIR"/*.sock; rmdir "$SOCKDIR"; fi
}
trap cleanup EXIT

# boot NAME MAC LOCAL REMOTE KERNEL-ARGS: one guest in the background under
# a hard timeout; sets BOOT_PID.
boot() {
	local name=$1 mac=$2 local_sock=$3 remote_sock=$4 args=$5
	local extra=()
	[ -n "$ICOUNT" ] && extra+=(-icount shift=0)
	[ -n "$COUNT_RX" ] && [ "$name" = server ] && extra+=(-plugin "$GUEST/insnplugin.so,out=$LOGDIR/server.rxw")
	# romfile= drops the NIC's iPXE option ROM: it only slows the boot.
	lb_guest "$name" "$INITRD" "$MEM" "pkt.nic=$NIC $args $APPEND" "${LB_SMP_ARGS[@]}" "${extra[@]}" \
		-netdev "dgram,id=n0,local.type=unix,local.path=$local_sock,remote.type=unix,remote.path=$remote_sock" \
		-device "$NIC_DEV,netdev=n0,mac=$mac,romfile="
}

common="pkt.idle=60000 pkt.mode=$MODE pkt.variant=$VARIANT pkt.sizes=$SIZES pkt.runs=$RUNS pkt.warmup=$WARMUP pkt.gap=$GAP pkt.cpu=$CPU_MS"
# With --swap each guest also knows its peer, for the second phase's client.
sargs= cargs=
[ -n "$SWAP" ] && sargs="pkt.peer=$CLIENT_MAC pkt.then=role:client" cargs="pkt.then=role:server"
[ -n "$COUNT_RX" ] && sargs="$sargs pkt.rxcount=1"
boot server "$SERVER_MAC" "$SOCKDIR/s.sock" "$SOCKDIR/c.sock" "pkt.role=server $common pkt.variant=$SERVER_VARIANT $sargs"
SERVER_PID=$BOOT_PID
boot client "$CLIENT_MAC" "$SOCKDIR/c.sock" "$SOCKDIR/s.sock" "pkt.role=client pkt.peer=$SERVER_MAC $common $cargs"
CLIENT_PID=$BOOT_PID

# The client's "bye" stops the server; give it a moment to power off.
lb_wait_pair

# Serial logs end lines with CR LF; strip the CRs once.
for side in client server; do
	touch "$LOGDIR/$side.log"
	tr -d '\r' <"$LOGDIR/$side.log" >"$LOGDIR/$side.txt"
done
CLIENT_LINES='^(RESULT|SUMMARY|PORT|SKIP) ' SERVER_LINES='^(SRVSTAT|RESULT ceiling) '
[ -n "$SWAP" ] && CLIENT_LINES="$CLIENT_LINES|$SERVER_LINES|^PHASE " SERVER_LINES=$CLIENT_LINES
grep -E "$CLIENT_LINES" "$LOGDIR/client.txt" || true
grep -E "$SERVER_LINES" "$LOGDIR/server.txt" || true
[ -z "$COUNT_RX" ] || sed -n 's/^RXW /SRVSTAT rxw /p' "$LOGDIR/server.rxw" 2>/dev/null || true

verdict() { # SIDE: empty if every run (mode, variant, role) ended well, else why not
	local bad
	bad=$(grep '^DONE' "$LOGDIR/$1.txt" | grep -vx 'DONE ok' | head -1)
	[ -z "$bad" ] && ! grep -qx 'DONE ok' "$LOGDIR/$1.txt" && bad="no DONE line"
	[ -z "$bad" ] && [ -n "$SWAP" ] && ! grep -q '^PHASE 2 ' "$LOGDIR/$1.txt" && bad="never swapped roles"
	[ -z "$bad" ] && return 0
	echo "$1: $bad"
}
fail=
[ "$crc" = 124 ] && fail="client QEMU timed out after ${TIMEOUT}s"
[ -z "$fail" ] && [ "$src" = 124 ] && fail="server QEMU timed out after ${TIMEOUT}s"
[ -z "$fail" ] && fail=$(verdict client)
[ -z "$fail" ] && fail=$(verdict server)
if [ -n "$fail" ]; then
	lb_log "pair $MODE/$VARIANT/$NIC${ICOUNT:+/icount} failed: $fail (logs: $LOGDIR)"
	[ "$LOGDIR" = "$SOCKDIR" ] && tail -n 5 "$LOGDIR"/client.txt "$LOGDIR"/server.txt "$LOGDIR"/*.qemu >&2
	exit 1
fi
exit 0
