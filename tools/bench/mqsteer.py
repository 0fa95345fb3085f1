#!/usr/bin/env python3
"""How the host's tap steers the wire format over a multiqueue virtio-net NIC:
make bench-mqsteer (docs/design.md, "Multiqueue NICs").

Per run, a private network namespace (ip netns, as root) with a bridge, a
two-queue tap (multi_queue) and a one-queue tap, made afresh unless the
scenario says otherwise. The server (-smp 2, nicq=2, receive queue 0
interrupting CPU 0 and queue 1 CPU 1) receives a plain stream of 512 (hop:
1024) packets of 8192 bytes from the client on the other tap, in batches of
64, two batches unacknowledged (user/stream.c). Scenarios:
  cpu0      the server on CPU 0 (its acknowledgements leave from pair 0)
  cpu1      the server on CPU 1 (pair 1)
  hop       on CPU 0, moving to CPU 1 after 512 packets (hop_at=)
  reuse     cpu0 twice on the same tap, no pause: the second run's row (the
            tap's flow table still holds the first run's queue)
Each run takes other MACs (run k: ..:k on both sides): the tap's hash of a
frame of the wire format does not depend on them.

Each row: the frames each receive queue carried and the interrupts it raised
(the kernel's exit line "nicq:"), the times sends moved to another pair
(tx_moves), and the stream's own check (corrupt: packets out of order, of a
wrong size or bytes; missing). first_queue: the queue of the first
frame (the kernel's "first=q"), the one the tap chose before the server
sent anything: by hash on a fresh tap, by the memory of the run before in
reuse.

Usage: mqsteer.py KERNEL OUTDIR RUNS [--scenarios cpu0,cpu1,hop,reuse]
Writes OUTDIR/mqsteer.json.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from env import env  # noqa: E402

SIZE = 8192
NICQ = re.compile(r"nicq: NIC 0 rx q0=(\d+) q1=(\d+) irqs q0=(\d+) q1=(\d+) tx_moves=(\d+) first=q(-?\d+)")
RESULT = re.compile(r"RESULT stream system=kernel role=server .*packets=(\d+) .*corrupt=(\d+) missing=(\d+)")


def sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


class Net:
    """A namespace with br0, tapA (two queues) and tapB."""

    def __init__(self, name):
        self.ns = name
        steps = [["ip", "netns", "add", name],
                 ["ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                  "net.ipv6.conf.default.disable_ipv6=1"],
                 ["ip", "-n", name, "link", "add", "br0", "type", "bridge"],
                 ["ip", "-n", name, "tuntap", "add", "dev", "tapA", "mode", "tap", "multi_queue"],
                 ["ip", "-n", name, "tuntap", "add", "dev", "tapB", "mode", "tap"]]
        steps += [["ip", "-n", name, "link", "set", d, "mtu", "9000", "up"] for d in ("br0", "tapA", "tapB")]
        steps += [["ip", "-n", name, "link", "set", t, "master", "br0"] for t in ("tapA", "tapB")]
        for s in steps:
            r = sh(*s)
            if r.returncode:
                self.close()
                sys.exit(f"mqsteer: {' '.join(s)}: {r.stderr.strip()}")

    def close(self):
        sh("ip", "netns", "del", self.ns)


def boot(net, kernel, log, cmdline, smp, nic):
    e = dict(os.environ, SERIAL=log, QEMU_SMP=str(smp))
    return subprocess.Popen(["ip", "netns", "exec", net.ns, os.path.join(ROOT, "tools", "qemu-run.sh"),
                             kernel, cmdline, "60"] + nic, env=e,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def one(net, kernel, tmp, k, server_cpu, hop):
    """One stream; the server's figures, or a row with error."""
    smac, cmac = f"52:54:00:aa:10:{k:02x}", f"52:54:00:bb:20:{k:02x}"
    count = 1024 if hop else 512
    slog, clog = os.path.join(tmp, f"s{k}.log"), os.path.join(tmp, f"c{k}.log")
    for p in (slog, clog):
        if os.path.exists(p):
            os.remove(p)
    scmd = f"run=stream role=server peer={cmac} count={count} nicq=2 nicqirq=0,1 runcpu={server_cpu}"
    if hop:
        scmd += f" hop_at={hop} hop_cpu=1"
    tap = "tap,id=n0,ifname={},script=no,downscript=no,vhost=off{}"
    s = boot(net, kernel, slog, scmd, 2, ["-netdev", tap.format("tapA", ",queues=2"), "-device",
             f"virtio-net-pci,netdev=n0,mq=on,vectors=6,romfile=,mac={smac}"])
    for _ in range(600):
        if os.path.exists(slog) and "READY" in open(slog, errors="replace").read():
            break
        if s.poll() is not None:
            break
        subprocess.run(["sleep", "0.1"])
    c = boot(net, kernel, clog, f"run=stream role=client peer={smac} count={count}", 1,
             ["-netdev", tap.format("tapB", ""), "-device", f"virtio-net-pci,netdev=n0,romfile=,mac={cmac}"])
    crc, src = c.wait(), s.wait()
    text = open(slog, errors="replace").read() if os.path.exists(slog) else ""
    q, r = NICQ.search(text), RESULT.search(text)
    if src or crc:
        keep = os.path.join(tempfile.gettempdir(), f"mqsteer-failed-{os.getpid()}-{k}")
        os.makedirs(keep, exist_ok=True)
        for p in (slog, clog):
            if os.path.exists(p):
                subprocess.run(["cp", p, keep])
        print(f"mqsteer: server status {src}, client status {crc}: logs in {keep}", flush=True)
    if not q or not r:
        keep = os.path.join(tempfile.gettempdir(), f"mqsteer-failed-{os.getpid()}-{k}")
        os.makedirs(keep, exist_ok=True)
        for p in (slog, clog):
            if os.path.exists(p):
                subprocess.run(["cp", p, keep])
        return {"error": f"server status {src}, client status {crc}, no nicq or RESULT line "
                         f"(logs: {keep})"}
    q0, q1, i0, i1, moves, first = (int(x) for x in q.groups())
    return {"q0_frames": q0, "q1_frames": q1, "q0_irqs": i0, "q1_irqs": i1, "tx_moves": moves,
            "packets": int(r.group(1)), "corrupt": int(r.group(2)), "missing": int(r.group(3)),
            "first_queue": first, "mac_suffix": k, "server_status": src, "client_status": crc}


