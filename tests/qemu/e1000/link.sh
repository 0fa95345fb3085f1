#!/usr/bin/env bash
# Link changes: the self-test waits for a link-down and a link-up interrupt
# (LSC) while this script cuts and restores NIC 0's link with `set_link`
# in QEMU's monitor (on a unix socket).
# Usage: tests/qemu/e1000/link.sh KERNEL [MODEL]. Prints one TEST line.
kernel=$1
model=${2:-e1000}
source "$(dirname "$0")/lib.sh"
name=e1000_link
[ "$model" = e1000 ] || name=e1000_link_${model#e1000-}
log=$logs/$name.log
mon=$tmp/monitor
rm -f "$log"

# Sends one monitor command (HMP) and waits for its echo.
monitor() {
	python3 - "$mon" "$1" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(5)
s.sendall((sys.argv[2] + "\n").encode())
time.sleep(0.3)
s.close()
PY
}

# Waits (bounded) until the log holds $1.
wait_for() {
	for _ in $(seq 1 300); do
		grep -qF -- "$1" "$log" 2>/dev/null && return 0
		kill -0 "$qpid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

start=$(date +%s)
# shellcheck disable=SC2046
SERIAL=$log "$root/tools/qemu-run.sh" "$kernel" "run=hello e1000test=link" 90 \
	$(two_nics "$model") -monitor "unix:$mon,server,nowait" >/dev/null 2>"$log.err" &
qpid=$!
steps=()
wait_for "e1000test: waiting for link down" && monitor "set_link a off" && steps+=(off)
wait_for "e1000test: waiting for link up" && monitor "set_link a on" && steps+=(on)
wait "$qpid"
got=$?
why=$(check_log "$log" 0 "$got" "e1000 0: link down" "e1000 0: link up" \
	"TEST e1000_link_down_irq ... ok" "TEST e1000_link_up_irq ... ok")
[ "${steps[*]}" = "off on" ] || why+=$'\n'"monitor steps done: '${steps[*]}'"
why=$(sed '/^$/d' <<<"$why")
verdict "$name" "$why" "$log" $(($(date +%s) - start))
