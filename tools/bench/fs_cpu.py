#!/usr/bin/env python3
"""The file service against Linux NFS, CPU work (make bench-fs, issue 26):
busy guest instructions per byte at both ends, under -icount shift=0.

One call is one boot pair of one system in one mode, so that fs.sh can
interleave the systems run by run (as multilink.sh does its CPU work):
  cpu      every NIC paced at --link-mbps (this kernel's pacer, Linux's tbf),
           the client offering --offered-mbps (each I/O started at
           i x length x 8 / rate on the guest clock), far below what either
           CPU carries: the busy fractions show it;
  unpaced  no pacing, I/O back to back: the CPU (guest instructions, the
           -icount clock), not the host, is the limit.
Per I/O length (--lens, bytes) a file of that length, then phases of
--bytes / length I/Os each: cpu_write (this kernel: fs_write of the length;
Linux: pwrite + fsync), cpu_read (fs_read; Linux: pread on an O_DIRECT
descriptor, every byte from the server) and, Linux only, cpu_read_cached
(pread on a buffered descriptor: the client's page cache the writes
filled, reported as a cache, never as the wire). Every byte read is
compared after its phase. Both ends' busy ticks over each phase (elapsed
minus halted: this kernel's sysinfo idle_tsc, the server's through
FS_OP_STATS busy_tsc; Linux: CLOCK_MONOTONIC less cpu0's idle and iowait
sleep time from /proc/timer_list (benchnet.h busy_ns, as pktbench's
multilink CPU work), the server's through fsbench busyd), less the same
over an empty window. Under -icount shift=0 a busy ns is one instruction.
This kernel's nodes run poll=irq (a NIC goes back to its interrupt once its
ring is empty: the idle CPU halts, as Linux's does).

Linux mounts (Debian 6.1's NFS client, rsize = wsize 1 MiB): NFSv4.2 with
nconnect 1 and 4, NFSv3 with nconnect 4 (--linux-conf).

Usage: fs_cpu.py kernel|linux MODE KERNEL OUTDIR [--first] [--lens ...]
                 [--bytes B] [--link-mbps 100] [--offered-mbps 40] [--guest DIR]
Appends its samples to OUTDIR/fs-cpu.samples.jsonl (--first: afresh) and
rewrites OUTDIR/kernel-fs-cpu.json and linux-fs-cpu.json (medians over every
run so far, rows as check_schema.py's "fs" rows with mode cpu or unpaced).
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import stats  # noqa: E402
from env import env  # noqa: E402
from fs import ROOT, cluster_run, keep_logs, kv, run_nfs, topology  # noqa: E402

LENS = "8192,65536,1048576,4194304,16777216"
SAMPLES = "fs-cpu.samples.jsonl"


def save_fail(tag, logs):
    """Every log of a failed or unverified pair, kept (fs.keep_logs)."""
    keep_logs("fs-cpu", tag, logs)


def kernel_pair(a, mode):
    """One -icount pair of this kernel: its FSB cpu lines as dicts."""
    mbps = a.link_mbps if mode == "cpu" else 0
    offered = a.offered_mbps if mode == "cpu" else 0
    client = f"cpu_sizes={a.lens} cpu_bytes={a.bytes} cpu_mbps={offered} timeout_ms=20000"
    with tempfile.TemporaryDirectory(prefix="fscpu.") as d:
        disk = os.path.join(d, "disk.img")
        with open(disk, "wb") as f:
            f.truncate(256 << 20)
        topo = topology(os.path.abspath(a.kernel), disk, 1, mbps, 0, a.guest, client, 0, "poll=irq icount=1")
        topo["name"] = f"fscpu-{mode}"
        topo["timeout"] = 1500
        for n in topo["nodes"]:
            n["qemu_extra"] = n.get("qemu_extra", []) + ["-icount", "shift=0"]
        r, _, logs = cluster_run(topo, d)
    lines = [kv(ln[ln.index("FSB op="):]) for ln in logs["c"].splitlines() if "FSB op=cpu_" in ln]
    bad = r.returncode != 0 or not lines or any(x.get("verified") != "1" for x in lines) \
        or "sum_errors=0" not in logs["c"]
    if bad:
        save_fail(f"kernel-{mode}", dict(logs, runner=r.stdout + r.stderr))
        if r.returncode != 0 or not lines:
            raise RuntimeError(f"kernel cpu pair {mode} failed ({r.returncode}): {r.stdout[-400:]}")
    return [dict(x, system="kernel") for x in lines]


def linux_pair(a, mode):
    """One -icount pair of Linux NFS guests (run-nfs.sh): their FSB cpu lines."""
    mbps = a.link_mbps if mode == "cpu" else 0
    offered = a.offered_mbps if mode == "cpu" else 0
    append = (f"nfs.cpu={a.lens} nfs.cpubytes={a.bytes} nfs.cpumbps={offered} nfs.rsize=1048576 "
              f"nfs.cpuconf={a.linux_conf}")
    r, logs = run_nfs(["--links", "1", "--mbps", str(mbps), "--icount", "--timeout", "2400", "--guest", a.guest,
                       "--append", append], "fscpu-linux.")
    lines = [kv(ln[ln.index("FSB op="):]) for ln in r.stdout.splitlines() if ln.startswith("FSB op=cpu_")]
    if r.returncode != 0 or not lines or any(x.get("verified") != "1" for x in lines):
        save_fail(f"linux-{mode}", logs)
        if r.returncode != 0 or not lines:
            raise RuntimeError(f"linux cpu pair {mode} failed ({r.returncode}): {r.stderr[-400:]}")
    for x in lines:
        x["system"] = f"{x['system']}-nc{x['nconnect']}"
    return lines


def sample_of(x, mode, run, a):
    n = int(x["io_bytes"]) * int(x["ops"])  # 0 for cpu_idle
    return {"system": x["system"], "mode": mode, "op": x["op"], "io_bytes": int(x["io_bytes"]), "ops": int(x["ops"]),
            "bytes": n, "us": float(x["us"]), "mbps": float(x["mbps"]), "run": run,
            "offered_mbps": a.offered_mbps if mode == "cpu" else 0, "link_mbps": a.link_mbps if mode == "cpu" else 0,
            "busy_c": int(x["busy_c"]), "busy_s": int(x["busy_s"]), "mark_c": int(x["mark_c"]),
            "mark_s": int(x["mark_s"]), "verified": x.get("verified") == "1",
            **({"nconnect": int(x["nconnect"]), "rsize_eff": int(x.get("rsize_eff", 0))} if "nconnect" in x else {})}


def cpu_rows(samples):
    """Rows per system, mode, op and length: medians over the runs of each
    end's busy instructions per byte (the phase's less the empty window's),
    the guest-clock Mbit/s and the busy fractions; cpu_bound_mbps is what
    the busier end's instructions alone allow at one instruction per ns
    (as multilink.py's)."""
    pts, idle = {}, idle_rates(samples)
    for x in samples:
        if x["op"] != "cpu_idle":
            pts.setdefault((x["system"], x["mode"], x["op"], x["io_bytes"]), []).append(x)
    rows = []
    for (system, mode, op, n), xs in sorted(pts.items()):
        c = [max(0, x["busy_c"] - x["mark_c"]) / x["bytes"] for x in xs]
        s = [max(0, x["busy_s"] - x["mark_s"]) / x["bytes"] for x in xs]
        mc, ms = stats.median(c), stats.median(s)
        bg = idle.get((system, mode)) or {}
        bgc = [bg["client"] * x["us"] / 1e6 / x["bytes"] for x in xs] if bg else None
        bgs = [bg["server"] * x["us"] / 1e6 / x["bytes"] for x in xs] if bg else None
        rows.append({
            "system": system, "mode": mode, "op": op, "io_bytes": n, "links": 1, "rtt_added_ms": 0.0,
            "link_mbps": xs[0]["link_mbps"], "offered_mbps": xs[0]["offered_mbps"], "stream_bytes": xs[0]["bytes"],
            "ops": xs[0]["ops"], "mbps": stats.rnd(stats.median([x["mbps"] for x in xs]), 2),
            "busy_insns_per_byte_client": stats.rnd(mc, 3), "busy_insns_per_byte_server": stats.rnd(ms, 3),
            "busy_insns_per_byte": stats.rnd(mc + ms, 3),
            "busy_frac_client": stats.rnd(stats.median([x["busy_c"] / (x["us"] * 1000) for x in xs]), 3),
            "busy_frac_server": stats.rnd(stats.median([x["busy_s"] / (x["us"] * 1000) for x in xs]), 3),
            "cpu_bound_mbps": stats.rnd(8000 / max(mc, ms, 1e-9), 1),
            "runs_client": [stats.rnd(v, 3) for v in c], "runs_server": [stats.rnd(v, 3) for v in s],
            **({"background_insns_per_byte_client": stats.rnd(stats.median(bgc), 3),
                "background_insns_per_byte_server": stats.rnd(stats.median(bgs), 3)} if bg else {}),
            "n": len(xs), "runs": len(xs), "verified": all(x["verified"] for x in xs),
            **({"nconnect": xs[0]["nconnect"], "rsize_eff": xs[0]["rsize_eff"]} if "nconnect" in xs[0] else {}),
        })
    return rows


def idle_rates(samples):
    """{(system, mode): {"client": insns/s, "server": insns/s}}: each end's
    busy instructions per second over the 1 s windows of no I/O (cpu_idle),
    the empty window's subtracted; medians over the runs."""
    pts = {}
    for x in samples:
        if x["op"] == "cpu_idle" and x["us"] > 0:
            pts.setdefault((x["system"], x["mode"]), []).append(x)
    return {k: {end: round(stats.median([max(0, x[f"busy_{e}"] - x[f"mark_{e}"]) * 1e6 / x["us"] for x in xs]))
                for end, e in (("client", "c"), ("server", "s"))} for k, xs in pts.items()}


def write_docs(out, samples, a):
    rows = cpu_rows(samples)
    idle = idle_rates(samples)
    for who, keep in (("kernel", lambda r: r["system"] == "kernel"), ("linux", lambda r: r["system"] != "kernel")):
        mine = [r for r in rows if keep(r)]
        if not mine:
            continue
        doc = {"bench": "fs",
               "env": dict(env("tcg", "icount", max(r["n"] for r in mine), backend="dgram", nic="e1000"),
                           cpu_clock="-icount shift=0 on both VMs: busy ticks = guest instructions",
                           link_mbps=a.link_mbps, offered_mbps=a.offered_mbps, phase_bytes=a.bytes,
                           links=1, lens=a.lens,
                           how=("this kernel: user/fsbench.c cpu_sizes= against user/fsd.c, poll=irq, zero-copy "
                                "buffers, no client cache" if who == "kernel" else
                                "Linux NFS: fsbench cpu (tools/linux-baseline/fsbench.c) on mounts "
                                f"{a.linux_conf} (VERS:NCONNECT), rsize=wsize=1 MiB, TCP; reads O_DIRECT "
                                "(cpu_read) and buffered from the client cache (cpu_read_cached); writes pwrite + "
                                "fsync; nfsd (8 threads) exporting a tmpfs; the server's busy time from fsbench "
                                "busyd over UDP")),
               "idle_insns_per_s": {f"{k[0]} {k[1]}": v for k, v in sorted(idle.items())
                                    if (k[0] == "kernel") == (who == "kernel")},
               "rows": mine}
        with open(os.path.join(out, f"{who}-fs-cpu.json"), "w") as f:
            json.dump(doc, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("system", choices=("kernel", "linux"))
    ap.add_argument("mode", choices=("cpu", "unpaced"))
    ap.add_argument("kernel")
    ap.add_argument("out")
    ap.add_argument("--first", action="store_true", help="start fs-cpu.samples.jsonl afresh")
    ap.add_argument("--lens", default=LENS)
    ap.add_argument("--bytes", type=int, default=16 << 20, help="bytes a phase (I/Os of a length)")
    ap.add_argument("--link-mbps", type=int, default=100)
    ap.add_argument("--offered-mbps", type=int, default=40)
    ap.add_argument("--linux-conf", default="4.2:1,4.2:4,3:4")
    ap.add_argument("--guest", default=os.path.join(ROOT, "build", "linux-baseline"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    raw = os.path.join(a.out, SAMPLES)
    samples = [] if a.first or not os.path.exists(raw) else [json.loads(x) for x in open(raw) if x.strip()]
    run = 1 + max([x["run"] for x in samples if x["system"].startswith("kernel" if a.system == "kernel" else "linux")
                   and x["mode"] == a.mode] or [0])
    t0 = time.monotonic()
    got = None  # the pair's FSB cpu lines
    for attempt in (1, 2):
        try:
            got = (kernel_pair if a.system == "kernel" else linux_pair)(a, a.mode)
            break
        except RuntimeError as e:
            print(f"fs-cpu: {a.system} {a.mode} attempt {attempt} failed: {e}", flush=True)
    if got is None:
        sys.exit(1)
    new = [sample_of(x, a.mode, run, a) for x in got]
    for x in [y for y in new if y["bytes"]]:
        print(f"fs-cpu: {x['system']} {a.mode} run {run} {x['op']} {x['io_bytes']} B: "
              f"client {(x['busy_c'] - x['mark_c']) / x['bytes']:.2f} "
              f"server {(x['busy_s'] - x['mark_s']) / x['bytes']:.2f} "
              f"insns/B, {x['mbps']:.1f} Mbit/s, verified {x['verified']}", flush=True)
    samples += new
    with open(raw, "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in samples)
    write_docs(a.out, samples, a)
    print(f"fs-cpu: {a.system} {a.mode} run {run}: {len(new)} phases, {time.monotonic() - t0:.0f} s", flush=True)
    sys.exit(0 if all(x["verified"] for x in new) else 1)


if __name__ == "__main__":
    main()
