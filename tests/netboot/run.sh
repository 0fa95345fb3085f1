#!/usr/bin/env bash
# PCs booted from the network, the way a rack boots (docs/netboot.md): in a
# private network namespace, a bridge with a tap per node, dnsmasq serving
# DHCP and TFTP on it from what tools/netboot/mknetboot.sh built for the
# nodes of tests/netboot/nodes, and QEMU VMs with e1000 NICs whose option
# ROM is iPXE from Debian's ipxe-qemu, booting from the network (-boot n).
# The firmware gets an address and GRUB's network build from dnsmasq, GRUB
# its node's menu by MAC (grub.cfg-01-MAC), then the kernel over TFTP.
#   netboot_nodelist  make netboot's example list builds a configuration
#                     that dnsmasq --test accepts; a list with bad lines is
#                     refused, each named, nothing written;
#   netboot_pingpong  two nodes by BIOS PXE (SeaBIOS, pxe-e1000.rom, GRUB's
#                     core.0) run the ping-pong over the bridge by the
#                     kernel's own EtherType, every size up to 8960 bytes
#                     checked byte by byte; the server first, the client
#                     once the server's console says READY;
#   netboot_uefi      the third node by UEFI (OVMF, efi-e1000.rom, GRUB's
#                     core.efi) runs hello.
# Each passes when its kernels exit 0 (isa-debug-exit), each console (COM1,
# to a file) shows the node's GRUB entry, the command line of its MAC, the
# firmware, its suite's counts and "frames: boot=N exit=N" with equal
# counts, and dnsmasq's log shows each MAC leased and sent its GRUB, its
# menu and the kernel. About 25 s under TCG, at most 2 VMs at once.
# Needs root (ip netns, taps); everything is installed before (tools/deps.sh
# netboot ovmf): nothing inside the namespace reaches any other network.
# Usage: tests/netboot/run.sh KERNEL
# Environment: NETBOOT_DUMP=1 writes each VM's frames to test-logs/netboot/
# NAME.pcap (QEMU's filter-dump).
set -uo pipefail
kernel=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
logs=$(dirname "$kernel")/test-logs/netboot
bios_rom=/usr/lib/ipxe/qemu/pxe-e1000.rom
efi_rom=/usr/lib/ipxe/qemu/efi-e1000.rom
ovmf_code=/usr/share/OVMF/OVMF_CODE.fd
ovmf_vars=/usr/share/OVMF/OVMF_VARS.fd
tmo=${NETBOOT_TMO:-90}
ns=tender-netboot-$$
tmp=$(mktemp -d /tmp/netboot.XXXXXX)
pids=()

