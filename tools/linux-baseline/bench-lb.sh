#!/usr/bin/env bash
# bench-lb.sh [--runs N] [--policies balance-rr,balance-tlb] [--scale F] [--mbps R] OUT.json
#
# Linux beside the kernel's load-balancing benchmark (issue 13; the paper's
# section 4.2, Table 2): a sender guest with bond0 over two e1000 NICs, each
# shaped by tbf to R Mbit/s (default 100/F), and a receiver guest, all
# three NICs on one bridge (the cluster runner's; the paper's switch).  On
# the sender, lbbench runs processes A, B, C (volumes divided by F, timing
# kept: starts 0, 4, 8 s; A and B stop at 40 s, C always completes) at nice
# 0, 0, -10 (the paper's priorities 120, 120, 110), each over its own TCP
# connection; the receiver verifies every byte.  One boot pair per run, so
# runs are independent (bonding's tlb keeps load history across its 10 s
# periods).  Writes OUT.json ({"bench":"lb","env":{...},"rows":[...]}, one
# row per run, fields in collect-lb.py) and keeps each run's consoles in
# $LB_BUILD/raw/lb/POLICY-RUN/.
#   policies  balance-rr   per-packet round robin over the slaves
#             balance-tlb  each flow bound to the least loaded slave by the
#                          bond's own 10 s load history; xmit_hash_policy
#                          layer3+4 so that each process's connection is
#                          its own tlb entry (the default layer2 hashes by
#                          MAC: one receiver would be one entry).  Before
#                          t0, one 64 KiB warm-up connection per process's
#                          source port and --tlb-warm S s (11: past one
#                          rebalance) give the three entries an equal load
#                          history, as a bond that served these receivers
#                          before (the paper's 100 runs in a row) has;
#                          --tlb-warm 0: fresh entries (no history)
# Options: --runs N (per policy, default 20), --scale F (10), --mbps R
# (100/F), --ab-stop-s S (40), --tlb-warm S (11), --quick (--runs 1, both policies: the
# self-check), --check (exit 1 unless every run completed intact with both
# NICs used: collect-lb.py --check).  Tunables (env): LB_BUILD, LB_PREBUILT=1 (as bench.sh),
# LB_RAW (where the runs go, emptied first).  A run takes about 70 s
# (two boots, 40 s of scenario, power-off; balance-tlb: the warm-up's 11 s
# more); a run whose guests fail (not
# a slow C: that is a result) is tried once more, then kept as an error row.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

RUNS=20 POLICIES=balance-rr,balance-tlb SCALE=10 MBPS= AB_STOP=40 TLB_WARM=11 OUT= CHECK=
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2; shift ;;
	--policies) POLICIES=$2; shift ;;
	--scale) SCALE=$2; shift ;;
	--mbps) MBPS=$2; shift ;;
	--ab-stop-s) AB_STOP=$2; shift ;;
	--tlb-warm) TLB_WARM=$2; shift ;;
	--quick) RUNS=1 ;;
	--check) CHECK=--check ;;
	-*) lb_usage ;;
	*) lb_out_arg "$1" ;;
	esac
	shift
done
lb_args_done
case "$SCALE" in '' | *[!0-9]* | 0) lb_die "--scale $SCALE: a positive whole number" ;; esac
case "$AB_STOP" in '' | *[!0-9]* | 0) lb_die "--ab-stop-s $AB_STOP: a positive whole number" ;; esac
case "$TLB_WARM" in '' | *[!0-9]*) lb_die "--tlb-warm $TLB_WARM: seconds, 0 to 60" ;; esac
[ "$TLB_WARM" -le 60 ] || lb_die "--tlb-warm $TLB_WARM: seconds, 0 to 60"
[ -n "$MBPS" ] || MBPS=$(awk -v f="$SCALE" 'BEGIN { print 100 / f }')
awk -v r="$MBPS" 'BEGIN { exit !(r > 0 && r <= 1000) }' || lb_die "--mbps $MBPS: 0 < R <= 1000"
for p in $(echo "$POLICIES" | tr , ' '); do
	case "$p" in balance-rr | balance-tlb) ;; *) lb_die "unknown policy $p (balance-rr, balance-tlb)" ;; esac
done
[ "$(id -u)" -eq 0 ] || lb_die "the cluster runner needs root (network namespace, bridge, taps)"

GUEST=${LB_BUILD:-$ROOT/build/linux-baseline}
lb_progress_start linux-lb

lb_bench_guest qemu-system-x86 python3 iproute2
GUEST=$(cd "$GUEST" && pwd)
RAW=${LB_RAW:-$GUEST/raw/lb}
lb_fresh_raw "$RAW" "$OUT"

