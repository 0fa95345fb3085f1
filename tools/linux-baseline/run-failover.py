#!/usr/bin/env python3
"""One link-failure run: two Linux baseline guests, one TCP or MPTCP flow, link 0 cut and restored.

    run-failover.py --system bond-rr|bond-ab|bond-ab-arp|bond-rr-arp|mptcp --cut visible|silent
                    --logdir DIR [--links N] [--mbps R] [--size B] [--cut-at S] [--down S]
                    [--tail S] [--grace-ms MS] [--guest DIR] [--nic e1000|virtio] [--timeout S]

The server (receiver, 10.0.0.1) and the client (sender, 10.0.0.2) are joined
NIC K to NIC K by one QEMU dgram/unix wire per link, each NIC paced with tbf
(pkt.mbps).  The client runs `pktbench --mode flow`: one connection sending
for cut-at + down + tail seconds.  The cut side is the sender's end of link
0:
  visible  QMP set_link off on the client's NIC 0: the sender's driver and
           bonding see the carrier go; the server's NIC 0 stays up (its frames
           die at the downed NIC), as a cable pulled on the sender's side of a
           switch;
  silent   QMP set_link off on the server's NIC 0, the far end: frames die
           both ways, the sender's NIC 0 keeps its carrier (invisible to its
           miimon), the server sees its own link down.
cut-at seconds after the server's FLOWSTART line, the link is cut; down
seconds later it is restored (set_link on).

Clocks: each guest's serial console is read through a pipe and every line
stamped on arrival with the host's CLOCK_MONOTONIC; the QMP commands are
stamped the same way.  The receiver prints one FLOWBIN line per 100 ms bin
with its own time since t=0 (g_us), so collect-failover.py maps host stamps
onto the receiver's clock (host = g_us + offset, offset the smallest
difference over all bins).  Kernel messages (bonding, e1000) reach the
console at log level 7 (pkt.loglevel) and are placed by their arrival.

Writes DIR/server.tlog, DIR/client.tlog ("STAMP LINE" per console line),
DIR/*.qemu (QEMU's own output) and DIR/events.json (parameters, FLOWSTART
stamp, cut and restore stamps, the CPU other processes took).  Exit status
0 when both guests ended with "DONE ok" and both QMP commands ran; 3 when
both guests came up but no flow started (the system could not carry a
connection: no cut is made); 1 otherwise; 2 for bad usage.  Bounded:
--timeout (default: the flow plus 330 s; a boot under -icount on a busy host took over 150 s) kills both QEMUs; on any exit,
signals included, the QEMUs are killed and the sockets removed, and each
QEMU dies with this process (PR_SET_PDEATHSIG) even after a SIGKILL.
Standard library only.
"""
import argparse
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from lbqmp import set_link as qmp_set_link

# LB_SMP=N: N vCPUs per guest (common.sh); 1, the default, adds no option.
SMP = [] if os.environ.get("LB_SMP", "1") == "1" else ["-smp", os.environ["LB_SMP"]]

# Each system as its users would tune it for failover (tuned()).
SYSTEMS = {
    "bond-rr": "pkt.bond=rr pkt.miimon=@MII@",
    "bond-ab": "pkt.bond=ab pkt.miimon=@MII@ pkt.primary=eth0",
    "bond-ab-arp": "pkt.bond=ab pkt.arp=@ARP@ pkt.primary=eth0 pkt.bondopt=arp_missed_max:@MISSED@",
    "bond-rr-arp": "pkt.bond=rr pkt.arp=@ARP@ pkt.bondopt=arp_missed_max:@MISSED@",
    "mptcp": "pkt.bond=none pkt.proto=mptcp pkt.sysctl=net.mptcp.stale_loss_cnt:1",
}
# miimon and the ARP monitor at their shortest sensible intervals: MII_MS
# (a carrier check is a register read), ARP_MS with ARP_MISSED intervals
# missed before a slave is down (an ARP request and reply per slave and
# interval, both ways). 20 ms with the default 2 missed flapped before any
# cut on this shared host (a guest held up for 40 ms by a busy host fails
# over for nothing): ARP_MISSED x ARP_MS = 200 ms rides that out. For
# active-backup on e1000 the product must also outlast QEMU's e1000
# receive hold-off: it takes no frame for 1 s after every write of its
# receive control register (hw/net/e1000.c, flush_queue_timer), which
# bonding makes on each change of the active slave (the multicast lists
# move), so a new active slave is deaf for 1 s; with less, the two bonds of
# a back-to-back pair flap for ever (each declares its new slave dead
# before it can hear the other: the 0 Mbit/s, no-connection rows before).
MII_MS, ARP_MS, ARP_MISSED, E1000_HOLDOFF_MS = 10, 50, 4, 1000


