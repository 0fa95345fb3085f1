#!/usr/bin/env bash
# make test-relay: the kernel's relay on the cluster runner's bridges
# (tools/cluster/topologies/relay-line3.json): a -- b -- c in a line, a at
# 0.0 on net0, b at 1.0 on both, c at 1.1 on net1. a probes b (one packet
# with hop limit 1 for c, which needs a relay: dropped at b; raw routed
# frames with no route, outside the dimensions and with hop limit 0:
# dropped), then streams 1024 verified 8192-byte packets to node 1.1; c
# checks every one (order, count, every byte) and acknowledges to node 0.0.
# b forwards both directions from its receive buffers and checks its
# counters: at least 600 frames forwarded, 0 bytes copied, each drop as
# probed, nothing dropped for a full or dead NIC, every buffer back from the
# NICs. Each kernel exits 0 only with its frames and resources back to
# their boot counts. About 5 s of VMs (10 s with start-up).
# Usage: tests/qemu/relay/run.sh KERNEL
set -uo pipefail
kernel=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=$(dirname "$kernel")/test-logs/relay-line3
rm -rf "$out"
mkdir -p "$(dirname "$out")"
t0=$(date +%s)
"$root/tools/cluster/run" "$root/tools/cluster/topologies/relay-line3.json" --kernel "$kernel" \
	--out "$out" --timeout 90 >"$out.runner" 2>&1
rc=$? why=()
[ $rc -eq 0 ] || why+=("the runner exited $rc (a node failed or timed out)")
need() { # node pattern
	grep -aqF -- "$2" "$out/$1.log" 2>/dev/null || why+=("$1: missing '$2'")
}
need b "relay: node 1.0.0, 2 dimension(s), 2 neighbour(s)"
need b "SUITE relay: 10 passed, 0 failed"
need b " copied=0 "
need b " drop_hops=1 drop_noroute=1 drop_baddst=2 drop_busy=0 drop_down=0 "
need a "SUITE relay probe: 7 passed, 0 failed"
need a "SUITE stream: 6 passed, 0 failed"
need c "SUITE stream: 7 passed, 0 failed"
need c "corrupt=0 missing=0"
for n in a b c; do need $n "KERNEL_EXIT status=0"; done
grep -aq '\.\.\. FAIL' "$out"/*.log && why+=("a TEST failed")
if [ ${#why[@]} -eq 0 ]; then
	echo "TEST relay_line3 ... ok ($(($(date +%s) - t0))s)"
	grep -a -h -E '^RELAY' "$out/b.log" | sed 's/^/    | /'
	exit 0
fi
echo "TEST relay_line3 ... FAIL"
printf '    %s\n' "${why[@]}" "logs: $out"
grep -a -h -E 'FAIL|stream:|^RELAY|relay:' "$out"/*.log 2>/dev/null | head -8 | sed 's/^/    | /'
exit 1
