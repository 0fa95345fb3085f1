#!/usr/bin/env bash
# make test-lb: the balancing scenario (user/lbsend.c, user/lbrecv.c) in
# short, on the cluster runner: one boot pair runs tlb, then history, each
# with the paper's timing shrunk by 5 (unit_ms=200: T = 2 s, B at 0.8 s,
# C at 1.6 s, the run cut at 8 s) and the volumes scaled with it (links at
# 10 Mbit/s: A 20,000, B 50 x 200, C 4,000 sends of 1 KiB). It asserts the
# binding decisions the kernel printed, step by step (who moved where and
# why, at which period), that every receiver got every packet intact and in
# order, and that both kernels exit 0 with frames and resources back to
# their boot counts. About 30 s.
# Then issue 24's attack on one node (user/lbsend.c role=attack, its two
# NICs wired to each other): a process balancing at T = 1 ms must not
# refuse another's defaults, and the balancer's lines of its flood stay
# within their budget (kernel/klimit.c), the rest counted. About 10 s.
# Usage: tests/qemu/lb/run.sh KERNEL
set -uo pipefail
kernel=$1
source "$(dirname "$0")/../lib.sh"
out=$(dirname "$kernel")/test-logs/lb
rm -rf "$out" && mkdir -p "$out"
t0=$(date +%s)
sed -e 's/SEND_ARGS/policies=tlb,history runs=1 unit_ms=200 stop=40 gap_ms=1000/' \
	-e 's/RECV_ARGS/runs=2 unit_ms=200 timeout_s=30/' \
	"$root/tests/qemu/lb/topology.json" >"$out/topology.json"
"$root/tools/cluster/run" "$out/topology.json" --kernel "$kernel" --out "$out/run" --timeout 90 \
	>"$out/runner.log" 2>&1
rc=$? why=()
[ $rc -eq 0 ] || why+=("the runner exited $rc (a node failed or timed out)")
a=$out/run/a.log b=$out/run/b.log
need() { # file pattern (a fixed string)
	grep -aqF -- "$2" "$1" 2>/dev/null || why+=("$(basename "$1" .log): missing '$2'")
}
# The first period (both policies): A on NIC0, B on NIC1 (equal spare, fewer
# bound), C on NIC0 (equal spare, equal count: the lower number).
# The decisions of one run, in the order the kernel printed them.
decisions() { # policy
	awk -v p="policy=$1" '/^LB decide/ && index($0, p) { print }' "$a"
}
# Sender k (0: A, 1: B, 2: C) of run r is on channel 100 + 4 r + k; tlb
# is run 0, history run 1.
expect() { # policy period k move why
	local chan=$(($([ "$1" = tlb ] && echo 100 || echo 104) + $3))
	decisions "$1" | grep -aq "period=$2 .*chan=$chan .*$4 why=$5" ||
		why+=("$1: no decision of $(echo ABC | cut -c$(($3 + 1))) 'period=$2 chan=$chan $4 why=$5'")
}
for p in tlb history; do
	w=$([ $p = tlb ] && echo tlb:most-spare || echo no-nic:most-spare)
	expect $p 0 0 'nic-1->nic0' "$w"
	expect $p 0 1 'nic-1->nic1' "$w"
	expect $p 0 2 'nic-1->nic0' "$w"
done
# Every decision of both runs, replayed against a model of the rule
# written apart from the kernel (check.py), fed the state each turn printed.
if [ -s "$a" ]; then
	python3 "$root/tests/qemu/lb/check.py" "$a" >"$out/check.log" 2>&1 || why+=("$(cat "$out/check.log")")
fi
# When the first period overloaded NIC0 only (A and C on it: NIC0 at or
# above 90 %, which the 10 Mbit/s pacing gives unless the host stalls the
# guest), history moves A, the lowest priority there, to NIC1 and keeps C
# and B: C alone on NIC0 (the paper's state Z).
if grep -a '^LB turn period=1 ' "$a" | sed -n 2p | grep -q 'nic0_over=1 .*nic1_over=0'; then
	expect history 1 0 'nic0->nic1' 'overloaded+lowest:most-spare'
	expect history 1 1 'nic1->nic1' 'kept:not-on-overloaded'
	expect history 1 2 'nic0->nic0' 'kept:not-lowest'
	echo "    (history's first turn saw NIC0 overloaded: A moved, B and C kept)"
fi
# tlb at its first turn: everyone unbound and rebound, by past volume.
for k in 0 1 2; do
	expect tlb 1 $k 'nic-1->nic[01]' 'tlb:most-spare'
done
need "$a" "SUITE lbsend: "
grep -aq "SUITE lbsend: [0-9]* passed, 0 failed" "$a" || why+=("a: lbsend failed")
grep -aq "SUITE lbrecv: [0-9]* passed, 0 failed" "$b" || why+=("b: lbrecv failed")
[ "$(grep -ac 'SUITE [ABC]: [0-9]* passed, 0 failed' "$a")" = 6 ] || why+=("a: not every sender passed")
[ "$(grep -ac 'SUITE [ABC]: [0-9]* passed, 0 failed' "$b")" = 6 ] || why+=("b: not every receiver passed")
for f in "$a" "$b"; do need "$f" "KERNEL_EXIT status=0"; done
grep -aq '\.\.\. FAIL' "$a" "$b" && why+=("a TEST failed")
# The attack: the victim's defaults granted and kept (its TEST lines), the
# balancer's lines at most the budget of lb_log (64 at once, then 20 a
# second) over the whole boot, and with those counted as suppressed at
# least what the attacker's domain wanted: a start, then per decision but
# the first a turn of two lines (one sender) and the decision.
l=$out/attack.log
# shellcheck disable=SC2046
SERIAL=$l "$root/tools/qemu-run.sh" "$kernel" \
	"run=lbsend role=attack sends=4000 nics=0,1 peer=52:54:00:12:34:57,52:54:00:12:34:56 rel=0" 120 \
	$(two_nics e1000) >/dev/null 2>"$l.err"
got=$?
while IFS= read -r w; do [ -z "$w" ] || why+=("attack: $w"); done < <(check_log "$l" 0 "$got" \
	"SUITE victim: " "SUITE lbattack: ")
lines=$(grep -ac '^LB ' "$l")
up_s=$(sed -n 's/.*KERNEL_EXIT status=[0-9]* uptime_us=\([0-9]*\).*/\1/p' "$l" | tail -1)
read -r dec sup < <(sed -n 's/^LBATTACK .*decisions=\([0-9]*\) suppressed=\([0-9]*\).*/\1 \2/p' "$l")
budget=$((64 + 20 * (${up_s:-0} / 1000000 + 1)))
[ "$lines" -le "$budget" ] || why+=("attack: $lines balancer lines on the console, more than the budget $budget")
[ -n "${dec:-}" ] && [ $((lines + sup)) -ge $((3 * dec - 1)) ] ||
	why+=("attack: $lines lines printed and ${sup:-?} counted suppressed, under the 3 x ${dec:-?} - 1 wanted")
echo "    (attack: ${lines} balancer lines printed of budget ${budget}, ${sup:-?} suppressed, ${dec:-?} decisions)"
if [ ${#why[@]} -eq 0 ]; then
	echo "TEST lb ... ok ($(($(date +%s) - t0))s)"
	exit 0
fi
echo "TEST lb ... FAIL"
printf '    %s\n' "${why[@]}" "logs: $out"
grep -a -h -E 'FAIL|lbsend:|lbrecv:' "$a" "$b" "$l" 2>/dev/null | head -8 | sed 's/^/    | /'
exit 1
