#!/usr/bin/env bash
# Boots two VMs of this kernel joined NIC to NIC by QEMU's dgram backend
# over unix sockets (9000-byte frames, back-pressure, no loss), the server
# first; the client starts when the server's log says READY.
# Usage: tools/net-pair.sh KERNEL "SERVER CMDLINE" "CLIENT CMDLINE" LOGDIR [TIMEOUT]
# In the command lines @SMACi@ / @CMACi@ stand for NIC i's MAC on either side.
# Environment: NICS (default 1), MODEL (e1000), QEMU_EXTRA (extra QEMU args
# for both, e.g. "-icount shift=0"; @SIDE@ in it stands for server or
# client), READY (READY lines the server prints
# before the client may start; default 1). Exit: 0 when both kernels exit 0.
set -uo pipefail
kernel=$1 scmd=$2 ccmd=$3 logdir=$4 tmo=${5:-120}
here=$(cd "$(dirname "$0")" && pwd)
nics=${NICS:-1} model=${MODEL:-e1000} extra=${QEMU_EXTRA:-}
mkdir -p "$logdir"
sock=$(mktemp -d /tmp/netpair.XXXXXX)
spid= cpid=
# On any exit, interrupted too: both QEMUs (qemu-run.sh's timeout child
# first, which passes the signal on to QEMU), then the sockets.
cleanup() {
	local p
	for p in $spid $cpid; do
		pkill -TERM -P "$p" 2>/dev/null
		kill "$p" 2>/dev/null
	done
	rm -rf "$sock"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
smac() { printf '52:54:00:00:10:%02x' "$1"; }
cmac() { printf '52:54:00:00:20:%02x' "$1"; }
args() { # side
	local a=() i l r m
	for ((i = 0; i < nics; i++)); do
		if [ "$1" = s ]; then l=s$i r=c$i m=$(smac $i); else l=c$i r=s$i m=$(cmac $i); fi
		a+=(-netdev "dgram,id=n$i,local.type=unix,local.path=$sock/$l,remote.type=unix,remote.path=$sock/$r"
			-device "$model,netdev=n$i,mac=$m")
	done
	echo "${a[@]}"
}
subst() {
	local s=$1 i
	for ((i = 0; i < nics; i++)); do s=${s//@SMAC$i@/$(smac $i)}; s=${s//@CMAC$i@/$(cmac $i)}; done
	echo "$s"
}
rm -f "$logdir/server.log" "$logdir/client.log"
# shellcheck disable=SC2046,SC2086
SERIAL=$logdir/server.log "$here/qemu-run.sh" "$kernel" "$(subst "$scmd")" "$tmo" $(args s) ${extra//@SIDE@/server} \
	>/dev/null 2>"$logdir/server.err" &
spid=$!
for ((t = 0; t < 600; t++)); do
	n=$(grep -ac READY "$logdir/server.log" 2>/dev/null)
	[ "${n:-0}" -ge "${READY:-1}" ] && break
	kill -0 $spid 2>/dev/null || break
	sleep 0.1
done
# shellcheck disable=SC2046,SC2086
SERIAL=$logdir/client.log "$here/qemu-run.sh" "$kernel" "$(subst "$ccmd")" "$tmo" $(args c) ${extra//@SIDE@/client} \
	>/dev/null 2>"$logdir/client.err" &
cpid=$!
wait $cpid
crc=$?
wait $spid
src=$?
spid= cpid=
echo "net-pair: server status $src, client status $crc"
[ $src -eq 0 ] && [ $crc -eq 0 ]
