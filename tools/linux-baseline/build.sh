#!/usr/bin/env bash
# build.sh [OUTDIR]: build the Linux baseline guest from Debian's own packages.
#
# Output (OUTDIR, default build/linux-baseline under the repository):
#   vmlinuz     the kernel of Debian's current linux-image-6.1.0-*-amd64
#   initrd.gz   busybox-static, e1000.ko, virtio_net.ko and the modules it
#               needs (load order in /lib/modules/virtio.order), e1000e.ko
#               and what modinfo says it depends on (e1000e.order), bonding.ko
#               and its dependencies (/lib/modules/bond.order), sch_tbf.ko,
#               /init (init.sh), /bin/pktbench, /bin/lbbench, /bin/tlbbench
#               (the TLB-shootdown timer of bench-smp.sh), and libxdp's
#               XDP dispatcher object in /usr/lib/x86_64-linux-gnu/bpf
#               (pktbench links libxdp, libbpf, libelf and zlib statically;
#               libxdp has the AF_XDP redirect program built in)
#   initrd-nfs.gz  the same plus NFS (build-nfs.sh), only with LB_NFS=1
#   initrd-dpdk.gz the same plus DPDK and /bin/dpdkbench (build-dpdk.sh)
#   pktbench, lbbench, tlbbench  the same programs, for the host-side self-checks
#   insnplugin.so  QEMU's TCG plugin that counts tlbbench's instructions
#               per vCPU (run-tlb.sh --count)
#   guest.env   KERNEL_PKG, KERNEL_VER, KERNEL_RELEASE for the result files
# Nothing is rebuilt while the inputs are unchanged (kernel package and
# version, pktbench.c, pktproto.h, pktpeer.h, pktwindow.h, rxmark.h, lbbench.c, benchnet.h, tlbbench.c, insnplugin.c, qemu_plugin_api.h, wire.h, init.sh, this script,
# busybox and gcc versions): their hash is kept in OUTDIR/stamp.  LINUX_PKG=name pins the
# kernel package instead of following linux-image-amd64.
# LB_KERNEL_SUITE=bookworm-backports (or trixie) takes the kernel from that
# suite instead (linux-image-amd64 there: 6.12), through a private apt
# sources list and lists in OUTDIR/apt (the host's apt is left alone; mirror
# LB_KERNEL_MIRROR, default http://deb.debian.org/debian).  Such a kernel's
# compressed modules (.ko.xz) are unpacked for busybox's insmod, modules it
# has built in (modules.builtin) are not looked for, and it gets no NFS guest.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"
# shellcheck source=build-nfs.sh
. "$HERE/build-nfs.sh"
# shellcheck source=build-dpdk.sh
. "$HERE/build-dpdk.sh"

OUT=${1:-$ROOT/build/linux-baseline}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
lb_lock "$OUT/.build.lock"
SOURCES=("$HERE/pktbench.c" "$HERE/pktproto.h" "$HERE/pktpeer.h" "$HERE/pktwindow.h" "$HERE/rxmark.h" "$HERE/xdpport.h" "$HERE/lbbench.c" "$HERE/benchnet.h" "$HERE/tlbbench.c" "$HERE/insnplugin.c" "$HERE/qemu_plugin_api.h" "$ROOT/lib/include/wire.h" "$HERE/init.sh" "$HERE/build.sh")
# initrd-nfs.gz is built only when asked for (LB_NFS=1: the NFS scripts set
# it), with a stamp of its own: the other guests need none of it.
NFS_SOURCES=("$HERE/build-nfs.sh" "$HERE/fsbench.c" "$HERE/benchnet.h" "$HERE/nfs-guest.sh")

# apt options: the host's lists, or LB_KERNEL_SUITE's private ones.
APT_OPTS=()
KERNEL_RE='linux-image-6\.1\.0-[0-9]*-amd64'
if [ -n "${LB_KERNEL_SUITE:-}" ]; then
	mkdir -p "$OUT/apt/lists/partial" "$OUT/apt/cache/archives/partial"
	echo "deb ${LB_KERNEL_MIRROR:-http://deb.debian.org/debian} $LB_KERNEL_SUITE main" >"$OUT/apt/sources.list"
	APT_OPTS=(-o "Dir::Etc::SourceList=$OUT/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$OUT/apt/lists" -o "Dir::Cache=$OUT/apt/cache")
	KERNEL_RE='linux-image-[0-9][^ ]*-amd64'
fi

