#!/usr/bin/env python3
"""Round trips and bursts between two VMs of this kernel (Figures 5-7).

make bench-rtt / make bench-burst. Each run boots a server and a client VM
(tools/net-pair.sh: QEMU dgram over unix sockets, e1000, TCG); RUNS boot
pairs per benchmark, medians over them. T1 in guest instructions comes from
one more pair under -icount shift=0, where the guest TSC counts instructions.
Usage: kernelnet.py rtt|burst KERNEL OUTDIR RUNS [--sizes 64,8192] [--quick]
(--quick: a few repetitions per size, for make bench-smoke). Writes OUTDIR/kernel-rtt.json or OUTDIR/kernel-burst.json (BENCH.md rows).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from env import env  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIZES = [64, 128, 256, 512, 1024, 1500, 2048, 4096, 8192]
BATCH = 128


def kv(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


def pair(kernel, server, client, icount=False):
    """Boots one pair; returns (server log, client log)."""
    logdir = tempfile.mkdtemp(prefix="bench-", dir=os.path.join(ROOT, "build"))
    envv = dict(os.environ)
    extra = os.environ.get("BENCH_KARGS", "")  # kernel options for both VMs
    server, client = f"{server} {extra}".strip(), f"{client} {extra}".strip()
    if icount:
        envv["QEMU_EXTRA"] = "-icount shift=0"
        server += " icount=1"
        client += " icount=1"
    r = subprocess.run([os.path.join(ROOT, "tools/net-pair.sh"), kernel, server, client, logdir,
                        "600"], env=envv, capture_output=True, text=True, check=False)
    logs = []
    for side in ("server", "client"):
        with open(os.path.join(logdir, side + ".log"), errors="replace") as f:
            logs.append(f.read())
    if r.returncode != 0:
        sys.exit(f"bench: a VM failed ({r.stdout.strip()}); logs in {logdir}")
    return logs


def rtt(kernel, runs, sizes, quick):
    per = {s: [] for s in sizes}
    pooled = {s: [] for s in sizes}
    arg = ",".join(map(str, sizes))
    for i in range(runs):
        print(f"bench-rtt: kernel pair {i + 1}/{runs} ({len(sizes)} sizes)", flush=True)
        _, cl = pair(kernel, "run=pingpong role=server peer=@CMAC0@",
                     f"run=pingpong role=client peer=@SMAC0@ sizes={arg} "
                     + ("iters=10 warm=2" if quick else "iters=30 warm=3"))
        for line in cl.splitlines():
            if line.startswith("RESULT rtt"):
                d = kv(line)
                per[int(d["bytes"])].append(int(d["median_ns"]) / 1000)
            elif line.startswith("RTT "):
                d = kv(line)
                pooled[int(d["bytes"])].append(int(d["ns"]) / 1000)
    rows = []
    for s in sizes:
        p = sorted(pooled[s])
        rows.append({"system": "kernel", "bytes": s, "median_us": round(statistics.median(per[s]), 1),
                     "p99_us": round(p[min(len(p) - 1, len(p) * 99 // 100)], 1),
                     "runs_median_us": [round(x, 1) for x in per[s]]})
    return rows


def burst_runs(kernel, runs, sizes, icount, quick):
    arg = ",".join(map(str, sizes))
    res = {s: [] for s in sizes}
    stats = []
    for i in range(runs):
        what = "icount" if icount else "real-time"
        print(f"bench-burst: kernel {what} pair {i + 1}/{runs} ({len(sizes)} sizes)", flush=True)
        sv, cl = pair(kernel, "run=burst role=server peer=@CMAC0@",
                      f"run=burst role=client peer=@SMAC0@ sizes={arg} "
                      + ("reps=3 warm=1" if quick else "reps=5 warm=1"), icount)
        for line in cl.splitlines():
            if line.startswith("RESULT burst"):
                d = kv(line)
                res[int(d["bytes"])].append(d)
        stats += [kv(line) for line in sv.splitlines() if line.startswith("STATS burst")]
    return res, stats


def burst(kernel, runs, sizes, quick):
    real, stats = burst_runs(kernel, runs, sizes, False, quick)
    insn, _ = burst_runs(kernel, 1, sizes, True, quick)
    batches = sum(int(s["batches"]) for s in stats)
    irqs = sum(int(s["irqs"]) for s in stats)
    rows = []
    for s in sizes:
        hz = int(real[s][0]["tsc_hz"])
        med = lambda k, src=real[s]: statistics.median(int(d[k]) for d in src)  # noqa: E731
        t0 = med("t0_tsc") * 1e6 / hz
        rows.append({
            "system": "kernel", "bytes": s, "mbps": round(BATCH * s * 8 / t0, 2),
            "t0_us": round(t0, 1), "t1_us": round(med("t1_tsc") * 1e6 / hz, 1),
            "t2_us": round(med("t2_tsc") * 1e6 / hz, 1),
            "t1_insns": int(statistics.median(int(d["t1_tsc"]) for d in insn[s])),
            "cpu_copy_bytes_per_pkt": 0.0,  # sender: gather from the user's frames
            "doorbells_per_batch": med("doorbells"),
            "irqs_per_batch": round(irqs / batches, 3) if batches else None,
            "reps": len(real[s]),
        })
    # The receiver copies only frames up to its copy threshold.
    copied = sum(int(x["bytes_copied"]) for x in stats)
    pkts = sum(int(x["packets"]) for x in stats)
    for r in rows:
        r["rx_copy_bytes_per_pkt_all_sizes"] = round(copied / pkts, 2) if pkts else None
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", choices=("rtt", "burst"))
    ap.add_argument("kernel")
    ap.add_argument("outdir")
    ap.add_argument("runs", type=int, help="boot pairs")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--quick", action="store_true", help="a few repetitions per size")
    a = ap.parse_args()
    which, kernel, outdir, runs = a.bench, a.kernel, a.outdir, a.runs
    sizes = [int(x) for x in a.sizes.split(",")]
    rows = rtt(kernel, runs, sizes, a.quick) if which == "rtt" else burst(kernel, runs, sizes, a.quick)
    clock = "real" if which == "rtt" else "real+icount"
    res = {"bench": which, "env": env("tcg", clock, runs, "dgram-unix", "e1000"), "rows": rows}
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, f"kernel-{which}.json")
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    for r in rows:
        print(json.dumps(r))
    print(f"bench-{which}: wrote {out}")


if __name__ == "__main__":
    main()
