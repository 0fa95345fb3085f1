# Helpers shared by the Linux baseline scripts (sourced, not run).

# LB_SMP=N: the guests get N vCPUs (-smp N, multi-threaded TCG); default 1,
# QEMU's own default, so no option is added.  "${LB_SMP_ARGS[@]}" goes on
# every guest's QEMU command line.
# lb_smp_set N sets both (run-pair.sh --smp).
lb_smp_set() {
	case "$1" in
	1) LB_SMP_ARGS=() ;;
	'' | *[!0-9]* | 0) printf '[linux-baseline] error: -smp %s: a positive number\n' "$1" >&2; exit 1 ;;
	*) LB_SMP_ARGS=(-smp "$1") ;;
	esac
	LB_SMP=$1
}
lb_smp_set "${LB_SMP:-1}"

# lb_guest NAME INITRD MEM APPEND [QEMU-ARG...]: one Linux guest ($GUEST's
# kernel and INITRD) in the background under a hard timeout ($TIMEOUT),
# its console in $LOGDIR/NAME.log and QEMU's own output in NAME.qemu;
# sets BOOT_PID. Its command line is LB_APPEND then APPEND (no_timer_check:
# a loaded host's starved vCPU fails the IO-APIC timer check and panics).
LB_APPEND="console=ttyS0 quiet panic=-1 no_timer_check"
lb_guest() {
	local name=$1 initrd=$2 mem=$3 append=$4
	shift 4
	timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -accel tcg -cpu max -m "$mem" \
		-nographic -no-reboot -monitor none "$@" \
		-serial "file:$LOGDIR/$name.log" \
		-kernel "$GUEST/vmlinuz" -initrd "$GUEST/$initrd" \
		-append "$LB_APPEND $append" \
		</dev/null >"$LOGDIR/$name.qemu" 2>&1 &
	BOOT_PID=$!
}

# lb_count_args: with COUNT set, LB_COUNT_ARGS loads insnplugin.so, which
# writes the guest's marked windows into $LOGDIR/insns.txt (emptied here).
lb_count_args() {
	LB_COUNT_ARGS=()
	rm -f "$LOGDIR/insns.txt"
	[ -z "$COUNT" ] || LB_COUNT_ARGS=(-plugin "$GUEST/insnplugin.so,out=$LOGDIR/insns.txt")
}

lb_log() { printf '[linux-baseline] %s\n' "$*" >&2; }
lb_die() { lb_log "error: $*"; exit 1; }

# True while some process runs apt-get, apt or dpkg (read from /proc, so it
# works without procps).
lb_apt_busy() {
	local c
	for c in /proc/[0-9]*/comm; do
		case "$(cat "$c" 2>/dev/null)" in apt-get | apt | dpkg*) return 0 ;; esac
	done
	return 1
}

# Another process may be running apt or dpkg: wait until both are gone.
lb_wait_apt() {
	local waited=0
	while lb_apt_busy; do
		[ $waited -eq 0 ] && lb_log "waiting for a running apt-get/dpkg to finish"
		waited=$((waited + 10))
		[ $waited -gt 3600 ] && lb_die "apt-get/dpkg still running after an hour"
		sleep 10
	done
}

lb_have_pkg() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

lb_sudo() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# apt-get update once per script run, and only when something needs it.
LB_APT_UPDATED=
lb_apt_update() {
	[ -n "$LB_APT_UPDATED" ] && return 0
	lb_wait_apt
	lb_log "apt-get update"
	lb_sudo apt-get update -qq || lb_log "apt-get update failed (offline?)"
	LB_APT_UPDATED=1
}

