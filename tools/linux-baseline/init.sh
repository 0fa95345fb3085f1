#!/bin/busybox sh
# /init of the Linux baseline guest: bring up the NIC, run pktbench with the
# arguments given on the kernel command line, print to the serial console and
# power off.  Kernel command line keys (all optional except pkt.role):
#   pkt.role=server|client  pkt.mode=rtt|burst|stream[,...]
#   pkt.variant=packet|mmap|xdp|xdp-sg|tuned|tuned-mmap[,...]
#   pkt.sizes=64,1500,8192  pkt.runs=N  pkt.warmup=N  pkt.peer=MAC
#   pkt.timeout=MS (one receive)  pkt.idle=MS (server: longest silence)
#   pkt.gap=MS (client: pause between bursts)
#   pkt.probe=MS (client: how long it probes its server; 0: no probe, the
#     server is up: the research kernel's stream server, which answers none)
#   pkt.rxcount=1 (server: its QEMU counts receive windows, insnplugin.so:
#     pktbench and dpdkbench --rx-count)
#   pkt.nic=e1000|virtio|e1000e (default e1000: the driver loaded for eth0)
#   pkt.cpu=MS (client: after each size, bursts for MS between MARK lines)
#   pkt.rxd=N pkt.txd=N pkt.itr=N (e1000 RxDescriptors, TxDescriptors,
#   InterruptThrottleRate; an empty value keeps the driver's default)
#   pkt.shell=1 (a shell instead of the benchmark, for debugging)
#   pkt.then=NAME:VALUE[,...] (a second phase in the same boot once every
#     mode has run: those keys set anew, e.g. role:server, the runs again;
#     see next_phase)
#   pkt.variant=dpdk (initrd-dpdk.gz): /bin/dpdk-guest.sh runs dpdkbench
#     instead, the NIC bound to uio_pci_generic (its pkt.hugepages, pkt.ceilms)
# Several links (each key optional; all are plain words, so a runner can put
# them in an "append" string, e.g. "pkt.nics=@NICS@ pkt.mbps=@MBPS@"):
#   pkt.nics=N (NICs used, eth0..ethN-1; default: every NIC the driver found)
#   pkt.bond=none|rr|ab|tlb (default none: bond0 over the NICs in balance-rr,
#     active-backup or balance-tlb; pkt.miimon=MS link check, default 100)
#   pkt.mbps=R[,R...] (pace each NIC with a tbf qdisc at R Mbit/s; one value
#     for all NICs; 0 or empty: unpaced)
#   pkt.host=N pkt.peerhost=N (IPv4 10.0.0.N/24 on bond0, or 10.0.K.N/24 on
#     ethK without a bond; default server 1, client 2; peerhost: the other;
#     pkt.node=I pkt.peernode=I count from 0: host I+1, as a runner's @NODE@)
#   pkt.mode=stream pkt.proto=tcp|mptcp pkt.bytes=N (bytes per connection)
#     with pkt.proto=mptcp: MPTCP limits of NICS-1 extra subflows and
#     accepted addresses; the server announces 10.0.K.N (K >= 1) as "signal"
#     endpoints, so the client opens one subflow per further NIC.
# Link failure (bench-failover.sh):
#   pkt.arp=MS (with pkt.bond: ARP monitoring every MS ms of the peer's
#     10.0.0.PEERHOST instead of miimon)
#   pkt.primary=ethK (with pkt.bond=ab: the slave made active whenever it is up)
#   pkt.bondopt=NAME:VALUE[,NAME:VALUE...] (more bonding sysfs options, written
#     once the bond is up, e.g. arp_validate:all,arp_missed_max:3)
#   pkt.mode=flow pkt.flowms=MS (one connection sending for MS ms, delivery
#     per 100 ms bin printed live; pkt.proto as for stream; pkt.flowcpu=MS:
#     both ends' busy ns sampled every MS ms, a FLOWCPU line at the end;
#     pkt.flowlive=N: only every Nth bin's line printed live; pkt.flowmarks=
#     MS,MS..: the client prints a FLOWMARK line as it passes each;
#     pkt.flowgrace=MS: the server's wait past the duration, 3000)
#   pkt.loglevel=N (console log level once configured, e.g. 6 so that
#     bonding's link messages reach the serial console)
# Tuning: pkt.sysctl=NAME:VALUE[,NAME:VALUE...] (written to /proc/sys/NAME,
#   dots as slashes, before the benchmark, e.g. net.ipv4.tcp_reordering:127)
# NFS (initrd-nfs.gz only): pkt.mode=nfs runs /bin/nfs-guest.sh (its nfs.*
#   keys) instead of pktbench.
# Several CPUs: pkt.irqcpu=N routes every NIC interrupt to CPU N
#   (/proc/irq/*/smp_affinity), pkt.irqcpu=spread NIC ethK's (each of its
#   vectors) to CPU K mod nproc, pkt.rxcpu=N runs pktbench on CPU N only
#   (taskset); IRQCPU lines after the run give each interrupt's count per CPU.
# TLB shootdowns (bench-smp.sh): pkt.mode=tlb runs /bin/tlbbench alone, no
#   NIC brought up (pkt.sizes, pkt.runs: its --sizes and --reps;
#   pkt.tlbopt=NAME:VALUE[,...] passes --NAME VALUE, lists joined by '+',
#   e.g. batch-reps:11,layouts:one-cpu+other-cpu); pkt.cpus=N: fail unless
#   N CPUs are online (the guest line prints nproc either way).
# Load balancing (bench-lb.sh): pkt.mode=lb runs /bin/lbbench instead of
#   pktbench (role server: the receiver, client: the three senders over
#   every NIC or bond0); pkt.lbopt=NAME:VALUE[,...] passes --NAME VALUE
#   (e.g. scale:5,max-s:60).
/bin/busybox mount -t devtmpfs devtmpfs /dev
# The kernel opens /dev/console for us when it can; make sure anyway.
exec 0</dev/console 1>/dev/console 2>&1
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
# libxdp pins its XDP dispatcher in bpffs (pktbench --variant xdp).
mount -t bpf bpf /sys/fs/bpf

