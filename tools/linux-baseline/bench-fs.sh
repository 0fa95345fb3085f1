#!/usr/bin/env bash
# bench-fs.sh [--runs N] [--sizes 1,2,4,8,16,32 (MiB; 8k: KiB)] [--links 1,2] [--mbps R]
#             [--vers 3,4.2] [--rsize 32768,1048576] [--noac 0,1] [--delay-ms D]
#             [--collect-only] OUT.json
#
# Linux NFS beside the kernel's file service (issue 15): per link count one
# boot pair (run-nfs.sh: an NFS server guest exporting a tmpfs and a client
# guest, one dgram wire per link, every NIC paced with tbf at R Mbit/s
# (default 100), 2 links or more in a balance-rr bond).  The client mounts
# every combination of NFS version (3 with nolock, 4.2; TCP), rsize = wsize
# and noac, and per mount measures a 4 KiB read round trip (median of 200
# O_DIRECT reads) and, per run and I/O length, SRFS's four patterns: create
# write, overwrite, read after write, read after mount (umount + mount
# first).  Writes are one write() of the length plus fsync(), reads one
# read(), every byte verified (fsbench.c).  Over 2 links or more, per
# version one 32 MiB read (1 MiB rsize, fresh mount) has link 0 cut 1 s
# after its "FSCUT begin" line (QMP set_link off on both guests; the
# read itself starts ~0.2 s after that line) and restored when it
# ends: its Mbit/s and bytes lost or corrupt.
# --delay-ms D (e.g. 3.3, SRFS's round trip): a third guest bridges the
# two and delays every frame by D/2 ms each way with netem (run-nfs.sh);
# the rows' rtt_added_ms is D.
# Writes OUT.json ({"bench":"fs","env":{...},"rows":[...]}, rows as in
# collect-fs.py) and keeps each pair's output and console logs in
# $LB_BUILD/raw/fs/ (raw/fs-delayD/ with --delay-ms D; --collect-only: only OUT.json again from those, with
# the same options).  Tunables (env): LB_NIC (e1000), LB_BUILD, LB_PREBUILT=1
# (as bench.sh).  Time: about 1 + 9 x runs minutes per link count at
# 100 Mbit/s on an idle host (every size once per pattern and mount is
# ~190 MiB over the wire).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

RUNS=1 SIZES=1,2,4,8,16,32 LINKS_LIST=1,2 MBPS=100 VERS=3,4.2 RSIZE=32768,1048576 NOAC=0,1 DELAY_MS= OUT= MEASURE=1
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--links) LINKS_LIST=$2; shift ;;
	--mbps) MBPS=$2; shift ;;
	--vers) VERS=$2; shift ;;
	--rsize) RSIZE=$2; shift ;;
	--noac) NOAC=$2; shift ;;
	--delay-ms) DELAY_MS=$2; shift ;;
	--collect-only) MEASURE= ;;
	-*) lb_usage ;;
	*) lb_out_arg "$1" ;;
	esac
	shift
done
lb_args_done
case "$MBPS" in '' | *[!0-9]*) lb_die "--mbps $MBPS: a whole number (0: unpaced)" ;; esac
for l in $(echo "$LINKS_LIST" | tr , ' '); do
	case "$l" in 1 | 2 | 3 | 4) ;; *) lb_die "--links $LINKS_LIST: 1 to 4 each" ;; esac
done
for s in $(echo "$SIZES" | tr , ' '); do
	case "${s%k}" in '' | *[!0-9]* | 0) lb_die "--sizes $SIZES: MiB (or KiB with a k, 8k), positive" ;; esac
	case "$s" in *k) [ $((${s%k} % 4)) = 0 ] || lb_die "--sizes $s: whole pages" ;; *)
		[ "$s" -le 64 ] || lb_die "--sizes: at most 64 MiB (the guests have 512 MiB)" ;; esac
done
for v in $(echo "$VERS" | tr , ' '); do
	case "$v" in 3 | 4 | 4.0 | 4.1 | 4.2) ;; *) lb_die "--vers $VERS: 3, 4.0, 4.1 or 4.2" ;; esac
done
case "$DELAY_MS" in '' | [0-9]* ) ;; *) lb_die "--delay-ms $DELAY_MS: milliseconds" ;; esac
awk -v d="${DELAY_MS:-0}" 'BEGIN { exit !(d ~ /^[0-9]+(\.[0-9]+)?$/ && d <= 1000) }' ||
	lb_die "--delay-ms $DELAY_MS: 0 to 1000 ms"
for n in $(echo "$NOAC" | tr , ' '); do
	case "$n" in 0 | 1) ;; *) lb_die "--noac $NOAC: 0 and/or 1" ;; esac
done

GUEST=${LB_BUILD:-$ROOT/build/linux-baseline}
NIC=${LB_NIC:-${NIC:-e1000}}
lb_progress_start linux-fs