# On any exit: the QEMUs (through their timeout, which passes the signal
# on) and dnsmasq, by the ids we started, then whatever is left in the
# namespace, the namespace and its links, and the files.
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	if [ -e "/run/netns/$ns" ]; then
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() { echo "TEST netboot ... FAIL"; printf '    %s\n' "$@"; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "needs root (ip netns, taps)"
for t in ip dnsmasq qemu-system-x86_64 grub-mknetdir; do
	command -v "$t" >/dev/null || fail "$t missing (tools/deps.sh netboot)"
done
for f in "$bios_rom" "$efi_rom" "$ovmf_code" "$ovmf_vars"; do
	[ -r "$f" ] || fail "$f missing (tools/deps.sh netboot ovmf)"
done
failed=0
verdict() { # name start
	if [ ${#why[@]} -eq 0 ]; then
		echo "TEST $1 ... ok ($(($(date +%s) - $2))s)"
	else
		echo "TEST $1 ... FAIL"
		printf '    %s\n' "${why[@]}" "logs: $logs"
		failed=1
	fi
	why=()
}

mkdir -p "$logs"
rm -f "$logs"/*.log
start=$(date +%s)

NETBOOT_IFACE=br0 NETBOOT_RANGE=10.42.0.100,10.42.0.199,1h NETBOOT_RA=fd42:: \
	"$root/tools/netboot/mknetboot.sh" "$kernel" "$here/nodes" "$tmp/netboot" || fail "mknetboot failed"
mapfile -t nodes < <(sed 's/#.*//; /^[[:space:]]*$/d' "$here/nodes")

# The node list's checks: make netboot's example builds a configuration
# dnsmasq accepts; a list with bad lines is refused, each line named, and
# nothing is written.
why=()
NETBOOT_RA=fd42:: "$root/tools/netboot/mknetboot.sh" "$kernel" "$root/tools/netboot/nodes.example" \
	"$tmp/example" >"$logs/nodelist.log" 2>&1 || why+=("nodes.example refused: $(tail -1 "$logs/nodelist.log")")
dnsmasq --test --conf-file="$tmp/example/dnsmasq.conf" >>"$logs/nodelist.log" 2>&1 ||
	why+=("dnsmasq refuses nodes.example's configuration: $(tail -1 "$logs/nodelist.log")")
for m in 02-00-00-00-00-01 02-00-00-00-00-02; do
	grep -q '^	multiboot2 /boot/kernel.elf run=pingpong ' "$tmp/example/tftp/boot/grub/grub.cfg-01-$m" ||
		why+=("nodes.example: no menu entry in grub.cfg-01-$m")
done
printf '%s\n' "a 52:54:00:00:00:01 run=hello" "b 52:54:00:00:00:02 run=\$x" "c 52:54:00:00:00:01 run=hello" \
	"d 52:54:00:00:0:04 run=hello" "e 52:54:00:00:00:05" "f 52:54:00:00:00:06 run=a;b" >"$tmp/bad.nodes"
if "$root/tools/netboot/mknetboot.sh" "$kernel" "$tmp/bad.nodes" "$tmp/bad" >"$logs/badlist.log" 2>&1; then
	why+=("a list with bad lines was taken")
fi
for l in "2: command line holds" "3: node or MAC given twice" "4: bad MAC" "5: want NAME MAC CMDLINE" \
	"6: command line holds" "refused"; do
	grep -qF "$l" "$logs/badlist.log" || why+=("bad list: no '$l' (badlist.log)")
done
grep -q "^$tmp/bad.nodes:1:" "$logs/badlist.log" && why+=("bad list: its good line 1 named")
[ ! -e "$tmp/bad" ] || why+=("bad list: $tmp/bad written")
verdict netboot_nodelist "$start"
start=$(date +%s)

# The namespace: a bridge at 10.42.0.1 with one tap per node, jumbo frames
# through. IPv6 only on the bridge, for dnsmasq's router advertisements
# (without one iPXE waits 13 s for a router; NETBOOT_RA).
ip netns add "$ns" || fail "ip netns add $ns"
nsx() { ip netns exec "$ns" "$@"; }
nsx sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$ns" link set lo up
ip -n "$ns" link add br0 type bridge stp_state 0 forward_delay 0
for i in "${!nodes[@]}"; do
	ip -n "$ns" tuntap add dev "tap$i" mode tap
	ip -n "$ns" link set "tap$i" mtu 9000 master br0 up
done
ip -n "$ns" link set br0 mtu 9000 up
ip -n "$ns" addr add 10.42.0.1/24 dev br0 || fail "bridge setup"
nsx sysctl -qw net.ipv6.conf.br0.disable_ipv6=0
ip -n "$ns" addr add fd42::1/64 dev br0 nodad || fail "bridge IPv6 setup"

# dnsmasq in the foreground of its own process: ip netns exec execs it, so
# $! is dnsmasq (through the function nsx it would be a subshell);
# as root so it reads the TFTP root where it lies; no ping before an
# address is offered (nothing else is on the bridge; 3 s saved a node).
ip netns exec "$ns" dnsmasq --keep-in-foreground --conf-file="$tmp/netboot/dnsmasq.conf" --user=root --no-ping \
	--pid-file="$tmp/dnsmasq.pid" --dhcp-leasefile="$tmp/leases" --log-facility="$logs/dnsmasq.log" &
pids+=($!)
for ((t = 0; t < 50; t++)); do
	grep -q 'TFTP root' "$logs/dnsmasq.log" 2>/dev/null && break
	sleep 0.1
done
grep -q 'TFTP root' "$logs/dnsmasq.log" 2>/dev/null || fail "dnsmasq did not start" "$(tail -3 "$logs/dnsmasq.log" 2>&1)"

# One node: its VM in the namespace on tap$1, serial console to its log.
boot() { # index name mac bios|uefi
	local fw=() rom=$bios_rom
	if [ "$4" = uefi ]; then
		cp "$ovmf_vars" "$tmp/$2.vars.fd"
		fw=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$ovmf_code"
			-drive "if=pflash,format=raw,unit=1,file=$tmp/$2.vars.fd")
		rom=$efi_rom
	fi
	[ -z "${NETBOOT_DUMP:-}" ] || fw+=(-object "filter-dump,id=d0,netdev=n0,file=$logs/$2.pcap")
	ip netns exec "$ns" timeout -k 5 "$tmo" qemu-system-x86_64 -accel tcg -cpu max -m 256M -display none \
		-monitor none -no-reboot -serial "file:$logs/$2.log" -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-netdev "tap,id=n0,ifname=tap$1,script=no,downscript=no" \
		-device "e1000,netdev=n0,mac=$3,romfile=$rom" -boot n "${fw[@]}" >"$logs/$2.err" 2>&1 &
	pids+=($!)
}
# QEMU's status is (kernel status << 1) | 1; 124/137: timed out.
status() { case $1 in 124 | 137) echo "timed out after ${tmo}s" ;; *) echo $((($1 - 1) / 2)) ;; esac; }
# Adds to why[] what node $1's console lacks: kernel status 0 (QEMU's $2),
# no failed TEST, its GRUB entry and command line, the patterns $3..., and
# free frames at exit equal to those at boot.
check() { # name qemu-status pattern...
	local name=$1 log=$logs/$1.log rc=$2 f p cmd
	shift 2
	cmd=$(printf '%s\n' "${nodes[@]}" | awk -v n="$name" '$1 == n { $1 = $2 = ""; sub(/^ +/, ""); print }')
	[ "$(status "$rc")" = 0 ] || why+=("$name: kernel status $(status "$rc")")
	grep -aq '\.\.\. FAIL' "$log" && why+=("$name: a TEST failed")
	for p in "netboot: node $name" "booted by multiboot2, cmdline \"$cmd\"" "$@"; do
		grep -aqF -- "$p" "$log" || why+=("$name: missing '$p'")
	done
	f=$(grep -ao 'frames: boot=[0-9]* exit=[0-9]*' "$log" | tail -1)
	[[ "$f" =~ boot=([0-9]+)\ exit=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] ||
		why+=("$name: free frames at exit differ from boot ($f)")
}
# Adds to why[] what dnsmasq's log lacks for MAC $1: its lease, and each
# file $2... sent to its address.
served() { # mac file...
	local mac=$1 ip f
	shift
	ip=$(grep -o "DHCPACK(br0) [0-9.]* $mac" "$logs/dnsmasq.log" | awk '{ print $2 }' | tail -1)
	[ -n "$ip" ] || { why+=("dnsmasq: no lease for $mac"); return; }
	for f in "$@"; do
		grep -q "sent .*/$f to $ip\$" "$logs/dnsmasq.log" || why+=("dnsmasq: $f not sent to $mac ($ip)")
	done
}

# The ping-pong: the server, then the client once the server is READY.
why=()
read -r sname smac _ <<<"${nodes[0]}"
read -r cname cmac _ <<<"${nodes[1]}"
boot 0 "$sname" "$smac" bios
spid=${pids[-1]}
for ((t = 0; t < tmo * 10; t++)); do
	grep -aq READY "$logs/$sname.log" 2>/dev/null && break
	kill -0 "$spid" 2>/dev/null || break
	sleep 0.1
done
boot 1 "$cname" "$cmac" bios
cpid=${pids[-1]}
wait "$cpid"
crc=$?
wait "$spid"
src=$?
check "$sname" "$src" "boot: BIOS firmware" "SUITE pingpong: 13 passed, 0 failed"
check "$cname" "$crc" "boot: BIOS firmware" "SUITE pingpong: 6 passed, 0 failed" "bytes=8960"
served "$smac" boot/grub/i386-pc/core.0 "boot/grub/grub.cfg-01-${smac//:/-}" boot/kernel.elf
served "$cmac" boot/grub/i386-pc/core.0 "boot/grub/grub.cfg-01-${cmac//:/-}" boot/kernel.elf
verdict netboot_pingpong "$start"

# The third node by UEFI (OVMF, iPXE's EFI ROM): GRUB's EFI build.
read -r uname umac _ <<<"${nodes[2]}"
ustart=$(date +%s)
boot 2 "$uname" "$umac" uefi
wait "${pids[-1]}"
check "$uname" $? "boot: UEFI firmware" "run: 1 program(s), 0 failed"
served "$umac" boot/grub/x86_64-efi/core.efi "boot/grub/grub.cfg-01-${umac//:/-}" boot/kernel.elf
verdict netboot_uefi "$ustart"
exit $failed