# RxDescriptors: the driver's default 256 receive descriptors hold only ~85
# jumbo frames (3 page buffers each), and QEMU's e1000 drops (not delays) a
# frame that does not fit in the free descriptors, so a 128-frame burst would
# lose frames; the 82540EM takes up to 4096.
ROLE= MODE=rtt VARIANT=packet SIZES=64 RUNS=20 WARMUP=3 PEER= TIMEOUT=5000 IDLE=300000 GAP=2 CPU=0 PROBE=
RXD=4096 TXD= ITR= DEBUG_SHELL= NIC=e1000
NICS= BOND=none MIIMON=100 MBPS= HOST= PEERHOST= PROTO=tcp BYTES=16777216
ARP= FLOWMS=20000 FLOWCPU=0 FLOWLIVE=1 FLOWMARKS= FLOWGRACE=3000 LOGLEVEL= PRIMARY= BONDOPT= LBOPT= SYSCTL= TLBOPT= CPUS= IRQCPU= RXCPU=
THEN= RXCOUNT=
# set_key pkt.NAME=VALUE: one kernel argument into its variable.
set_key() {
	v=${1#*=}
	case "$1" in
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
	pkt.probe=*) PROBE=$v ;;
	pkt.cpu=*) CPU=$v ;;
	pkt.rxd=*) RXD=$v ;;
	pkt.txd=*) TXD=$v ;;
	pkt.itr=*) ITR=$v ;;
	pkt.shell=*) DEBUG_SHELL=$v ;;
	pkt.nic=*) NIC=$v ;;
	pkt.nics=*) NICS=$v ;;
	pkt.bond=*) BOND=$v ;;
	pkt.miimon=*) MIIMON=$v ;;
	pkt.mbps=*) MBPS=$v ;;
	pkt.host=*) HOST=$v ;;
	pkt.peerhost=*) PEERHOST=$v ;;
	pkt.node=*) HOST=$((v + 1)) ;;
	pkt.peernode=*) PEERHOST=$((v + 1)) ;;
	pkt.proto=*) PROTO=$v ;;
	pkt.bytes=*) BYTES=$v ;;
	pkt.arp=*) ARP=$v ;;
	pkt.primary=*) PRIMARY=$v ;;
	pkt.bondopt=*) BONDOPT=$v ;;
	pkt.flowms=*) FLOWMS=$v ;;
	pkt.flowcpu=*) FLOWCPU=$v ;;
	pkt.flowgrace=*) FLOWGRACE=$v ;;
	pkt.flowlive=*) FLOWLIVE=$v ;;
	pkt.flowmarks=*) FLOWMARKS=$v ;;
	pkt.loglevel=*) LOGLEVEL=$v ;;
	pkt.lbopt=*) LBOPT=$v ;;
	pkt.sysctl=*) SYSCTL=$v ;;
	pkt.tlbopt=*) TLBOPT=$v ;;
	pkt.cpus=*) CPUS=$v ;;
	pkt.irqcpu=*) IRQCPU=$v ;;
	pkt.rxcpu=*) RXCPU=$v ;;
	pkt.then=*) THEN=$v ;;
	pkt.rxcount=*) RXCOUNT=$v ;;
	esac
}
for w in $(cat /proc/cmdline); do set_key "$w"; done

