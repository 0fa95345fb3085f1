#!/usr/bin/env bash
# Interoperability of this kernel and Linux over emulated e1000 NICs: one VM
# of each joined by QEMU's dgram backend (tools/interop-pair.sh), verified
# round trips of 1 to 8960 bytes in both directions:
#   interop_kernel_server_linux_client  kernel pingpong server, Linux pktbench client
#   interop_linux_server_kernel_client  Linux pktbench server, kernel pingpong client
#   interop_kernel_stream_linux_server  the windowed stream (interop-pair.sh
#       --mode window), 4096 packets of 1500 bytes: the kernel's stream
#       client (user/stream.c) into pktbench's window receiver (pktwindow.h),
#       every byte checked by Linux, every batch acknowledged to the kernel
#   interop_linux_stream_kernel_server  the same the other way: pktbench's
#       window client into the kernel's stream server, which checks every
#       byte; together, the two systems' streams in make bench-abab are one
#       protocol
# A test passes when the kernel exits with status 0 (its checks passed, no
# frame leaked) and pktbench ends with "DONE ok".  About 20 s on an idle host.
# Usage: tests/interop/run.sh KERNEL [LINUX_GUEST_DIR]
# Environment: INTEROP_VARIANT=packet|mmap (pktbench's sockets, default packet),
#              NIC=e1000|virtio|e1000e (both VMs' NIC model, default e1000),
#              INTEROP_DIRS=both|kernel-server|linux-server (which of the two
#              tests, default both: in either one both sides send and
#              receive every size, the direction only says who starts;
#              none: neither),
#              INTEROP_WINDOW=1|0 (the windowed stream's two tests, default 1).
set -uo pipefail
kernel=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
guest=${2:-$root/build/linux-baseline}
logs=$(dirname "$kernel")/test-logs/interop
variant=${INTEROP_VARIANT:-packet}
nic=${NIC:-e1000}
passed=0 failed=0
mkdir -p "$logs"

# One pair at a time on this guest: the Linux baseline's own runs (selftest,
# benchmarks) hold the same lock, so parallel make jobs take turns.
exec {lockfd}>"$guest/.run.lock"
flock -n "$lockfd" || { echo "interop: waiting for $guest/.run.lock (another Linux baseline run holds it)" >&2; flock -w 600 "$lockfd"; } || echo "interop: $guest/.run.lock still held after 600 s; running anyway" >&2

run() { # name direction [interop-pair.sh options, default the round trips]
	local name=$1 dir=$logs/$1 how=$2 out
	shift 2
	[ $# -gt 0 ] || set -- --sizes 1,60,1500,4096,8192,8960 --iters 4 --warm 1
	mkdir -p "$dir"
	out=$("$root/tools/interop-pair.sh" "$how" "$dir" --kernel "$kernel" --guest "$guest" \
		--variant "$variant" --nic "$nic" --timeout 90 "$@" 2>&1)
	local rc=$?
	printf '%s\n' "$out" >"$dir/result.txt"
	if [ $rc -eq 0 ]; then
		echo "TEST $name ... ok"
		passed=$((passed + 1))
	else
		echo "TEST $name ... FAIL"
		if grep -q '^interop-pair: .*FAILED' <<<"$out"; then
			sed -n '/^interop-pair: .*FAILED/,$p' <<<"$out" | sed 's/^/    /'
		else
			tail -n 5 <<<"$out" | sed 's/^/    /'
		fi
		failed=$((failed + 1))
	fi
}

sfx=; [ "$nic" = e1000 ] || sfx=_$nic
dirs=${INTEROP_DIRS:-both}
case "$dirs" in both | kernel-server | linux-server | none) ;; *) echo "interop: INTEROP_DIRS=$dirs: both, kernel-server, linux-server or none" >&2; exit 2 ;; esac
[ "$dirs" = linux-server ] || [ "$dirs" = none ] || run interop_kernel_server_linux_client$sfx kernel-server
[ "$dirs" = kernel-server ] || [ "$dirs" = none ] || run interop_linux_server_kernel_client$sfx linux-server
if [ "${INTEROP_WINDOW:-1}" != 0 ]; then
	run interop_kernel_stream_linux_server$sfx linux-server --mode window --sizes 1500
	run interop_linux_stream_kernel_server$sfx kernel-server --mode window --sizes 1500
fi

echo "interop tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
