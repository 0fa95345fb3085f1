#!/usr/bin/env bash
# interop-pair.sh: the research kernel and a Linux guest exchange verified
# round trips over emulated e1000 (or virtio-net, or e1000e) NICs.  One VM of each, joined NIC to NIC
# by QEMU's dgram backend over a pair of unix sockets (as tools/net-pair.sh
# joins two kernels); the server boots first and the client once the
# server's serial log says READY.
#
#   tools/interop-pair.sh kernel-server|linux-server LOGDIR [options]
#     kernel-server   kernel `pingpong role=server`, Linux `pktbench --role client`
#     linux-server    Linux `pktbench --role server`, kernel `pingpong role=client`
#   --kernel ELF      the kernel (default build/kernel.elf)
#   --guest DIR       the Linux guest from tools/linux-baseline/build.sh
#                     (default build/linux-baseline)
#   --sizes LIST      payload bytes (default 1,60,1500,4096,8192,8960)
#   --iters N --warm N  measured and warm-up round trips per size (4, 1)
#   --variant packet|mmap  pktbench's socket variant (packet)
#   --timeout S       hard limit for each VM (90)
#   --nic e1000|virtio|e1000e  both VMs' NIC model (default e1000)
#   --mode rtt|window  rtt (default): the round trips above; window: one
#                     windowed stream of the one size --sizes gives (4096
#                     packets, 64 a batch, 2 batches unacknowledged at most,
#                     a cumulative acknowledgement per batch).  linux-server:
#                     the kernel's `stream role=client` (user/stream.c) into
#                     pktbench's server (pktwindow.h), then a 1-byte pingpong
#                     round trip whose quit ends the server; passes when the
#                     kernel's client got every acknowledgement and pktbench
#                     took the stream intact (SRVSTAT window total ...
#                     bad=0).  kernel-server: pktbench's window client
#                     (pkt.probe=0: the kernel's stream server answers no
#                     probe) into the kernel's `stream role=server`; passes
#                     when the kernel checked every packet once, in order
#                     and intact, and pktbench got every acknowledgement.
#
# Both sides fill and verify every payload (wire_pattern of lib/include/wire.h).
# Serial logs: LOGDIR/kernel.log, LOGDIR/linux.log (CR-stripped copy in
# linux.txt).  Exit 0 only when the kernel exits with status 0 (all its
# checks passed, no frame leaked) and pktbench ends with "DONE ok".
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() { sed -n '2,37s/^# \{0,1\}//p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
DIR=$1 LOGDIR=$2
shift 2
KERNEL=$ROOT/build/kernel.elf GUEST=$ROOT/build/linux-baseline
SIZES=1,60,1500,4096,8192,8960 ITERS=4 WARM=1 VARIANT=packet TMO=90 NIC=e1000 MODE=rtt
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) KERNEL=$2; shift ;;
	--guest) GUEST=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--iters) ITERS=$2; shift ;;
	--warm) WARM=$2; shift ;;
	--variant) VARIANT=$2; shift ;;
	--nic) NIC=$2; shift ;;
	--timeout) TMO=$2; shift ;;
	--mode) MODE=$2; shift ;;
	*) usage ;;
	esac
	shift
done
case "$DIR" in kernel-server | linux-server) ;; *) usage ;; esac
case "$VARIANT" in packet | mmap) ;; *) usage ;; esac
case "$MODE" in rtt) ;; window) [ "${SIZES//,/}" = "$SIZES" ] || usage ;; *) usage ;; esac
case "$NIC" in
e1000) KDEV=e1000 LDEV=e1000,romfile= ;;
virtio) KDEV=virtio-net-pci,disable-legacy=on LDEV=virtio-net-pci,disable-legacy=on,romfile= ;;
e1000e) KDEV=e1000e LDEV=e1000e,romfile= ;;
*) usage ;;
esac
log() { echo "interop-pair: $*" >&2; }
[ -f "$KERNEL" ] || { log "no kernel $KERNEL (make)"; exit 2; }
[ -f "$GUEST/vmlinuz" ] && [ -f "$GUEST/initrd.gz" ] ||
	{ log "no Linux guest in $GUEST (make linux-baseline)"; exit 2; }

