#!/usr/bin/env bash
# Every virtio-net boot test (the driver's self-test, virtiotest=MODES):
#   virtio_loop               two modern NICs (disable-legacy=on) wired to
#                             each other: loop (every size both ways, jumbo
#                             frames over several buffers, kicks, interrupt
#                             masking, bad input, frame balance), detach;
#                             QEMU's own trace counts the transmit kicks;
#   virtio_loop_transitional  the default (transitional) device, one NIC
#                             with a 1024-entry receive queue;
#   virtio_eight              nine NICs: eight attached (the registry's
#                             limit), the ninth named; four wired pairs;
#   virtio_loop_msix          the modern pair with mq=on and nicq=2: MQ
#                             negotiated, one pair (a dgram backend has
#                             one queue), interrupts by MSI-X (an entry for
#                             configuration changes, one for the receive
#                             queue), the vectors kept across detach and
#                             attach;
#   virtio_link               set_link off/on in QEMU's monitor: link-down
#                             and link-up configuration interrupts;
#   virtio_unwired            a NIC without a peer: attach, send, reclaim;
#   virtio_with_e1000         an e1000 pair and a virtio pair in one VM (NICs 0-1
#                             e1000, 2-3 virtio: one numbering, probe order),
#                             both drivers' loop tests.
# Usage: tests/qemu/virtio/run.sh KERNEL [name-filter-regex]
# Prints one TEST line per test and "virtio tests: N passed, M failed".
kernel=$1
filter=${2:-.}
source "$(dirname "$0")/../lib.sh"
passed=0
failed=0

# One boot: NAME "CMDLINE" "PAT1;PAT2" TIMEOUT qemu-args...; passes when
# the kernel exits 0, no TEST failed, every pattern is there and the free
# frames at exit equal those at boot. $trace (a file) adds QEMU's trace of
# queue notifications and status writes; $extra_check names a function
# that prints further reasons from the log.
boot_case() {
	local name=$1 cmdline=$2 pats=$3 tmo=$4 log=$logs/$1.log start got why
	shift 4
	[[ "$name" =~ $filter ]] || return 0
	start=$(date +%s)
	local targs=()
	[ -n "${trace:-}" ] && targs=(-trace virtio_queue_notify -trace virtio_set_status -D "$trace")
	SERIAL=$log "$root/tools/qemu-run.sh" "$kernel" "$cmdline" "$tmo" "$@" "${targs[@]}" \
		>/dev/null 2>"$log.err"
	got=$?
	IFS=';' read -ra arr <<<"$pats"
	why=$(check_log "$log" 0 "$got" "${arr[@]}")
	[ -n "${extra_check:-}" ] && why+=$'\n'$("$extra_check" "$log")
	if verdict "$name" "$why" "$log" $(($(date +%s) - start)); then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
}

# Transmit notifications as QEMU saw them (each DRIVER_OK makes QEMU look
# at every queue once: not ours) against the driver's count and the
# tx_batch calls: at most one kick per call, and the device saw no more
# than the driver sent (kicks close together may merge into one).
kicks_check() {
	local log=$1 seen starts tx calls
	seen=$(grep -c ' n 1 vq ' "$trace")
	starts=$(grep -c 'virtio_set_status .* val 15$' "$trace")
	[[ "$(grep -o 'notifications sent tx=[0-9]* rx=[0-9]*, tx_batch calls [0-9]*' "$log")" =~ \
		tx=([0-9]+)\ rx=([0-9]+),\ tx_batch\ calls\ ([0-9]+) ]] || { echo "no kick counts in the log"; return; }
	tx=${BASH_REMATCH[1]}
	calls=${BASH_REMATCH[3]}
	echo "kicks: QEMU saw $((seen - starts)) transmit notifications, driver sent $tx, tx_batch calls $calls" >>"$log"
	((seen - starts > 0 && seen - starts <= tx && tx <= calls)) ||
		echo "transmit kicks: QEMU saw $((seen - starts)), driver sent $tx, tx_batch calls $calls"
}

modern=disable-legacy=on
loop_pats="TEST virtio_loop_0_to_1 ... ok;TEST virtio_loop_1_to_0 ... ok;TEST virtio_tx_indirect_one_call ... ok;TEST virtio_detach_frees_all ... ok"

trace=$tmp/trace.log extra_check=kicks_check \
	boot_case virtio_loop "run=hello virtiotest=loop,detach" \
	"mac 52:54:00:12:34:56;mac 52:54:00:12:34:57;virtio 1.0 1af4:1041;$loop_pats;virtiotest: 14 passed, 0 failed" \
	120 $(virtio_pair a b 56 57 $modern)

boot_case virtio_loop_msix "run=hello virtiotest=loop,detach nicq=2" \
	"virtio-net 0: 1 queue pair, msi-x vectors;virtio-net 1: 1 queue pair, msi-x vectors;$loop_pats;virtiotest: 14 passed, 0 failed" \
	120 $(virtio_pair a b 56 57 "$modern,mq=on,vectors=6")

boot_case virtio_loop_transitional "run=hello virtiotest=loop,detach" \
	"1af4:1000;rx queue 1024 (512 buffers);$loop_pats;virtiotest: 14 passed, 0 failed" \
	120 $(virtio_pair a b 56 57 "" rx_queue_size=1024)

# The ninth NIC must be named and left alone.
ninth_check() { grep -q "mac 52:54:00:12:34:5e" "$1" && echo "the ninth NIC was attached"; }
extra_check=ninth_check boot_case virtio_eight "run=hello virtiotest=loop,detach" \
	"more than 8 NICs;TEST virtio_loop_2_to_3 ... ok;TEST virtio_loop_7_to_6 ... ok;$loop_pats;virtiotest: 20 passed, 0 failed" \
	180 $(virtio_pair a b 56 57 $modern) $(virtio_pair c d 58 59 $modern) $(virtio_pair e f 5a 5b $modern) \
	$(virtio_pair g h 5c 5d $modern) -device virtio-net-pci,$modern,romfile=,mac=52:54:00:12:34:5e

boot_case virtio_unwired "run=hello virtiotest=basic" \
	"TEST virtio_basic_send ... ok;virtiotest: 3 passed, 0 failed" \
	60 -device virtio-net-pci,$modern,romfile=

boot_case virtio_with_e1000 "run=hello e1000test=loop virtiotest=loop" \
	"e1000test: 12 passed, 0 failed;virtio-net 2: virtio 1.0;TEST virtio_loop_1_to_0 ... ok;virtiotest: 11 passed, 0 failed" \
	180 $(virtio_pair a b 56 57 $modern) $(nic_pair e1000 e f 60 61)

if [[ virtio_link =~ $filter ]]; then
	if "$(dirname "$0")/link.sh" "$kernel"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi
echo "virtio tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