# Installs the Debian packages among "$@" that are missing; a no-op (and no
# network) when all are there.
lb_need_pkgs() {
	local missing=() p
	for p in "$@"; do lb_have_pkg "$p" || missing+=("$p"); done
	[ ${#missing[@]} -eq 0 ] && return 0
	lb_apt_update
	lb_wait_apt
	lb_log "apt-get install ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive lb_sudo apt-get install -y -qq "${missing[@]}" >&2 ||
		lb_die "cannot install ${missing[*]}"
}

# The QEMU version as "7.2.22".
lb_qemu_version() {
	qemu-system-x86_64 --version | sed -n '1s/.*version \([0-9][0-9.]*\).*/\1/p'
}

# The bench-*.sh scripts' prologue.
# lb_usage: the script's header comment (line 2 to the line before "set
# -euo pipefail") on stderr, exit 2.
lb_usage() {
	sed -n '2,/^set -euo/s/^# \{0,1\}//p' "$0" | sed '$d' >&2
	exit 2
}

# lb_check_runs N: dies unless N (the value of --runs) is a positive number.
lb_check_runs() {
	case "$1" in '' | *[!0-9]* | 0) lb_die "--runs $1: a positive number" ;; esac
}

# lb_out_arg ARG: ARG is OUT, the one argument that is no option (a second
# one: lb_usage).
lb_out_arg() {
	[ -z "$OUT" ] || lb_usage
	OUT=$1
}

# lb_args_done: once the options are read, OUT must be given (else
# lb_usage) and RUNS (--runs) a positive number.
lb_args_done() {
	[ -n "$OUT" ] || lb_usage
	lb_check_runs "$RUNS"
}

# lb_progress_start TAG: from now on, progress MESSAGE prints
# "[TAG SECONDSs] MESSAGE" on stderr, SECONDS since this call (START).
lb_progress_start() {
	LB_PROGRESS_TAG=$1
	START=$(date +%s)
}
progress() { printf '[%s %4ds] %s\n' "$LB_PROGRESS_TAG" $(($(date +%s) - START)) "$*" >&2; }

# lb_bench_guest PKG...: installs the packages PKG..., then makes the guest
# in $GUEST (LB_PREBUILT=1: checks that it is there) and holds its run lock.
lb_bench_guest() {
	lb_need_pkgs "$@"
	lb_guest_ready "$GUEST" "$HERE"
}

# lb_fresh_raw RAW OUT: RAW (where the runs' logs go) emptied, and OUT's
# directory made.
lb_fresh_raw() {
	rm -rf "$1"
	mkdir -p "$1" "$(dirname "$2")"
}

# lb_stop PID: a background job of this script killed and reaped (none
# when PID is empty).
lb_stop() {
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# lb_lock FILE: hold an exclusive lock on FILE until the script exits, so
# that parallel make jobs neither build into nor measure with one guest at
# the same time (concurrent pairs would also spoil each other's timings).
# A script this one started (selftest.sh runs smoke-smp.sh) finds the lock
# its caller holds in LB_LOCKS_HELD and goes on: waiting would never end.
lb_lock() {
	local fd
	case ":${LB_LOCKS_HELD:-}:" in *":$1:"*) return 0 ;; esac
	exec {fd}>"$1"
	if ! flock -n "$fd"; then
		lb_log "waiting for $1 (another build or run holds it)"
		flock "$fd"
	fi
	export LB_LOCKS_HELD="${LB_LOCKS_HELD:+$LB_LOCKS_HELD:}$1"
}

# After a pair's boot: waits for the client (pid $CLIENT_PID), gives the
# server (pid $SERVER_PID) 20 s to power off after the client's "bye", then
# kills it. Sets crc (client status) and src (server status, or "killed")
# and clears both pids (the callers' cleanup traps kill what they name).
lb_wait_pair() {
	crc=0
	wait "$CLIENT_PID" || crc=$?
	CLIENT_PID=
	for _ in $(seq 1 100); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.2
	done
	src=0
	if kill -0 "$SERVER_PID" 2>/dev/null; then
		kill "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
		src=killed
	else
		wait "$SERVER_PID" || src=$?
	fi
	SERVER_PID=
}

# The guest in $1, locked for this run: checked when LB_PREBUILT is set
# (built earlier, outside the benchmark's network namespace), else built
# or brought up to date. $2: the directory of the calling script.
lb_guest_ready() {
	mkdir -p "$1"
	lb_lock "$1/.run.lock"
	if [ -n "${LB_PREBUILT:-}" ]; then
		[ -f "$1/vmlinuz" ] && [ -f "$1/initrd.gz" ] && [ -f "$1/guest.env" ] &&
			{ [ -z "${LB_NFS:-}" ] || [ -f "$1/initrd-nfs.gz" ]; } ||
			lb_die "no guest in $1: run $2/build.sh first"
	else
		"$2/build.sh" "$1"
	fi
}

# lb_guest_files INITRD COUNT: dies unless GUEST holds vmlinuz and INITRD,
# and (COUNT not empty: the runs are counted) insnplugin.so.
lb_guest_files() {
	[ -f "$GUEST/vmlinuz" ] && [ -f "$GUEST/$1" ] || lb_die "no guest in $GUEST (run build.sh)"
	[ -z "$2" ] || [ -f "$GUEST/insnplugin.so" ] || lb_die "no $GUEST/insnplugin.so (run build.sh)"
}

# lb_selftest_guest NAME [BUILD_DIR [PKG...]]: a self-test's start: GUEST
# (BUILD_DIR, default build/linux-baseline), LOGS (GUEST/logs/NAME, for the
# caller to empty), START (now, for its "passed in Ns"), the packages PKG...
# installed and the guest made ready.
lb_selftest_guest() {
	GUEST=${2:-$ROOT/build/linux-baseline}
	LOGS="$GUEST/logs/$1"
	START=$(date +%s)
	[ $# -le 2 ] || lb_need_pkgs "${@:3}"
	lb_guest_ready "$GUEST" "$HERE"
}

# CPU accounting: all busy host time, and the time of this script's reaped
# children (the guests, once a boot has ended), both in clock ticks.
# lb_mark starts a window; lb_other_cores prints the cores that other
# processes used since (e.g. "0.12"): a real-time run is only as good as
# the host was quiet.
lb_busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
lb_child_ticks() { sed 's/.*) //' "/proc/$$/stat" | awk '{ print $14 + $15 }'; }
lb_mark() { LB_MARK="$(lb_busy_ticks) $(lb_child_ticks) $(date +%s.%N)"; }
lb_other_cores() {
	# shellcheck disable=SC2086
	set -- $LB_MARK
	awk -v b0="$1" -v c0="$2" -v t0="$3" -v b="$(lb_busy_ticks)" -v c="$(lb_child_ticks)" \
		-v t="$(date +%s.%N)" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { x = ((b - b0) - (c - c0)) / hz / (t - t0); printf "%.2f", x < 0 ? 0 : x }'
}