halt_now() {
	sync
	poweroff -f
	# Not reached unless ACPI power-off failed: a panic ends QEMU -no-reboot.
	echo o >/proc/sysrq-trigger
	exit 1
}

# virtio-net and e1000e: the modules in the order build.sh found from
# their dependencies (virtio_ring, virtio, virtio_pci..., failover,
# virtio_net; e1000e alone in Debian's 6.1). e1000e takes pkt.itr as its
# InterruptThrottleRate; its rings are set by ethtool, which busybox
# lacks, so they keep Linux's default of 256.
load_driver() {
	if [ "$NIC" = virtio ] || [ "$NIC" = e1000e ]; then
		for m in $(cat "/lib/modules/$NIC.order"); do
			if [ "$m" = e1000e ] && [ -n "$ITR" ]; then
				insmod "/lib/modules/$m.ko" InterruptThrottleRate="$ITR" || return 1
			else
				insmod "/lib/modules/$m.ko" || return 1
			fi
		done
		return 0
	fi
	set --
	[ -n "$RXD" ] && set -- "$@" RxDescriptors="$RXD"
	[ -n "$TXD" ] && set -- "$@" TxDescriptors="$TXD"
	[ -n "$ITR" ] && set -- "$@" InterruptThrottleRate="$ITR"
	insmod /lib/modules/e1000.ko "$@"
}

# wait_until N CMD...: runs CMD every 0.1 s until it succeeds (0), at most
# N + 1 times (then 1).
wait_until() {
	local n=$1 i=0
	shift
	until "$@"; do
		i=$((i + 1))
		[ $i -gt "$n" ] && return 1
		sleep 0.1
	done
	return 0
}

has_carrier() { [ "$(cat "/sys/class/net/$1/carrier" 2>/dev/null)" = 1 ]; }

# wait_carrier DEV: the e1000 watchdog reports the link a moment after "up";
# frames sent before that are dropped.  (virtio-net has it at once.)
wait_carrier() { wait_until 100 has_carrier "$1"; }

