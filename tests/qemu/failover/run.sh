#!/usr/bin/env bash
# make test-failover: reliable striped channels through link failures, on
# the cluster runner's bridges (tools/cluster/topologies/failover-*.json).
# 1. Two nodes, two links paced to 50 Mbit/s: a verified stream through a
#    visible cut of the client's link 1 (QMP set_link), restored, then a
#    silent cut of it (its tap down on the host), restored. Every packet
#    arrives once, in order, intact (the server checks each byte); the link
#    is declared dead each time (by the link-down on the client, by
#    silence on the server; by skew or a probe unanswered for the silent
#    cut) and alive again after each restore.
# 2. Three nodes, a and b with two links, c with one (net1): a silent cut
#    between a and b only, on net1, for 3 s. a's link 1 is dead towards b
#    for seconds (down_ms) and stays up towards c, whose only link stays up
#    too (a busy host may stall a VM long enough for a death of a few ms:
#    counted, but never seconds long): per-peer state, from the counters.
# 3. Two nodes, a peer that leaves: the server stops reading after 1024
#    packets and closes its channel (a goodbye) while the client has a
#    window's worth unacknowledged and more to send. The client's output_io
#    returns -E_LINK within 20 s (on 895c30f it waited for ever: the run
#    timed out), then its input_io -E_LINK once; the packets it had sent
#    are acknowledged or let go.
# 1 runs across two hosts joined by VXLAN (namespaces playing hosts).
# Each kernel exits 0 only with its frames and resources back to their
# boot counts. About 55 s.
# Usage: tests/qemu/failover/run.sh KERNEL   (ONLY=REGEX runs the cases
# whose topology name matches)
kernel=$1
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
failed=0

# name: the topology's; then checks (cluster_need in ../lib.sh). With
# HOSTS=FILE (a host list) the run goes across those hosts, its logs in
# NAME-hosts, and must have crossed them (cluster_crossed).
check() {
	local name=$1 out=$logs/$1 t0 why=() across=()
	shift
	[[ -z "${ONLY:-}" || "$name" =~ $ONLY ]] || return 0
	[ -n "${HOSTS:-}" ] && out=$logs/$name-hosts across=(--hosts "$HOSTS")
	t0=$(date +%s)
	cluster_run "$out" 120 "$root/tools/cluster/topologies/$name.json" --kernel "$kernel" "${across[@]}"
	cluster_need "$out" "$@"
	cluster_events_fired "$out" # every cut and restore
	[ -n "${HOSTS:-}" ] && cluster_crossed "$out"
	cluster_verdict "$(basename "$out")" "$out" "$t0" 'FAIL|io: chan' 8 || failed=$((failed + 1))
}

# 1 runs across two hosts: a on one, b on the other (two namespaces joined
# by a veth pair, tools/cluster/hosts/netns-pair.json), each link a VXLAN
# between them; the cuts act on b's host. The same run on one host checked
# the same and took as long: make test runs it once, across hosts
# (FAILOVER_ONE_HOST=1 adds the one-host run). About 20 s.
two=(
	"a|SUITE stream: 7 passed, 0 failed" "b|SUITE stream: 6 passed, 0 failed"
	"a|packets=19200 links=2" "a|gaps=0 lost=0"
	"b|peer 0 link 1 dead (link down)"
	"b|~peer 0 link 1 (suspected|dead \((silent|probe))"
	"a|~peer 0 link 1 dead \(silent"
	"b|~LINK stream client peer=0 link=1 state=up .* dead=([2-9]|[1-9][0-9]+) recovered=([2-9]|[1-9][0-9]+) "
	"a|~LINK stream server peer=0 link=1 state=up .* dead=([2-9]|[1-9][0-9]+) recovered=([2-9]|[1-9][0-9]+) "
	"a|KERNEL_EXIT status=0" "b|KERNEL_EXIT status=0"
)
[ -n "${FAILOVER_ONE_HOST:-}" ] && check failover-2 "${two[@]}"
HOSTS=$root/tools/cluster/hosts/netns-pair.json check failover-2 "${two[@]}"

check failover-3 \
	"a|SUITE stream: 8 passed, 0 failed" "b|SUITE stream: 6 passed, 0 failed" \
	"c|SUITE stream: 6 passed, 0 failed" "a|gaps=0 lost=0" "a|clients=2" \
	"a|~LINK stream server peer=0 link=1 state=up .* max_down_ms=[1-9][0-9]{3,} " \
	"b|~LINK stream client peer=0 link=1 state=up .* max_down_ms=[1-9][0-9]{3,} " \
	"a|~LINK stream server peer=1 link=1 state=up .* max_down_ms=[0-9]{1,3} " \
	"c|~LINK stream client peer=0 link=0 state=up .* max_down_ms=[0-9]{1,3} " \
	"a|KERNEL_EXIT status=0" "b|KERNEL_EXIT status=0" "c|KERNEL_EXIT status=0"

check failover-bye \
	"a|SUITE stream: 7 passed, 0 failed" "a|BYE stream server after=1024" \
	"b|~BYE stream client send=E_LINK after_ms=[0-9]+ sent=[0-9]+ input=E_LINK byes=1 bye_links=2 " \
	"b|SUITE stream: 10 passed, 0 failed" \
	"a|KERNEL_EXIT status=0" "b|KERNEL_EXIT status=0"

[ "$failed" -eq 0 ]
