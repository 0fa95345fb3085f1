#!/usr/bin/env bash
# Builds the hybrid boot image: one ISO 9660 file that boots by BIOS (GRUB's
# i386-pc build, El Torito and an MBR for USB sticks) and by UEFI (GRUB's
# x86_64-efi build in an EFI system partition image), from CD or USB alike,
# GRUB loading the kernel by Multiboot2 with boot/grub.cfg's menu.
# With a command line, a first menu entry running it is added and made the
# default (the tests boot the same kind of image with their own program).
# Usage: tools/mkiso.sh KERNEL OUT.iso ["CMDLINE"]
set -euo pipefail
kernel=$1
out=$2
cmdline=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
for d in i386-pc x86_64-efi; do
	[ -d "/usr/lib/grub/$d" ] || { echo "mkiso: GRUB's $d build is missing (tools/deps.sh iso)" >&2; exit 1; }
done
tree=$(mktemp -d "${TMPDIR:-/tmp}/mkiso.XXXXXX")
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/boot/grub"
cp "$kernel" "$tree/boot/kernel.elf"
if [ -z "$cmdline" ]; then
	cp "$root/boot/grub.cfg" "$tree/boot/grub/grub.cfg"
else
	# The settings, then the extra entry, then the menu as it is.
	awk -v cmd="$cmdline" '
		/^menuentry/ && !done {
			print "menuentry \"tender-x86_64 " cmd "\" {"
			print "\tmultiboot2 /boot/kernel.elf " cmd
			print "\tboot"
			print "}"
			done = 1
		}
		{ print }' "$root/boot/grub.cfg" >"$tree/boot/grub/grub.cfg"
fi
grub-mkrescue -o "$out.tmp" "$tree" >"$tree.log" 2>&1 || { cat "$tree.log" >&2; rm -f "$tree.log" "$out.tmp"; exit 1; }
rm -f "$tree.log"
mv "$out.tmp" "$out"
