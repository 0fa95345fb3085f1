#!/usr/bin/env bash
# make test-stripe: striping across nodes with different link counts, on
# the cluster runner (tools/cluster/topologies/stripe-mixed.json): a
# two-link node serves one striped channel; a two-link node streams to it
# over both links and a one-link node over its only one, at once, every
# NIC paced to 100 Mbit/s, every channel reliable (the one-link client's
# with rel=1). The server checks every packet of each client
# for order, count and bytes; each kernel exits 0 only with its frames and
# resources back to their boot counts. About 15 s.
# Usage: tests/qemu/stripe/run.sh KERNEL
set -uo pipefail
kernel=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=$(dirname "$kernel")/test-logs/stripe-mixed
rm -rf "$out"
t0=$(date +%s)
"$root/tools/cluster/run" "$root/tools/cluster/topologies/stripe-mixed.json" --kernel "$kernel" \
	--out "$out" --timeout 150 >"$out.runner" 2>&1
rc=$? why=()
[ $rc -eq 0 ] || why+=("the runner exited $rc (a node failed or timed out)")
need() { # node pattern
	grep -aqF -- "$2" "$out/$1.log" 2>/dev/null || why+=("$1: missing '$2'")
}
need a "SUITE stream: 8 passed, 0 failed"
need a "links=2"
need a "clients=2"
need a "gaps=0 lost=0"
need a "RELIABLE stream server"
# b's packets went over both links and c's over net0 only (a retransmission
# at start-up can move one to the other link: the shares are not exact).
need a "LINKS stream server rx nic0="
need a " nic1="
need b "SUITE stream: 6 passed, 0 failed"
need b "LINKS stream client tx nic0="
need b " nic1="
need c "SUITE stream: 6 passed, 0 failed"
need c "RELIABLE stream client"
for n in a b c; do need $n "KERNEL_EXIT status=0"; done
grep -aq '\.\.\. FAIL' "$out"/*.log && why+=("a TEST failed")
if [ ${#why[@]} -eq 0 ]; then
	echo "TEST stripe_mixed ... ok ($(($(date +%s) - t0))s)"
	exit 0
fi
echo "TEST stripe_mixed ... FAIL"
printf '    %s\n' "${why[@]}" "logs: $out"
grep -a -h -E 'FAIL|stream:' "$out"/*.log 2>/dev/null | head -5 | sed 's/^/    | /'
exit 1
