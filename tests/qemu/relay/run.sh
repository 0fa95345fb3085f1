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
# Usage: tests/qemu/relay/run.sh KERNEL
kernel=$1
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
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
cluster_verdict relay_line3 "$out" "$t0" 'FAIL|stream:|^RELAY|relay:' 8 || exit 1
grep -a -h -E '^RELAY' "$out/b.log" | sed 's/^/    | /'
exit 0
