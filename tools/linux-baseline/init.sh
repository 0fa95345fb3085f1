#!/bin/busybox sh
# /init of the Linux baseline guest: bring up the NIC, run pktbench with the
# arguments given on the kernel command line, print to the serial console and
# power off.  Kernel command line keys (all optional except pkt.role):
#   pkt.role=server|client  pkt.mode=rtt|burst  pkt.variant=packet|mmap
#   pkt.sizes=64,1500,8192  pkt.runs=N  pkt.warmup=N  pkt.peer=MAC
#   pkt.timeout=MS (one receive)  pkt.idle=MS (server: longest silence)
#   pkt.gap=MS (client: pause between bursts)
#   pkt.nic=e1000|virtio (default e1000: the driver loaded for eth0)
#   pkt.cpu=MS (client: after each size, bursts for MS between MARK lines)
#   pkt.rxd=N pkt.txd=N pkt.itr=N (e1000 RxDescriptors, TxDescriptors,
#   InterruptThrottleRate; an empty value keeps the driver's default)
#   pkt.shell=1 (a shell instead of the benchmark, for debugging)
/bin/busybox mount -t devtmpfs devtmpfs /dev
# The kernel opens /dev/console for us when it can; make sure anyway.
exec 0</dev/console 1>/dev/console 2>&1
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys

# RxDescriptors: the driver's default 256 receive descriptors hold only ~85
# jumbo frames (3 page buffers each), and QEMU's e1000 drops (not delays) a
# frame that does not fit in the free descriptors, so a 128-frame burst would
# lose frames; the 82540EM takes up to 4096.
ROLE= MODE=rtt VARIANT=packet SIZES=64 RUNS=20 WARMUP=3 PEER= TIMEOUT=5000 IDLE=300000 GAP=2 CPU=0
RXD=4096 TXD= ITR= DEBUG_SHELL= NIC=e1000
for w in $(cat /proc/cmdline); do
	v=${w#*=}
	case "$w" in
	pkt.role=*) ROLE=$v ;;
	pkt.mode=*) MODE=$v ;;
	pkt.variant=*) VARIANT=$v ;;
	pkt.sizes=*) SIZES=$v ;;
	pkt.runs=*) RUNS=$v ;;
	pkt.warmup=*) WARMUP=$v ;;
	pkt.peer=*) PEER=$v ;;
	pkt.timeout=*) TIMEOUT=$v ;;
	pkt.idle=*) IDLE=$v ;;
	pkt.gap=*) GAP=$v ;;
	pkt.cpu=*) CPU=$v ;;
	pkt.rxd=*) RXD=$v ;;
	pkt.txd=*) TXD=$v ;;
	pkt.itr=*) ITR=$v ;;
	pkt.shell=*) DEBUG_SHELL=$v ;;
	pkt.nic=*) NIC=$v ;;
	esac
done

halt_now() {
	sync
	poweroff -f
	# Not reached unless ACPI power-off failed: a panic ends QEMU -no-reboot.
	echo o >/proc/sysrq-trigger
	exit 1
}

# virtio-net: the modules in the order build.sh found from their
# dependencies (virtio_ring, virtio, virtio_pci..., failover, virtio_net).
load_driver() {
	if [ "$NIC" = virtio ]; then
		for m in $(cat /lib/modules/virtio.order); do
			insmod "/lib/modules/$m.ko" || return 1
		done
		return 0
	fi
	set --
	[ -n "$RXD" ] && set -- "$@" RxDescriptors="$RXD"
	[ -n "$TXD" ] && set -- "$@" TxDescriptors="$TXD"
	[ -n "$ITR" ] && set -- "$@" InterruptThrottleRate="$ITR"
	insmod /lib/modules/e1000.ko "$@"
}

bring_up_nic() {
	load_driver || return 1
	ip link set lo up
	ip link set eth0 mtu 9000 up || return 1
	# The e1000 watchdog reports the link a moment after "up"; frames sent
	# before that are dropped.  (virtio-net has it at once, from its status.)
	i=0
	while [ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" != 1 ]; do
		i=$((i + 1))
		[ $i -gt 100 ] && return 1
		sleep 0.1
	done
	return 0
}

if ! bring_up_nic; then
	echo "DONE fail eth0 did not come up"
	halt_now
fi
# The device's interrupts: eth0's line (e1000), or every vector of its
# virtio device (virtioN-config, virtioN-input.0, virtioN-output.0).
IRQS=eth0 DRIVER="e1000=${RXD:-default}/${TXD:-default}/${ITR:-default}"
if [ "$NIC" = virtio ]; then
	IRQS=$(basename "$(readlink /sys/class/net/eth0/device)")
	DRIVER="virtio=$IRQS"
fi
echo "GUEST up kernel=$(uname -r) mtu=$(cat /sys/class/net/eth0/mtu) mac=$(cat /sys/class/net/eth0/address)" \
	"$DRIVER clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"

if [ -n "$DEBUG_SHELL" ]; then
	setsid cttyhack sh
	halt_now
fi
if [ -z "$ROLE" ]; then
	echo "DONE fail no pkt.role on the kernel command line"
	halt_now
fi

set -- --role "$ROLE" --mode "$MODE" --variant "$VARIANT" --sizes "$SIZES" \
	--runs "$RUNS" --warmup "$WARMUP" --timeout-ms "$TIMEOUT" --idle-timeout-ms "$IDLE" --gap-ms "$GAP" \
	--irqs "$IRQS" --cpu-ms "$CPU"
[ -n "$PEER" ] && set -- "$@" --peer "$PEER"
/bin/pktbench "$@"
echo "PKTBENCH exit=$?"
halt_now