# The NICs eth0..eth$NICS-1, each up with MTU 9000, or enslaved to bond0.
bring_up_nics() {
	load_driver || return 1
	ip link set lo up
	if [ -z "$NICS" ]; then
		NICS=$(ls -d /sys/class/net/eth* 2>/dev/null | wc -l)
	fi
	[ "$NICS" -ge 1 ] || { echo "no NIC found"; return 1; }
	ETHS=
	k=0
	while [ $k -lt "$NICS" ]; do
		[ -d "/sys/class/net/eth$k" ] || { echo "pkt.nics=$NICS but no eth$k"; return 1; }
		ETHS="$ETHS eth$k"
		k=$((k + 1))
	done
	IF=eth0
	case "$BOND" in
	none | "") BOND=none ;;
	rr | ab | tlb)
		# bonding.ko creates bond0 itself (max_bonds=1).
		for m in $(cat /lib/modules/bond.order); do
			[ "$m" = sch_tbf ] && continue
			insmod "/lib/modules/$m.ko" || return 1
		done
		make_bond || return 1
		IF=bond0
		;;
	*) echo "pkt.bond=$BOND: none, rr, ab or tlb"; return 1 ;;
	esac
	links_up
}

# links_up: MTU 9000 on bond0 (the slaves follow) or on each NIC, all up,
# each with its carrier.
links_up() {
	if [ "$IF" = bond0 ]; then
		ip link set bond0 mtu 9000 up || return 1 # the slaves follow
	else
		for e in $ETHS; do ip link set "$e" mtu 9000 up || return 1; done
	fi
	for e in $ETHS $([ "$IF" = bond0 ] && echo bond0); do
		wait_carrier "$e" || { echo "$e has no carrier"; return 1; }
	done
	return 0
}

# make_bond: bond0 (made if missing) in pkt.bond's mode over $ETHS; mode
# and miimon are set before the first slave, slaves are enslaved while down.
make_bond() {
	[ -d /sys/class/net/bond0 ] || echo +bond0 >/sys/class/net/bonding_masters || return 1
	case "$BOND" in rr) bmode=balance-rr ;; ab) bmode=active-backup ;; *) bmode=balance-tlb ;; esac
	echo "$bmode" >/sys/class/net/bond0/bonding/mode || return 1
	echo "$MIIMON" >/sys/class/net/bond0/bonding/miimon || return 1
	if [ -n "$PRIMARY" ]; then
		echo "$PRIMARY" >/sys/class/net/bond0/bonding/primary || return 1
	fi
	for e in $ETHS; do
		ip link set "$e" down
		echo "+$e" >/sys/class/net/bond0/bonding/slaves || return 1
	done
}

# remake_bond: bond0 deleted (its slaves released, their tbf qdiscs kept)
# and made again in pkt.bond's new mode, configured as at boot (pkt.then).
remake_bond() {
	echo -bond0 >/sys/class/net/bonding_masters || return 1
	make_bond && links_up && ip addr add "10.0.0.$HOST/24" dev bond0 && arp_monitor && bond_options
}

# pkt.then=NAME:VALUE[,NAME:VALUE...]: a second phase in the same boot.
# Once every mode has run, the keys named are set anew (a list's items
# joined by '+', e.g. mode:stream+burst) and the modes run again: the
# guests of a pair swap roles (role:server in the client, role:client in
# the server), or bond0 is made again in another mode (bond:ab).  Only keys
# the runs read can change: role, mode, sizes, runs, warmup, timeout, idle,
# gap, bytes, bond (one bonding mode for another).
# next_phase: 0 once the second phase is set up ("PHASE 2" line); 1 when
# there is none, or with a DONE fail line when it cannot be set up.
next_phase() {
	[ -n "$THEN" ] || return 1
	was=$BOND
	for o in $(echo "$THEN" | tr , ' '); do
		case "${o%%:*}" in
		role | mode | sizes | runs | warmup | timeout | idle | gap | bytes | bond) ;;
		*) echo "DONE fail pkt.then: ${o%%:*} cannot change within a boot"; return 1 ;;
		esac
		set_key "pkt.${o%%:*}=$(echo "${o#*:}" | tr + ,)"
	done
	THEN=
	echo "PHASE 2 role=$ROLE mode=$MODE bond=$BOND"
	[ "$BOND" = "$was" ] && return 0
	case "$was $BOND" in none* | *none) echo "DONE fail pkt.then: bond0 only changes its mode"; return 1 ;; esac
	remake_bond || { echo "DONE fail cannot make bond0 again in mode $BOND"; return 1; }
}

