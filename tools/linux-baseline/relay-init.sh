#!/bin/busybox sh
# /relay-init: the Linux baseline guest's init for the relay benchmark
# (bench-relay.sh boots it with rdinit=/relay-init; the file and
# /bin/relaybench come in a second initramfs archive laid over initrd.gz).
# The guests form a line: node 0 (client), routers 1..N-2, node N-1
# (server).  Segment s joins node s and node s+1 with relay.links wires.
# A NIC's MAC says where it is: 52:54:00:5e:SL:NN (segment S, link L, node
# NN, hex), so the order in which the driver names them does not matter.
# Node i has 10.1.s.(i+1)/24 on each segment s it touches (on bondK, in
# balance-rr, when a segment has several links), static routes to the other
# segments through its neighbours, and routers forward (ip_forward=1).
# Kernel arguments:
#   relay.node=I relay.nodes=N relay.links=L (1|2)
#   relay.modes=tcp,raw,rtt relay.sizes=1500,8192 relay.runs=N relay.bursts=N
#   relay.rtts=N relay.warmup=N relay.bytes=N (client: relaybench's options)
#   relay.mbps=R (pace every NIC at R Mbit/s with tbf, as init.sh's pkt.mbps)
#   relay.pace=client (with relay.mbps: pace only the client's NICs, the
#     offered load, so that no router's count holds a qdisc it would not have)
#   relay.rxd=N (e1000 RxDescriptors, default 4096 as init.sh)
#   relay.probe=MS (client: how long to wait for each router and the server to answer)
/bin/busybox mount -t devtmpfs devtmpfs /dev
exec 0</dev/console 1>/dev/console 2>&1
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys

NODE= NODES= LINKS=1 MODES=tcp,raw,rtt SIZES=1500,8192 RUNS=3 BURSTS=20 RTTS=50 WARMUP=1
BYTES=8388608 MBPS= PACE=all RXD=4096 PROBE=60000
for w in $(cat /proc/cmdline); do
	v=${w#*=}
	case "$w" in
	relay.node=*) NODE=$v ;;
	relay.nodes=*) NODES=$v ;;
	relay.links=*) LINKS=$v ;;
	relay.modes=*) MODES=$v ;;
	relay.sizes=*) SIZES=$v ;;
	relay.runs=*) RUNS=$v ;;
	relay.bursts=*) BURSTS=$v ;;
	relay.rtts=*) RTTS=$v ;;
	relay.warmup=*) WARMUP=$v ;;
	relay.bytes=*) BYTES=$v ;;
	relay.mbps=*) MBPS=$v ;;
	relay.pace=*) PACE=$v ;;
	relay.rxd=*) RXD=$v ;;
	relay.probe=*) PROBE=$v ;;
	esac
done

halt_now() {
	sync
	poweroff -f
	echo o >/proc/sysrq-trigger
	exit 1
}
fail() {
	echo "DONE fail $*"
	halt_now
}

[ -n "$NODE" ] && [ -n "$NODES" ] || fail "relay.node and relay.nodes are needed"
[ "$NODES" -ge 2 ] && [ "$NODE" -lt "$NODES" ] || fail "relay.node=$NODE relay.nodes=$NODES"
case "$LINKS" in [1-9]) ;; *) fail "relay.links=$LINKS" ;; esac
LAST=$((NODES - 1))

insmod /lib/modules/e1000.ko RxDescriptors="$RXD" || fail "insmod e1000"
ip link set lo up

# nics_of SEG: this node's NICs on segment SEG (by MAC), in link order.
nics_of() {
	l=0
	while [ $l -lt "$LINKS" ]; do
		want=$(printf '52:54:00:5e:%x%x:%02x' "$1" "$l" "$NODE")
		for d in /sys/class/net/eth*; do
			[ "$(cat "$d/address")" = "$want" ] && echo "${d##*/}"
		done
		l=$((l + 1))
	done
}

wait_carrier() {
	i=0
	while [ "$(cat "/sys/class/net/$1/carrier" 2>/dev/null)" != 1 ]; do
		i=$((i + 1))
		[ $i -gt 100 ] && return 1
		sleep 0.1
	done
}

