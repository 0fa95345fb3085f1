#!/usr/bin/env bash
# The driver against Bochs' own e1000 model (a second implementation):
# two cards wired by Bochs' "socket" module, in a network namespace of its
# own with only loopback: card 0 listens on UDP port P and sends to P+1,
# where card 1 listens; card 1 sends to P+2, which a relay forwards to P.
# The socket module carries frames up to 2048 bytes, so the self-test runs
# "loopsmall" (60/1500-byte batches both ways, every byte checked,
# counters, interrupt masking, bad input, frame balance), then detaches
# and attaches again.
# Usage: tests/qemu/e1000/bochs.sh KERNEL [timeout-seconds]. One TEST line.
kernel=$(realpath "$1")
tmo=${2:-400}
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../../bochs/wait.sh"
name=e1000_bochs
log=$logs/$name.log
rm -f "$log"
iso=$tmp/e1000.iso
mkdir -p "$tmp/iso/boot/grub"
cp "$kernel" "$tmp/iso/boot/kernel.elf"
cat >"$tmp/iso/boot/grub/grub.cfg" <<CFG
set timeout=0
set default=0
serial --unit=0 --speed=115200
terminal_input serial
terminal_output serial
menuentry "e1000 self-test" {
	multiboot2 /boot/kernel.elf run=hello e1000test=loopsmall,detach
	boot
}
CFG
grub-mkrescue -o "$iso" "$tmp/iso" >/dev/null 2>&1 || { echo "TEST $name ... FAIL (grub-mkrescue)"; exit 1; }
port=41000
cat >"$tmp/bochsrc" <<RC
megs: 256
cpu: model=corei7_sandy_bridge_2600k, count=1, ips=200000000, reset_on_triple_fault=0
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
pci: enabled=1, chipset=i440fx
ata0-master: type=cdrom, path="$iso", status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev="$log"
display_library: rfb, options="timeout=0"
speaker: enabled=0
clock: sync=none, time0=local
e1000: card=0, enabled=1, mac=52:54:00:12:34:66, ethmod=socket, ethdev=$port
e1000: card=1, enabled=1, mac=52:54:00:12:34:67, ethmod=socket, ethdev=$((port + 1))
log: $tmp/bochs.log
panic: action=fatal
error: action=report
info: action=ignore
debug: action=ignore
RC
echo c >"$tmp/dbg.rc"
start=$(date +%s)
# rfb listens on 0.0.0.0:5900 and the cards on UDP: a namespace with only
# loopback (brought up) keeps both unreachable from outside.
# The relay leaves when its parent (Bochs) does, and after $tmo at most.
cat >"$tmp/relay.py" <<'PY'
import os, socket, sys, time
parent, end = os.getppid(), time.time() + float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.settimeout(0.5)
while os.getppid() == parent and time.time() < end:
    try:
        s.sendto(s.recv(65536), ("127.0.0.1", int(sys.argv[2])))
    except socket.timeout:
        pass
PY
run=(bash -c 'ip link set lo up 2>/dev/null; python3 "$1" "$2" "$3" "$0" & shift 4; exec "$@"'
	"$tmo" "$tmp/relay.py" $((port + 2)) "$port" --)
unshare -n true 2>/dev/null && run=(unshare -n "${run[@]}")
timeout -k 5 "$tmo" "${run[@]}" bochs -q -f "$tmp/bochsrc" -rc "$tmp/dbg.rc" </dev/null \
	>"$tmp/bochs.out" 2>&1 &
bpid=$!
wait_kernel_exit "$bpid" "$log"
kill "$bpid" 2>/dev/null
wait "$bpid" 2>/dev/null
got=$(grep -o 'KERNEL_EXIT status=[0-9]*' "$log" 2>/dev/null | tail -1)
why=$(check_log "$log" 0 "${got#KERNEL_EXIT status=}" "mac 52:54:00:12:34:66" \
	"mac 52:54:00:12:34:67" "TEST e1000_loop_0_to_1 ... ok" "TEST e1000_loop_1_to_0 ... ok" \
	"TEST e1000_rx_irq_unmask_pending ... ok" "TEST e1000_detach_frees_all ... ok" \
	"e1000test: 11 passed, 0 failed")
[ -n "$why" ] && cp "$tmp/bochs.out" "$logs/$name.bochs.out" 2>/dev/null
verdict "$name" "$why" "$log" $(($(date +%s) - start))
