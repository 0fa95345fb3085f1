#!/usr/bin/env bash
# selftest-bond.sh [BUILD_DIR]: two Linux baseline guests joined by two
# links (run-links.sh), each NIC paced at 25 Mbit/s with tbf:
#   rr      bond0 in balance-rr: a TCP stream (every byte verified by the
#           receiver) and a raw AF_PACKET burst over the bond; both links
#           must have carried at least a fifth of the stream's bytes;
#   ab-cut  bond0 in active-backup (miimon 100 ms): link 0 is cut on both
#           guests (QMP set_link off) one second into a TCP stream; the
#           stream must still complete, bytes verified, with both links
#           having carried part of it (the failover happened mid-stream).
# Fails (exit 1) on any verification error, lost packet or timeout; about
# a minute (two boot pairs).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

GUEST=${1:-$ROOT/build/linux-baseline}
LOGS="$GUEST/logs/selftest-bond"
START=$(date +%s)
lb_guest_ready "$GUEST" "$HERE"
rm -rf "$LOGS"
mkdir -p "$LOGS"

# shares FILE MIN: each link's share of the server's received stream bytes
# (SRVSTAT nic_rx) is at least MIN (every stream line); prints the shares.
shares() {
	awk -v min="$2" '
	/^SRVSTAT stream/ {
		for (i = 3; i <= NF; i++) if ($i ~ /^nic_rx=/) { split(substr($i, 8), v, ","); }
		t = 0; for (k in v) t += v[k]
		line = ""
		for (k = 1; k in v; k++) { s = t ? v[k] / t : 0; line = line sprintf("%.2f ", s); if (s < min) bad = 1 }
		out = out "[" line "] "; n++
	}
	END { printf "link shares %s", out; exit (n == 0 || bad) }' "$1"
}

failed=0
# check NAME MIN-SHARE ARGS...: one boot pair; prints a one-line verdict.
check() {
	local name=$1 min=$2 out why=
	shift 2
	out="$LOGS/$name.txt"
	if ! "$HERE/run-links.sh" --no-build --guest "$GUEST" --timeout 120 --links 2 --mbps 25 \
		--logdir "$LOGS/$name" "$@" >"$out"; then
		why="run failed"
	elif ! shares "$out" "$min" >"$out.shares"; then
		why="a link carried less than $min of the stream: $(cat "$out.shares")"
	fi
	if [ -z "$why" ]; then
		printf 'PASS %-7s %s| %s\n' "$name" "$(awk '/^RESULT/ { for (i = 2; i <= NF; i++)
			if ($i ~ /^(stream|burst|bytes|mbps|verified)=?/) printf "%s ", $i; printf "| " }' "$out")" \
			"$(cat "$out.shares")"
	else
		printf 'FAIL %-7s %s (logs: %s)\n' "$name" "$why" "$LOGS/$name"
		failed=1
	fi
}

check rr 0.2 --bond rr --mode stream,burst --sizes 8192 --runs 1 --warmup 1 --bytes 4000000
# TCP's retransmission timer backs off while the bonds fail over (the
# stream stalls for a few seconds): a 20 s read timeout instead of 5.
check ab-cut 0.1 --bond ab --mode stream --sizes 8192 --runs 1 --warmup 0 --bytes 8000000 --cut 1 \
	--append pkt.timeout=20000
lb_log "selftest-bond $([ $failed = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - START))s"
exit $failed
