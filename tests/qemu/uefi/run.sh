#!/usr/bin/env bash
# The hybrid ISO (tools/mkiso.sh: GRUB's BIOS and UEFI builds, Multiboot2)
# booted from QEMU's CD drive, the way a PC boots the USB stick:
#   uefi_demo      make iso's image under OVMF (UEFI firmware, Debian's
#                  ovmf: its code read-only, a fresh copy of its variable
#                  store per boot): the menu's default entry (run=demo), an
#                  e1000 NIC attached; the kernel must see a UEFI boot with
#                  boot services exited, the loader's memory map and RSDP,
#                  the GOP framebuffer as its screen and no VGA text;
#   uefi_exchange  the same image with a first entry run=exchange_test,
#                  under OVMF, with the IDE disk the test writes;
#   bios_demo      make iso's image under SeaBIOS: BIOS firmware, VGA text.
# Each boot must end with the kernel's status 0 (isa-debug-exit), no failed
# TEST, its patterns, and "frames: boot=N exit=N" with equal counts.
# About 20 s in all under TCG (each boot 3-8 s, the second image 2 s to build).
# Usage: tests/qemu/uefi/run.sh KERNEL ISO [name-filter-regex]
kernel=$1
iso=$(realpath "$2")
filter=${3:-.}
source "$(dirname "$0")/../lib.sh"
ovmf_code=/usr/share/OVMF/OVMF_CODE.fd
ovmf_vars=/usr/share/OVMF/OVMF_VARS.fd
for f in "$ovmf_code" "$ovmf_vars"; do
	[ -r "$f" ] || { echo "uefi: $f missing (tools/deps.sh ovmf)"; exit 1; }
done
qpid=
# The running QEMU goes with the script, however it ends.
trap '[ -n "$qpid" ] && kill "$qpid" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
accel=(-accel tcg -cpu max)
[ "${ACCEL:-tcg}" = kvm ] && accel=(-accel kvm -cpu host)
passed=0
failed=0

# One boot: NAME FIRMWARE(uefi|bios) ISO TIMEOUT "PAT1;PAT2" "ABSENT1;.." qemu-args...
# Passes when the kernel exits 0, no TEST failed, every pattern is in the
# log, none of the absent ones is, and the free frames at exit equal those
# at boot.
boot() {
	local name=$1 fw=$2 image=$3 tmo=$4 pats=$5 absent=$6 log=$logs/$1.log start got why
	shift 6
	[[ "$name" =~ $filter ]] || return 0
	local fwargs=()
	if [ "$fw" = uefi ]; then
		cp "$ovmf_vars" "$tmp/$name.vars.fd"
		fwargs=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$ovmf_code"
			-drive "if=pflash,format=raw,unit=1,file=$tmp/$name.vars.fd")
	fi
	rm -f "$log"
	start=$(date +%s)
	timeout -k 5 "$tmo" qemu-system-x86_64 "${accel[@]}" -m 256M -display none -monitor none \
		-no-reboot -serial "file:$log" -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		"${fwargs[@]}" -drive "file=$image,media=cdrom,if=ide,index=2,readonly=on" "$@" \
		>"$log.err" 2>&1 &
	qpid=$!
	wait "$qpid"
	got=$?
	qpid=
	case $got in
	124 | 137) got="none (timed out after ${tmo}s)" ;;
	0) got="none (QEMU exited without one)" ;;
	*) got=$(((got - 1) / 2)) ;;
	esac
	IFS=';' read -ra want <<<"$pats"
	why=$(check_log "$log" 0 "$got" "${want[@]}")
	IFS=';' read -ra never <<<"$absent"
	for p in "${never[@]}"; do
		[ -z "$p" ] || ! grep -qaF -- "$p" "$log" || why+=$'\n'"unexpected '$p'"
	done
	if verdict "$name" "$why" "$log" $(($(date +%s) - start)); then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
}

uefi_ok="booted by multiboot2;boot: UEFI firmware, boot services exited;boot: image at 100000, memory map from multiboot;ACPI RSDP from the loader;madt found;console: COM1 and framebuffer"
# An unwired e1000 (no option ROM: OVMF would try to boot from it) shows
# the NIC line a PC's console prints.
nic=(-netdev "dgram,id=n0,local.type=unix,local.path=$tmp/n0,remote.type=unix,remote.path=$tmp/n1"
	-device "e1000,netdev=n0,mac=52:54:00:12:34:56,romfile=")
boot uefi_demo uefi "$iso" 90 \
	"$uefi_ok;e1000 0: 82540 8086:100e;mac 52:54:00:12:34:56;demo: done;killed: page fault;killed: invalid opcode" \
	"VGA text;malformed" "${nic[@]}"

if [[ uefi_exchange =~ $filter ]]; then
	xiso=$tmp/exchange.iso
	truncate -s 16M "$tmp/disk.img"
	if "$root/tools/mkiso.sh" "$kernel" "$xiso" "run=exchange_test"; then
		boot uefi_exchange uefi "$xiso" 150 "$uefi_ok;SUITE exchange_test: 69 passed, 0 failed" \
			"VGA text;malformed" -drive "file=$tmp/disk.img,if=ide,index=0,format=raw" -nic none
	else
		echo "TEST uefi_exchange ... FAIL (tools/mkiso.sh)"
		failed=$((failed + 1))
	fi
fi

# Two CPUs under OVMF: the second started from the trampoline at 0x8000
# after a UEFI boot, and the stress test's cross-CPU shootdowns.
if [[ uefi_smp =~ $filter ]]; then
	siso=$tmp/smp.iso
	if "$root/tools/mkiso.sh" "$kernel" "$siso" "run=smpstress rounds=50 iters=16"; then
		boot uefi_smp uefi "$siso" 150 \
			"$uefi_ok;smp: 2 CPUs running;smpstress: 2 CPUs;SUITE smpstress: 13 passed, 0 failed" \
			"VGA text;malformed" -smp 2 -nic none
	else
		echo "TEST uefi_smp ... FAIL (tools/mkiso.sh)"
		failed=$((failed + 1))
	fi
fi

boot bios_demo bios "$iso" 90 \
	"booted by multiboot2;boot: BIOS firmware;ACPI RSDP from the loader;madt found;console: COM1 and VGA text 80x25;demo: done" \
	"UEFI;malformed" -nic none

echo "uefi tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
