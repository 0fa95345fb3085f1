# build-nfs.sh: the NFS part of the Linux baseline guest (sourced by
# build.sh, not run).  It makes OUTDIR/initrd-nfs.gz: the ordinary
# initrd.gz followed by a second cpio archive (the kernel unpacks both, the
# later over the earlier) that adds
#   /lib/modules/nfs.order and its modules: nfsd, nfsv3, nfsv4 and what
#       modinfo says they depend on (sunrpc, lockd, grace, nfs_acl,
#       auth_rpcgss, nfs, fscache, netfs, dns_resolver), from the same
#       kernel package as the rest of the guest;
#   the user space of Debian's nfs-kernel-server (rpc.nfsd, rpc.mountd,
#       exportfs), nfs-common (mount.nfs, nfsstat, showmount) and rpcbind
#       (rpcbind, rpcinfo), with every shared library ldd finds for them
#       (from those packages, libtirpc3, libwrap0 and libnfsidmap1, else
#       from the host's Debian 12 libraries, which are the same release)
#       and the dynamic loader; /etc/netconfig (libtirpc-common), services,
#       protocols and rpc (netbase), a passwd with rpcbind's _rpc user;
#   /lib/modules/router.order: bridge (with stp, llc) and sch_netem, and
#       iproute2's tc (busybox's has no netem), for a guest that bridges two
#       wires and delays every frame (run-nfs.sh --delay-ms);
#   /bin/fsbench (fsbench.c) and /bin/nfs-guest.sh (pkt.mode=nfs in init.sh).
# The ordinary initrd.gz stays as it was, so the other benchmarks boot the
# same guest as before.

NFS_DEBS=(nfs-kernel-server nfs-common rpcbind libtirpc3 libtirpc-common libwrap0 libnfsidmap1 netbase
	iproute2 libbpf1 libelf1 libmnl0 libbsd0 libmd0 libxtables12)
NFS_BINS=(usr/sbin/rpc.nfsd usr/sbin/rpc.mountd usr/sbin/exportfs usr/sbin/nfsstat
	sbin/mount.nfs sbin/showmount sbin/rpcbind usr/bin/rpcinfo sbin/tc)
NFS_MODULES=(nfsd nfsv3 nfsv4)
# The delay router (nfs-guest.sh, pkt.role=router): bridges and netem.
ROUTER_MODULES=(bridge sch_netem)

# The tar members of the kernel package the NFS modules live in.
NFS_KERNEL_MEMBERS=('./lib/modules/*/kernel/fs/nfs/*.ko' './lib/modules/*/kernel/fs/nfsd/*.ko'
	'./lib/modules/*/kernel/fs/lockd/*.ko' './lib/modules/*/kernel/fs/nfs_common/*.ko'
	'./lib/modules/*/kernel/fs/fscache/*.ko' './lib/modules/*/kernel/fs/netfs/*.ko'
	'./lib/modules/*/kernel/net/sunrpc/*.ko'
	'./lib/modules/*/kernel/net/dns_resolver/*.ko' './lib/modules/*/kernel/net/sched/sch_netem.ko'
	'./lib/modules/*/kernel/net/bridge/bridge.ko' './lib/modules/*/kernel/net/802/stp.ko'
	'./lib/modules/*/kernel/net/llc/llc.ko')

# "package version" of every NFS package apt would download (for the stamp).
nfs_versions() {
	local p
	for p in "${NFS_DEBS[@]}"; do
		echo "$p $({ apt-cache policy "$p" 2>/dev/null || true; } | sed -n 's/^ *Candidate: //p;T;q')"
	done
}

# Downloads the packages once per version into OUTDIR/cache/nfs and unpacks
# them into $1.
nfs_fetch_userspace() {
	local x=$1 c="$OUT/cache/nfs" p v f
	mkdir -p "$c" "$x"
	for p in "${NFS_DEBS[@]}"; do
		v=$({ apt-cache policy "$p" 2>/dev/null || true; } | sed -n '/(none)/d;s/^ *Candidate: //p;T;q')
		[ -n "$v" ] || lb_die "apt knows no candidate for $p"
		f=
		for d in "$c/${p}_"*.deb; do
			[ -f "$d" ] && [ "$(dpkg-deb -f "$d" Version)" = "$v" ] && f=$d
		done
		if [ -z "$f" ]; then
			rm -f "$c/${p}_"*.deb
			lb_wait_apt
			lb_log "apt-get download $p=$v"
			(cd "$c" && apt-get download -q "$p=$v" 2>&1 | grep -v 'unsandboxed' >&2) || true
			for d in "$c/${p}_"*.deb; do [ -f "$d" ] && f=$d; done
			[ -n "$f" ] || lb_die "download of $p=$v failed"
		fi
		dpkg-deb -x "$f" "$x"
	done
}