def tuned(system, nic):
    missed = ARP_MISSED
    if system == "bond-ab-arp" and nic == "e1000":
        missed = -(-(E1000_HOLDOFF_MS + 200) // ARP_MS)
    return SYSTEMS[system].replace("@MII@", str(MII_MS)).replace("@ARP@", str(ARP_MS)).replace(
        "@MISSED@", str(missed))
NICDEV = {"e1000": "e1000", "virtio": "virtio-net-pci,disable-legacy=on"}
PR_SET_PDEATHSIG = 1


def mac(idx, k):
    return "52:54:00:4c:4%d:%02d" % (k, idx)


def die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Guest:
    """One QEMU whose serial console is read line by line and stamped."""

    def __init__(self, name, cmd, logdir):
        self.name, self.lines, self.cond = name, [], threading.Condition()
        self.tlog = open(os.path.join(logdir, name + ".tlog"), "w", encoding="utf-8")
        with open(os.path.join(logdir, name + ".qemu"), "w") as err:
            err.write(" ".join(cmd) + "\n")
            err.flush()
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=err, preexec_fn=die_with_parent)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            t = time.monotonic()
            line = raw.decode("utf-8", "replace").rstrip("\r\n").replace("\r", "")
            self.tlog.write("%.6f %s\n" % (t, line))
            self.tlog.flush()
            with self.cond:
                self.lines.append((t, line))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_line(self, prefix, deadline):
        """Stamp of the first line starting with prefix, or None (exit, deadline)."""
        with self.cond:
            while True:
                for t, line in self.lines:
                    if line.startswith(prefix):
                        return t
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self.reader.is_alive()):
                    return None
                self.cond.wait(min(left, 0.5))

    def has(self, text):
        with self.cond:
            return any(line == text for _, line in self.lines)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(2)
        self.tlog.close()


def qemu_cmd(a, sockdir, name, idx, args):
    other = 3 - idx
    nets = []
    for k in range(a.links):
        nets += ["-netdev", "dgram,id=n%d,local.type=unix,local.path=%s/%d.%d.sock,"
                 "remote.type=unix,remote.path=%s/%d.%d.sock" % (k, sockdir, idx, k, sockdir, other, k),
                 "-device", "%s,netdev=n%d,id=nic%d,mac=%s,romfile=" % (NICDEV[a.nic], k, k, mac(idx, k))]
    dumps = []
    if a.pcap and name == "server":  # every frame of each link, both ways, for debugging
        for k in range(a.links):
            dumps += ["-object", "filter-dump,id=fd%d,netdev=n%d,file=%s/server.n%d.pcap,maxlen=128"
                      % (k, k, a.logdir, k)]
    icount = ["-icount", "shift=0"] if a.icount else []
    return ["qemu-system-x86_64", "-accel", "tcg", *icount, "-cpu", "max", "-m", "256M", *SMP, "-display", "none",
            "-no-reboot", "-monitor", "none", "-qmp", "unix:%s/%s.qmp,server=on,wait=off" % (sockdir, name),
            "-serial", "stdio", "-kernel", os.path.join(a.guest, "vmlinuz"),
            "-initrd", os.path.join(a.guest, "initrd.gz"),
            "-append", "console=ttyS0 quiet panic=-1 no_timer_check pkt.nic=%s %s" % (a.nic, args)] + nets + dumps


