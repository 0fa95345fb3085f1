#!/usr/bin/env python3
"""One relay boot: Linux guests in a line, the middle ones IP routers.

    run-relay.py --hops H --links L --logdir DIR [--icount] [--modes tcp,raw,rtt]
                 [--sizes 1500,8192] [--runs N] [--bursts N] [--rtts N] [--warmup N]
                 [--bytes N] [--mbps R [--pace all|client]] [--guest DIR] [--timeout S]

hops 0: client and server joined directly; 1: client - router - server;
2: client - router - router - server (4 VMs).  Segment s (between node s
and node s+1) is L QEMU dgram/unix wires, one per link, e1000 at both ends;
with L > 1 each node bonds a segment's NICs (balance-rr).  Every guest boots
the baseline kernel with the relay overlay (initrd-relay.gz, rdinit=/relay-init,
see relay-init.sh): addresses, static routes, ip_forward on the routers, and
relaybench in its role.  --icount runs the routers (only them) under
-icount shift=0, so that their busy time counts instructions.

Each console is kept in DIR/nodeI.log; DIR/result.json holds every node's
measurement lines (RESULT, RMARK, LOSS, SRVSTAT, NETDEV, DONE) and the
verdict.  Exit status 0 only if every guest ended with "DONE ok".  A hard
timeout (default 600 s) ends everything; on any exit, signals included, the
QEMUs are killed (they also die with this process) and the sockets removed.
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
import time

# LB_SMP=N: N vCPUs per guest (common.sh); 1, the default, adds no option.
SMP = [] if os.environ.get("LB_SMP", "1") == "1" else ["-smp", os.environ["LB_SMP"]]

PR_SET_PDEATHSIG = 1
KEEP = ("RESULT ", "RMARK ", "RSTAT ", "LOSS ", "SRVSTAT ", "NETDEV ", "DONE ", "GUEST ", "READY ")


def mac(seg, link, node):
    return "52:54:00:5e:%x%x:%02x" % (seg, link, node)


def die_with_parent():
    # SIGTERM, not SIGKILL: `timeout` passes it on to its QEMU (a killed
    # `timeout` would leave the QEMU running).
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def stop(p):
    """Ends one `timeout qemu` pair: timeout leads its own process group."""
    if p.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 3), (signal.SIGKILL, 5)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(wait)
            return
        except subprocess.TimeoutExpired:
            pass


def qemu_cmd(a, node, nodes, sockdir, logdir):
    nets = []
    for seg in (node - 1, node):
        if seg < 0 or seg >= nodes - 1:
            continue
        other = seg + 1 if seg == node else seg
        for link in range(a.links):
            nid = "s%dl%d" % (seg, link)
            local = os.path.join(sockdir, "%s.n%d.sock" % (nid, node))
            remote = os.path.join(sockdir, "%s.n%d.sock" % (nid, other))
            nets += ["-netdev", "dgram,id=%s,local.type=unix,local.path=%s,remote.type=unix,remote.path=%s"
                     % (nid, local, remote),
                     "-device", "e1000,netdev=%s,mac=%s,romfile=" % (nid, mac(seg, link, node))]
    router = 0 < node < nodes - 1
    args = ("console=ttyS0 quiet panic=-1 no_timer_check rdinit=/relay-init relay.node=%d relay.nodes=%d relay.links=%d "
            "relay.modes=%s relay.sizes=%s relay.runs=%d relay.bursts=%d relay.rtts=%d relay.warmup=%d "
            "relay.bytes=%d" % (node, nodes, a.links, a.modes, a.sizes, a.runs, a.bursts, a.rtts, a.warmup,
                                a.bytes))
    if a.mbps:
        args += " relay.mbps=%s relay.pace=%s" % (a.mbps, a.pace)
    # Guests under -icount boot several times slower: the client waits longer.
    args += " relay.probe=%d" % (240000 if a.icount else 90000)
    extra = ["-icount", "shift=0"] if a.icount and router else []
    return ["timeout", "-k", "5", str(int(a.timeout)), "qemu-system-x86_64", "-accel", "tcg", "-cpu", "max",
            "-m", "256M", *SMP, "-nographic", "-no-reboot", "-monitor", "none"] + extra + [
            "-serial", "file:" + os.path.join(logdir, "node%d.log" % node),
            "-kernel", os.path.join(a.guest, "vmlinuz"),
            "-initrd", os.path.join(a.guest, "relay", "initrd-relay.gz"),
            "-append", args] + nets


def lines_of(logdir, node):
    try:
        with open(os.path.join(logdir, "node%d.log" % node), "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [ln.replace("\r", "") for ln in text.split("\n")]


def run(a, sockdir, procs):
    nodes = a.hops + 2
    t0 = time.monotonic()
    # Server and routers first, so the client's probes find them sooner.
    for node in list(range(nodes - 1, 0, -1)) + [0]:
        cmd = qemu_cmd(a, node, nodes, sockdir, a.logdir)
        with open(os.path.join(a.logdir, "node%d.qemu" % node), "w") as err:
            err.write(" ".join(cmd) + "\n")
            err.flush()
            procs[node] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                           preexec_fn=die_with_parent)
    rc = {0: procs[0].wait()}
    # The client's quits stop the others; they power off within seconds.
    deadline = time.monotonic() + 30
    for node in range(1, nodes):
        try:
            rc[node] = procs[node].wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            stop(procs[node])
            rc[node] = procs[node].wait()
    why = ""
    out = {}
    for node in range(nodes):
        lines = lines_of(a.logdir, node)
        out[node] = [ln for ln in lines if ln.startswith(KEEP)]
        if rc[node] == 124 and not why:
            why = "node %d: QEMU timed out after %d s" % (node, a.timeout)
        if "DONE ok" not in lines and not why:
            fails = [ln for ln in lines if ln.startswith("DONE fail")]
            why = "node %d: %s" % (node, fails[0] if fails else "no DONE line")
    return why, out, time.monotonic() - t0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hops", type=int, required=True, choices=(0, 1, 2))
    ap.add_argument("--links", type=int, default=1, choices=(1, 2, 3, 4))
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--icount", action="store_true", help="routers under -icount shift=0")
    ap.add_argument("--modes", default="tcp,raw,rtt")
    ap.add_argument("--sizes", default="1500,8192")
    ap.add_argument("--runs", type=int, default=3, help="TCP connections per size")
    ap.add_argument("--bursts", type=int, default=20, help="UDP bursts per size")
    ap.add_argument("--rtts", type=int, default=50, help="round trips per size")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--bytes", type=int, default=8 << 20, help="bytes per TCP connection")
    ap.add_argument("--mbps", default="", help="pace every NIC (tbf), Mbit/s")
    ap.add_argument("--pace", default="all", choices=("all", "client"), help="--mbps: every node's NICs or "
                    "only the client's (the offered load)")
    ap.add_argument("--guest", default=os.path.join(root, "build", "linux-baseline"))
    ap.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args()
    for f in ("vmlinuz", "relay/initrd-relay.gz"):
        if not os.path.isfile(os.path.join(a.guest, f)):
            sys.exit("run-relay.py: no %s in %s (run build-relay.sh)" % (f, a.guest))
    os.makedirs(a.logdir, exist_ok=True)
    sockdir = tempfile.mkdtemp(prefix="lb-relay.")
    procs = {}

    def on_signal(sig, _frame):
        raise SystemExit(128 + sig)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        why, out, secs = run(a, sockdir, procs)
    finally:
        for p in procs.values():
            stop(p)
        shutil.rmtree(sockdir, ignore_errors=True)
    res = {"hops": a.hops, "links": a.links, "icount": a.icount, "mbps": a.mbps or None,
           "ok": not why, "why": why, "seconds": round(secs, 1), "nodes": out}
    with open(os.path.join(a.logdir, "result.json"), "w") as f:
        json.dump(res, f, indent=1)
    for ln in out.get(0, []):
        if ln.startswith(("RESULT ", "LOSS ")):
            print(ln)
    if why:
        print("run-relay.py: hops=%d links=%d%s failed: %s (logs: %s)"
              % (a.hops, a.links, " icount" if a.icount else "", why, a.logdir), file=sys.stderr)
        return 1
    print("run-relay.py: hops=%d links=%d%s ok in %.0f s" % (a.hops, a.links, " icount" if a.icount else "", secs),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
