#!/usr/bin/env bash
# run-nfs.sh: boot an NFS server and an NFS client Linux baseline guest
# (initrd-nfs.gz, see build-nfs.sh and nfs-guest.sh) joined by 1-4 links (one
# QEMU dgram/unix wire per link, NIC K to NIC K, as run-links.sh), run the
# client's measurements and print its lines (FSB, NFSMOUNT, FSCUT, NETDEV,
# NFSCLIENT) and the server's (NFSD), plus CUT/RESTORE lines of the cuts made
# here, on stdout.  Exit status 0 only if both guests end with "DONE ok" and
# every requested cut fell inside its read.
#
#   run-nfs.sh [--links N] [--mbps R] [--cut-after S] [--timeout SECONDS]
#              [--guest DIR] [--logdir DIR] [--nic e1000|virtio] [--mem MIB]
#              [--delay-ms D] [--append "nfs.vers=4.2 nfs.sizes=4 ..."] [--icount]
#              [--cut-for S]
#
# More than one link: bond0 in balance-rr (miimon 100 ms) on both guests
# (10.0.0.1 server, 10.0.0.2 client); one link: eth0 with the same
# addresses.  --mbps paces every NIC with tbf.  --cut-after S: S seconds
# after each "FSCUT begin" line of the client, link 0 is cut on both guests
# (QMP set_link off: a visible cut), and restored at its "FSCUT end".  Each
# guest has --mem MiB (512: the server's tmpfs holds the files).
# --delay-ms D: a third guest between them (the same initrd, pkt.role=router,
# 256 MiB) bridges server link K to client link K and delays every frame
# it forwards by D/2 ms with netem, so each round trip gains D ms.
# --icount: every guest under -icount shift=0 (a busy guest ns is one
# instruction: fsbench cpu's busy figures count instructions).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

LINKS=1 MBPS= CUT_AFTER= CUT_FOR= DELAY_MS= TIMEOUT=600 APPEND= GUEST=$ROOT/build/linux-baseline LOGDIR= MEM=512 ICOUNT=()
NIC=${NIC:-e1000}
mac() { printf '52:54:00:4e:4%d:%02d' "$2" "$1"; }
usage() { sed -n '2,/^set -euo/s/^# \{0,1\}//p' "$0" | sed '$d' >&2; exit 2; }

while [ $# -gt 0 ]; do
	case "$1" in
	--links) LINKS=$2; shift ;;
	--mbps) MBPS=$2; shift ;;
	--cut-after) CUT_AFTER=$2; shift ;;
	--cut-for) CUT_FOR=$2; shift ;;
	--delay-ms) DELAY_MS=$2; shift ;;
	--timeout) TIMEOUT=$2; shift ;;
	--append) APPEND=$2; shift ;;
	--guest) GUEST=$2; shift ;;
	--logdir) LOGDIR=$2; shift ;;
	--nic) NIC=$2; shift ;;
	--mem) MEM=$2; shift ;;
	--icount) ICOUNT=(-icount shift=0) ;;
	*) usage ;;
	esac
	shift
done
case "$LINKS" in [1-4]) ;; *) lb_die "--links $LINKS: 1 to 4" ;; esac
case "$NIC" in
e1000) NIC_DEV=e1000 ;;
virtio) NIC_DEV=virtio-net-pci,disable-legacy=on ;;
*) usage ;;
esac
[ -n "$CUT_AFTER" ] && [ "$LINKS" -lt 2 ] && lb_die "--cut-after needs at least 2 links"
[ -f "$GUEST/vmlinuz" ] && [ -f "$GUEST/initrd-nfs.gz" ] || lb_die "no NFS guest in $GUEST (run LB_NFS=1 build.sh)"