KMAC=52:54:00:00:4b:01 # the kernel's NIC
LMAC=52:54:00:00:4c:01 # the Linux guest's NIC
mkdir -p "$LOGDIR"
rm -f "$LOGDIR"/kernel.log "$LOGDIR"/kernel.err "$LOGDIR"/linux.log "$LOGDIR"/linux.txt "$LOGDIR"/linux.qemu
SOCK=$(mktemp -d /tmp/interop.XXXXXX)
KPID= LPID=

# Each VM runs in a session of its own (setsid, started from a background
# job so it needs no fork): killing that process group ends its timeout
# wrapper and QEMU together, and nothing else.
stop_vm() { [ -n "$1" ] && kill -- -"$1" 2>/dev/null; }
cleanup() {
	stop_vm "$KPID"
	stop_vm "$LPID"
	wait 2>/dev/null
	rm -rf "$SOCK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netdev() { # LOCAL REMOTE
	echo "dgram,id=n0,local.type=unix,local.path=$SOCK/$1,remote.type=unix,remote.path=$SOCK/$2"
}

# boot_kernel CMDLINE: the kernel under tools/qemu-run.sh (TCG; exit status
# = the kernel's).  Sets KPID.
boot_kernel() {
	SERIAL=$LOGDIR/kernel.log ACCEL=tcg setsid "$ROOT/tools/qemu-run.sh" "$KERNEL" "$1" "$TMO" \
		-netdev "$(netdev k l)" -device "$KDEV,netdev=n0,mac=$KMAC" \
		</dev/null >/dev/null 2>"$LOGDIR/kernel.err" &
	KPID=$!
}

# boot_linux ARGS: the Linux guest; /init runs pktbench with the pkt.*
# arguments and powers off.  MTU 9000 (init.sh).  Sets LPID.
boot_linux() {
	# romfile= drops the e1000's iPXE option ROM: it only slows the boot.
	setsid timeout -k 5 "$TMO" qemu-system-x86_64 -accel tcg -cpu max -m 256M \
		-nographic -no-reboot -monitor none -serial "file:$LOGDIR/linux.log" \
		-kernel "$GUEST/vmlinuz" -initrd "$GUEST/initrd.gz" \
		-append "console=ttyS0 quiet panic=-1 no_timer_check pkt.mode=rtt pkt.variant=$VARIANT pkt.nic=$NIC $1" \
		-netdev "$(netdev l k)" -device "$LDEV,netdev=n0,mac=$LMAC" \
		</dev/null >"$LOGDIR/linux.qemu" 2>&1 &
	LPID=$!
}

# wait_ready LOG PATTERN PID SECONDS: 0 once LOG has a line with PATTERN.
wait_ready() {
	local i
	for ((i = 0; i < $4 * 10; i++)); do
		grep -aq -- "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || { grep -aq -- "$2" "$1" 2>/dev/null; return; }
		sleep 0.1
	done
	return 1
}

# wait_vm PID SECONDS: its exit status; killed (status 124) after SECONDS.
wait_vm() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$1" 2>/dev/null; then
		stop_vm "$1"
		wait "$1" 2>/dev/null
		return 124
	fi
	wait "$1"
}

START=$EPOCHREALTIME
KSERVER="run=pingpong role=server peer=$LMAC timeout_ms=60000"
KCLIENT="run=pingpong role=client peer=$LMAC sizes=$SIZES iters=$ITERS warm=$WARM timeout_ms=5000"
LSERVER="pkt.role=server pkt.idle=60000"
LCLIENT="pkt.role=client pkt.peer=$KMAC pkt.sizes=$SIZES pkt.runs=$ITERS pkt.warmup=$WARM pkt.timeout=5000"
# The window mode: the stream, then the pingpong whose quit ends the Linux
# server; both programs get every word (stream takes size=, pingpong sizes=).
if [ "$MODE" = window ]; then
	KCLIENT="run=stream,pingpong role=client peer=$LMAC size=$SIZES count=4096 batch=64 window=2 sizes=1 iters=1 warm=0 timeout_ms=20000"
	KSERVER="run=stream role=server peer=$LMAC size=$SIZES count=4096 batch=64 window=2 timeout_ms=60000"
	LCLIENT="pkt.role=client pkt.mode=window pkt.peer=$KMAC pkt.sizes=$SIZES pkt.runs=1 pkt.warmup=0 pkt.timeout=20000 pkt.probe=0"
