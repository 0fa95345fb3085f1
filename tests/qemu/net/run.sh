#!/usr/bin/env bash
# Two-VM network tests: pairs of this kernel joined by QEMU dgram sockets.
# Each line: name, NICs, NIC model, READY lines, server and client command
# lines, patterns both logs together must hold. The kernels themselves check
# frames and resources at exit (status 0 only when they balance).
# Usage: tests/qemu/net/run.sh KERNEL   (ONLY=REGEX runs the cases whose name matches;
# CMD_EXTRA="k=v ..." goes on both kernels' command lines, e.g. runcpu=1)
set -uo pipefail
kernel=$1
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
logs=$(dirname "$kernel")/test-logs/net
passed=0 failed=0

# The pairs run two at a time (par, ../lib.sh): each has its own sockets
# (tools/net-pair.sh) and logs.
run() { # name nics model ready server client patterns
	[[ -z "${ONLY:-}" || "$1" =~ $ONLY ]] || return 0
	par pair "$@"
}
pair() {
	local name=$1 dir=$logs/$1
	local t0=$SECONDS
	NICS=$2 MODEL=$3 READY=$4 "$root/tools/net-pair.sh" "$kernel" "$5 ${CMD_EXTRA:-}" "$6 ${CMD_EXTRA:-}" "$dir" 120 >/dev/null 2>&1
	local rc=$? why=()
	[ $rc -eq 0 ] || why+=("a kernel exited non-zero")
	IFS=';' read -ra pats <<<"$7"
	for p in "${pats[@]}"; do
		grep -aqF -- "$p" "$dir"/server.log "$dir"/client.log 2>/dev/null || why+=("missing '$p'")
	done
	grep -aq '\.\.\. FAIL' "$dir"/*.log 2>/dev/null && why+=("a TEST failed")
	if [ ${#why[@]} -eq 0 ]; then
		echo "TEST $name ... ok ($((SECONDS - t0))s)"
		return 0
	else
		echo "TEST $name ... FAIL"
		printf '    %s\n' "${why[@]}" "logs: $dir"
		grep -a -h -E 'FAIL|error|killed|PANIC' "$dir"/*.log 2>/dev/null | head -5 | sed 's/^/    | /'
		return 1
	fi
}

run pingpong_sizes 1 e1000 1 "run=pingpong role=server peer=@CMAC0@" \
	"run=pingpong role=client peer=@SMAC0@ sizes=1,60,1500,4096,8192,8960 iters=4 warm=1" \
	"SUITE pingpong: 13 passed, 0 failed;SUITE pingpong: 6 passed, 0 failed;bytes=8960"
run pingpong_82545em 1 e1000-82545em 1 "run=pingpong role=server peer=@CMAC0@" \
	"run=pingpong role=client peer=@SMAC0@ sizes=60,4096,8960 iters=3 warm=1" \
	"SUITE pingpong: 13 passed, 0 failed;SUITE pingpong: 6 passed, 0 failed"
run burst 1 e1000 1 "run=burst role=server peer=@CMAC0@" \
	"run=burst role=client peer=@SMAC0@ sizes=64,1500,8192 reps=2 warm=0" \
	"SUITE burst: 6 passed, 0 failed;SUITE burst: 4 passed, 0 failed;doorbells=1 "
# poll=irq: a NIC whose ring ran empty goes back to interrupts within a
# batch; the server checks at most one interrupt a packet (not one a batch).
run burst_pollirq 1 e1000 1 "run=burst role=server peer=@CMAC0@ poll=irq" \
	"run=burst role=client peer=@SMAC0@ sizes=1500 reps=2 warm=0 poll=irq" \
	"SUITE burst: 6 passed, 0 failed;SUITE burst: 4 passed, 0 failed;per packet (poll=irq)"
run malformed 1 e1000 1 "run=badframes role=victim peer=@CMAC0@" \
	"run=badframes role=attacker peer=@SMAC0@" \
	"SUITE badframes: 13 passed, 0 failed;SUITE badframes: 10 passed, 0 failed"
run two_nics 2 e1000 2 "run=twonic role=server peer0=@CMAC0@ peer1=@CMAC1@" \
	"run=twonic role=client peer0=@SMAC0@ peer1=@SMAC1@ iters=4" \
	"SUITE twonic: 6 passed, 0 failed"

# The same I/O manager over the other NIC families, virtio-net and e1000e
# (82574L): nothing above the netdev seam changes. A 128-packet batch
# takes 2-3 kicks on virtio-net (QEMU's transmit queue holds 256
# descriptors), one TDT write on e1000e (1023 descriptors).
for model in virtio-net-pci e1000e; do
	fam=${model%-net-pci} one_doorbell=
	[ "$fam" = e1000e ] && one_doorbell=";doorbells=1 "
	run pingpong_$fam 1 $model 1 "run=pingpong role=server peer=@CMAC0@" \
		"run=pingpong role=client peer=@SMAC0@ sizes=1,60,1500,4096,8192,8960 iters=4 warm=1" \
		"SUITE pingpong: 13 passed, 0 failed;SUITE pingpong: 6 passed, 0 failed;bytes=8960"
	run burst_$fam 1 $model 1 "run=burst role=server peer=@CMAC0@" \
		"run=burst role=client peer=@SMAC0@ sizes=64,1500,8192 reps=2 warm=0" \
		"SUITE burst: 6 passed, 0 failed;SUITE burst: 4 passed, 0 failed$one_doorbell"
done
run malformed_virtio 1 virtio-net-pci 1 "run=badframes role=victim peer=@CMAC0@" \
	"run=badframes role=attacker peer=@SMAC0@" \
	"SUITE badframes: 13 passed, 0 failed;SUITE badframes: 10 passed, 0 failed"

# Striped channels: one channel over 2 or 4 links (nics=, a peer MAC per
# link), reliable (acknowledged, lost frames sent again); stream checks
# every packet's order, count and bytes. The links' shares are not exact:
# at start-up QEMU's dgram backend may hold a frame back for a few hundred
# ms, which the sender takes for a loss and sends again on another link.
run stream_2links 2 e1000 1 "run=stream role=server nics=0,1 peer=@CMAC0@,@CMAC1@ count=1024" \
	"run=stream role=client nics=0,1 peer=@SMAC0@,@SMAC1@ count=1024" \
	"SUITE stream: 7 passed, 0 failed;SUITE stream: 6 passed, 0 failed;links=2;gaps=0 lost=0;RELIABLE stream server"
# Eight links, as many NICs as a node drives: QEMU's e1000s share the
# PIIX's INTx lines four to a line (every handler on a line checks its own
# NIC's cause).
run stream_8links 8 e1000 1 \
	"run=stream role=server nics=0,1,2,3,4,5,6,7 peer=@CMAC0@,@CMAC1@,@CMAC2@,@CMAC3@,@CMAC4@,@CMAC5@,@CMAC6@,@CMAC7@ count=1024 size=4096" \
	"run=stream role=client nics=0,1,2,3,4,5,6,7 peer=@SMAC0@,@SMAC1@,@SMAC2@,@SMAC3@,@SMAC4@,@SMAC5@,@SMAC6@,@SMAC7@ count=1024 size=4096" \
	"SUITE stream: 7 passed, 0 failed;SUITE stream: 6 passed, 0 failed;links=8;gaps=0 lost=0;RELIABLE stream client;nic7="
# poll=irq on a paced stream: mid-batch the rings run empty, the NICs go
# back to interrupts and the CPU halts; a wake-up lost in that re-arm would
# stall the stream until its timeout.
run stream_2links_irq 2 e1000 1 \
	"run=stream role=server nics=0,1 peer=@CMAC0@,@CMAC1@ count=512 nic_mbps=40,40 poll=irq rearms=1" \
	"run=stream role=client nics=0,1 peer=@SMAC0@,@SMAC1@ count=512 nic_mbps=40,40 poll=irq" \
	"SUITE stream: 8 passed, 0 failed;SUITE stream: 6 passed, 0 failed;links=2;gaps=0 lost=0"
run pingpong_2links 2 e1000 1 "run=pingpong role=server nics=0,1 peer=@CMAC0@,@CMAC1@" \
	"run=pingpong role=client nics=0,1 peer=@SMAC0@,@SMAC1@ sizes=60,1500,8960 iters=4 warm=1" \
	"SUITE pingpong: 13 passed, 0 failed;SUITE pingpong: 6 passed, 0 failed;bytes=8960"
run pingpong_4links 4 e1000 1 "run=pingpong role=server nics=0,1,2,3 peer=@CMAC0@,@CMAC1@,@CMAC2@,@CMAC3@" \
	"run=pingpong role=client nics=0,1,2,3 peer=@SMAC0@,@SMAC1@,@SMAC2@,@SMAC3@ sizes=60,8960 iters=4 warm=1" \
	"SUITE pingpong: 13 passed, 0 failed;SUITE pingpong: 6 passed, 0 failed;bytes=8960"
run burst_2links_virtio 2 virtio-net-pci 1 "run=burst role=server nics=0,1 peer=@CMAC0@,@CMAC1@" \
	"run=burst role=client nics=0,1 peer=@SMAC0@,@SMAC1@ sizes=64,1500,8192 reps=2 warm=0" \
	"SUITE burst: 6 passed, 0 failed;SUITE burst: 4 passed, 0 failed"

# With two CPUs or more (make test-smp): both NICs' interrupts sent to CPU 1
# (nicirq=1,1), which then runs the worker for them; CPU 0 takes none. Its
# idle loop takes frames without the kernel lock (rxlock=fine), the
# server's input_io calls begin without it, and so do the client's
# output_io calls on the striped (so reliable) channel, paced, whose
# window and wire make them sleep (unlocked=1 checks each).
if [ "${QEMU_SMP:-1}" -ge 2 ]; then
	run stream_2links_irq_cpu1 2 e1000 1 \
		"run=stream role=server nics=0,1 peer=@CMAC0@,@CMAC1@ count=512 nic_mbps=40,40 poll=irq rearms=1 unlocked=1 nicirq=1,1 rxlock=fine" \
		"run=stream role=client nics=0,1 peer=@SMAC0@,@SMAC1@ count=512 nic_mbps=40,40 poll=irq nicirq=1,1 rxlock=fine unlocked=1" \
		"SUITE stream: 10 passed, 0 failed;SUITE stream: 7 passed, 0 failed;gaps=0 lost=0;nicirq: NIC 1 interrupts CPU 1;irqs: cpu0=0 cpu1="
	# The bursts with rxlock=fine: both ends' input_io and output_io (a
	# plain channel, regions their callers' alone) run without the kernel
	# lock; unlocked=1 checks it, the bursts' own checks the bytes.
	run burst_fine 1 e1000 1 "run=burst role=server peer=@CMAC0@ rxlock=fine unlocked=1" \
		"run=burst role=client peer=@SMAC0@ sizes=64,1500,8192 reps=2 warm=0 rxlock=fine unlocked=1" \
		"SUITE burst: 7 passed, 0 failed;SUITE burst: 5 passed, 0 failed"
fi

par_wait
echo "network tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
