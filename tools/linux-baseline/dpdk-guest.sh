# dpdk-guest.sh: pkt.variant=dpdk in the Linux baseline guest (sourced by
# init.sh instead of bringing the NIC up in the kernel; in initrd-dpdk.gz
# only, see build-dpdk.sh).  No kernel driver ever takes the NIC: it is
# bound to uio_pci_generic, 2 MB hugepages are mounted, and /bin/dpdkbench
# runs each pkt.mode in turn with the driver for the NIC (net_e1000_em on
# the e1000 and e1000e, net_virtio on virtio-net), then pkt.then's second
# phase if any.  Kernel command line keys as init.sh's, plus
# pkt.hugepages=N (2 MB pages, default 64) and pkt.ceilms=MS (mode
# ceiling: how long the sender sends per size).  pkt.nics=N (N > 1, mode
# window): the first N NICs bound, one EAL lcore per CPU (-l 0-(nproc-1))
# and dpdkbench --ports N, the stream striped over them (dpdkstripe.h);
# pkt.peer then lists the peer's MAC on each NIC, comma-separated.  One
# NIC (the default) is the plain form: the first NIC, lcore 0.
HUGEPAGES=64 CEILMS=1000
for w in $(cat /proc/cmdline); do
	case "$w" in
	pkt.hugepages=*) HUGEPAGES=${w#*=} ;;
	pkt.ceilms=*) CEILMS=${w#*=} ;;
	esac
done

dpdk_fail() {
	echo "DONE fail $*"
	halt_now
}

# The first $PORTS Ethernet controllers (PCI class 0x0200) on the bus, in
# bus order (DPDK's port order); sets BDFS and BDF (the first).
dpdk_find_nics() {
	BDFS= BDF=
	for d in /sys/bus/pci/devices/*; do
		case "$(cat "$d/class")" in 0x0200*) BDFS="$BDFS ${d##*/}" ;; esac
		[ "$(echo $BDFS | wc -w)" -lt "$PORTS" ] || break
	done
	BDF=$(echo $BDFS | cut -d' ' -f1)
	[ "$(echo $BDFS | wc -w)" = "$PORTS" ]
}

# Binds $BDFS to uio_pci_generic by their vendor and device IDs (no other
# driver holds them: init.sh loaded none; new_id takes every device of
# those IDs).
dpdk_bind_nics() {
	local d v i b
	for m in $(cat /lib/modules/dpdk.order); do insmod "/lib/modules/$m.ko" || return 1; done
	for b in $BDFS; do
		d=/sys/bus/pci/devices/$b
		v=$(cat "$d/vendor") i=$(cat "$d/device")
		dpdk_bound "$d" || echo "${v#0x} ${i#0x}" >/sys/bus/pci/drivers/uio_pci_generic/new_id 2>/dev/null
		wait_until 50 dpdk_bound "$d" || return 1 # init.sh's
	done
}

# Whether the PCI device at sysfs path $1 is bound to uio_pci_generic.
dpdk_bound() { [ "$(basename "$(readlink "$1/driver" 2>/dev/null)")" = uio_pci_generic ]; }

dpdk_hugepages() {
	mkdir -p /mnt/huge
	mount -t hugetlbfs -o pagesize=2M nodev /mnt/huge || return 1
	echo "$HUGEPAGES" >/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
	[ "$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages)" -ge "$HUGEPAGES" ]
}

# EAL loads no driver from a world-writable path (the initramfs's root is
# one) and keeps its runtime files under /var/run/dpdk.
chmod 755 / /lib /lib/dpdk
mkdir -p /var/run/dpdk
PORTS=${NICS:-1} LCORES=0
[ "$PORTS" -gt 1 ] && LCORES=0-$(($(nproc) - 1))
dpdk_find_nics || dpdk_fail "$PORTS Ethernet controllers wanted on the PCI bus, found:$BDFS"
dpdk_hugepages || dpdk_fail "cannot reserve $HUGEPAGES hugepages of 2 MB"
dpdk_bind_nics || dpdk_fail "cannot bind$BDFS to uio_pci_generic"
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu
set --
for so in /lib/dpdk/*.so*; do set -- "$@" -d "$so"; done
for b in $BDFS; do set -- "$@" -a "$b"; done
EAL="-l $LCORES -n 1 --in-memory --huge-dir /mnt/huge --iova-mode=pa --no-telemetry $*"
echo "GUEST up kernel=$(uname -r) nic=$NIC bdf=$(echo $BDFS | tr ' ' ,) id=$(cat "/sys/bus/pci/devices/$BDF/vendor"):$(cat \
	"/sys/bus/pci/devices/$BDF/device") bound=uio_pci_generic hugepages=${HUGEPAGES}x2M cpus=$(nproc) lcores=$LCORES" \
	"clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
[ -n "$ROLE" ] || dpdk_fail "no pkt.role on the kernel command line"
# next_phase (init.sh) sets up the second phase, e.g. the other role.
while :; do
	for m in $(echo "$MODE" | tr , ' '); do
		set -- --role "$ROLE" --mode "$m" --sizes "$SIZES" --runs "$RUNS" --warmup "$WARMUP" \
			--timeout-ms "$TIMEOUT" --idle-timeout-ms "$IDLE" --gap-ms "$GAP" --cpu-ms "$CPU" --ceiling-ms "$CEILMS"
		[ -n "$PEER" ] && set -- "$@" --peer "$PEER"
		[ "$PORTS" -gt 1 ] && set -- "$@" --ports "$PORTS"
		[ "$RXCOUNT" = 1 ] && [ "$ROLE" = server ] && set -- "$@" --rx-count
		# shellcheck disable=SC2086
		/bin/dpdkbench $EAL -- "$@"
		rc=$?
		echo "PKTBENCH mode=$m variant=dpdk exit=$rc"
		[ $rc = 0 ] || halt_now
	done
	next_phase || break
done
halt_now