fi
why=()
if [ "$DIR" = kernel-server ]; then
	boot_kernel "$KSERVER"
	kprog=${KSERVER%% *}
	wait_ready "$LOGDIR/kernel.log" "READY ${kprog#run=} server" "$KPID" 60 || why+=("kernel server never READY")
	[ ${#why[@]} -eq 0 ] && boot_linux "$LCLIENT"
	first=$LPID second=$KPID
else
	boot_linux "$LSERVER"
	wait_ready "$LOGDIR/linux.log" "READY role=server" "$LPID" 60 || why+=("Linux server never READY")
	[ ${#why[@]} -eq 0 ] && boot_kernel "$KCLIENT"
	first=$KPID second=$LPID
fi
krc=none lrc=none
if [ ${#why[@]} -eq 0 ]; then
	# The client first; then the server, which ends on the client's
	# 0-byte packet (the Linux server waits 1 s more for a bye).
	wait_vm "$first" $((TMO + 10))
	rc=$?
	[ "$first" = "$KPID" ] && krc=$rc || lrc=$rc
	wait_vm "$second" 30
	rc=$?
	[ "$second" = "$KPID" ] && krc=$rc || lrc=$rc
fi
KPID= LPID=
ELAPSED=$(awk -v a="$START" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

touch "$LOGDIR/kernel.log" "$LOGDIR/linux.log"
tr -d '\r' <"$LOGDIR/linux.log" >"$LOGDIR/linux.txt"
KLOG=$LOGDIR/kernel.log LTXT=$LOGDIR/linux.txt
case "$krc" in
0) ;;
none) ;;
124) why+=("kernel VM timed out") ;;
*) why+=("kernel exited with status $krc") ;;
esac
[ "$lrc" = 124 ] && why+=("Linux VM timed out")
if [ "$krc" != none ]; then
	grep -aq 'KERNEL_EXIT status=0' "$KLOG" || why+=("no 'KERNEL_EXIT status=0' in the kernel log")
	grep -aq '\.\.\. FAIL' "$KLOG" && why+=("a kernel check failed: $(grep -a -m1 '\.\.\. FAIL' "$KLOG" | tr -d '\r')")
	grep -aq 'LEAK' "$KLOG" && why+=("the kernel leaked frames")
fi
grep -qx 'DONE ok' "$LTXT" || why+=("pktbench: $(grep -m1 '^DONE' "$LTXT" || echo 'no DONE line')")
if [ "$MODE" = window ] && [ "$DIR" = kernel-server ]; then
	grep -aq "^RESULT stream system=kernel role=server bytes=$SIZES packets=4096 " "$KLOG" ||
		why+=("no RESULT line of the kernel's stream server for 4096 packets of $SIZES bytes")
	grep -q "^RESULT window variant=$VARIANT bytes=$SIZES rep=0 packets=4096 " "$LTXT" ||
		why+=("pktbench's window client gave no RESULT for 4096 packets of $SIZES bytes")
elif [ "$MODE" = window ]; then
	grep -q "^SRVSTAT window total streams=1 packets=4096 bad=0" "$LTXT" ||
		why+=("pktbench did not take one stream of 4096 packets intact: $(grep -m1 '^SRVSTAT window total' "$LTXT" || echo 'no SRVSTAT window total line')")
	grep -q "^SRVSTAT window variant=$VARIANT bytes=$SIZES packets=4096 " "$LTXT" ||
		why+=("pktbench's stream was not of $SIZES bytes")
	grep -aq "^RESULT stream system=kernel role=client bytes=$SIZES packets=4096 " "$KLOG" ||
		why+=("no RESULT line of the kernel's stream client")
fi

# What each side measured and checked.
grep -a -E '^(SUITE|STATS|RESULT rtt|RESULT stream|frames:|KERNEL_EXIT)' "$KLOG" | tr -d '\r' | sed 's/^/kernel: /'
grep -E '^(READY|SUMMARY|QUIT|STATS|SRVSTAT total|SRVSTAT window|RESULT window|DONE)' "$LTXT" | sed 's/^/linux:  /'
if [ ${#why[@]} -eq 0 ]; then
	printf 'interop-pair: %s %s ok in %ss (logs: %s)\n' "$DIR" "$MODE" "$ELAPSED" "$LOGDIR"
	exit 0
fi
printf 'interop-pair: %s %s FAILED in %ss (logs: %s)\n' "$DIR" "$MODE" "$ELAPSED" "$LOGDIR"
printf '    %s\n' "${why[@]}"
tail -n 3 "$LOGDIR/kernel.err" "$LOGDIR/linux.qemu" 2>/dev/null | sed 's/^/    | /'
exit 1