SOCKDIR=$(mktemp -d /tmp/lb-nfs.XXXXXX)
[ -n "$LOGDIR" ] || LOGDIR=$SOCKDIR
mkdir -p "$LOGDIR"
SERVER_PID= CLIENT_PID= CUT_PID= ROUTER_PID=
cleanup() {
	local p
	for p in $SERVER_PID $CLIENT_PID $CUT_PID $ROUTER_PID; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ "$LOGDIR" = "$SOCKDIR" ]; then rm -rf "$SOCKDIR"; else rm -f "$SOCKDIR"/*.sock "$SOCKDIR"/*.qmp; rmdir "$SOCKDIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wire ID K LOCAL REMOTE: NIC K on a dgram wire between two socket names.
wire() {
	nets+=(-netdev "dgram,id=n$2,local.type=unix,local.path=$SOCKDIR/$3.sock,remote.type=unix,remote.path=$SOCKDIR/$4.sock"
		-device "$NIC_DEV,netdev=n$2,id=nic$2,mac=$(mac "$1" "$2"),romfile=")
}

# boot NAME INDEX(1 server, 2 client, 3 router) KERNEL-ARGS; sets BOOT_PID.
# Without a router, link K joins sockets 1.K and 2.K; with one, 1.K to r1.K
# (router NIC K) and 2.K to r2.K (router NIC LINKS+K).
boot() {
	local name=$1 idx=$2 args=$3 k nets=() mem=$MEM
	for k in $(seq 0 $((LINKS - 1))); do
		if [ "$idx" = 3 ]; then
			wire 3 "$k" "r1.$k" "1.$k"
		elif [ -n "$DELAY_MS" ]; then
			wire "$idx" "$k" "$idx.$k" "r$idx.$k"
		else
			wire "$idx" "$k" "$idx.$k" "$((3 - idx)).$k"
		fi
	done
	if [ "$idx" = 3 ]; then
		for k in $(seq 0 $((LINKS - 1))); do wire 3 $((LINKS + k)) "r2.$k" "2.$k"; done
		mem=256
	fi
	lb_guest "$name" initrd-nfs.gz "${mem}M" "pkt.nic=$NIC $args $APPEND" "${LB_SMP_ARGS[@]}" "${ICOUNT[@]}" \
		-qmp "unix:$SOCKDIR/$name.qmp,server=on,wait=off" "${nets[@]}"
}

# qmp_set_link NAME NIC on|off: QMP set_link on one guest's NIC (lbqmp.py).
qmp_set_link() { python3 "$HERE/lbqmp.py" "$SOCKDIR/$1.qmp" "$2" "$3"; }

count() { { tr -d '\r' <"$LOGDIR/client.log"; } 2>/dev/null | grep -c "^$1" || true; }

# For the K-th "FSCUT begin": cut link 0 CUT_AFTER s later unless that read
# has already ended ("CUT k late"), restore it at the K-th "FSCUT end".
cut_watcher() {
	local k=0
	while kill -0 "$CLIENT_PID" 2>/dev/null; do
		if [ "$(count 'FSCUT begin')" -gt $k ]; then
			k=$((k + 1))
			echo "SEEN $k begin at $(date +%s.%N)" >>"$LOGDIR/cut.txt"
			sleep "$CUT_AFTER"
			if [ "$(count 'FSCUT end')" -ge $k ]; then
				echo "CUT $k late" >>"$LOGDIR/cut.txt"
				continue
			fi
			qmp_set_link server nic0 off && qmp_set_link client nic0 off &&
				echo "CUT $k link=0 at $(date +%s.%N)" >>"$LOGDIR/cut.txt"
			if [ -n "$CUT_FOR" ]; then
				sleep "$CUT_FOR"
			else
				while kill -0 "$CLIENT_PID" 2>/dev/null && [ "$(count 'FSCUT end')" -lt $k ]; do sleep 0.1; done
			fi
			qmp_set_link server nic0 on && qmp_set_link client nic0 on &&
				echo "RESTORE $k link=0 at $(date +%s.%N)" >>"$LOGDIR/cut.txt"
		fi
		sleep 0.1
	done
}

bond=none
[ "$LINKS" -gt 1 ] && bond=rr
common="pkt.mode=nfs pkt.nics=$LINKS pkt.bond=$bond"
[ -n "$MBPS" ] && [ "$MBPS" != 0 ] && common="$common pkt.mbps=$MBPS"
[ -n "$CUT_AFTER" ] && common="$common nfs.cut=1"
if [ -n "$DELAY_MS" ]; then
	boot router 3 "pkt.role=router pkt.mode=nfs pkt.nics=$((2 * LINKS)) pkt.bond=none pkt.host=3 nfs.delay_us=$(awk -v d="$DELAY_MS" 'BEGIN { printf "%d", d * 500 }')"
	ROUTER_PID=$BOOT_PID
fi
boot server 1 "pkt.role=server pkt.host=1 pkt.peerhost=2 $common"
SERVER_PID=$BOOT_PID
boot client 2 "pkt.role=client pkt.host=2 pkt.peerhost=1 $common"
CLIENT_PID=$BOOT_PID
if [ -n "$CUT_AFTER" ]; then
	cut_watcher &
	CUT_PID=$!
fi
lb_wait_pair
lb_stop "$CUT_PID"
CUT_PID=

for side in client server; do
	touch "$LOGDIR/$side.log"
	tr -d '\r' <"$LOGDIR/$side.log" >"$LOGDIR/$side.txt"
done
grep -E '^(FSB|FSPROG|FSLINK|NFSMOUNT|FSCUT|NETDEV|NFSCLIENT) ' "$LOGDIR/client.txt" || true
grep -E '^NFSD ' "$LOGDIR/server.txt" || true
if [ -n "$ROUTER_PID" ]; then
	lb_stop "$ROUTER_PID"
	ROUTER_PID=
	tr -d '\r' <"$LOGDIR/router.log" >"$LOGDIR/router.txt"
	grep -E '^ROUTER ' "$LOGDIR/router.txt" || true
fi
[ -f "$LOGDIR/cut.txt" ] && cat "$LOGDIR/cut.txt"

fail=
[ "$crc" = 124 ] && fail="client QEMU timed out after ${TIMEOUT}s"
[ -z "$fail" ] && [ "$src" = 124 ] && fail="server QEMU timed out after ${TIMEOUT}s"
[ -z "$fail" ] && [ -n "$DELAY_MS" ] && ! grep -q '^ROUTER ready' "$LOGDIR/router.txt" &&
	fail="router: $(grep -m1 '^DONE' "$LOGDIR/router.txt" || echo 'not ready')"
[ -z "$fail" ] && ! grep -qx 'DONE ok' "$LOGDIR/client.txt" &&
	fail="client: $(grep -m1 '^DONE' "$LOGDIR/client.txt" || echo 'no DONE line')"
[ -z "$fail" ] && ! grep -qx 'DONE ok' "$LOGDIR/server.txt" &&
	fail="server: $(grep -m1 '^DONE' "$LOGDIR/server.txt" || echo 'no DONE line')"
if [ -z "$fail" ] && [ -n "$CUT_AFTER" ]; then
	begins=$(count 'FSCUT begin')
	cuts=$(grep -c '^CUT [0-9]* link' "$LOGDIR/cut.txt" 2>/dev/null || true)
	[ "$cuts" = "$begins" ] || fail="$cuts of $begins cut reads were cut mid-read"
fi
if [ -n "$fail" ]; then
	lb_log "NFS pair over $LINKS link(s) failed: $fail (logs: $LOGDIR)"
	[ "$LOGDIR" = "$SOCKDIR" ] && tail -n 12 "$LOGDIR"/*.txt "$LOGDIR"/*.qemu >&2
	exit 1
fi
exit 0
