# nfs-guest.sh: the NFS server or client inside the Linux baseline guest
# (initrd-nfs.gz, see build-nfs.sh).  Sourced by /init for pkt.mode=nfs once
# the NICs, bond, tbf pacing and addresses are up; uses its variables
# (ROLE, HOST, PEERHOST, NICS, IF, ETHS) and ends with "DONE ok|fail".
# Kernel command line keys (all optional):
#   nfs.vers=3,4.2          client: NFS versions, each over TCP
#   nfs.rsize=32768,1048576 client: rsize = wsize of each mount
#   nfs.noac=0,1            client: without and with noac
#   nfs.sizes=1,2,4,8,16,32 client: I/O lengths in MiB (KiB with a k: 8k)
#   nfs.runs=N              client: repetitions of every size (default 1)
#   nfs.rttn=N              client: 4 KiB O_DIRECT reads timed per mount (200)
#   nfs.cut=1               client: after the table, per version one read of
#                           nfs.cutmib MiB (32) framed by "FSCUT begin|end"
#                           lines, for the runner to cut link 0 in between
#   nfs.threads=N           server: nfsd threads (8)
#   nfs.idle=S              server: longest wait for the client's end (3600)
#   nfs.delay_us=US         router: netem delay on each of its NICs (1650)
#   nfs.cpu=LENS            both: CPU work instead of the table (make bench-fs
#                           under -icount): the server runs fsbench busyd
#                           on UDP port 7700; the client mounts each of
#                           nfs.cpuconf (VERS:NCONNECT,..., default
#                           4.2:1,4.2:4,3:4; rsize = wsize the first of
#                           nfs.rsize) and runs fsbench cpu with the I/O
#                           lengths LENS (bytes), nfs.cpubytes (32 MiB) a
#                           phase and nfs.cpumbps (0: back to back)
#   nfs.seq=BYTES           client: RI2N Table 2 instead of the table: per
#                           run and rsize = wsize R of nfs.rsize, an NFSv3
#                           mount and fsbench seqwrite of BYTES in write()s
#                           of R (the server runs fsbench busyd as for
#                           nfs.cpu)
#   nfs.wcut=SECONDS        client: RI2N Table 4 instead of the table: an
#                           NFSv3 mount (rsize = wsize the first of
#                           nfs.rsize) and fsbench cutwrite of 32 KiB writes
#                           through a file of nfs.wcutmib MiB (32) for
#                           SECONDS, fsync every 4 MiB, between FSCUT lines
#   nfs.stream=BYTES        both: SRFS Table 3 instead of the table: the
#                           server runs fsbench tcpsink on TCP port 7701,
#                           the client pings it (10 times) and runs
#                           nfs.runs fsbench tcpsend of BYTES in write()s of
#                           nfs.streammsg (524288), both with socket buffers
#                           of nfs.sockbuf (131072: netperf -s 131072)
# Server: the nfsd modules, a tmpfs on /export exported to 10.0.0.0/16 (rw,
# sync, no_root_squash, fsid=1), rpcbind, rpc.mountd, rpc.nfsd with
# max_block_size 1 MiB (nfsd's default for a 512 MiB guest would cap rsize
# at 128 KiB) and a 10 s NFSv4 grace and lease time; it stops when the
# client creates /export/.fsdone.
# Router (pkt.role=router, booted with pkt.bond=none and 2L NICs by
# run-nfs.sh --delay-ms): ethK and eth(L+K) form bridge brK for K < L (the
# server's link K and the client's), and every NIC's egress gets a netem
# qdisc delaying each frame by nfs.delay_us: a frame crosses the router once,
# leaving by one NIC, so a round trip gains 2 x delay_us.
# Client, per version, rsize and noac: one mount (v3 with nolock: no
# statd), a 4 KiB round-trip figure, then per run and size the four
# patterns of SRFS: create write, overwrite (another seed), read after
# write (same mount), read after mount (umount + mount first).  Every
# measurement is one fsbench line: "FSB op=... system=.. links=.. rsize=..
# noac=.. pattern=.. size_mib=.. run=.. bytes=.. us=.. mbps=.. verified=..".
NFS_VERS=3,4.2 NFS_RSIZE=32768,1048576 NFS_NOAC=0,1 NFS_SIZES=1,2,4,8,16,32 NFS_RUNS=1
NFS_RTTN=200 NFS_CUT=0 NFS_CUTMIB=32 NFS_THREADS=8 NFS_IDLE=3600 NFS_DELAY_US=1650
NFS_CPU= NFS_CPUCONF=4.2:1,4.2:4,3:4 NFS_CPUBYTES=33554432 NFS_CPUMBPS=0 NFS_SEQ= NFS_WCUT= NFS_WCUTMIB=32
NFS_STREAM= NFS_STREAMMSG=524288 NFS_SOCKBUF=131072
for w in $(cat /proc/cmdline); do
	v=${w#*=}
	case "$w" in
	nfs.vers=*) NFS_VERS=$v ;;
	nfs.rsize=*) NFS_RSIZE=$v ;;
	nfs.noac=*) NFS_NOAC=$v ;;
	nfs.sizes=*) NFS_SIZES=$v ;;
	nfs.runs=*) NFS_RUNS=$v ;;
	nfs.rttn=*) NFS_RTTN=$v ;;
	nfs.cut=*) NFS_CUT=$v ;;
	nfs.cutmib=*) NFS_CUTMIB=$v ;;
	nfs.threads=*) NFS_THREADS=$v ;;
	nfs.idle=*) NFS_IDLE=$v ;;
	nfs.delay_us=*) NFS_DELAY_US=$v ;;
	nfs.cpu=*) NFS_CPU=$v ;;
	nfs.cpuconf=*) NFS_CPUCONF=$v ;;
	nfs.cpubytes=*) NFS_CPUBYTES=$v ;;
	nfs.cpumbps=*) NFS_CPUMBPS=$v ;;
	nfs.seq=*) NFS_SEQ=$v ;;
	nfs.wcut=*) NFS_WCUT=$v ;;
	nfs.wcutmib=*) NFS_WCUTMIB=$v ;;
	nfs.stream=*) NFS_STREAM=$v ;;
	nfs.streammsg=*) NFS_STREAMMSG=$v ;;
	nfs.sockbuf=*) NFS_SOCKBUF=$v ;;
	esac