def cpu_ticks(pids):
    """(busy ticks of the whole host, ticks of the processes pids)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]  # user nice system irq softirq steal
    own = 0
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                w = f.read().rsplit(")", 1)[1].split()
            own += int(w[11]) + int(w[12])  # utime stime
        except (OSError, IndexError, ValueError):
            pass
    return busy, own


def sleep_until(t):
    while True:
        left = t - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.5))


def run(a, sockdir, guests):
    flow_ms = int((a.cut_at + a.down + a.tail) * 1000)
    marks = "%d,%d" % (a.cut_at * 1000, (a.cut_at + a.down) * 1000)
    cpu = " pkt.flowcpu=500 pkt.flowlive=10" if a.icount else ""
    cpu += " pkt.flowgrace=%d" % a.grace_ms if a.grace_ms != 3000 else ""
    common = ("pkt.idle=120000 pkt.nics=%d pkt.mbps=%s pkt.mode=flow pkt.sizes=%d pkt.flowms=%d "
              "pkt.loglevel=7 pkt.flowmarks=%s%s %s %s" % (a.links, a.mbps, a.size, flow_ms, marks, cpu,
                                                            tuned(a.system, a.nic), a.append))
    start = time.monotonic()
    deadline = start + a.timeout
    for name, idx, role in (("server", 1, "pkt.role=server pkt.host=1 pkt.peerhost=2"),
                            ("client", 2, "pkt.role=client pkt.host=2 pkt.peerhost=1")):
        guests[name] = Guest(name, qemu_cmd(a, sockdir, name, idx, role + " " + common), a.logdir)
    ev = {"system": a.system, "cut": a.cut, "links": a.links, "run": a.run, "mbps": a.mbps, "size": a.size,
          "flow_ms": flow_ms, "cut_at_s": a.cut_at, "down_s": a.down, "tail_s": a.tail,
          "near": "client", "nic": a.nic, "append": a.append, "host_start": start, "icount": a.icount,
          "config": tuned(a.system, a.nic)}
    why = None
    h0 = guests["server"].wait_line("FLOWSTART", min(deadline, start + 300))
    if h0 is None:
        why = "the server printed no FLOWSTART"
        # Both guests up and configured but no flow: the system under test
        # could not carry a connection (a result, not a harness failure).
        ev["no_flow"] = all(g.wait_line("GUEST up", 0) is not None for g in guests.values())
    else:
        ev["host_flowstart"] = h0
        pids = [g.proc.pid for g in guests.values()]
        cpu0 = cpu_ticks(pids)
        target = "client" if a.cut == "visible" else "server"
        qmp = os.path.join(sockdir, target + ".qmp")
        try:
            # On the sender's FLOWMARK lines (its clock, cut_at s from its
            # start and down s later): under -icount a guest's clock may
            # run slower than the host's.
            cli = guests["client"]
            ev["host_mark_cut"] = cli.wait_line("FLOWMARK i=0", deadline)
            if ev["host_mark_cut"] is None:
                raise RuntimeError("no FLOWMARK i=0 from the client")
            ev["cut_node"], ev["cut_nic"] = target, "nic0"
            ev["host_cut"] = qmp_set_link(qmp, "nic0", False)
            # A sender whose writes block (the flow stalled by the cut)
            # prints no more marks: then the restore comes on the host's
            # time, twice the host seconds its clock took per guest second
            # up to the cut (plus 10 s), and the stall is the result.
            per_s = max(1.0, (ev["host_mark_cut"] - h0) / max(a.cut_at, 0.1))
            ev["host_mark_restore"] = cli.wait_line(
                "FLOWMARK i=1", min(deadline, ev["host_mark_cut"] + a.down * per_s * 2 + 10))
            if ev["host_mark_restore"] is None:
                if cli.wait_line("FLOWMARK i=0", 0) is None or time.monotonic() >= deadline:
                    raise RuntimeError("no FLOWMARK i=1 from the client")
                ev["restore_on_host"] = "no FLOWMARK i=1 by then: the sender's writes blocked"
            ev["host_restore"] = qmp_set_link(qmp, "nic0", True)
            # Cores that other processes took during the flow: the noise.
            sleep_until(h0 + flow_ms / 1000.0)
            cpu1 = cpu_ticks(pids)
            hz = os.sysconf("SC_CLK_TCK")
            ev["host_other_cores"] = round(max(0, (cpu1[0] - cpu0[0]) - (cpu1[1] - cpu0[1])) / hz
                                           / (time.monotonic() - h0), 2)
        except (OSError, RuntimeError, ValueError) as e:
            why = "QMP: %s" % e
    # Both guests power off after their DONE line; the flow ends by itself
    # (pktbench's own deadline), so this wait is bounded twice.
    for g in guests.values():
        try:
            g.proc.wait(max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            why = why or "%s still running at the %d s timeout" % (g.name, a.timeout)
    for g in guests.values():
        g.stop()
        if why is None and not g.has("DONE ok"):
            why = "%s did not end with DONE ok" % g.name
    ev["host_end"] = time.monotonic()
    ev["ok"], ev["error"] = why is None, why
    with open(os.path.join(a.logdir, "events.json"), "w") as f:
        json.dump(ev, f, indent=1)
        f.write("\n")
    return why


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", required=True, choices=sorted(SYSTEMS))
    ap.add_argument("--cut", required=True, choices=("visible", "silent"))
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--links", type=int, default=2, choices=(2, 3, 4))
    ap.add_argument("--mbps", default="100", help="tbf rate of every NIC, Mbit/s")
    ap.add_argument("--size", type=int, default=8192, help="write size of the sender")
    ap.add_argument("--cut-at", type=float, default=5.0, help="seconds from FLOWSTART to the cut")
    ap.add_argument("--down", type=float, default=10.0, help="seconds from the cut to the restore")
    ap.add_argument("--tail", type=float, default=5.0, help="seconds of flow after the restore")
    ap.add_argument("--grace-ms", type=int, default=3000,
                    help="the receiver's wait past the flow's duration, on its clock (unpaced under -icount an "
                         "idle receiver's clock runs faster than a busy sender's)")
    ap.add_argument("--guest", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                    "..", "..", "build", "linux-baseline"))
    ap.add_argument("--nic", default="e1000", choices=sorted(NICDEV))
    ap.add_argument("--timeout", type=float, default=0, help="seconds for the whole run")
    ap.add_argument("--append", default="", help="more guest kernel arguments (both guests)")
    ap.add_argument("--pcap", action="store_true", help="dump the server's links to LOGDIR/server.nK.pcap")
    ap.add_argument("--run", type=int, default=1, help="run number, recorded in events.json")
    ap.add_argument("--icount", action="store_true",
                    help="-icount shift=0 and both ends' busy ns sampled every 500 ms (FLOWCPU lines)")
    a = ap.parse_args()
    if not a.timeout:
        a.timeout = a.cut_at + a.down + a.tail + 330 + a.grace_ms / 1000
    for f in ("vmlinuz", "initrd.gz"):
        if not os.path.isfile(os.path.join(a.guest, f)):
            sys.exit("run-failover.py: no %s in %s (run build.sh)" % (f, a.guest))
    os.makedirs(a.logdir, exist_ok=True)
    sockdir = tempfile.mkdtemp(prefix="lb-failover.")
    guests = {}

    def on_signal(sig, _frame):
        raise SystemExit(128 + sig)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        why = run(a, sockdir, guests)
    finally:
        for g in guests.values():
            g.stop()
        shutil.rmtree(sockdir, ignore_errors=True)
    if why:
        print("run-failover.py: %s %s links=%d: %s (logs: %s)" % (a.system, a.cut, a.links, why, a.logdir),
              file=sys.stderr)
        with open(os.path.join(a.logdir, "events.json")) as f:
            return 3 if json.load(f).get("no_flow") else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
