# Shared by the e1000 boot tests: temporary sockets, the two-NIC wiring,
# and the log checks. Source it; it expects $kernel.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
logs=$(dirname "$kernel")/test-logs
mkdir -p "$logs"
tmp=$(mktemp -d /tmp/e1000test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Two NICs of model $1 wired to each other through unix datagram sockets
# (docs/design.md, "What the code relies on in the emulated hardware": lossless with back-pressure, jumbo frames pass):
# netdevs $2 and $3, MACs 52:54:00:12:34:$4 and 52:54:00:12:34:$5.
nic_pair() {
	local model=$1 x=$2 y=$3
	echo -netdev "dgram,id=$x,local.type=unix,local.path=$tmp/$x,remote.type=unix,remote.path=$tmp/$y" \
		-device "$model,netdev=$x,mac=52:54:00:12:34:$4" \
		-netdev "dgram,id=$y,local.type=unix,local.path=$tmp/$y,remote.type=unix,remote.path=$tmp/$x" \
		-device "$model,netdev=$y,mac=52:54:00:12:34:$5"
}
two_nics() { nic_pair "$1" a b 56 57; }

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
