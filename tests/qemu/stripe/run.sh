#!/usr/bin/env bash
# make test-stripe: striping across nodes with different link counts, on
# the cluster runner (tools/cluster/topologies/stripe-mixed.json): a
# two-link node serves one striped channel; a two-link node streams to it
# over both links and a one-link node over its only one, at once, every
# NIC paced to 100 Mbit/s, every channel reliable (the one-link client's
# with rel=1). The server checks every packet of each client
# for order, count and bytes; it reads batches of 128 where the clients
# send 64 at a time, 512 and 64 in all, so it must flush half-full
# batches (stream.c's FLUSH_MS); each kernel exits 0 only with its frames and
# resources back to their boot counts. About 15 s. Then a two-node striped
# stream across two hosts (below). About 20 s in all.
# Usage: tests/qemu/stripe/run.sh KERNEL   (ONLY=REGEX runs the cases
# whose name matches: stripe_mixed, stripe_pair_hosts)
kernel=$1
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
failed=0
wanted() { [[ -z "${ONLY:-}" || "$1" =~ $ONLY ]]; }
if wanted stripe_mixed; then
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
cluster_verdict stripe_mixed "$out" "$t0" 'FAIL|stream:' 5 || failed=1
fi

# Across hosts: one striped channel over two links between a on one host
# and b on another (two namespaces joined by a veth pair playing two hosts,
# tools/cluster/hosts/netns-pair.json): every frame, jumbo ones included,
# crosses the hosts through each link's VXLAN device. About 5 s.
if wanted stripe_pair_hosts; then
out=$logs/stripe-pair-hosts
why=()
t0=$(date +%s)
cluster_run "$out" 60 "$root/tools/cluster/topologies/stripe-pair.json" --kernel "$kernel" \
	--hosts "$root/tools/cluster/hosts/netns-pair.json"
cluster_need "$out" \
	"a|SUITE stream: 7 passed, 0 failed" "b|SUITE stream: 6 passed, 0 failed" \
	"a|bytes=8192 packets=1024 links=2" "a|gaps=0 lost=0" "a|corrupt=0 missing=0" \
	"a|~LINKS stream server rx nic0=[1-9][0-9]* share_x1000=[0-9]+ nic1=[1-9]" \
	"b|~LINKS stream client tx nic0=[1-9][0-9]* share_x1000=[0-9]+ nic1=[1-9]" \
	"a|KERNEL_EXIT status=0" "b|KERNEL_EXIT status=0"
cluster_crossed "$out"
cluster_verdict stripe_pair_hosts "$out" "$t0" 'FAIL|stream:' 5 || failed=1
fi
[ "$failed" -eq 0 ]