done
SERVER_IP=10.0.0.$PEERHOST
export PATH=/bin:/sbin:/usr/sbin:/usr/bin
NFS_FAILS=0

nfs_modules() {
	for m in $(cat /lib/modules/nfs.order); do
		insmod "/lib/modules/$m.ko" || return 1
	done
}

nfs_server() {
	nfs_modules || { echo "DONE fail cannot load the NFS modules"; return; }
	mount -t tmpfs -o size=448m tmpfs /export || { echo "DONE fail no tmpfs"; return; }
	mkdir -p /var/lib/nfs/v4recovery /var/lib/nfs/sm /run/rpcbind
	mount -t nfsd nfsd /proc/fs/nfsd || { echo "DONE fail cannot mount the nfsd file system"; return; }
	echo 1048576 >/proc/fs/nfsd/max_block_size
	echo 10 >/proc/fs/nfsd/nfsv4gracetime
	echo 10 >/proc/fs/nfsd/nfsv4leasetime
	echo "/export 10.0.0.0/16(rw,sync,no_root_squash,no_subtree_check,insecure,fsid=1)" >/etc/exports
	rpcbind || { echo "DONE fail rpcbind"; return; }
	exportfs -ra || { echo "DONE fail exportfs"; return; }
	rpc.mountd || { echo "DONE fail rpc.mountd"; return; }
	rpc.nfsd "$NFS_THREADS" || { echo "DONE fail rpc.nfsd"; return; }
	[ -n "$NFS_CPU$NFS_SEQ" ] && { fsbench busyd 7700 & }
	[ -n "$NFS_STREAM" ] && { fsbench tcpsink 7701 "$NFS_SOCKBUF" & }
	echo "NFSD ready versions=$(cat /proc/fs/nfsd/versions) threads=$(cat /proc/fs/nfsd/threads)" \
		"max_block_size=$(cat /proc/fs/nfsd/max_block_size) exports=$(exportfs -v | tr -s ' \t\n' ' ')"
	i=0
	while [ ! -e /export/.fsdone ]; do
		i=$((i + 1))
		[ $i -gt "$NFS_IDLE" ] && { echo "DONE fail no end from the client in ${NFS_IDLE}s"; return; }
		sleep 1
	done
	echo "NFSD stats $(grep -E '^(net|rpc|io|th)' /proc/net/rpc/nfsd | tr '\n' ' ')"
	echo "DONE ok"
}

