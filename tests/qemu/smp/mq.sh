#!/usr/bin/env bash
# Multiqueue virtio-net (make test-smp): one NIC of two queue pairs whose
# receive interrupts go to two CPUs, fed by the host's tap.
#
#   smp_mq_stream  a private network namespace (ip netns) holds a bridge
#                  and two taps, tapA with two queues (multi_queue); the
#                  server (-smp 2, nicq=2: queue 0 interrupts CPU 0, queue
#                  1 CPU 1) runs on CPU 0, the client on tapB streams 1024
#                  packets of 8192 bytes over a plain channel, one batch
#                  of 64 unacknowledged at a time (window=1: nothing is
#                  on its way when the server's acknowledgement moves the
#                  NIC's frames to another queue, so the order is the
#                  driver's alone; bench-mqsteer measures a window of
#                  two, where a frame can be held in the host across the
#                  move, docs/design.md "Multiqueue NICs"). After 512
#                  the server moves to CPU 1 (hop_at=): its
#                  acknowledgements then leave from queue pair 1, and the
#                  tap steers the client's packets to receive queue 1
#                  (docs/design.md, "Multiqueue NICs"). Passes when every
#                  packet came once, in order and intact (stream checks
#                  each byte), both receive queues carried frames and
#                  raised interrupts, both CPUs took device interrupts,
#                  and both kernels' frames balance at exit.
#   smp_mq_stream_fine  the same with rxlock=fine: frames must also come
#                  in without the kernel lock (unlocked=1).
#
# Nothing is fetched: the namespace has no route out, only the two taps.
# Needs root (ip netns, ip tuntap). Usage: tests/qemu/smp/mq.sh KERNEL
# Prints a TEST line per case and "mq tests: N passed, M failed".
kernel=$1
source "$(dirname "$0")/../lib.sh"
passed=0
failed=0
ns=tmq$$
spid=
cleanup() {
	[ -n "$spid" ] && { pkill -TERM -P "$spid" 2>/dev/null; kill "$spid" 2>/dev/null; }
	ip netns del "$ns" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

in_ns() { ip netns exec "$ns" "$@"; }
netns_setup() {
	ip netns add "$ns" &&
		in_ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
		ip -n "$ns" link add br0 type bridge &&
		ip -n "$ns" tuntap add dev tapA mode tap multi_queue &&
		ip -n "$ns" tuntap add dev tapB mode tap &&
		for d in br0 tapA tapB; do ip -n "$ns" link set "$d" mtu 9000 up || return 1; done &&
		ip -n "$ns" link set tapA master br0 && ip -n "$ns" link set tapB master br0
}

# One stream: NAME, words for both kernels' command lines, words for the
# server's alone, the server's SUITE line.
stream_case() {
	local name=$1 extra=$2 sextra=$3 suite=$4 dir t0 why=() a q c crc src
	dir=$logs/$name
	mkdir -p "$dir"
	rm -f "$dir"/*.log
	t0=$(date +%s)
	if ! netns_setup >"$dir/setup.err" 2>&1; then
		why+=("cannot set up the namespace, bridge and taps: $(head -c 300 "$dir/setup.err")")
	else
		# shellcheck disable=SC2046
		QEMU_SMP=2 SERIAL=$dir/server.log in_ns "$root/tools/qemu-run.sh" "$kernel" \
			"run=stream role=server peer=$cmac count=1024 nicq=2 nicqirq=0,1 runcpu=0 hop_at=512 hop_cpu=1 $extra $sextra" 60 \
			$(tap tapA ,queues=2) -device "virtio-net-pci,netdev=n0,mq=on,vectors=6,romfile=,mac=$smac" \
			>/dev/null 2>"$dir/server.err" &
		spid=$!
		wait_for "$dir/server.log" "$spid" READY || why+=("the server never said READY")
		# shellcheck disable=SC2046
		SERIAL=$dir/client.log in_ns "$root/tools/qemu-run.sh" "$kernel" \
			"run=stream role=client peer=$smac count=1024 window=1 $extra" 60 \
			$(tap tapB) -device "virtio-net-pci,netdev=n0,romfile=,mac=$cmac" >/dev/null 2>"$dir/client.err"
		crc=$?
		wait "$spid"
		src=$?
		spid=
		mapfile -t a < <(check_log "$dir/server.log" 0 "$src" "$suite" \
			"virtio-net 0: 2 queue pairs" "nicqirq: NIC 0 queue 1 interrupts CPU 1" \
			"HOP stream server at=512 cpu=1 r=0" "corrupt=0 missing=0")
		why+=("${a[@]}")
		mapfile -t a < <(check_log "$dir/client.log" 0 "$crc" "SUITE stream: 6 passed, 0 failed")
		why+=("${a[@]}")
		q=$(grep -ao 'nicq: NIC 0 rx q0=[0-9]* q1=[0-9]* irqs q0=[0-9]* q1=[0-9]*' "$dir/server.log")
		[[ "$q" =~ rx\ q0=([0-9]+)\ q1=([0-9]+)\ irqs\ q0=([0-9]+)\ q1=([0-9]+) ]] &&
			((BASH_REMATCH[1] > 0 && BASH_REMATCH[2] > 0 && BASH_REMATCH[3] > 0 && BASH_REMATCH[4] > 0)) ||
			why+=("not both receive queues carried frames and interrupted: '$q'")
		c=$(grep -ao 'irqs: cpu0=[0-9]* cpu1=[0-9]*' "$dir/server.log")
		[[ "$c" =~ cpu0=([0-9]+)\ cpu1=([0-9]+) ]] && ((BASH_REMATCH[1] > 0 && BASH_REMATCH[2] > 0)) ||
			why+=("not both CPUs took device interrupts: '$c'")
		echo "queues: $q; $c" >>"$dir/server.log"
	fi
	ip netns del "$ns" 2>/dev/null
	if verdict "$name" "$(printf '%s\n' "${why[@]}")" "$dir/server.log" $(($(date +%s) - t0)); then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
}

tap() { echo "-netdev tap,id=n0,ifname=$1,script=no,downscript=no,vhost=off${2:-}"; }
smac=52:54:00:00:40:00 cmac=52:54:00:00:40:01
stream_case smp_mq_stream "" "" "SUITE stream: 7 passed, 0 failed"
stream_case smp_mq_stream_fine rxlock=fine unlocked=1 "SUITE stream: 9 passed, 0 failed"
echo "mq tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
