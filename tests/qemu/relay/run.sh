#!/usr/bin/env bash
# make test-relay: the kernel's relay on the cluster runner's bridges
# (tools/cluster/topologies/relay-line3.json): a -- b -- c in a line, a at
# 0.0 on net0, b at 1.0 on both, c at 1.1 on net1. a probes b (one packet
# with hop limit 1 for c, which needs a relay: dropped at b; raw routed
# frames with no route, outside the dimensions and with hop limit 0:
# dropped; a well-formed routed frame for c sent to broadcast: dropped as
# not addressed to b, never forwarded), then streams 1024 verified 8192-byte packets to node 1.1; c
# checks every one (order, count, every byte) and acknowledges to node 0.0.
# b forwards both directions from its receive buffers and checks its
# counters: at least 600 frames forwarded, 0 bytes copied, each drop as
# probed, nothing dropped for a full or dead NIC, every buffer back from the
# NICs, and (b runs under -icount shift=0) at least 800 busy guest
# instructions per forwarded frame: the relaying, done in the interrupt that
# ends a halt, is busy time. Each kernel exits 0 only with its frames and
# resources back to their boot counts. About 5 s of VMs (10 s with start-up).
#
# Then relay_pressure, one VM (about 2 s): its two e1000 NICs wired to each
# other, node 1.0 with 0.0 on X reached by NIC 1's MAC, so a frame for 0.1
# with hop limit 2 is relayed once and comes back hop-limited. A channel
# that is never read holds 128 jumbo frames, two processes (each within its
# default limit) take every free frame, and 32 routed frames must each be
# dropped as drop_nomem, not panic the kernel (issue 24, defect 1); then,
# the frames given back, 32 more are each relayed once, and every frame is
# back at exit (user/relay.c, pressure mode).
#
# Then relay_reliable (tests/qemu/relay/relay-rel.json, about 10 s): the
# same line with two links on each hop, a at 0.0 on x0 and x1, b at 1.0 on
# all four, c at 1.1 on y0 and y1. a streams 1024 verified packets to node
# 1.1 on a striped channel, reliable by default: reliable over striped over
# routed. c checks every packet (order, count, bytes); the RELIABLE lines
# show the acknowledgements that crossed b; b forwards on both links of
# each hop, copies nothing and gets every buffer back.
# Usage: tests/qemu/relay/run.sh KERNEL   (ONLY=REGEX runs the cases whose name matches)
kernel=$1
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
failed=0

pressure_case() {
	local name=relay_pressure log=$logs/relay_pressure.log start got why
	start=$(date +%s)
	rm -f "$log"
	# shellcheck disable=SC2046 # two_nics prints QEMU arguments, one a word
	QEMU_MEM=128M SERIAL=$log "$root/tools/qemu-run.sh" "$kernel" \
		"run=relay pressure=1 count=32 dst=0.1 node=1.0 nicdim=0,1 nb=0.0/52:54:00:12:34:57,1.1/02:cc:00:00:00:01" \
		60 $(two_nics e1000) >/dev/null 2>"$log.err"
	got=$?
	why=$(check_log "$log" 0 "$got" "SUITE relay pressure: 19 passed, 0 failed" "SUITE relay hog: 2 passed, 0 failed" \
		"RELAY pressure relayed=32 drop_nomem=32 drop_hops=32 drop_busy=0 inflight=0")
	verdict "$name" "$why" "$log" $(($(date +%s) - start))
}
want() { [[ -z "${ONLY:-}" || "$1" =~ $ONLY ]]; }
if want relay_pressure; then
	pressure_case || failed=1
fi
reliable_case() {
	local out=$logs/relay-rel t0
	why=()
	t0=$(date +%s)
	cluster_run "$out" 90 "$root/tests/qemu/relay/relay-rel.json" --kernel "$kernel"
	cluster_need "$out" \
		"b|relay: node 1.0.0, 2 dimension(s), 2 neighbour(s)" \
		"b| copied=0 " \
		"b|SUITE relay: 11 passed, 0 failed" \
		"a|SUITE stream: 6 passed, 0 failed" \
		"c|SUITE stream: 7 passed, 0 failed" \
		"c|corrupt=0 missing=0" \
		"a|~^RELIABLE stream client acked=1024 " \
		"c|~^RELIABLE stream server " \
		"b|~^RELAY .* link_tx=[1-9][0-9]*,[1-9][0-9]*,[1-9][0-9]*,[1-9][0-9]* " \
		"a|KERNEL_EXIT status=0" "b|KERNEL_EXIT status=0" "c|KERNEL_EXIT status=0"
	if cluster_verdict relay_reliable "$out" "$t0" 'FAIL|stream:|^RELAY|^RELIABLE|relay:' 8; then
		grep -a -h -E '^RELAY' "$out/b.log" | sed 's/^/    | /'
	else
		return 1
	fi
}
if want relay_reliable; then
	reliable_case || failed=1
fi
want relay_line3 || exit $failed

out=$logs/relay-line3
why=()
t0=$(date +%s)
cluster_run "$out" 90 "$root/tools/cluster/topologies/relay-line3.json" --kernel "$kernel"
cluster_need "$out" \
	"b|relay: node 1.0.0, 2 dimension(s), 2 neighbour(s)" \
	"b| copied=0 " \
	"b| drop_hops=1 drop_noroute=1 drop_baddst=2 drop_busy=0 drop_down=0 drop_notme=1 " \
	"b|SUITE relay: 12 passed, 0 failed" \
	"a|SUITE relay probe: 7 passed, 0 failed" \
	"a|SUITE stream: 6 passed, 0 failed" \
	"c|SUITE stream: 7 passed, 0 failed" \
	"c|corrupt=0 missing=0" \
	"a|KERNEL_EXIT status=0" "b|KERNEL_EXIT status=0" "c|KERNEL_EXIT status=0"
if cluster_verdict relay_line3 "$out" "$t0" 'FAIL|stream:|^RELAY|relay:' 8; then
	grep -a -h -E '^RELAY' "$out/b.log" | sed 's/^/    | /'
else
	failed=1
fi
exit $failed
