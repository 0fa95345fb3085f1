#!/usr/bin/env bash
# Boots the kernel image in QEMU headless and returns the kernel's own exit
# status (isa-debug-exit makes QEMU exit with (status << 1) | 1).
# Usage: tools/qemu-run.sh KERNEL "CMDLINE" [timeout-seconds] [extra qemu args...]
# Environment: ACCEL=tcg (default) or kvm, SERIAL=file to log to (default stdio),
#              QEMU_MEM (default 256M), QEMU_SMP (CPUs, default 1).
set -uo pipefail
kernel=$1
cmdline=$2
tmo=${3:-60}
shift 3 2>/dev/null || shift $#
accel=(-accel tcg -cpu max)
[ "${ACCEL:-tcg}" = kvm ] && accel=(-accel kvm -cpu host)
serial=(-serial stdio)
[ -n "${SERIAL:-}" ] && serial=(-serial "file:$SERIAL")
timeout --foreground -k 5 "$tmo" qemu-system-x86_64 "${accel[@]}" -m "${QEMU_MEM:-256M}" \
	-smp "${QEMU_SMP:-1}" \
	-display none -monitor none -no-reboot "${serial[@]}" \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 -nic none \
	-kernel "$kernel" -append "$cmdline" "$@"
rc=$?
case $rc in
124 | 137) echo "qemu-run: timed out after ${tmo}s" >&2; exit 124 ;;
0) echo "qemu-run: QEMU exited without a kernel status" >&2; exit 125 ;;
1) # the kernel's status 0, or QEMU failing to start (bad arguments): the
	# kernel prints KERNEL_EXIT on every way out (runner.c, kprintf.c)
	if [ -n "${SERIAL:-}" ] && ! grep -aq '^KERNEL_EXIT status=0' "$SERIAL" 2>/dev/null; then
		echo "qemu-run: QEMU exited 1 and the kernel never said KERNEL_EXIT: QEMU did not start?" >&2
		exit 125
	fi ;;
esac
exit $(((rc - 1) / 2))