# A tbf qdisc on each NIC at its pkt.mbps rate (busybox tc has no tbf:
# pktbench sets it over rtnetlink).
pace_nics() {
	[ -n "$MBPS" ] || return 0
	insmod /lib/modules/sch_tbf.ko || return 1
	k=0
	for e in $ETHS; do
		r=$(echo "$MBPS" | awk -F, -v k=$k '{ print (NF == 1 ? $1 : $(k + 1)) }')
		if [ -n "$r" ] && [ "$r" != 0 ]; then
			pktbench netcfg tbf "$e" "$r" || return 1
		fi
		k=$((k + 1))
	done
	return 0
}

# IPv4 addresses (10.0.0.HOST on bond0 or eth0, 10.0.K.HOST on ethK) and,
# for MPTCP, the path manager's limits and the server's announced addresses.
configure_ip() {
	[ -n "$HOST" ] || { [ "$ROLE" = client ] && HOST=2 || HOST=1; }
	[ -n "$PEERHOST" ] || { [ "$HOST" = 1 ] && PEERHOST=2 || PEERHOST=1; }
	if [ "$IF" = bond0 ]; then
		ip addr add "10.0.0.$HOST/24" dev bond0 || return 1
	else
		k=0
		for e in $ETHS; do
			ip addr add "10.0.$k.$HOST/24" dev "$e" || return 1
			k=$((k + 1))
		done
	fi
	[ "$PROTO" = mptcp ] || return 0
	echo 1 >/proc/sys/net/mptcp/enabled || return 1
	pktbench netcfg mptcp-limits $((NICS - 1)) $((NICS - 1)) || return 1
	if [ "$ROLE" = server ] && [ "$IF" != bond0 ]; then
		k=1
		while [ $k -lt "$NICS" ]; do
			pktbench netcfg mptcp-endpoint "10.0.$k.$HOST" "eth$k" signal $k || return 1
			k=$((k + 1))
		done
	fi
	return 0
}

