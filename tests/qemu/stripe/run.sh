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
kernel=$1
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
out=$logs/stripe-mixed
why=()
t0=$(date +%s)
cluster_run "$out" 150 "$root/tools/cluster/topologies/stripe-mixed.json" --kernel "$kernel"
# b's packets went over both links and c's over net0 only (a retransmission
# at start-up can move one to the other link: the shares are not exact).
cluster_need "$out" \
	"a|SUITE stream: 8 passed, 0 failed" \
	"a|links=2" \
	"a|clients=2" \
	"a|gaps=0 lost=0" \
	"a|RELIABLE stream server" \
	"a|LINKS stream server rx nic0=" \
	"a| nic1=" \
	"b|SUITE stream: 6 passed, 0 failed" \
	"b|LINKS stream client tx nic0=" \
	"b| nic1=" \
	"c|SUITE stream: 6 passed, 0 failed" \
	"c|RELIABLE stream client" \
	"a|KERNEL_EXIT status=0" "b|KERNEL_EXIT status=0" "c|KERNEL_EXIT status=0"
cluster_verdict stripe_mixed "$out" "$t0" 'FAIL|stream:' 5
