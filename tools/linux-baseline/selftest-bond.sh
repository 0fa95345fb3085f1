#!/usr/bin/env bash
# selftest-bond.sh [BUILD_DIR]: two Linux baseline guests joined by two
# links (run-links.sh), each NIC paced at 25 Mbit/s with tbf, one boot pair
# in two phases (run-links.sh --then):
#   rr      bond0 in balance-rr: a TCP stream (every byte verified by the
#           receiver) and a raw AF_PACKET burst over the bond; both links
#           must have carried at least a fifth of the stream's bytes;
#   ab-cut  bond0 made again in active-backup (miimon 100 ms): link 0 is
#           cut on both guests (QMP set_link off) one second into a TCP
#           stream; the stream must still complete, bytes verified, with
#           both links having carried part of it (the failover happened
#           mid-stream).
# Fails (exit 1) on any verification error, lost packet or timeout; about
# 55 s.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

lb_selftest_guest selftest-bond "${1:-}"
rm -rf "$LOGS"
mkdir -p "$LOGS"

# phase N FILE: the lines of FILE (a guest's log) in phase N, the second
# being those after its "PHASE 2" line.
phase() { awk -v n="$1" '/^PHASE 2 / { p = 2; next } (p ? p : 1) == n' "$2"; }

# shares MIN: each link's share of the server's received stream bytes
# (SRVSTAT nic_rx on stdin) is at least MIN (every stream line); prints the
# shares.
shares() {
	awk -v min="$1" '
	/^SRVSTAT stream/ {
		for (i = 3; i <= NF; i++) if ($i ~ /^nic_rx=/) { split(substr($i, 8), v, ","); }
		t = 0; for (k in v) t += v[k]
		line = ""
		for (k = 1; k in v; k++) { s = t ? v[k] / t : 0; line = line sprintf("%.2f ", s); if (s < min) bad = 1 }
		out = out "[" line "] "; n++
	}
	END { printf "link shares %s", out; exit (n == 0 || bad) }'
}

DIR="$LOGS/pair" pair_rc=0
# TCP's retransmission timer backs off while the bonds fail over (the
# stream stalls for a few seconds): in active-backup a 20 s read timeout
# instead of 5. The cut comes a second into a stream of five seconds
# at the paced rate (16 MB at 25 Mbit/s): on a loaded host, starting the
# QMP clients once took long enough that an 8 MB stream had ended first.
"$HERE/run-links.sh" --no-build --guest "$GUEST" --timeout 200 --links 2 --mbps 25 --logdir "$DIR" \
	--bond rr --mode stream,burst --sizes 8192 --runs 1 --warmup 1 --bytes 4000000 \
	--then bond:ab,mode:stream,warmup:0,bytes:16000000,timeout:20000 --cut 1 >"$LOGS/pair.txt" || pair_rc=$?

failed=0
# check NAME PHASE MIN-SHARE: one phase of the pair; prints a one-line verdict.
check() {
	local name=$1 out="$LOGS/$1.shares" why=
	if [ "$pair_rc" != 0 ]; then
		why="run failed"
	elif ! phase "$2" "$DIR/server.txt" | shares "$3" >"$out"; then
		why="a link carried less than $3 of the stream: $(cat "$out")"
	fi
	if [ -z "$why" ]; then
		printf 'PASS %-7s %s| %s\n' "$name" "$(phase "$2" "$DIR/client.txt" | awk '/^RESULT/ {
			for (i = 2; i <= NF; i++) if ($i ~ /^(stream|burst|bytes|mbps|verified)=?/) printf "%s ", $i
			printf "| " }')" "$(cat "$out")"
	else
		printf 'FAIL %-7s %s (logs: %s)\n' "$name" "$why" "$DIR"
		failed=1
	fi
}

check rr 1 0.2
check ab-cut 2 0.1
lb_log "selftest-bond $([ $failed = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - START))s"
exit $failed