SCENARIOS = {"cpu0": (0, 0), "cpu1": (1, 0), "hop": (0, 512), "reuse": (0, 0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("kernel")
    ap.add_argument("out")
    ap.add_argument("runs", type=int)
    ap.add_argument("--scenarios", default="cpu0,cpu1,hop,reuse")
    a = ap.parse_args()
    rows, k = [], 0
    with tempfile.TemporaryDirectory(prefix="mqsteer.") as tmp:
        for run in range(a.runs):  # interleaved: each run goes through every scenario
            for sc in a.scenarios.split(","):
                cpu, hop = SCENARIOS[sc]
                net = Net(f"mqs{os.getpid()}_{k}")
                try:
                    k += 1
                    if sc == "reuse":  # the first of the two, not kept
                        one(net, a.kernel, tmp, k, cpu, hop)
                        k += 1
                    row = one(net, a.kernel, tmp, k, cpu, hop)
                finally:
                    net.close()
                row.update({"system": "kernel", "scenario": sc, "run": run, "server_cpu": cpu,
                            "hop_at": hop, "bytes": SIZE})
                print(f"mqsteer: {sc} run {run}: " + (row.get("error") or
                      f"q0={row['q0_frames']} q1={row['q1_frames']} tx_moves={row['tx_moves']} "
                      f"first_queue={row['first_queue']} corrupt={row['corrupt']}"), flush=True)
                rows.append(row)
    doc = {"bench": "mqsteer", "env": dict(env("tcg", "real", a.runs, backend="tap", nic="virtio"),
                                           queues=2, smp_server=2), "rows": rows}
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "mqsteer.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"mqsteer: wrote {path}")
    sys.exit(1 if any("error" in r for r in rows) else 0)


if __name__ == "__main__":
    main()
