#!/usr/bin/env python3
"""The file service against Linux NFS (issue 15, SRFS on Ether): make
bench-fs, this kernel's part.

Two nodes of this kernel on the cluster runner: the server (user/fsd.c,
its own IDE disk image, cache=unsafe as make test-fs) and the client
(user/fsbench.c), joined by 1 or 2 dgram wires, every NIC paced at
--mbps (100 Mbit/s: the Linux side's tbf rate) by the kernel's pacer
(nic_mbps=). One boot pair per link count and added delay runs every
length and run in one go, as the Linux side's one pair per link count:
per run and length SRFS's four patterns (create_write, overwrite,
read_after_write, read_after_mount) and create_write_fsync (lengths up to
--fsync-mb: the data on the server's disk, ~0.5 s per MiB of IDE port
I/O under TCG; reported apart, never compared with NFS to a tmpfs), then
200 4 KiB reads (read_4k_rtt). With 2 links the same boot reads 32 MiB
(read_through_cut) while the runner cuts link 0 of the client visibly 1 s
after "FSCUT begin" and restores it at "FSCUT end", as the Linux side cuts
link 0 1 s after its "FSCUT begin".
--delays 0,3.3: 3.3 ms added to the round trip by a third guest, the Linux
NFS guest in router mode (build/linux-baseline's vmlinuz and
initrd-nfs.gz, pkt.role=router: a bridge per link between the server's
wire and the client's with netem delay D/2 each way; MTU 9000), a service
node of the runner ("ROUTER ready"); the same guest the Linux side's
delay runs use. Delay cells run on --delay-links only.

Usage: fs.py KERNEL OUTDIR RUNS [--sizes 1,2,4,8,16,32] [--links 1,2]
             [--mbps 100] [--delays 0,3.3] [--delay-links 1] [--fsync-mb 4]
             [--cut-mb 32] [--guest DIR] [--sweep 'default;streams=1;..']
             [--sweep-mib 8] [--sweep-only] [--out-name kernel-fs.json]
Writes OUTDIR/kernel-fs.json (rows as check_schema.py's "fs" rows).
--sweep: first, the service's settings against its defaults (SRFS section
2 chose its unit, pieces and streams the same way): one boot pair per
setting on the most links asked, --sweep-mib only, every pattern and the
4 KiB round trips, with the links paced at --mbps and unpaced
(--sweep-mbps); rows with their "settings" and "link_mbps" in
kernel-fs-sweep.json.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import sections  # noqa: E402
from env import env  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PATTERNS = ("create_write", "overwrite", "read_after_write", "read_after_mount", "create_write_fsync")


def size_mib(s):
    """An I/O length of --sizes in MiB: 4 (MiB) or 8k (KiB)."""
    s = str(s)
    return int(s[:-1]) / 1024 if s.endswith("k") else int(s)


def kv(line):
    return dict(re.findall(r"(\w+)=(\S+)", line))


def topology(kernel, disk, links, mbps, delay_ms, guest, client_args, cut_mb, settings=""):
    """Server s, client c (and router r with a delay), links wires each."""
    names = [f"l{k}" for k in range(links)]
    nics = ",".join(str(k) for k in range(links))
    s_nets = [f"s{k}" for k in range(links)] if delay_ms else names
    c_nets = [f"c{k}" for k in range(links)] if delay_ms else names
    nodes = [
        {"name": "s", "kernel": kernel, "mem": "384M",
         "append": f"run=fsd nics={nics} peer=" + ",".join(f"@MAC:c:{k}@" for k in range(links)) +
                   f" disk_mb=256 idle_s=60 nic_mbps=@MBPS@ {settings}".rstrip(),
         "nics": [{"net": n, "mbps": mbps} for n in s_nets],
         "qemu_extra": ["-drive", f"file={disk},if=ide,format=raw,cache=unsafe"]},
        {"name": "c", "kernel": kernel, "mem": "384M",
         "append": f"run=fsbench nics={nics} peer=" + ",".join(f"@MAC:s:{k}@" for k in range(links)) +
                   f" {client_args} nic_mbps=@MBPS@ {settings}".rstrip(),
         "nics": [{"net": n, "mbps": mbps} for n in c_nets],
         "start_after": {"node": "s", "line": "READY fsd"}},
    ]
    nets = [{"name": n, "wire": "dgram"} for n in (s_nets + c_nets if delay_ms else names)]
    if delay_ms:
        # the router's NIC k bridges to its NIC links+k (nfs-guest.sh nfs_router)
        nodes.insert(0, {
            "name": "r", "kernel": os.path.join(guest, "vmlinuz"), "initrd": os.path.join(guest, "initrd-nfs.gz"),
            "mem": "256M", "service": True, "ok_line": "ROUTER ready",
            "append": f"quiet pkt.role=router pkt.mode=nfs pkt.nics={2 * links} pkt.bond=none pkt.host=3 "
                      f"nfs.delay_us={int(round(delay_ms * 500))}",
            "nics": s_nets + c_nets})
        nodes[1]["start_after"] = {"node": "r", "line": "ROUTER ready"}
    events = []
    if cut_mb and links >= 2:
        events = [{"after": {"node": "c", "line": "FSCUT begin"}, "delay": 1.0, "action": "cut-visible",
                   "node": "c", "nic": 0},
                  {"after": {"node": "c", "line": "FSCUT end"}, "delay": 0, "action": "restore",
                   "node": "c", "nic": 0}]
    tag = "-" + re.sub(r"[^A-Za-z0-9]", "", settings.replace("small_max", "sm")) if settings else ""
    name = f"fs-{links}l-{delay_ms}ms".replace(".", "_") + tag
    return {"name": name[:32], "networks": nets, "nodes": nodes,
            "events": events}


def timeout_s(runs, sizes, fsync_mb, delay_ms):
    """Generous: 0.4 s per MiB moved (20 Mbit/s), 1 s per MiB to the disk,
    4 s per reconnection; 2.5x with a delay; plus boots."""
    mib = sum(size_mib(s) for s in sizes)
    per_run = mib * 4 * 0.4 + sum(size_mib(s) for s in sizes if size_mib(s) <= fsync_mb) * 2 * 1.0 + len(sizes) * 4
    return int(240 + runs * per_run * (2.5 if delay_ms else 1.0))



def cluster_run(topo, d):
    """Runs topology topo on the cluster runner in directory d: (the runner's
    completed process, its output directory, each node's console log)."""
    tp, out = os.path.join(d, "topo.json"), os.path.join(d, "run")
    with open(tp, "w") as f:
        json.dump(topo, f)
    r = subprocess.run([os.path.join(ROOT, "tools", "cluster", "run"), tp, "--out", out],
                       capture_output=True, text=True, check=False)
    logs = {}
    for n in topo["nodes"]:
        try:
            logs[n["name"]] = open(os.path.join(out, f"{n['name']}.log"), errors="replace").read()
        except OSError:
            logs[n["name"]] = ""
    return r, out, logs

def keep_logs(bench, tag, logs):
    """Every log of a failed or unverified pair (a read that came back wrong, a checksum
    error), kept in $TMPDIR/BENCH-failed-TIME-TAG/ as NAME.log each."""
    d = os.path.join(tempfile.gettempdir(), f"{bench}-failed-{time.strftime('%Y%m%d-%H%M%S')}-{tag}")
    os.makedirs(d, exist_ok=True)
    for n, text in logs.items():
        with open(os.path.join(d, f"{n}.log"), "w") as f:
            f.write(text)
    print(f"{bench}: logs kept in {d}", flush=True)


def run_nfs(args, prefix):
    """tools/linux-baseline/run-nfs.sh ARGS with a log directory of its own; returns the
    finished process and its logs (stdout, stderr, the client's and the server's consoles)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as d:
        r = subprocess.run([os.path.join(ROOT, "tools", "linux-baseline", "run-nfs.sh")] + args + ["--logdir", d],
                           capture_output=True, text=True, check=False)
        logs = {"stdout": r.stdout, "stderr": r.stderr}
        for n in ("client", "server"):
            logs[n] = sections.read_text(os.path.join(d, f"{n}.txt"))
    return r, logs


def cell(a, kernel, links, delay_ms, sizes=None, fsync_mb=None, cut_mb=None, settings=""):
    """One boot pair (or trio); returns (client lines, summary, server STATS, seconds).
    sizes, fsync_mb, cut_mb: a's unless given; settings: fsd's and the
    client's (both must agree), e.g. "streams=4 chunk=65536"."""
    sizes = a.sizes if sizes is None else sizes
    fsync_mb = a.fsync_mb if fsync_mb is None else fsync_mb
    cut = (a.cut_mb if cut_mb is None else cut_mb) if links >= 2 else 0
    client = (f"sizes={','.join(str(s) for s in sizes)} runs={a.runs} fsync_mb={fsync_mb} cut_mb={cut} "
              "timeout_ms=5000")
    with tempfile.TemporaryDirectory(prefix="fsbench.") as d:
        disk = os.path.join(d, "disk.img")
        with open(disk, "wb") as f:
            f.truncate(256 << 20)
        topo = topology(kernel, disk, links, a.mbps, delay_ms, a.guest, client, cut, settings)
        topo["timeout"] = timeout_s(a.runs, sizes, fsync_mb, delay_ms)
        t0 = time.monotonic()
        r, out, logs = cluster_run(topo, d)
        secs = time.monotonic() - t0
        try:
            summary = json.load(open(os.path.join(out, "summary.json")))
        except (OSError, ValueError):
            summary = {}
        if a.keep:
            keep = os.path.join(a.out, "raw-fs", topo["name"])
            os.makedirs(keep, exist_ok=True)
            for n, text in logs.items():
                with open(os.path.join(keep, f"{n}.log"), "w") as f:
                    f.write(text)
            with open(os.path.join(keep, "summary.json"), "w") as f:
                json.dump(summary, f, indent=1)
        if r.returncode != 0:
            tail = "".join(f"--- {n}\n" + "".join(v.splitlines(True)[-8:]) for n, v in logs.items())
            raise RuntimeError(f"fs run {topo['name']} failed ({r.returncode}):\n{r.stdout[-600:]}\n{tail}")
        lines = [ln[ln.index("FSB op="):].strip() for ln in logs["c"].splitlines() if "FSB op=" in ln]
        stats = next((kv(ln[ln.index("STATS fsd"):]) for ln in logs["s"].splitlines() if "STATS fsd" in ln), {})
        odd = {"client_link_deaths_logged": len(re.findall(r"link \d+ dead", logs["c"])),
               "server_link_deaths_logged": len(re.findall(r"link \d+ dead", logs["s"]))}
        if delay_ms:
            odd["router"] = next((ln.strip() for ln in logs["r"].splitlines() if ln.startswith("ROUTER ready")), None)
        return lines, summary, stats, odd, secs


def cut_inside(summary):
    """(the cut fell inside the read, seconds from FSCUT begin to the cut)."""
    ev = summary.get("events") or []
    cut = next((e for e in ev if e.get("action") == "cut-visible"), None)
    rest = next((e for e in ev if e.get("action") == "restore"), None)
    if not cut or cut.get("fired") is None:
        return False, None
    inside = rest is not None and rest.get("fired") is not None and cut["fired"] <= rest["fired"]
    return inside, round(cut["fired"] - cut["triggered"], 3)


def rows_of(lines, summary, links, delay_ms, a, extra):
    base = {"system": "kernel", "links": links, "rtt_added_ms": delay_ms, "link_mbps": a.mbps, "proto": "fsd"}
    base.update(extra)
    per = {}
    rows = []
    for ln in lines:
        f = kv(ln)
        op = f.get("op")
        if op in PATTERNS:
            per.setdefault((op, int(f["io_bytes"])), []).append(f)
        elif op == "read_4k_rtt":
            rows.append(dict(base, op=op, io_bytes=4096, median_us=float(f["median_us"]),
                             p99_us=float(f["p99_us"]), min_us=float(f["min_us"]), n=int(f["n"]), runs=1,
                             verified=f["verified"] == "1"))
        elif op == "read_through_cut":
            inside, at = cut_inside(summary)
            rows.append(dict(base, op=op, io_bytes=int(f["io_bytes"]), mbps=float(f["mbps"]), us=int(f["us"]),
                             runs=1, lost=int(f["lost"]), corrupt=int(f["corrupt"]),
                             verified=f["verified"] == "1", cut=inside, cut_at_s=at,
                             link_deaths=int(f["link_deaths"]), link_recoveries=int(f["link_recoveries"]),
                             retransmits=int(f["retransmits"])))
    for (op, nbytes), fs in sorted(per.items(), key=lambda x: (PATTERNS.index(x[0][0]), x[0][1])):
        fs.sort(key=lambda f: int(f["run"]))
        m = [float(f["mbps"]) for f in fs]
        row = dict(base, op=op, pattern=op, io_bytes=nbytes, size_mib=nbytes >> 20, runs=len(fs),
                   mbps=round(statistics.median(m), 1), mbps_runs=m, us_runs=[int(f["us"]) for f in fs],
                   verified=all(f["verified"] == "1" for f in fs))
        if op == "create_write_fsync":
            row["note"] = "write + fsync to the server's IDE disk (not comparable with NFS to a tmpfs)"
        rows.append(row)
    return rows


def run_cell(a, kernel, links, delay, cells, settings="", **kw):
    """cell() once more if it failed; its rows (printed), its entry appended to cells."""
    err = None
    for attempt in (1, 2):
        try:
            lines, summary, stats, odd, secs = cell(a, kernel, links, delay, settings=settings, **kw)
            break
        except RuntimeError as e:
            err = str(e)
            print(f"fs: attempt {attempt} failed: {err}", flush=True)
    else:
        cells.append({"links": links, "rtt_added_ms": delay, "settings": settings, "error": err[-2000:]})
        return []
    got = rows_of(lines, summary, links, delay, a, {"settings": settings} if settings else {})
    cells.append({"links": links, "rtt_added_ms": delay, "seconds": round(secs, 1), "server": stats, **odd,
                  **({"settings": settings} if settings else {})})
    for r in got:
        v = f"{r['mbps']} Mbit/s" if "mbps" in r else f"median {r['median_us']} us, p99 {r['p99_us']} us"
        extra = f" lost {r['lost']} corrupt {r['corrupt']} cut inside {r['cut']}" if "lost" in r else ""
        print(f"  {r['op']} {r['io_bytes']} B: {v}{extra} verified {r['verified']}", flush=True)
    print(f"  cell: {secs:.0f} s; {odd}", flush=True)
    return got


def sweep(a, kernel):
    """The settings sweep (--sweep): one boot pair per setting on the most
    links asked, no delay, --sweep-mib only, no fsync, no cut; writes
    OUTDIR/kernel-fs-sweep.json. Returns whether every cell worked."""
    links = max(int(x) for x in a.links.split(","))
    rows, cells, t0 = [], [], time.monotonic()
    rates = [int(x) for x in (a.sweep_mbps or f"{a.mbps},0").split(",")]
    for rate in rates:  # the links' pacing (0: unpaced, where the service's own cost shows)
        b = argparse.Namespace(**dict(vars(a), mbps=rate))
        for spec in [x for x in a.sweep.split(";") if x]:
            settings = "" if spec == "default" else spec.replace(",", " ")
            print(f"fs: sweep, {links} link(s) at {rate or 'unpaced'} Mbit/s, {spec}, {a.runs} run(s) of "
                  f"{a.sweep_mib} MiB ({time.strftime('%T')})", flush=True)
            got = run_cell(b, kernel, links, 0.0, cells, settings=settings, sizes=[a.sweep_mib], fsync_mb=0,
                           cut_mb=0)
            rows += [dict(r, settings=settings or "default") for r in got]
    doc = {"bench": "fs", "env": dict(env("tcg", "real", a.runs, backend="dgram (cluster runner)", nic="e1000"),
                                      link_mbps=rates, links=links, io_mib=a.sweep_mib,
                                      what="the file service's settings (fs_cfg_args: small_max, chunk, streams, "
                                           "window), each against the defaults, both nodes set alike",
                                      seconds=round(time.monotonic() - t0)),
           "cells": cells, "rows": rows}
    path = os.path.join(a.out, "kernel-fs-sweep.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"fs: wrote {path} ({len(rows)} rows, {time.monotonic() - t0:.0f} s)")
    return not any("error" in c for c in cells)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel")
    ap.add_argument("out")
    ap.add_argument("runs", type=int)
    ap.add_argument("--sizes", default="1,2,4,8,16,32", help="MiB, or KiB with a k (8k)")
    ap.add_argument("--links", default="1,2")
    ap.add_argument("--mbps", type=int, default=100)
    ap.add_argument("--delays", default="0,3.3")
    ap.add_argument("--delay-links", default="1")
    ap.add_argument("--fsync-mb", type=int, default=4)
    ap.add_argument("--cut-mb", type=int, default=32)
    ap.add_argument("--guest", default=os.path.join(ROOT, "build", "linux-baseline"))
    ap.add_argument("--keep", action="store_true", help="keep each cell's logs in OUTDIR/raw-fs/")
    ap.add_argument("--sweep", default="", help="settings to compare, ';'-separated, e.g. "
                    "'default;streams=1;chunk=65536,window=4' (kernel-fs-sweep.json)")
    ap.add_argument("--sweep-mib", type=int, default=8)
    ap.add_argument("--sweep-mbps", default="", help="the links' rates in the sweep (default: --mbps and 0, unpaced)")
    ap.add_argument("--sweep-only", action="store_true", help="only the sweep")
    ap.add_argument("--out-name", default="kernel-fs.json", help="the result file's name in OUTDIR")
    a = ap.parse_args()
    a.sizes = [x for x in a.sizes.split(",") if x]
    kernel = os.path.abspath(a.kernel)
    os.makedirs(a.out, exist_ok=True)
    swept = sweep(a, kernel) if a.sweep else True
    if a.sweep_only:
        sys.exit(0 if swept else 1)
    rows, cells = [], []
    t_all = time.monotonic()
    for delay in [float(x) for x in a.delays.split(",")]:
        links_list = a.links if not delay else a.delay_links
        if delay and not all(os.path.exists(os.path.join(a.guest, f)) for f in ("vmlinuz", "initrd-nfs.gz")):
            print(f"fs: no router guest in {a.guest} (LB_NFS=1 tools/linux-baseline/build.sh): "
                  f"no {delay} ms cells", flush=True)
            cells.append({"rtt_added_ms": delay, "error": "no router guest"})
            continue
        for links in [int(x) for x in links_list.split(",")]:
            print(f"fs: kernel, {links} link(s), +{delay} ms, {a.runs} run(s) of sizes "
                  f"{','.join(map(str, a.sizes))} MiB ({time.strftime('%T')})", flush=True)
            rows += run_cell(a, kernel, links, delay, cells)
    doc = {"bench": "fs",
           "env": dict(env("tcg", "real", a.runs, backend="dgram (cluster runner)", nic="e1000"),
                       link_mbps=a.mbps, per_link_mbps_paced=a.mbps, mtu=9000,
                       pacing="nic_mbps= on every NIC of both nodes (the kernel's transmit pacer)",
                       settings="fsd defaults (fsproto.h FS_CFG_DEFAULT: small_max 8896, chunk 256 KiB, "
                                "2 streams, batch 32, window 2)",
                       server_disk="IDE raw image, cache=unsafe (as make test-fs)",
                       timed_write="one fs_write of io_bytes from a zero-copy buffer (pages lent), until the "
                                   "server's reply (the data in its memory); create_write_fsync: + fs_fsync",
                       timed_read="one fs_read of io_bytes into a zero-copy buffer, every byte then compared",
                       read_after_mount="fs_disconnect(DETACH) and fs_connect again (not timed), then the read",
                       read_4k_rtt="median of 200 fs_reads of 4 KiB at random page-aligned offsets of 1 MiB",
                       read_through_cut=f"{a.cut_mb} MiB read, the client's link 0 cut (QMP set_link off) 1 s "
                                        "after FSCUT begin, restored at FSCUT end",
                       fsync_max_mib=a.fsync_mb,
                       delay="a Linux guest bridging the two nodes' wires with netem D/2 each way "
                             "(nfs-guest.sh nfs_router), a service node", seconds=round(time.monotonic() - t_all)),
           "cells": cells, "rows": rows}
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, a.out_name)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"fs: wrote {path} ({len(rows)} rows, {time.monotonic() - t_all:.0f} s)")
    if any("error" in c for c in cells) or not swept:
        sys.exit(1)


if __name__ == "__main__":
    main()