measure() {
	export LB_NFS=1 # the guest with NFS (initrd-nfs.gz)
	lb_bench_guest qemu-system-x86 python3
	lb_fresh_raw "$RAW" "$OUT"

	# The pair's QEMU time limit: 20 min plus 1 s per MiB moved at 2 Mbit/s.
	nconf=$(($(echo "$VERS" | tr , '\n' | grep -c .) * $(echo "$RSIZE" | tr , '\n' | grep -c .) *
		$(echo "$NOAC" | tr , '\n' | grep -c .)))
	mib=$(($(echo "$SIZES" | tr , '\n' | sed 's/^[0-9]*k$/1/' | paste -sd+) + 0)) # a KiB size counts as 1 MiB
	TIMEOUT=$((1200 + nconf * RUNS * mib * 3 * 4))
	append="nfs.vers=$VERS nfs.rsize=$RSIZE nfs.noac=$NOAC nfs.sizes=$SIZES nfs.runs=$RUNS"
	for links in $(echo "$LINKS_LIST" | tr , ' '); do
		cut=() delay=()
		[ "$links" -ge 2 ] && cut=(--cut-after 1)
		[ -n "$DELAY_MS" ] && delay=(--delay-ms "$DELAY_MS")
		for try in 1 2; do
			progress "$links link(s) at $MBPS Mbit/s: $nconf mounts x $RUNS run(s) x sizes $SIZES MiB (try $try, limit ${TIMEOUT}s)"
			rm -rf "$RAW/links-$links.logs"
			if { echo "PAIR links=$links mbps=$MBPS rtt_added_ms=${DELAY_MS:-0}"; "$HERE/run-nfs.sh" --links "$links" \
				--mbps "$MBPS" "${cut[@]}" "${delay[@]}" --timeout "$TIMEOUT" --guest "$GUEST" --nic "$NIC" --logdir "$RAW/links-$links.logs" \
				--append "$append"; } >"$RAW/links-$links.tmp"; then
				mv "$RAW/links-$links.tmp" "$RAW/links-$links.txt"
				break
			fi
			progress "$links link(s) failed (try $try); logs in $RAW/links-$links.logs"
			[ $try = 2 ] && lb_die "the pair over $links link(s) failed twice"
		done
	done
}

lb_need_pkgs python3
RAW=$GUEST/raw/fs${DELAY_MS:+-delay$DELAY_MS}
if [ -n "$MEASURE" ]; then
	measure
else
	[ -f "$GUEST/guest.env" ] && ls "$RAW"/links-*.txt >/dev/null 2>&1 || lb_die "no earlier run in $RAW"
	mkdir -p "$(dirname "$OUT")"
fi

# shellcheck disable=SC1091
. "$GUEST/guest.env"
CPU=$(sed -n 's/^model name[[:space:]]*: //p;T;q' /proc/cpuinfo)
python3 "$HERE/collect-fs.py" --out "$OUT" \
	--env accel=tcg --env clock=real --env "qemu=$(lb_qemu_version)" --env "nic=$NIC" \
	--env backend=dgram-unix-per-link --env "cpu=$CPU" --env "runs=$RUNS" \
	--env "host_setting=${BENCH_HOST_SETTING:-host defaults}" \
	--env "per_link_mbps_paced=$MBPS" --env "link_mbps=$MBPS" --env mtu=9000 \
	--env "pacing=tbf on every NIC of both guests (burst 4 ms of the rate + two jumbo frames, as the kernel pacer; limit 4 MiB)" \
	--env "rtt_added_ms=${DELAY_MS:-0}" --env "netem_delay_ms=${DELAY_MS:-0}" \
	--env "delay=${DELAY_MS:+a third guest bridges server and client links and delays each frame by half of rtt_added_ms with netem}" \
	--env "bonding=2 links or more: bond0 balance-rr, miimon 100 ms, on both guests" \
	--env "nfs_server=nfsd (Linux $KERNEL_RELEASE) with Debian's nfs-kernel-server, rpcbind; export /export (tmpfs) rw,sync,no_root_squash,no_subtree_check,fsid=1; 8 threads; max_block_size 1 MiB" \
	--env "nfs_client=mount.nfs (nfs-common) -o vers=V,proto=tcp,rsize=R,wsize=R[,nolock for v3][,noac]; hard, timeo=600 (defaults)" \
	--env "timed_write=one write() of io_bytes plus fsync() (open and close not timed; create_write: a new file opened O_CREAT|O_EXCL before the timer)" \
	--env "timed_read=one read() of io_bytes (open and close not timed), every byte then compared" \
	--env "patterns=per run and size: create_write, overwrite (new bytes), read_after_write (same mount), read_after_mount (umount + mount, then read)" \
	--env "read_4k_rtt=median of 200 pread()s of 4 KiB on an O_DIRECT file descriptor (one READ round trip each), per mount" \
	--env "read_through_cut=32 MiB read on a fresh mount (rsize 1 MiB), link 0 cut (QMP set_link off, both guests) 1 s after the client announces it (the read starts ~0.2 s later), restored when it ends" \
	--env "guest=Linux $KERNEL_RELEASE ($KERNEL_PKG $KERNEL_VER), busybox initramfs, 512 MiB, -cpu max" \
	"$RAW"/links-*.txt
progress "wrote $OUT"