# Name of the kernel package behind linux-image-amd64, e.g. linux-image-6.1.0-56-amd64.
kernel_pkg_name() {
	if [ -n "${LINUX_PKG:-}" ]; then
		echo "$LINUX_PKG"
		return
	fi
	# (A pipeline cut short by an early exit must not trip pipefail.)
	{ apt-cache "${APT_OPTS[@]}" depends linux-image-amd64 2>/dev/null || true; } |
		sed -n "s/^ *Depends: \\($KERNEL_RE\\)\$/\\1/p;T;q"
}

kernel_pkg_version() {
	{ apt-cache "${APT_OPTS[@]}" policy "$1" 2>/dev/null || true; } | sed -n '/(none)/d;s/^ *Candidate: //p;T;q'
}

# The private lists of LB_KERNEL_SUITE, fetched once per build.
kernel_apt_update() {
	if [ -n "${LB_KERNEL_SUITE:-}" ]; then
		lb_log "apt-get update ($LB_KERNEL_SUITE, private lists in $OUT/apt)"
		apt-get "${APT_OPTS[@]}" update -qq || lb_log "apt-get update of $LB_KERNEL_SUITE failed (offline?)"
	else
		lb_apt_update
	fi
}

# Sets KPKG and KVER, updating the package lists only if they know no kernel;
# falls back to the previous build's package when apt cannot tell (offline).
resolve_kernel() {
	KPKG=$(kernel_pkg_name)
	[ -n "$KPKG" ] && KVER=$(kernel_pkg_version "$KPKG")
	if [ -z "$KPKG" ] || [ -z "${KVER:-}" ]; then
		kernel_apt_update
		KPKG=$(kernel_pkg_name)
		[ -n "$KPKG" ] && KVER=$(kernel_pkg_version "$KPKG")
	fi
	if { [ -z "$KPKG" ] || [ -z "${KVER:-}" ]; } && [ -f "$OUT/guest.env" ]; then
		lb_log "apt knows no kernel package; reusing the previous one"
		# shellcheck disable=SC1091
		. "$OUT/guest.env"
		KPKG=$KERNEL_PKG KVER=$KERNEL_VER
	fi
	[ -n "$KPKG" ] && [ -n "${KVER:-}" ] || lb_die "cannot find a linux-image-6.1.0-*-amd64 package"
}

inputs_hash() {
	{
		echo "$KPKG $KVER"
		dpkg-query -W -f='${Package} ${Version}\n' busybox-static "${XDP_PKGS[@]}"
		gcc --version | sed -n 1p
		sha256sum "${SOURCES[@]}" | cut -d' ' -f1
	} | sha256sum | cut -d' ' -f1
}

nfs_inputs_hash() {
	{
		cat "$OUT/stamp"
		nfs_versions
		sha256sum "${NFS_SOURCES[@]}" | cut -d' ' -f1
	} | sha256sum | cut -d' ' -f1
}

# stamped NAME HASH IMAGE BUILD: an extra guest over the ordinary one
# (OUT/IMAGE, made by the function BUILD), rebuilt when its inputs' HASH
# differs from OUT/stamp-NAME; the kernel package is unpacked again from
# the cache if need be (the caller removes it once every image is built).
stamped() {
	local name=$1 hash=$2 image=$3 build=$4
	if [ -f "$OUT/stamp-$name" ] && [ "$(cat "$OUT/stamp-$name")" = "$hash" ] && [ -f "$OUT/$image" ]; then
		return 0
	fi
	rm -f "$OUT/stamp-$name"
	[ -d "$OUT/kernel-x" ] || extract_kernel "$(fetch_kernel_deb)"
	"$build"
	echo "$hash" >"$OUT/stamp-$name"
}

# The NFS guest (build-nfs.sh).
nfs_main() { stamped nfs "$(nfs_inputs_hash)" initrd-nfs.gz build_nfs_initramfs; }

# The .deb, downloaded once per version into OUTDIR/cache.
fetch_kernel_deb() {
	local deb
	mkdir -p "$OUT/cache"
	deb=$(ls "$OUT/cache/${KPKG}_${KVER}_amd64.deb" 2>/dev/null || true)
	if [ -z "$deb" ]; then
		lb_wait_apt
		lb_log "apt-get download $KPKG=$KVER"
		# _apt cannot write into root-owned build directories; that only
		# costs the download sandbox, so silence the warning.
		(cd "$OUT/cache" && apt-get "${APT_OPTS[@]}" download -q "$KPKG=$KVER" 2>&1 | grep -v 'unsandboxed' >&2) || true
		deb="$OUT/cache/${KPKG}_${KVER}_amd64.deb"
		[ -f "$deb" ] || lb_die "download of $KPKG=$KVER failed"
		find "$OUT/cache" -name '*.deb' ! -name "$(basename "$deb")" -delete
	fi
	echo "$deb"
}