# The runner in the background, so that a signal reaches this script at
# once; the runner tears its VMs, taps and namespace down on SIGTERM.
RUNNER_PID=
cleanup() { lb_stop "$RUNNER_PID"; }
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# topology POLICY: the two guests on one bridge (receiver node 0, 10.0.0.1;
# sender node 1, 10.0.0.2).  The runner's timeout bounds the run: two
# boots (~15 s), C's cap (lbbench --max-s 100) and the tail.
topology() {
	local bond opt
	opt="scale:$SCALE,ab-stop-s:$AB_STOP,max-s:100"
	case "$1" in
	balance-rr) bond="pkt.bond=rr" ;;
	balance-tlb)
		bond="pkt.bond=tlb pkt.bondopt=xmit_hash_policy:layer3+4"
		opt="$opt,warm-s:$TLB_WARM"
		;;
	esac
	cat <<EOF
{"name": "lb-$1", "timeout": 200,
 "networks": [{"name": "net0"}],
 "nodes": [
  {"name": "r", "kernel": "$GUEST/vmlinuz", "initrd": "$GUEST/initrd.gz",
   "append": "quiet pkt.role=server pkt.mode=lb pkt.node=@NODE@ pkt.peernode=1",
   "nics": [{"net": "net0"}]},
  {"name": "s", "kernel": "$GUEST/vmlinuz", "initrd": "$GUEST/initrd.gz",
   "append": "quiet pkt.role=client pkt.mode=lb pkt.node=@NODE@ pkt.peernode=0 pkt.nics=@NICS@ pkt.mbps=@MBPS@ $bond pkt.lbopt=$opt",
   "nics": [{"net": "net0", "mbps": $MBPS}, {"net": "net0", "mbps": $MBPS}]}
 ]}
EOF
}

n=0
total=$((RUNS * $(echo "$POLICIES" | tr , '\n' | grep -c .)))
dirs=()
for run in $(seq 0 $((RUNS - 1))); do
	for pol in $(echo "$POLICIES" | tr , ' '); do
		n=$((n + 1))
		dir="$RAW/$pol-$run"
		for try in 1 2; do
			progress "$n/$total: $pol, run $run (try $try)"
			rm -rf "$dir"
			mkdir -p "$RAW/topo"
			topology "$pol" >"$RAW/topo/$pol.json"
			rc=0
			"$ROOT/tools/cluster/run" "$RAW/topo/$pol.json" --out "$dir" >"$RAW/topo/runner.log" 2>&1 &
			RUNNER_PID=$!
			wait "$RUNNER_PID" || rc=$?
			RUNNER_PID=
			mkdir -p "$dir"
			cp "$RAW/topo/runner.log" "$dir/runner.log"
			printf '{"policy": "%s", "run": %d, "scale": %s, "link_mbps": %s, "try": %d, "runner_rc": %d}\n' \
				"$pol" "$run" "$SCALE" "$MBPS" "$try" "$rc" >"$dir/run.json"
			[ $rc = 0 ] && break
			progress "run failed (runner status $rc): $(grep -h 'DONE fail' "$dir"/*.log 2>/dev/null | head -n 1)"
		done
		dirs+=("$dir")
	done
done

# shellcheck disable=SC1091
. "$GUEST/guest.env"
CPU=$(sed -n 's/^model name[[:space:]]*: //p;T;q' /proc/cpuinfo)
python3 "$HERE/collect-lb.py" --out "$OUT" $CHECK \
	--env accel=tcg --env clock=real --env "qemu=$(lb_qemu_version)" --env nic=e1000 \
	--env "backend=tap on one Linux bridge (tools/cluster/run): sender's two NICs and the receiver's one" \
	--env "cpu=$CPU" --env "runs=$RUNS" --env "scale=$SCALE" --env "link_mbps=$MBPS" --env mtu=9000 \
	--env "pacing=tbf on each sender NIC (burst 4 ms of the rate + two jumbo frames, as the kernel pacer; limit 4 MiB); receiver unpaced" \
	--env "scenario=A $((1000000 / SCALE)) x 1 KiB from 0 s, B 50 x ($((10000 / SCALE)) x 1 KiB then sleep 1 s) from 4 s, C $((200000 / SCALE)) x 1 KiB from 8 s; A and B stop at ${AB_STOP} s, C completes" \
	--env "priorities=nice 0, 0, -10 (the paper's 120, 120, 110); one TCP connection per process, source ports 40000, 40004, 40008" \
	--env "bonding=bonding.ko, miimon 100 ms; balance-tlb with xmit_hash_policy layer3+4 (per connection), its 10 s rebalance interval (fixed in the driver)" \
	--env "tlb_warm_s=$TLB_WARM" \
	--env "host_setting=${BENCH_HOST_SETTING:-host defaults}" \
	--env "guest=Linux $KERNEL_RELEASE ($KERNEL_PKG $KERNEL_VER), busybox initramfs, 256 MiB, one vCPU, -cpu max" \
	"${dirs[@]}"
progress "wrote $OUT"
