#!/usr/bin/env bash
# selftest-nfs.sh [BUILD_DIR]: an NFS server guest and an NFS client guest
# over one link paced at 100 Mbit/s (run-nfs.sh): the client mounts the
# server's tmpfs export with NFSv4.2 over TCP (rsize = wsize = 1 MiB) and
# writes a new 4 MiB file (one write() plus fsync()), overwrites it with
# other bytes, reads it back on the same mount and after umount + mount,
# every byte compared (fsbench), and times 20 O_DIRECT 4 KiB reads (each
# verified).  Fails (exit 1) on any mount, verification error or timeout
# (QEMU limited to 150 s).  About 40 s on an idle host.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

export LB_NFS=1 # the guest with NFS (initrd-nfs.gz)
lb_selftest_guest selftest-nfs "${1:-}" qemu-system-x86 python3
rm -rf "$LOGS"
mkdir -p "$LOGS"

out="$LOGS/out.txt" why=
if ! "$HERE/run-nfs.sh" --guest "$GUEST" --links 1 --mbps 100 --timeout 150 --logdir "$LOGS/pair" \
	--append "nfs.vers=4.2 nfs.rsize=1048576 nfs.noac=0 nfs.sizes=4 nfs.runs=1 nfs.rttn=20" >"$out"; then
	why="run failed"
else
	# Each of the four patterns once, 4 MiB, verified; the round trip verified.
	for p in create_write overwrite read_after_write read_after_mount; do
		grep -q "^FSB .* pattern=$p bytes=4194304 .* verified=1$" "$out" || why="$why no verified 4 MiB $p;"
	done
	grep -q '^FSB op=rtt .* verified=1$' "$out" || why="$why no verified 4 KiB round trips;"
	grep -q '^NFSMOUNT .*vers=4.2,' "$out" || why="$why not mounted as NFSv4.2;"
fi
if [ -z "$why" ]; then
	printf 'PASS nfs42 %s\n' "$(awk '/^FSB/ { for (i = 2; i <= NF; i++) if ($i ~ /^(pattern|mbps|median_us)=/) printf "%s ", $i; printf "| " }' "$out")"
else
	printf 'FAIL nfs42 %s (logs: %s)\n' "$why" "$LOGS/pair"
fi
lb_log "selftest-nfs $([ -z "$why" ] && echo passed || echo FAILED) in $(($(date +%s) - START))s"
[ -z "$why" ]
