#!/usr/bin/env bash
# make run: two VMs of this kernel joined NIC to NIC by an emulated wire
# (QEMU's dgram backend over unix sockets, tools/net-pair.sh) run
# user/netdemo.c, one as server and one as client. Both consoles come out
# here as they print, each line led by its node's name; then the runner
# checks that both kernels exited 0 with every page frame back.
# Usage: tools/run-demo.sh KERNEL [TIMEOUT_S]   (TIMEOUT_S bounds each VM; default 60)
# Environment: SIZES (payload sizes, default 16,64,1500,4096,8192), RTTS and
# BURSTS (measurements per size, default 5 and 3), LOGDIR (default: demo/
# next to KERNEL), COLOR=0|1 (default: 1 on a terminal).
# Exit: 0 when both kernels exited 0, the frames balance and every packet
# arrived intact; 1 otherwise; 130/143 when interrupted.
set -uo pipefail
kernel=${1:?usage: tools/run-demo.sh KERNEL [TIMEOUT_S]}
tmo=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
logdir=${LOGDIR:-$(dirname "$kernel")/demo}
args="sizes=${SIZES:-16,64,1500,4096,8192} rtts=${RTTS:-5} bursts=${BURSTS:-3}"
[ -r "$kernel" ] || { echo "demo: no kernel at $kernel (make first)" >&2; exit 1; }
mkdir -p "$logdir"
rm -f "$logdir"/server.log "$logdir"/client.log "$logdir"/*.err "$logdir"/pair.out

color=${COLOR:-}
[ -z "$color" ] && { [ -t 1 ] && color=1 || color=0; }
if [ "$color" = 1 ]; then
	cs=$'\e[36m' cc=$'\e[33m' cb=$'\e[1m' cr=$'\e[31;1m' c0=$'\e[0m'
else
	cs= cc= cb= cr= c0=
fi
say() { printf '%sdemo: %s%s\n' "$cb" "$*" "$c0"; }

# The pair runs in its own process group (net-pair.sh, qemu-run.sh, timeout,
# QEMU): on any exit, interrupted too, the whole group goes. net-pair.sh
# then removes its socket directory itself.
pair=
cleanup() {
	if [ -n "$pair" ] && kill -0 "$pair" 2>/dev/null; then
		kill -TERM -- -"$pair" 2>/dev/null
		for ((i = 0; i < 50; i++)); do kill -0 "$pair" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- -"$pair" 2>/dev/null
	fi
}
trap cleanup EXIT
trap 'echo; say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

say "two VMs joined by an emulated wire (e1000 <-> e1000, QEMU dgram over unix sockets)"
say "server: run=netdemo role=server; client: run=netdemo role=client $args"
t0=$(date +%s%N)
setsid "$here/net-pair.sh" "$kernel" "run=netdemo role=server peer=@CMAC0@" \
	"run=netdemo role=client peer=@SMAC0@ $args" "$logdir" "$tmo" >"$logdir/pair.out" 2>&1 &
pair=$!

# Each console, line by line as QEMU writes it, until net-pair.sh is gone
# (tail reads once more after that: nothing is lost).
follow() { # file prefix
	tail -n +1 -s 0.1 -F --pid="$pair" "$1" 2>/dev/null | sed -u "s/\r\$//; s/^/$2/"
}
follow "$logdir/server.log" "${cs}server |${c0} " &
fs=$!
follow "$logdir/client.log" "${cc}client |${c0} " &
fc=$!
wait "$pair"
rc=$?
pair=
wait "$fs" "$fc"
secs=$((($(date +%s%N) - t0) / 1000000))
secs=$((secs / 1000)).$(printf '%03d' $((secs % 1000)) | cut -c1)

# The verdict, from the consoles.
why=()
[ $rc -eq 0 ] || why+=("$(tail -1 "$logdir/pair.out" 2>/dev/null)")
for node in server client; do
	log=$logdir/$node.log
	f=$(grep -a -o 'frames: boot=[0-9]* exit=[0-9]*.*' "$log" 2>/dev/null | tr -d '\r' | tail -1)
	if [[ $f =~ boot=([0-9]+)\ exit=([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]; then
		say "$node: frames free at boot ${BASH_REMATCH[1]}, at exit ${BASH_REMATCH[2]}: all back"
	else
		why+=("$node: ${f:-no frame count at exit (did the kernel finish?)}")
	fi
	grep -aq 'KERNEL_EXIT status=0' "$log" 2>/dev/null || why+=("$node: kernel status not 0")
	[ $rc -ne 0 ] && [ -s "$logdir/$node.err" ] && why+=("$node: $(tail -1 "$logdir/$node.err")")
done
grep -aq 'netdemo: all packets intact' "$logdir/client.log" 2>/dev/null ||
	why+=("client: not every packet arrived intact")
if [ ${#why[@]} -eq 0 ]; then
	say "ok in ${secs} s (both kernels exited 0; consoles in $logdir)"
	exit 0
fi
printf '%sdemo: FAILED after %s s%s\n' "$cr" "$secs" "$c0"
printf '  %s\n' "${why[@]}" "consoles: $logdir/server.log, $logdir/client.log"
exit 1
