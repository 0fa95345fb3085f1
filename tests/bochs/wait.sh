# Sourced by the Bochs tests (tests/bochs/smoke.sh, tests/qemu/e1000/bochs.sh).
# wait_kernel_exit PID LOG: waits while PID (Bochs) runs. KERNEL_EXIT is the
# kernel's last line: once it is in LOG, waits only until Bochs has written
# all of it (a newline last, the size steady for 0.1 s), then returns.
wait_kernel_exit() {
	local pid=$1 log=$2 n
	while kill -0 "$pid" 2>/dev/null; do
		if grep -q 'KERNEL_EXIT' "$log" 2>/dev/null; then
			for _ in $(seq 20); do
				n=$(stat -c %s "$log")
				sleep 0.1
				[ "$(stat -c %s "$log")" = "$n" ] && [ -z "$(tail -c1 "$log")" ] && break
			done
			return 0
		fi
		sleep 0.2
	done
}