# The members needed: the kernel image, the (uncompressed, dependency-free)
# e1000 module, virtio-net with the modules it may need (Debian builds
# virtio, virtio_ring, virtio_pci and net_failover as modules too), and
# e1000e with whatever PTP/PPS modules its "depends" names (none in
# Debian's 6.1, where PTP is built in).
extract_kernel() {
	local deb=$1 x="$OUT/kernel-x" members nfs=("${NFS_KERNEL_MEMBERS[@]}") dpdk=("${DPDK_KERNEL_MEMBERS[@]}")
	rm -rf "$x"
	mkdir -p "$x"
	if [ -n "${LB_KERNEL_SUITE:-}" ]; then # the newer kernel: the packet peers only
		nfs=('./lib/modules/*/modules.builtin')
		dpdk=()
	fi
	members=('./boot/vmlinuz-*' './lib/modules/*/kernel/drivers/net/ethernet/intel/e1000/e1000.ko' \
		'./lib/modules/*/kernel/drivers/net/virtio_net.ko' \
		'./lib/modules/*/kernel/drivers/net/ethernet/intel/e1000e/e1000e.ko' \
		'./lib/modules/*/kernel/drivers/ptp/*.ko' './lib/modules/*/kernel/drivers/pps/*.ko' \
		'./lib/modules/*/kernel/drivers/net/net_failover.ko' \
		'./lib/modules/*/kernel/net/core/failover.ko' \
		'./lib/modules/*/kernel/drivers/virtio/*.ko' \
		'./lib/modules/*/kernel/drivers/net/bonding/bonding.ko' \
		'./lib/modules/*/kernel/net/tls/*.ko' \
		'./lib/modules/*/kernel/net/sched/sch_tbf.ko' "${nfs[@]}" "${dpdk[@]}")
	# A newer kernel's modules are .ko.xz: match both, unpack the latter.
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$x" --wildcards "${members[@]/%.ko/.ko*}"
	find "$x" -name '*.ko.xz' -exec xz -d {} +
	KREL=$(basename "$x"/boot/vmlinuz-* | sed 's/^vmlinuz-//')
	cp "$x/boot/vmlinuz-$KREL" "$OUT/vmlinuz"
	E1000_KO="$x/lib/modules/$KREL/kernel/drivers/net/ethernet/intel/e1000/e1000.ko"
	[ -f "$E1000_KO" ] || lb_die "no e1000.ko in $deb"
	VIRTIO_ORDER=() VIRTIO_KOS=() BOND_ORDER=() BOND_KOS=() E1000E_ORDER=() E1000E_KOS=()
	order_module "$x/lib/modules/$KREL" VIRTIO virtio_pci
	order_module "$x/lib/modules/$KREL" VIRTIO virtio_net
	order_module "$x/lib/modules/$KREL" E1000E e1000e
	# bonding (1-4 NICs in bond0) needs tls; sch_tbf paces each NIC.
	order_module "$x/lib/modules/$KREL" BOND bonding
	order_module "$x/lib/modules/$KREL" BOND sch_tbf
}

# A module's "depends" (modinfo's field, read from the .modinfo section:
# the package ships no modules.dep, depmod makes it at install).
module_deps() {
	objcopy -O binary --only-section=.modinfo "$1" /dev/stdout | tr '\0' '\n' |
		sed -n 's/^depends=//p' | tr ',' ' '
}

# order_module MODDIR LIST NAME: appends NAME to ${LIST}_ORDER (and its file
# to ${LIST}_KOS) after the modules it depends on, each once.
order_module() {
	local dir=$1 list=$2 m=$3 ko d
	local -n order="${list}_ORDER" kos="${list}_KOS"
	case " ${order[*]} " in *" $m "*) return 0 ;; esac
	ko=$(find "$dir" -name "$m.ko" | head -n 1)
	# Built into the kernel (6.12's virtio_pci): nothing to load.
	[ -z "$ko" ] && grep -q "/$m\.ko\$" "$dir/modules.builtin" 2>/dev/null && return 0
	[ -n "$ko" ] || lb_die "module $m (for $list) not found in the kernel package"
	for d in $(module_deps "$ko"); do order_module "$dir" "$list" "$d"; done
	order+=("$m")
	kos+=("$ko")
}

# pktbench's AF_XDP variant (xdpport.h): the libraries, static, and the
# dispatcher libxdp loads from its object directory.
XDP_PKGS=(libxdp-dev libbpf-dev libelf-dev zlib1g-dev)
XDP_OBJ_DIR=/usr/lib/x86_64-linux-gnu/bpf