BONDS=0
# side SEG: brings up this node's link(s) on segment SEG with 10.1.SEG.(NODE+1);
# several links go into a balance-rr bond.
side() {
	seg=$1
	nics=$(nics_of "$seg")
	[ "$(echo $nics | wc -w)" = "$LINKS" ] || fail "segment $seg: found '$nics', want $LINKS NICs"
	dev=$nics
	if [ "$LINKS" -gt 1 ]; then
		if [ $BONDS = 0 ]; then
			for m in $(cat /lib/modules/bond.order); do
				[ "$m" = sch_tbf ] && continue
				insmod "/lib/modules/$m.ko" || fail "insmod $m"
			done
		else
			echo "+bond$BONDS" >/sys/class/net/bonding_masters || fail "cannot create bond$BONDS"
		fi
		dev=bond$BONDS
		BONDS=$((BONDS + 1))
		echo balance-rr >"/sys/class/net/$dev/bonding/mode" || fail "$dev mode"
		echo 100 >"/sys/class/net/$dev/bonding/miimon" || fail "$dev miimon"
		for e in $nics; do
			ip link set "$e" down
			echo "+$e" >"/sys/class/net/$dev/bonding/slaves" || fail "enslave $e to $dev"
		done
	fi
	ip link set "$dev" mtu 9000 up || fail "$dev up"
	for e in $nics $([ "$LINKS" -gt 1 ] && echo "$dev"); do
		wait_carrier "$e" || fail "$e has no carrier"
	done
	ip addr add "10.1.$seg.$((NODE + 1))/24" dev "$dev" || fail "address on $dev"
	DEVS="$DEVS $dev:$nics"
	ETHS="$ETHS $nics"
}

DEVS= ETHS=
[ "$NODE" -gt 0 ] && side $((NODE - 1))
[ "$NODE" -lt "$LAST" ] && side "$NODE"

# Segments further away: left ones through node NODE-1 (its address on
# segment NODE-1 is 10.1.(NODE-1).NODE), right ones through node NODE+1.
s=0
while [ $s -lt "$LAST" ]; do
	if [ $s -lt $((NODE - 1)) ]; then
		ip route add "10.1.$s.0/24" via "10.1.$((NODE - 1)).$NODE" || fail "route to 10.1.$s.0"
	elif [ $s -gt "$NODE" ]; then
		ip route add "10.1.$s.0/24" via "10.1.$NODE.$((NODE + 2))" || fail "route to 10.1.$s.0"
	fi
	s=$((s + 1))
done

[ "$PACE" = client ] && [ "$NODE" != 0 ] && MBPS=
if [ -n "$MBPS" ] && [ "$MBPS" != 0 ]; then
	insmod /lib/modules/sch_tbf.ko || fail "insmod sch_tbf"
	for e in $ETHS; do pktbench netcfg tbf "$e" "$MBPS" || fail "tbf on $e"; done
fi

ROLE=router
[ "$NODE" = 0 ] && ROLE=client
[ "$NODE" = "$LAST" ] && ROLE=server
[ "$ROLE" = router ] && echo 1 >/proc/sys/net/ipv4/ip_forward
echo "GUEST up kernel=$(uname -r) node=$NODE/$NODES role=$ROLE links=$LINKS devs=${DEVS# }" \
	"forward=$(cat /proc/sys/net/ipv4/ip_forward) mbps=${MBPS:-unpaced}" \
	"clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
ip route | sed 's/^/ROUTE /'

case $ROLE in
server | router) relaybench --role "$ROLE" --idle-ms 120000 ;;
client)
	set -- --role client --server "10.1.$((LAST - 1)).$NODES" --modes "$MODES" --sizes "$SIZES" \
		--runs "$RUNS" --bursts "$BURSTS" --rtts "$RTTS" --warmup "$WARMUP" --tcp-bytes "$BYTES" \
		--probe-ms "$PROBE"
	r=1
	while [ $r -lt "$LAST" ]; do
		set -- "$@" --router "10.1.$((r - 1)).$((r + 1))"
		r=$((r + 1))
	done
	relaybench "$@"
	;;
esac
echo "RELAYBENCH exit=$?"
for e in $ETHS; do
	echo "NETDEV $e $(cat /sys/class/net/$e/statistics/rx_packets) rx" \
		"$(cat /sys/class/net/$e/statistics/tx_packets) tx $(cat /sys/class/net/$e/statistics/rx_dropped) rx_dropped" \
		"$(cat /sys/class/net/$e/statistics/rx_missed_errors 2>/dev/null) rx_missed"
done
halt_now
