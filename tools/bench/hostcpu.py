#!/usr/bin/env python3
"""Host CPU time of both QEMU processes of a VM pair, per packet size.

The burst client of either system (user/burst.c cpu_ms=, pktbench --cpu-ms)
follows each size's timed bursts with back-to-back bursts between two lines
    MARK burst bytes=S cpu begin
    MARK burst bytes=S cpu end bursts=K
This watches the client's serial log (LOGDIR/client.log) and, the moment it
sees each MARK line, reads utime + stime of both QEMU processes (every thread;
/proc/PID/stat, in clock ticks of SC_CLK_TCK). The QEMU processes are the two
whose command line names LOGDIR. A window yields one line
    HOSTCPU bytes=S bursts=K cpu_s=X wall_s=Y
(K bursts of 128 packets of S payload bytes delivered for X CPU seconds).
A window is lost when a VM is gone before the watcher reads its end line (the
clients stay up a moment after their last window so that it seldom happens); a
harness measures a size whose windows all were lost again, RETRIES more pairs
at most (uncaught()), and a size still without a window gets a null figure
with the reason (per_gb()), never a failed run.
Usage: hostcpu.py LOGDIR [TIMEOUT_S]   (prints HOSTCPU lines; ends with the VMs)
       hostcpu.py uncaught CPUFILE SIZES  (the sizes of a comma list that no
       HOSTCPU line of CPUFILE covers, comma-separated; empty when none)
Standard library only.
"""
import os
import re
import sys
import threading
import time

MARK = re.compile(r"MARK burst bytes=(\d+) cpu (begin|end)(?: bursts=(\d+))?")
HZ = os.sysconf("SC_CLK_TCK")
# Extra boot pairs a harness runs for sizes whose host CPU windows were all lost.
RETRIES = int(os.environ.get("HOSTCPU_RETRIES", "2"))


def uncaught(windows, sizes):
    """The sizes no window (bytes, bursts, cpu_s, wall_s) with bursts covers."""
    have = {w[0] for w in windows if w[1] > 0}
    return [s for s in sizes if s not in have]


def per_gb(cpu_s, delivered, windows, pairs):
    """(CPU seconds per 10^9 bytes, None) from windows that caught bursts, or
    (None, reason) when none did in any of `pairs` boot pairs."""
    if windows and delivered > 0:
        return round(cpu_s / delivered * 1e9, 2), None
    return None, (f"no host CPU window caught a burst in {pairs} boot pair(s): "
                  "each VM's exit outran the watcher or the window held no burst")


def qemu_pids(logdir):
    """PIDs of the QEMU processes whose arguments name logdir."""
    keys = {logdir.rstrip("/") + "/", os.path.abspath(logdir) + "/"}
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if os.path.basename(argv[0]).startswith("qemu-system") and \
                any(k in a for a in argv[1:] for k in keys):
            pids.append(int(d))
    return pids


def host_busy_ticks():
    """The whole host's busy time since boot, in ticks of HZ, every core
    together: /proc/stat's first line less its idle and iowait."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v[:8]) - v[3] - v[4]  # user nice system idle iowait irq softirq steal


def cpu_ticks(pid):
    """utime + stime of a whole process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5)


def thread_ticks(pid):
    """{tid: (name, utime + stime, ns waited runnable)} of each thread of a
    process (its comm: QEMU with -name ...,debug-threads=on names them "CPU
    0/TCG", ...; the main loop, which runs the NIC models, after the binary;
    the wait from /proc/PID/task/TID/schedstat's second field: time on a run
    queue without a host CPU, 0 where the kernel keeps no schedstat); {} once
    it is gone."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tids:
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                wait = int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            wait = 0
        out[int(t)] = (name, int(fields[11]) + int(fields[12]), wait)
    return out


class Watch(threading.Thread):
    """Watches one pair from before its VMs start until both are gone;
    .windows is a list of (bytes, bursts, cpu_s, wall_s)."""

    def __init__(self, logdir, timeout=900):
        super().__init__(daemon=True)
        self.logdir, self.deadline = logdir, time.monotonic() + timeout
        self.windows, self.stopping = [], threading.Event()
        self.on_window = None

    def sample(self, pids):
        ticks = [cpu_ticks(p) for p in pids]
        return None if len(pids) != 2 or None in ticks else sum(ticks)

    def run(self):
        log, pos, tail, pids, begin = os.path.join(self.logdir, "client.log"), 0, "", [], {}
        while time.monotonic() < self.deadline:
            if len(pids) < 2:
                pids = qemu_pids(self.logdir)
            try:
                with open(log, "rb") as f:
                    f.seek(pos)
                    data = f.read()
                    pos += len(data)
            except OSError:
                data = b""
            tail += data.decode(errors="replace")
            *lines, tail = tail.split("\n")
            for line in lines:
                m = MARK.search(line)
                if not m:
                    continue
                size, now, ticks = int(m.group(1)), time.monotonic(), self.sample(pids)
                if m.group(2) == "begin":
                    begin[size] = (ticks, now)
                elif size in begin and ticks is not None and begin[size][0] is not None:
                    t0, w0 = begin.pop(size)
                    win = (size, int(m.group(3) or 0), (ticks - t0) / HZ, now - w0)
                    self.windows.append(win)
                    if self.on_window:
                        self.on_window(win)
            if len(pids) == 2 and all(cpu_ticks(p) is None for p in pids):
                return
            if self.stopping.wait(0.01 if len(pids) == 2 else 0.05):
                return

    def stop(self):
        self.stopping.set()
        self.join()


def line(win):
    size, bursts, cpu_s, wall_s = win
    return f"HOSTCPU bytes={size} bursts={bursts} cpu_s={cpu_s:.3f} wall_s={wall_s:.3f}"


def parse(text):
    """Windows (bytes, bursts, cpu_s, wall_s) of the HOSTCPU lines in text."""
    out = []
    for m in re.finditer(r"HOSTCPU bytes=(\d+) bursts=(\d+) cpu_s=(\S+) wall_s=(\S+)", text):
        out.append((int(m.group(1)), int(m.group(2)), float(m.group(3)), float(m.group(4))))
    return out


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "uncaught":
        try:
            with open(sys.argv[2], errors="replace") as f:
                text = f.read()
        except OSError:
            text = ""
        sizes = [int(x) for x in sys.argv[3].split(",") if x]
        print(",".join(map(str, uncaught(parse(text), sizes))))
        return
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: hostcpu.py LOGDIR [TIMEOUT_S] | hostcpu.py uncaught CPUFILE SIZES")
    w = Watch(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 900)
    w.on_window = lambda win: print(line(win), flush=True)
    w.start()
    w.join()


if __name__ == "__main__":
    main()