build_pktbench() {
	gcc -std=c11 -static -O2 -Wall -Wextra -Werror -o "$OUT/pktbench" "$HERE/pktbench.c" -lxdp -lbpf -lelf -lz
	"$OUT/pktbench" --selfcheck >/dev/null || lb_die "pktbench --selfcheck failed"
	gcc -std=c11 -static -O2 -Wall -Wextra -Werror -o "$OUT/lbbench" "$HERE/lbbench.c"
	"$OUT/lbbench" --selfcheck >/dev/null || lb_die "lbbench --selfcheck failed"
	gcc -std=c11 -static -O2 -Wall -Wextra -Werror -pthread -o "$OUT/tlbbench" "$HERE/tlbbench.c"
	"$OUT/tlbbench" --selfcheck >/dev/null || lb_die "tlbbench --selfcheck failed"
	gcc -std=c11 -shared -fPIC -fvisibility=hidden -O2 -Wall -Wextra -Werror -o "$OUT/insnplugin.so" "$HERE/insnplugin.c"
}

build_initramfs() {
	local r="$OUT/initramfs-root" a
	rm -rf "$r"
	mkdir -p "$r"/{bin,dev,proc,sys,tmp,lib/modules}
	cp /bin/busybox "$r/bin/busybox"
	for a in $("$r/bin/busybox" --list); do
		[ "$a" = busybox ] || ln -s busybox "$r/bin/$a"
	done
	install -m 755 "$HERE/init.sh" "$r/init"
	install -m 755 "$OUT/pktbench" "$r/bin/pktbench"
	strip "$r/bin/pktbench"
	install -m 755 "$OUT/lbbench" "$r/bin/lbbench"
	strip "$r/bin/lbbench"
	install -m 755 "$OUT/tlbbench" "$r/bin/tlbbench"
	strip "$r/bin/tlbbench"
	mkdir -p "$r$XDP_OBJ_DIR"
	cp "$XDP_OBJ_DIR/xdp-dispatcher.o" "$r$XDP_OBJ_DIR/"
	cp "$E1000_KO" "$r/lib/modules/e1000.ko"
	cp "${VIRTIO_KOS[@]}" "$r/lib/modules/"
	printf '%s\n' "${VIRTIO_ORDER[@]}" >"$r/lib/modules/virtio.order"
	cp "${E1000E_KOS[@]}" "$r/lib/modules/"
	printf '%s\n' "${E1000E_ORDER[@]}" >"$r/lib/modules/e1000e.order"
	cp "${BOND_KOS[@]}" "$r/lib/modules/"
	printf '%s\n' "${BOND_ORDER[@]}" >"$r/lib/modules/bond.order"
	# busybox's cpio writes newc and owns every file by root, so no root
	# or host cpio is needed.  /dev/console comes from the kernel's own
	# built-in initramfs, unpacked before this one.
	(cd "$r" && find . -mindepth 1 | LC_ALL=C sort | /bin/busybox cpio -o -H newc -R 0:0 2>/dev/null) |
		gzip -9n >"$OUT/initrd.gz.tmp"
	mv "$OUT/initrd.gz.tmp" "$OUT/initrd.gz"
}

main() {
	lb_need_pkgs busybox-static gcc libc6-dev binutils "${XDP_PKGS[@]}"
	resolve_kernel
	local hash
	hash=$(inputs_hash)
	if [ -f "$OUT/stamp" ] && [ "$(cat "$OUT/stamp")" = "$hash" ] &&
		[ -f "$OUT/vmlinuz" ] && [ -f "$OUT/initrd.gz" ]; then
		lb_log "guest up to date ($KPKG $KVER)"
		[ -z "${LB_NFS:-}" ] || nfs_main
		dpdk_main
		rm -rf "$OUT/kernel-x"
		return 0
	fi
	rm -f "$OUT/stamp"
	lb_log "building guest: $KPKG $KVER"
	extract_kernel "$(fetch_kernel_deb)"
	build_pktbench
	build_initramfs
	printf 'KERNEL_PKG=%s\nKERNEL_VER=%s\nKERNEL_RELEASE=%s\n' "$KPKG" "$KVER" "$KREL" >"$OUT/guest.env"
	echo "$hash" >"$OUT/stamp"
	[ -z "${LB_NFS:-}" ] || nfs_main
	dpdk_main
	rm -rf "$OUT/kernel-x"
	lb_log "guest ready: $OUT/vmlinuz $OUT/initrd.gz ($(du -h "$OUT/initrd.gz" | cut -f1));" \
		"virtio-net modules: ${VIRTIO_ORDER[*]}; e1000e: ${E1000E_ORDER[*]}; bonding and pacing: ${BOND_ORDER[*]}"
}

main