# pkt.mode=tlb: the TLB-shootdown timer, alone on the guest's CPUs.
if [ "$MODE" = tlb ]; then
	echo "GUEST up kernel=$(uname -r) cpus=$(nproc) mode=tlb" \
		"clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
	set -- --sizes "$SIZES" --reps "$RUNS"
	[ -n "$CPUS" ] && set -- "$@" --need-cpus "$CPUS"
	for o in $(echo "$TLBOPT" | tr , ' '); do set -- "$@" "--${o%%:*}" "$(echo "${o#*:}" | tr + ,)"; done
	/bin/tlbbench "$@"
	echo "TLBBENCH exit=$?"
	halt_now
fi

# pkt.variant=dpdk: the NIC is DPDK's, not the kernel's (initrd-dpdk.gz).
if [ "$VARIANT" = dpdk ]; then
	[ -f /bin/dpdk-guest.sh ] || { echo "DONE fail pkt.variant=dpdk needs initrd-dpdk.gz"; halt_now; }
	. /bin/dpdk-guest.sh
fi
if ! bring_up_nics; then
	echo "DONE fail the NICs did not come up"
	halt_now
fi
# pkt.arp: the bond checks its slaves by ARP requests to the peer every
# ARP ms (a slave is up while it receives) instead of by carrier (miimon).
arp_monitor() {
	[ -n "$ARP" ] && [ "$ARP" != 0 ] || return 0
	[ "$IF" = bond0 ] || { echo "pkt.arp needs pkt.bond"; return 1; }
	echo 0 >/sys/class/net/bond0/bonding/miimon || return 1
	echo "$ARP" >/sys/class/net/bond0/bonding/arp_interval || return 1
	echo "+10.0.0.$PEERHOST" >/sys/class/net/bond0/bonding/arp_ip_target || return 1
	echo "BOND arp_interval=$ARP arp_ip_target=10.0.0.$PEERHOST" \
		"mode=$(cat /sys/class/net/bond0/bonding/mode)"
}

bond_options() {
	[ -n "$BONDOPT" ] || return 0
	[ "$IF" = bond0 ] || { echo "pkt.bondopt needs pkt.bond"; return 1; }
	for o in $(echo "$BONDOPT" | tr , ' '); do
		echo "${o#*:}" >"/sys/class/net/bond0/bonding/${o%%:*}" || return 1
		echo "BOND ${o%%:*}=$(cat "/sys/class/net/bond0/bonding/${o%%:*}")"
	done
}

# pkt.sysctl: each NAME:VALUE written to /proc/sys (and echoed back).
set_sysctls() {
	for o in $(echo "$SYSCTL" | tr , ' '); do
		f=/proc/sys/$(echo "${o%%:*}" | tr . /)
		echo "${o#*:}" >"$f" || return 1
		echo "SYSCTL ${o%%:*}=$(cat "$f")"
	done
}

if ! pace_nics || ! configure_ip || ! set_sysctls; then
	echo "DONE fail cannot configure pacing, addresses or MPTCP"
	halt_now
fi
if ! arp_monitor || ! bond_options; then
	echo "DONE fail cannot set ARP monitoring or bonding options"
	halt_now
fi
[ -n "$LOGLEVEL" ] && echo "$LOGLEVEL" >/proc/sys/kernel/printk

# irq_lines: the /proc/interrupts lines of the NICs' interrupts (IRQS, below).
irq_lines() {
	for n in $(echo "$IRQS" | tr , ' '); do grep -E " $n(-[a-z]+[-.]?[0-9]*)?$" /proc/interrupts; done
}

# pkt.irqcpu: every NIC interrupt routed to that CPU alone, or (spread)
# NIC ethK's to CPU K mod nproc.
pin_irqs() {
	[ -n "$IRQCPU" ] || return 0
	for i in $(irq_lines | cut -d: -f1); do
		cpu=$IRQCPU
		if [ "$IRQCPU" = spread ]; then
			k=$(grep -E "^ *$i:" /proc/interrupts | grep -oE 'eth[0-9]+' | head -1)
			cpu=$((${k#eth} % $(nproc)))
		fi
		printf '%x' $((1 << cpu)) >"/proc/irq/$i/smp_affinity" || return 1
		echo "PIN irq=$i cpu=$cpu affinity=$(cat "/proc/irq/$i/smp_affinity_list")"
	done
}

# Each NIC interrupt's count per CPU, and the reschedule and function-call
# IPIs': IRQCPU irq=N|RES|CAL counts=C0,C1,...
irq_cpus() {
	{ irq_lines; grep -E '^ *(RES|CAL):' /proc/interrupts; } |
		awk -v n="$(nproc)" '{ c = ""; for (k = 2; k <= n + 1; k++) c = c (k > 2 ? "," : "") $k
			sub(":", "", $1); print "IRQCPU irq=" $1 " counts=" c }'
}
# The devices' interrupts: each ethK line (e1000), or every vector of each
# virtio device (virtioN-config, virtioN-input.0, virtioN-output.0).
IRQS= DRIVER="e1000=${RXD:-default}/${TXD:-default}/${ITR:-default}"
for e in $ETHS; do
	if [ "$NIC" = virtio ]; then
		IRQS="$IRQS,$(basename "$(readlink "/sys/class/net/$e/device")")"
	else
		IRQS="$IRQS,$e"
	fi
done
IRQS=${IRQS#,}
[ "$NIC" = virtio ] && DRIVER="virtio=$IRQS"
[ "$NIC" = e1000e ] && DRIVER="e1000e=itr:${ITR:-default}"
if ! pin_irqs; then
	echo "DONE fail cannot route the NIC interrupts to CPU $IRQCPU"
	halt_now
fi
echo "GUEST up kernel=$(uname -r) cpus=$(nproc) mtu=$(cat /sys/class/net/$IF/mtu) mac=$(cat /sys/class/net/$IF/address)" \
	"$DRIVER clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
	"if=$IF nics=$NICS bond=$BOND mbps=${MBPS:-unpaced} ip=10.0.0.$HOST"

if [ -n "$DEBUG_SHELL" ]; then
	setsid cttyhack sh
	halt_now
fi
if [ -z "$ROLE" ]; then
	echo "DONE fail no pkt.role on the kernel command line"
	halt_now
fi

if [ "$MODE" = nfs ]; then
	. /bin/nfs-guest.sh
	halt_now
fi

# lbbench: the three senders (client) or their receiver (server).
run_lb() {
	if [ "$ROLE" = server ]; then
		set -- --role receiver
	else
		set -- --role sender --server-ip "10.0.0.$PEERHOST"
	fi
	set -- "$@" --nics "$(echo $ETHS | tr ' ' ,)"
	for o in $(echo "$LBOPT" | tr , ' '); do set -- "$@" "--${o%%:*}" "${o#*:}"; done
	/bin/lbbench "$@"
}

# pkt.mode may list several modes (e.g. stream,burst) and pkt.variant
# several variants (packet,mmap): each mode runs once per variant, one after
# the other, each ending with its own DONE line (a client's probes or
# connection retries wait for the server's next run).
# run_modes: 1 once one has failed, or after lbbench (the boot's only run).
run_modes() {
	for m in $(echo "$MODE" | tr , ' '); do
		if [ "$m" = lb ]; then
			run_lb
			echo "LBBENCH exit=$?"
			return 1
		fi
		for v in $(echo "$VARIANT" | tr , ' '); do
			set -- --role "$ROLE" --mode "$m" --variant "$v" --sizes "$SIZES" --if "$IF" \
				--runs "$RUNS" --warmup "$WARMUP" --timeout-ms "$TIMEOUT" --idle-timeout-ms "$IDLE" --gap-ms "$GAP" \
				--irqs "$IRQS" --cpu-ms "$CPU"
			[ -n "$PEER" ] && set -- "$@" --peer "$PEER"
			[ -n "$PROBE" ] && set -- "$@" --probe-timeout-ms "$PROBE"
			[ "$IF" = bond0 ] && set -- "$@" --reorder
			[ "$RXCOUNT" = 1 ] && [ "$ROLE" = server ] && set -- "$@" --rx-count
			[ "$m" = stream ] && set -- "$@" --proto "$PROTO" --bytes "$BYTES" --server-ip "10.0.0.$PEERHOST"
			[ "$m" = flow ] && set -- "$@" --proto "$PROTO" --flow-ms "$FLOWMS" --flow-cpu-ms "$FLOWCPU" \
				--flow-live "$FLOWLIVE" --flow-grace-ms "$FLOWGRACE" --server-ip "10.0.0.$PEERHOST"
			[ "$m" = flow ] && [ -n "$FLOWMARKS" ] && set -- "$@" --flow-marks "$FLOWMARKS"
			[ -n "$IRQCPU$RXCPU" ] && irq_cpus | sed 's/^IRQCPU /IRQCPU0 /'
			if [ -n "$RXCPU" ]; then
				taskset -c "$RXCPU" /bin/pktbench "$@"
			else
				/bin/pktbench "$@"
			fi
			rc=$?
			[ -n "$IRQCPU$RXCPU" ] && irq_cpus
			echo "PKTBENCH mode=$m variant=$v exit=$rc"
			[ $rc = 0 ] || return 1
		done
	done
}

while run_modes && next_phase; do :; done
halt_now
