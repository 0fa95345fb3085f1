#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, only those missing.
# Usage: tools/deps.sh [group...]   groups: build qemu iso ovmf bochs cunit linux bench cluster netboot
# Run it before anything enters a private network namespace (make bench).
set -euo pipefail
declare -A pkgs=(
	[build]="gcc binutils make python3"
	[qemu]="qemu-system-x86"
	[iso]="grub-pc-bin grub-efi-amd64-bin grub-common xorriso mtools"
	[ovmf]="ovmf"
	[bochs]="bochs bochsbios vgabios bochs-term"
	[cunit]="libcunit1-dev"
	[linux]="busybox-static cpio gzip libxdp-dev libbpf-dev libelf-dev zlib1g-dev xz-utils"
	[bench]="python3 python3-matplotlib python3-numpy"
	[cluster]="python3 iproute2 nftables"
	[netboot]="grub-pc-bin grub-efi-amd64-bin grub-common dnsmasq-base ipxe-qemu iproute2"
)
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(build qemu)
find_missing() {
	local g p
	missing=()
	for g in "${groups[@]}"; do
		for p in ${pkgs[$g]}; do
			dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
		done
	done
}
find_missing
[ ${#missing[@]} -eq 0 ] && exit 0
# make test runs two parts at once (tools/run-tests.sh): one installer at a
# time, and what the other has just installed is not installed again. apt's
# own lock, held by anyone else, is waited for too.
exec 9>"${TMPDIR:-/tmp}/tender-deps.lock"
flock 9
find_missing
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
APT=(-o DPkg::Lock::Timeout=600)
$SUDO apt-get "${APT[@]}" update -qq
$SUDO apt-get "${APT[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