# nfs_mount VERS RSIZE NOAC [MORE-OPTIONS]: /mnt; MOUNTED: the options as
# the kernel took them.
nfs_mount() {
	o="vers=$1,proto=tcp,rsize=$2,wsize=$2${4:+,$4}"
	[ "$1" = 3 ] && o="$o,nolock"
	[ "$3" = 1 ] && o="$o,noac"
	/sbin/mount.nfs "$SERVER_IP:/export" /mnt -o "$o" || return 1
	MOUNTED=$(grep ' /mnt ' /proc/mounts | awk '{ print $4 }')
}

nfs_umount() {
	umount /mnt || { sleep 1; umount /mnt; }
}

# fsb ARGS...: one fsbench run, its failures counted.
fsb() {
	if ! fsbench "$@"; then
		NFS_FAILS=$((NFS_FAILS + 1))
		echo "FSBFAIL $*"
	fi
}

# nfs_config VERS RSIZE NOAC: one mount's round trips and table.
nfs_config() {
	sys=linux-nfs$(echo "$1" | tr -d .)-tcp
	nfs_mount "$1" "$2" "$3" || { echo "FSBFAIL mount vers=$1 rsize=$2 noac=$3"; NFS_FAILS=$((NFS_FAILS + 1)); return; }
	echo "NFSMOUNT system=$sys rsize=$2 noac=$3 opts=$MOUNTED"
	rs=$(echo "$MOUNTED" | tr , '\n' | sed -n 's/^rsize=//p')
	tag="system=$sys links=$NICS rsize=$2 rsize_eff=$rs noac=$3"
	fsb write /mnt/rtt 1048576 7 create $tag pattern=setup
	fsb rtt /mnt/rtt "$NFS_RTTN" 7 $tag pattern=rtt_4k
	rm -f /mnt/rtt
	for run in $(seq 1 "$NFS_RUNS"); do
		for s in $(echo "$NFS_SIZES" | tr , ' '); do
			case "$s" in *k) b=$((${s%k} * 1024)) ;; *) b=$((s * 1048576)) ;; esac
			seed=$(((run * 65536 + b / 1024) * 2))
			t="$tag size_mib=$((b / 1048576)) run=$run"
			fsb write "/mnt/f$s" $b $seed create $t pattern=create_write
			fsb write "/mnt/f$s" $b $((seed + 1)) overwrite $t pattern=overwrite
			fsb read "/mnt/f$s" $b $((seed + 1)) $t pattern=read_after_write
			nfs_umount && nfs_mount "$1" "$2" "$3" || { echo "FSBFAIL remount"; NFS_FAILS=$((NFS_FAILS + 1)); return; }
			fsb read "/mnt/f$s" $b $((seed + 1)) $t pattern=read_after_mount
			rm -f "/mnt/f$s"
		done
	done
	nfs_umount
}

