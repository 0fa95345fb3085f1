#!/usr/bin/env bash
# selftest-failover.sh [BUILD_DIR]: one short link-failure run
# (run-failover.py): two guests, two links paced at 100 Mbit/s, one MPTCP
# connection with a subflow on each link, verified for 14 s; the sender's
# NIC 0 loses its link 4 s in (a visible cut) and gets it back 6 s later.
# Passes when every byte the sender wrote arrived (lost = 0, the connection
# ended normally), none differs from the pattern (corrupt = 0), the
# sender's driver reported the link down (the cut happened), the flow kept
# going during the cut (data from 1 s after the cut to the restore) and
# both links carried data.  MPTCP, because the bonds cannot pass this
# reliably with a cut that one end sees: active-backup stalls until the
# restore, balance-rr with miimon can sit out the cut in TCP's backed-off
# retransmission timer, and ARP monitoring sometimes drops the remaining
# link too (README.md, Link failure).  About 45 s (one boot pair).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

GUEST=${1:-$ROOT/build/linux-baseline}
LOGS="$GUEST/logs/selftest-failover"
START=$(date +%s)
lb_need_pkgs qemu-system-x86 python3
lb_guest_ready "$GUEST" "$HERE"
rm -rf "$LOGS"
mkdir -p "$LOGS"

why=
if ! "$HERE/run-failover.py" --system mptcp --cut visible --links 2 --mbps 100 \
	--cut-at 4 --down 6 --tail 4 --timeout 120 --guest "$GUEST" --logdir "$LOGS/run"; then
	why="the run failed"
elif ! python3 "$HERE/collect-failover.py" --out "$LOGS/failover.json" "$LOGS/run"; then
	why="no row from the run"
else
	why=$(python3 - "$LOGS/failover.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
bad = []
if r["end"] != "ok" or r["lost"] != 0:
    bad.append("end=%s lost=%d (written %d, received %d)" % (r["end"], r["lost"], r["written"], r["received"]))
if r["corrupt"] != 0:
    bad.append("corrupt=%d" % r["corrupt"])
if r["carrier_down_ms"] is None:
    bad.append("the sender's e1000 never reported link 0 down")
if not r["mbps_during"]:
    bad.append("nothing delivered during the cut")
if len(r["nic_rx"]) != 2 or min(r["nic_rx"]) < 1000000:
    bad.append("a link carried less than 1 MB: nic_rx=%s" % r["nic_rx"])
print("; ".join(bad))
EOF
)
fi
if [ -z "$why" ]; then
	python3 - "$LOGS/failover.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
print("PASS failover mptcp visible: carrier_down_ms=%s recover_ms=%s mbps before/during/after=%s/%s/%s "
      "max_gap_ms=%s lost=%d corrupt=%d received=%d" % (r["carrier_down_ms"], r["recover_ms"], r["mbps_before"],
      r["mbps_during"], r["mbps_after"], r["max_gap_ms"], r["lost"], r["corrupt"], r["received"]))
EOF
else
	echo "FAIL failover mptcp visible: $why (logs: $LOGS)"
fi
lb_log "selftest-failover $([ -z "$why" ] && echo passed || echo FAILED) in $(($(date +%s) - START))s"
[ -z "$why" ]
