#!/usr/bin/env bash
# Isolation and liveness (user/isolate.c): one VM whose two NICs are wired
# to each other, processes attacking or stalling one another through the
# I/O resource. Boots: everything but the copy path, then the copy path with
# a threshold above one receive buffer (e1000), then the NIC-facing attacks
# again over virtio-net; then frames for other destinations (dst) with
# every NIC's filter open (promisc=1), on e1000 and virtio-net: the
# kernel's own check must drop and count each.
# Usage: tests/qemu/isolate/run.sh KERNEL [EXTRA_CMDLINE]
# Prints one TEST line per boot and "isolation tests: N passed, M failed".
kernel=$1
extra=${2:-}
source "$(dirname "$0")/../lib.sh"
passed=0 failed=0

boot() { # name cmdline suite-line [model]
	local name=$1 log=$logs/$1.log start got why
	start=$(date +%s)
	# shellcheck disable=SC2046
	SERIAL=$log "$root/tools/qemu-run.sh" "$kernel" "run=isolate $2 $extra" 180 \
		$(two_nics "${4:-e1000}") >/dev/null 2>"$log.err"
	got=$?
	why=$(check_log "$log" 0 "$got" "$3")
	verdict "$name" "$why" "$log" $(($(date +%s) - start)) && return 0
	grep -a -B2 '\.\.\. FAIL' "$log" | head -20 | sed 's/^/    | /'
	return 1
}

# dst first: it counts every drop on the wire, and a reliable channel's
# late control frame (scratch's) for a channel since closed is one.
# Two boots at a time (par, ../lib.sh).
par boot isolation "test=dst,regions,tails,raw,prio,timeout,held,limits,liveness,scratch copy_threshold=128 plimit=4000,64,8" \
	"SUITE isolate: "
par boot isolation_copy "test=copy copy_threshold=9000" "SUITE isolate: "
par boot isolation_virtio "test=dst,regions,tails,raw,held,liveness copy_threshold=128 plimit=4000,64,8" \
	"SUITE isolate: " virtio-net-pci,disable-legacy=on
par boot isolation_promisc "test=dst promisc=1" "SUITE isolate: "
par boot isolation_virtio_promisc "test=dst promisc=1" "SUITE isolate: " virtio-net-pci,disable-legacy=on
par_wait
echo "isolation tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
