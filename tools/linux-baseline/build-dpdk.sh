# build-dpdk.sh: the DPDK part of the Linux baseline guest (sourced by
# build.sh, not run).  It makes OUTDIR/initrd-dpdk.gz: the ordinary
# initrd.gz followed by a second cpio archive (the kernel unpacks both, the
# later over the earlier) that adds
#   /bin/dpdk-guest.sh (what init.sh runs for pkt.variant=dpdk) and
#   /bin/dpdkbench (dpdkbench.c, linked against Debian bookworm's DPDK 22.11
#       shared libraries from libdpdk-dev, installed on the host);
#   /lib/dpdk/: the drivers EAL loads by -d (PCI bus, ring mempool, the em
#       and virtio poll-mode drivers), nothing else: EAL's default driver
#       directory does not exist in the guest, so no other driver is tried;
#   every shared library ldd finds for the program and those drivers, at the
#       host's path, and the dynamic loader (the host is the same Debian
#       release as the packages);
#   /lib/modules/dpdk.order and its modules: uio_pci_generic and what
#       modinfo says it depends on (uio), from the guest's kernel package.
# The ordinary initrd.gz stays as it was, so the other benchmarks boot the
# same guest as before.  init.sh sets up hugepages and binds the NIC when
# pkt.variant is dpdk.

DPDK_PKGS=(libdpdk-dev pkg-config)
DPDK_PMDS=(librte_bus_pci librte_mempool_ring librte_net_e1000 librte_net_virtio)
DPDK_LIBS=(-lrte_ethdev -lrte_mbuf -lrte_mempool -lrte_eal)
DPDK_SOURCES=("$HERE/build-dpdk.sh" "$HERE/dpdkbench.c" "$HERE/dpdkstripe.h" "$HERE/pktproto.h" "$HERE/pktpeer.h" "$HERE/pktwindow.h" "$HERE/rxmark.h" "$HERE/dpdk-guest.sh")
DPDK_KERNEL_MEMBERS=('./lib/modules/*/kernel/drivers/uio/uio.ko'
	'./lib/modules/*/kernel/drivers/uio/uio_pci_generic.ko')

# The directory the drivers of the host's DPDK live in.
dpdk_pmd_dir() {
	local d
	d=$(pkg-config --variable=pmdsdir libdpdk 2>/dev/null || true)
	[ -n "$d" ] && [ -d "$d" ] || d=$(ls -d /usr/lib/x86_64-linux-gnu/dpdk/pmds-* 2>/dev/null | head -n 1)
	[ -n "$d" ] || lb_die "no DPDK driver directory (is libdpdk-dev installed?)"
	echo "$d"
}

dpdk_inputs_hash() {
	{
		cat "$OUT/stamp"
		dpkg-query -W -f='${Package} ${Version}\n' libdpdk-dev
		sha256sum "${DPDK_SOURCES[@]}" "$ROOT/lib/include/wire.h" "$HERE/benchnet.h" | cut -d' ' -f1
	} | sha256sum | cut -d' ' -f1
}

build_dpdkbench() {
	# shellcheck disable=SC2046
	gcc -std=gnu11 -O2 -Wall -Wextra -Werror $(pkg-config --cflags libdpdk) -o "$OUT/dpdkbench" \
		"$HERE/dpdkbench.c" "${DPDK_LIBS[@]}"
	"$OUT/dpdkbench" --selfcheck >/dev/null || lb_die "dpdkbench --selfcheck failed"
}

# dpdk_copy_deps ROOT FILE: every library ldd names for FILE, and the
# loader, into ROOT at the host's path.
dpdk_copy_deps() {
	local r=$1 lib
	for lib in $(ldd "$2" | awk '
		/not found/ { print "MISSING:" $1; next }
		$2 == "=>" && $3 ~ /^\// { print $3; next }
		$1 ~ /^\// { print $1 }'); do
		case "$lib" in MISSING:*) lb_die "$2 needs ${lib#MISSING:}, found nowhere" ;; esac
		[ -e "$r$lib" ] && continue
		mkdir -p "$r$(dirname "$lib")"
		cp -L "$lib" "$r$lib"
	done
}

build_dpdk_overlay() {
	local r=$1 pmds p so
	pmds=$(dpdk_pmd_dir)
	mkdir -p "$r"/{bin,lib/dpdk,lib/modules,mnt/huge}
	install -m 755 "$OUT/dpdkbench" "$r/bin/dpdkbench"
	install -m 755 "$HERE/dpdk-guest.sh" "$r/bin/dpdk-guest.sh"
	strip "$r/bin/dpdkbench"
	dpdk_copy_deps "$r" "$OUT/dpdkbench"
	for p in "${DPDK_PMDS[@]}"; do
		so=$(ls "$pmds/$p.so."[0-9]* 2>/dev/null | head -n 1)
		[ -n "$so" ] || lb_die "no $p in $pmds"
		cp -L "$so" "$r/lib/dpdk/$(basename "$so")"
		dpdk_copy_deps "$r" "$so"
	done
	cp "${DPDK_KOS[@]}" "$r/lib/modules/"
	printf '%s\n' "${DPDK_ORDER[@]}" >"$r/lib/modules/dpdk.order"
}

# Called by build.sh after build_initramfs, with the kernel unpacked in
# $OUT/kernel-x (KREL set).
build_dpdk_initramfs() {
	local kx="$OUT/kernel-x" r="$OUT/initramfs-dpdk-root"
	DPDK_ORDER=() DPDK_KOS=()
	order_module "$kx/lib/modules/$KREL" DPDK uio_pci_generic
	build_dpdkbench
	rm -rf "$r"
	build_dpdk_overlay "$r"
	{
		cat "$OUT/initrd.gz"
		(cd "$r" && find . -mindepth 1 | LC_ALL=C sort | /bin/busybox cpio -o -H newc -R 0:0 2>/dev/null) | gzip -9n
	} >"$OUT/initrd-dpdk.gz.tmp"
	mv "$OUT/initrd-dpdk.gz.tmp" "$OUT/initrd-dpdk.gz"
	lb_log "DPDK guest: $OUT/initrd-dpdk.gz ($(du -h "$OUT/initrd-dpdk.gz" | cut -f1));" \
		"modules: ${DPDK_ORDER[*]}; drivers: ${DPDK_PMDS[*]}"
}

# The DPDK guest over the ordinary one (build.sh's stamped).
dpdk_main() {
	lb_need_pkgs "${DPDK_PKGS[@]}"
	stamped dpdk "$(dpdk_inputs_hash)" initrd-dpdk.gz build_dpdk_initramfs
}