# nfs_cut_read VERS: a fresh mount (1 MiB rsize) reads NFS_CUTMIB MiB while
# the runner cuts link 0 (after "FSCUT begin") and restores it (after
# "FSCUT end"); then waits for every slave's link to be back.
nfs_cut_read() {
	sys=linux-nfs$(echo "$1" | tr -d .)-tcp b=$((NFS_CUTMIB * 1048576))
	nfs_mount "$1" 1048576 0 || { echo "FSBFAIL mount for the cut"; NFS_FAILS=$((NFS_FAILS + 1)); return; }
	rs=$(echo "$MOUNTED" | tr , '\n' | sed -n 's/^rsize=//p')
	tag="system=$sys links=$NICS rsize=1048576 rsize_eff=$rs noac=0 size_mib=$NFS_CUTMIB run=1"
	fsb write /mnt/cut $b 9 create $tag pattern=setup
	nfs_umount && nfs_mount "$1" 1048576 0 || { echo "FSBFAIL remount for the cut"; NFS_FAILS=$((NFS_FAILS + 1)); return; }
	echo "NETDEV before $(for e in $ETHS; do printf '%s=%s ' $e "$(cat /sys/class/net/$e/statistics/rx_bytes)"; done)"
	echo "FSCUT begin $sys"
	fsb read /mnt/cut $b 9 $tag pattern=read_cut
	echo "FSCUT end $sys"
	echo "NETDEV after $(for e in $ETHS; do printf '%s=%s ' $e "$(cat /sys/class/net/$e/statistics/rx_bytes)"; done)"
	rm -f /mnt/cut
	nfs_umount
	[ -e /proc/net/bonding/bond0 ] || return 0
	i=0
	while [ "$(grep -c 'MII Status: up' /proc/net/bonding/bond0)" -le "$NICS" ] && [ $i -lt 150 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# nfs_cpu: fsbench cpu on a mount of each nfs.cpuconf entry (VERS:NCONNECT).
nfs_cpu() {
	r=$(echo "$NFS_RSIZE" | cut -d, -f1)
	for c in $(echo "$NFS_CPUCONF" | tr , ' '); do
		v=${c%%:*} nc=${c#*:}
		sys=linux-nfs$(echo "$v" | tr -d .)-tcp
		nfs_mount "$v" "$r" 0 "nconnect=$nc" || { echo "FSBFAIL mount vers=$v nconnect=$nc"; NFS_FAILS=$((NFS_FAILS + 1)); continue; }
		echo "NFSMOUNT system=$sys rsize=$r nconnect=$nc opts=$MOUNTED"
		rs=$(echo "$MOUNTED" | tr , '\n' | sed -n 's/^rsize=//p')
		fsb cpu /mnt "$SERVER_IP:7700" "$NFS_CPU" "$NFS_CPUBYTES" "$NFS_CPUMBPS" system="$sys" links="$NICS" \
			rsize="$r" rsize_eff="$rs" nconnect="$nc" noac=0
		nfs_umount
	done
	nfs_mount 4.2 1048576 0 && touch /mnt/.fsdone && nfs_umount
	echo "NFSCLIENT stats $(grep -E '^(net|rpc)' /proc/net/rpc/nfs | tr '\n' ' ')"
	[ "$NFS_FAILS" = 0 ] && echo "DONE ok" || echo "DONE fail $NFS_FAILS measurements failed"
}

# nfs_seq: RI2N Table 2, per run and rsize = wsize of nfs.rsize (NFSv3).
nfs_seq() {
	for run in $(seq 1 "$NFS_RUNS"); do
		for r in $(echo "$NFS_RSIZE" | tr , ' '); do
			nfs_mount 3 "$r" 0 || { echo "FSBFAIL mount rsize=$r"; NFS_FAILS=$((NFS_FAILS + 1)); continue; }
			echo "NFSMOUNT system=linux-nfs3-tcp rsize=$r opts=$MOUNTED"
			rs=$(echo "$MOUNTED" | tr , '\n' | sed -n 's/^wsize=//p')
			fsb seqwrite /mnt/seq "$NFS_SEQ" "$r" $((300 + run * 16)) "$SERVER_IP:7700" system=linux-nfs3-tcp \
				links="$NICS" rsize="$r" wsize_eff="$rs" run="$run"
			nfs_umount
		done
	done
}

# nfs_wcut: RI2N Table 4, one write through the runner's cut (NFSv3).
nfs_wcut() {
	r=$(echo "$NFS_RSIZE" | cut -d, -f1)
	nfs_mount 3 "$r" 0 || { echo "FSBFAIL mount for the cut"; NFS_FAILS=$((NFS_FAILS + 1)); return; }
	echo "NFSMOUNT system=linux-nfs3-tcp rsize=$r opts=$MOUNTED"
	fsb cutwrite /mnt/wcut $((NFS_WCUTMIB * 1048576)) 32768 "$NFS_WCUT" 4194304 system=linux-nfs3-tcp \
		links="$NICS" rsize="$r"
	nfs_umount
}

# nfs_stream: SRFS Table 3, the round trip (ping) and nfs.runs TCP streams.
nfs_stream() {
	echo "NFSCLIENT ping $(ping -c 10 -q "$SERVER_IP" | tail -n 1)"
	for run in $(seq 1 "$NFS_RUNS"); do
		fsb tcpsend "$SERVER_IP:7701" "$NFS_STREAM" "$NFS_STREAMMSG" "$NFS_SOCKBUF" system=linux-tcp links="$NICS" \
			run="$run"
	done
}

nfs_client() {
	nfs_modules || { echo "DONE fail cannot load the NFS modules"; return; }
	mkdir -p /mnt
	# The server boots at the same time: wait up to 90 s for its export
	# (each try at most 15 s), and for NFSv4 past its 10 s grace period
	# (the first write waits).
	t0=$(date +%s) i=0
	until timeout 15 /sbin/mount.nfs "$SERVER_IP:/export" /mnt -o vers=4.2,proto=tcp,retry=0 2>/dev/null; do
		i=$(($(date +%s) - t0))
		[ $i -gt 90 ] && { echo "DONE fail no NFS server at $SERVER_IP"; return; }
		sleep 1
	done
	fsbench write /mnt/warm 65536 3 create pattern=warmup >/dev/null &&
		fsbench read /mnt/warm 65536 3 >/dev/null || { echo "DONE fail warm-up I/O"; nfs_umount; return; }
	rm -f /mnt/warm
	nfs_umount
	echo "NFSCLIENT ready after ${i}s; ping $(ping -c 5 -q "$SERVER_IP" | tail -n 1)"
	if [ -n "$NFS_CPU" ]; then
		nfs_cpu
		return
	fi
	if [ -n "$NFS_SEQ$NFS_WCUT$NFS_STREAM" ]; then
		if [ -n "$NFS_SEQ" ]; then nfs_seq; elif [ -n "$NFS_WCUT" ]; then nfs_wcut; else nfs_stream; fi
		nfs_mount 4.2 1048576 0 && touch /mnt/.fsdone && nfs_umount
		echo "NFSCLIENT stats $(grep -E '^(net|rpc)' /proc/net/rpc/nfs | tr '\n' ' ')"
		[ "$NFS_FAILS" = 0 ] && echo "DONE ok" || echo "DONE fail $NFS_FAILS measurements failed"
		return
	fi
	for v in $(echo "$NFS_VERS" | tr , ' '); do
		for r in $(echo "$NFS_RSIZE" | tr , ' '); do
			for n in $(echo "$NFS_NOAC" | tr , ' '); do nfs_config "$v" "$r" "$n"; done
		done
	done
	if [ "$NFS_CUT" = 1 ]; then
		for v in $(echo "$NFS_VERS" | tr , ' '); do nfs_cut_read "$v"; done
	fi
	nfs_mount 4.2 1048576 0 && touch /mnt/.fsdone && nfs_umount
	echo "NFSCLIENT stats $(grep -E '^(net|rpc)' /proc/net/rpc/nfs | tr '\n' ' ')"
	[ "$NFS_FAILS" = 0 ] && echo "DONE ok" || echo "DONE fail $NFS_FAILS measurements failed"
}

# The router forwards until QEMU is stopped (run-nfs.sh kills it).
nfs_router() {
	for m in $(cat /lib/modules/router.order); do
		insmod "/lib/modules/$m.ko" || { echo "DONE fail cannot load $m"; return; }
	done
	l=$((NICS / 2)) k=0
	while [ $k -lt $l ]; do
		a=eth$k b=eth$((l + k))
		ip addr flush dev $a && ip addr flush dev $b &&
			brctl addbr br$k &&
			brctl addif br$k $a && brctl addif br$k $b && ip link set br$k mtu 9000 up ||
			{ echo "DONE fail bridge br$k"; return; }
		for e in $a $b; do
			/sbin/tc qdisc replace dev $e root netem delay "${NFS_DELAY_US}us" limit 100000 ||
				{ echo "DONE fail netem on $e"; return; }
		done
		k=$((k + 1))
	done
	echo "ROUTER ready bridges=$l delay_us=$NFS_DELAY_US $(/sbin/tc qdisc show | grep netem | tr '\n' ' ')"
	while :; do sleep 3600; done
}

case "$ROLE" in
router) nfs_router ;;
server) nfs_server ;;
client) nfs_client ;;
*) echo "DONE fail pkt.role=$ROLE: server or client" ;;
esac