# nfs_copy_lib ROOT PATH: PATH (a library, following symlinks) into ROOT at
# the same place, unless there already.
nfs_copy_lib() {
	local r=$1 p=$2
	[ -e "$r$p" ] && return 0
	mkdir -p "$r$(dirname "$p")"
	cp -L "$p" "$r$p"
}

# build_nfs_overlay X ROOT: the overlay tree in ROOT from the unpacked
# packages in X and the kernel tree $OUT/kernel-x.
build_nfs_overlay() {
	local x=$1 r=$2 b lib libpath m
	libpath="$x/lib/x86_64-linux-gnu:$x/usr/lib/x86_64-linux-gnu"
	mkdir -p "$r"/{bin,sbin,usr/sbin,usr/bin,etc,lib/modules,export,mnt,run/rpcbind,var/lib/nfs/rpc_pipefs}
	for b in "${NFS_BINS[@]}"; do
		[ -f "$x/$b" ] || lb_die "no $b in the NFS packages"
		cp "$x/$b" "$r/$b"
		# ldd prints "name => path (addr)" or "path (addr)" for the loader.
		for lib in $(LD_LIBRARY_PATH=$libpath ldd "$x/$b" | awk '
			/not found/ { print "MISSING:" $1; next }
			$2 == "=>" && $3 ~ /^\// { print $3; next }
			$1 ~ /^\// { print $1 }'); do
			case "$lib" in MISSING:*) lb_die "$b needs ${lib#MISSING:}, found nowhere" ;; esac
			case "$lib" in
			"$x"/*)
				mkdir -p "$r$(dirname "${lib#"$x"}")"
				cp -L "$lib" "$r${lib#"$x"}"
				;;
			*) nfs_copy_lib "$r" "$lib" ;;
			esac
		done
	done
	ln -sf mount.nfs "$r/sbin/mount.nfs4"
	cp "$x/etc/netconfig" "$x/etc/services" "$x/etc/protocols" "$x/etc/rpc" "$r/etc/"
	printf 'root:x:0:0:root:/:/bin/sh\n_rpc:x:100:65534::/run/rpcbind:/bin/false\nnobody:x:65534:65534:nobody:/:/bin/false\n' \
		>"$r/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
	printf '127.0.0.1 localhost\n10.0.0.1 nfs-server\n10.0.0.2 nfs-client\n' >"$r/etc/hosts"
	printf 'passwd: files\ngroup: files\nhosts: files\n' >"$r/etc/nsswitch.conf"
	cp "${NFS_KOS[@]}" "$r/lib/modules/"
	printf '%s\n' "${NFS_ORDER[@]}" >"$r/lib/modules/nfs.order"
	cp "${ROUTER_KOS[@]}" "$r/lib/modules/"
	printf '%s\n' "${ROUTER_ORDER[@]}" >"$r/lib/modules/router.order"
	install -m 755 "$OUT/fsbench" "$r/bin/fsbench"
	strip "$r/bin/fsbench"
	install -m 755 "$HERE/nfs-guest.sh" "$r/bin/nfs-guest.sh"
}

build_fsbench() {
	gcc -std=c11 -static -O2 -Wall -Wextra -Werror -o "$OUT/fsbench" "$HERE/fsbench.c"
	"$OUT/fsbench" selfcheck >/dev/null || lb_die "fsbench selfcheck failed"
}

# Called by build.sh after build_initramfs, with the kernel still unpacked
# in $OUT/kernel-x (KREL set).
build_nfs_initramfs() {
	local kx="$OUT/kernel-x" x="$OUT/nfs-x" r="$OUT/initramfs-nfs-root" m
	NFS_ORDER=() NFS_KOS=()
	for m in "${NFS_MODULES[@]}"; do order_module "$kx/lib/modules/$KREL" NFS "$m"; done
	ROUTER_ORDER=() ROUTER_KOS=()
	for m in "${ROUTER_MODULES[@]}"; do order_module "$kx/lib/modules/$KREL" ROUTER "$m"; done
	build_fsbench
	rm -rf "$x" "$r"
	nfs_fetch_userspace "$x"
	build_nfs_overlay "$x" "$r"
	{
		cat "$OUT/initrd.gz"
		(cd "$r" && find . -mindepth 1 | LC_ALL=C sort | /bin/busybox cpio -o -H newc -R 0:0 2>/dev/null) | gzip -9n
	} >"$OUT/initrd-nfs.gz.tmp"
	mv "$OUT/initrd-nfs.gz.tmp" "$OUT/initrd-nfs.gz"
	rm -rf "$x"
	lb_log "NFS guest: $OUT/initrd-nfs.gz ($(du -h "$OUT/initrd-nfs.gz" | cut -f1)); modules: ${NFS_ORDER[*]}; router: ${ROUTER_ORDER[*]}"
}
