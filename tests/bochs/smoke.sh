#!/usr/bin/env bash
# Bochs boot smoke test: a second, independent emulator boots the GRUB ISO
# (Multiboot2) headless, serial to a file; the kernel must reach its demo's
# end and leave with status 0 and its free frames back at the boot count.
# With a disk image, the CD moves to the secondary channel and the disk is
# the primary master, where the kernel's ATA driver finds it.
# Usage: tests/bochs/smoke.sh ISO [timeout-seconds] [disk.img]
set -uo pipefail
source "$(dirname "$0")/wait.sh"
iso=$(realpath "$1")
tmo=${2:-300}
disk=${3:+$(realpath "$3")}
dir=$(dirname "$iso")/bochs
mkdir -p "$dir"
log=$dir/serial.log
rm -f "$log"
cat >"$dir/bochsrc" <<RC
megs: 256
cpu: model=corei7_sandy_bridge_2600k, count=1, ips=200000000, reset_on_triple_fault=0
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
$(if [ -n "$disk" ]; then
	echo "ata0-master: type=disk, path=\"$disk\", mode=flat"
	echo "ata1: enabled=1, ioaddr1=0x170, ioaddr2=0x370, irq=15"
	echo "ata1-master: type=cdrom, path=\"$iso\", status=inserted"
else
	echo "ata0-master: type=cdrom, path=\"$iso\", status=inserted"
fi)
boot: cdrom
com1: enabled=1, mode=file, dev="$log"
# Debian's Bochs has no nogui library: rfb with no wait for a viewer is headless.
display_library: rfb, options="timeout=0"
speaker: enabled=0
clock: sync=none, time0=local
log: $dir/bochs.log
panic: action=fatal
error: action=report
info: action=ignore
debug: action=ignore
RC
start=$(date +%s)
# Debian builds Bochs with its debugger, which stops before the first
# instruction: the command file tells it to continue.
# rfb listens on 0.0.0.0:5900: an empty network namespace keeps it unreachable.
echo c >"$dir/dbg.rc"
netns=()
unshare -n true 2>/dev/null && netns=(unshare -n)
timeout -k 5 "$tmo" "${netns[@]}" bochs -q -f "$dir/bochsrc" -rc "$dir/dbg.rc" </dev/null >"$dir/bochs.out" 2>&1 &
pid=$!
status=""
wait_kernel_exit "$pid" "$log"
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
secs=$(($(date +%s) - start))
status=$(grep -o 'KERNEL_EXIT status=[0-9]*' "$log" 2>/dev/null | tail -1)
frames=$(grep -o 'frames: boot=[0-9]* exit=[0-9]*' "$log" 2>/dev/null | tail -1)
ok=1
[ "$status" = "KERNEL_EXIT status=0" ] || ok=0
grep -q 'booted by multiboot2' "$log" 2>/dev/null || ok=0
grep -q 'demo: done' "$log" 2>/dev/null || ok=0
[ -z "$disk" ] || grep -q 'disk round trip of 8 KiB: write OK, read OK, identical' "$log" || ok=0
[[ "$frames" =~ boot=([0-9]+)\ exit=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] || ok=0
if [ $ok = 1 ]; then
	echo "TEST bochs_boot ... ok (${secs}s, $frames)"
	echo "bochs smoke test: 1 passed, 0 failed"
	exit 0
fi
echo "TEST bochs_boot ... FAIL (${secs}s; '${status:-no KERNEL_EXIT}'; log $log)"
tail -20 "$log" 2>/dev/null | sed 's/^/    | /'
tail -5 "$dir/bochs.out" | sed 's/^/    ! /'
echo "bochs smoke test: 0 passed, 1 failed"
exit 1
