#!/usr/bin/env bash
# run-tlb.sh: boot one Linux baseline guest with several vCPUs, run tlbbench
# in it (munmap and mremap of pages another thread touched, on the same or
# another CPU, and a cold memcpy; see tlbbench.c) and print its result lines
# (GUEST, TLB, SKIP, ERROR) on stdout.  Exit status 0 only if tlbbench ends
# with "DONE ok" and the guest brought every vCPU up.
#
#   run-tlb.sh [--smp N] [--count] [--sizes 64,...,65536] [--reps N]
#              [--opt NAME:VALUE[,...]] [--timeout SECONDS]
#              [--guest DIR] [--logdir DIR] [--no-build]
#
# --smp (default 2): the guest's vCPUs, under multi-threaded TCG.  --count
# loads insnplugin.so (built by build.sh), which writes each marked
# window's instructions per CPU to LOGDIR/insns.txt (printed after the TLB
# lines); the plugin slows the guest, so real-time fields of such a boot
# are not used.  (Not -icount: Debian's 6.1 kernel hangs bringing its
# second CPU up under QEMU 7.2's -icount, after "x86: Booting SMP
# configuration".)  --opt passes tlbbench options through pkt.tlbopt (lists
# joined by '+', e.g. batch-reps:5,layouts:one-cpu+other-cpu).  The serial
# log goes to --logdir (kept) or a temporary directory (removed).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

SMP=2 COUNT= SIZES=64,128,256,512,1024,2048,4096,8192,16384,32768,65536 REPS=51 OPT= TIMEOUT=600
GUEST=$ROOT/build/linux-baseline LOGDIR= BUILD=1

usage() { sed -n '2,17s/^# \{0,1\}//p' "$0" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case "$1" in
	--smp) SMP=$2; shift ;;
	--count) COUNT=1 ;;
	--sizes) SIZES=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--opt) OPT=$2; shift ;;
	--timeout) TIMEOUT=$2; shift ;;
	--guest) GUEST=$2; shift ;;
	--logdir) LOGDIR=$2; shift ;;
	--no-build) BUILD= ;;
	*) usage ;;
	esac
	shift
done
case "$SMP" in '' | *[!0-9]* | 0) usage ;; esac

lb_need_pkgs qemu-system-x86
[ -n "$BUILD" ] && "$HERE/build.sh" "$GUEST"
lb_guest_files initrd.gz "$COUNT"

TMP=$(mktemp -d /tmp/lb-tlb.XXXXXX)
[ -n "$LOGDIR" ] || LOGDIR=$TMP
mkdir -p "$LOGDIR"
VM_PID=
cleanup() {
	[ -n "$VM_PID" ] && kill "$VM_PID" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

lb_count_args
lb_guest tlb initrd.gz 256M "pkt.mode=tlb pkt.cpus=$SMP pkt.sizes=$SIZES pkt.runs=$REPS pkt.tlbopt=$OPT" \
	-smp "$SMP" -nic none "${LB_COUNT_ARGS[@]}"
VM_PID=$BOOT_PID
rc=0
wait "$VM_PID" || rc=$?
VM_PID=

tr -d '\r' <"$LOGDIR/tlb.log" >"$LOGDIR/tlb.txt"
# (The console's reset sequence may precede the GUEST line on its line.)
grep -oE 'GUEST up .*' "$LOGDIR/tlb.txt" || true
grep -E '^(TLB|SKIP|ERROR) ' "$LOGDIR/tlb.txt" || true
[ -z "$COUNT" ] || cat "$LOGDIR/insns.txt" 2>/dev/null || true
fail=
[ "$rc" = 124 ] && fail="QEMU timed out after ${TIMEOUT}s"
up=$(sed -n 's/.*GUEST up .*cpus=\([0-9]*\).*/\1/p' "$LOGDIR/tlb.txt")
[ -z "$fail" ] && [ "$up" != "$SMP" ] && fail="guest has ${up:-no} CPUs online, -smp $SMP"
[ -z "$fail" ] && [ -n "$COUNT" ] && [ ! -s "$LOGDIR/insns.txt" ] && fail="the plugin counted no window"
[ -z "$fail" ] && ! grep -qx 'DONE ok' "$LOGDIR/tlb.txt" && fail=$(grep '^DONE' "$LOGDIR/tlb.txt" || echo "no DONE line")
if [ -n "$fail" ]; then
	lb_log "tlbbench -smp $SMP${COUNT:+ (counted)} failed: $fail (log: $LOGDIR/tlb.txt)"
	[ "$LOGDIR" = "$TMP" ] && tail -n 15 "$LOGDIR/tlb.txt" "$LOGDIR/tlb.qemu" >&2
	exit 1
fi
exit 0
