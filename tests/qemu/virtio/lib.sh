# Shared by the virtio-net boot tests: temporary sockets, NIC wiring, the
# log checks. Source it; it expects $kernel.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
logs=$(dirname "$kernel")/test-logs
mkdir -p "$logs"
tmp=$(mktemp -d /tmp/virtiotest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Two NICs wired to each other through unix datagram sockets (lossless
# with back-pressure, jumbo frames pass): netdevs $1 and $2, MACs
# 52:54:00:12:34:$3 and :$4, device options $5 (e.g. disable-legacy=on;
# empty: the transitional device) and $6 for the second NIC (default $5).
# romfile= keeps iPXE's option ROM from touching the devices before us.
virtio_pair() {
	local x=$1 y=$2 opt1=${5:+,$5} opt2=${6-${5:-}}
	opt2=${opt2:+,$opt2}
	echo -netdev "dgram,id=$x,local.type=unix,local.path=$tmp/$x,remote.type=unix,remote.path=$tmp/$y" \
		-device "virtio-net-pci,netdev=$x,mac=52:54:00:12:34:$3,romfile=$opt1" \
		-netdev "dgram,id=$y,local.type=unix,local.path=$tmp/$y,remote.type=unix,remote.path=$tmp/$x" \
		-device "virtio-net-pci,netdev=$y,mac=52:54:00:12:34:$4,romfile=$opt2"
}

# Prints the reasons a log fails: kernel status, FAIL lines, missing
# patterns (one per argument), free frames at exit differing from boot.
check_log() {
	local log=$1 want=$2 got=$3 why=()
	shift 3
	[ "$got" = "$want" ] || why+=("kernel status $got, want $want")
	grep -q '\.\.\. FAIL' "$log" && why+=("a TEST failed: $(grep -m3 '\.\.\. FAIL' "$log" | tr '\n' ' ')")
	for p in "$@"; do
		grep -qF -- "$p" "$log" || why+=("missing '$p'")
	done
	local f
	f=$(grep -o 'frames: boot=[0-9]* exit=[0-9]*' "$log" | tail -1)
	[[ "$f" =~ boot=([0-9]+)\ exit=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] ||
		why+=("free frames at exit differ from boot ($f)")
	printf '%s\n' "${why[@]}"
}

# TEST line and exit status from the reasons (empty = pass).
verdict() {
	local name=$1 why=$2 log=$3 secs=$4
	why=$(sed '/^$/d' <<<"$why")
	if [ -z "$why" ]; then
		echo "TEST $name ... ok (${secs}s)"
		return 0
	fi
	echo "TEST $name ... FAIL"
	sed 's/^/    /' <<<"$why"
	echo "    log: $log"
	tail -8 "$log" | sed 's/^/    | /'
	return 1
}
