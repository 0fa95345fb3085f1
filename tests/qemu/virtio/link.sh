#!/usr/bin/env bash
# Link changes: the self-test waits for a link-down and a link-up
# configuration interrupt while this script cuts and restores NIC 0's
# link with `set_link` in QEMU's monitor (on a unix socket).
# Usage: tests/qemu/virtio/link.sh KERNEL. Prints one TEST line.
kernel=$1
source "$(dirname "$0")/lib.sh"
name=virtio_link
log=$logs/$name.log
mon=$tmp/monitor
rm -f "$log"

# Sends one monitor command (HMP).
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
SERIAL=$log "$root/tools/qemu-run.sh" "$kernel" "run=hello virtiotest=link" 90 \
	$(virtio_pair a b 56 57 disable-legacy=on) -monitor "unix:$mon,server,nowait" \
	>/dev/null 2>"$log.err" &
qpid=$!
steps=()
wait_for "virtiotest: waiting for link down" && monitor "set_link a off" && steps+=(off)
wait_for "virtiotest: waiting for link up" && monitor "set_link a on" && steps+=(on)
wait "$qpid"
got=$?
why=$(check_log "$log" 0 "$got" "virtio-net 0: link down" "virtio-net 0: link up" \
	"TEST virtio_link_down_irq ... ok" "TEST virtio_link_up_irq ... ok")
[ "${steps[*]}" = "off on" ] || why+=$'\n'"monitor steps done: '${steps[*]}'"
verdict "$name" "$why" "$log" $(($(date +%s) - start))
