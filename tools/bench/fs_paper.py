#!/usr/bin/env python3
"""RI2N/DRV's Tables 2 and 4 for the file service against Linux NFS (make
bench-fs FS_PAPER=1, issue 26): one boot pair of one system per call, so
that fs.sh interleaves the systems pair by pair; the samples of every call
kept in OUTDIR/fs-paper.samples.jsonl, OUTDIR/fs-paper.json rewritten from
them each time (medians over the runs).

  seq   RI2N Table 2, NFSv3 sequential write (bonnie++, 1.4 GB, rwsize 8
        and 32 KB), scaled: a new file of --bytes (32 MiB, 1/44 of the
        paper's) written in writes of each --io length (8 KiB, 32 KiB),
        --runs times each, interleaved by length, every byte read back and
        compared after each run (not timed). This kernel: user/fsbench.c
        seq_bytes= (fs_write of the length, one at a time, each returning
        once the bytes are in the server's memory); Linux: fsbench seqwrite
        on an NFSv3 mount with rsize = wsize = the length (write()s of it,
        then fsync and close, all timed). The client's CPU % = its busy
        time over the write / the write's elapsed time (this kernel:
        sysinfo idle_tsc; Linux: /proc/timer_list idle and iowait sleep, as
        fs_cpu.py), and both ends' busy time per byte (under --icount: busy
        instructions per byte, make bench-fs-paper's seqicount part).
  wcut  RI2N Table 4, writes through a 10 s failure of one of two links:
        32 KiB writes through a 32 MiB file, over and over, for --secs (24);
        --cut-at (5) s after "FSCUT begin" the runner cuts link 0 (this
        kernel: the client's NIC, QMP set_link off, as fs.py's read through
        a cut; Linux: both guests' NIC 0, as bench-fs.sh's), and restores it
        --cut-for (10) s later. Progress every 4 MiB (Linux: after fsync);
        throughput before the cut, during it and after the restore, the
        longest time without progress, and every byte of the file read back
        and compared (lost, corrupt). Linux: NFSv3, wsize 32 KiB, over a
        balance-rr bond with miimon 100 ms.

Every NIC paced at --mbps (100 Mbit/s: fs.py's and bench-fs.sh's rate),
dgram wires, e1000, this kernel's nodes with poll=irq (an idle CPU halts,
as Linux's does, so the busy time means the same at both).

Usage: fs_paper.py seq|wcut|stream kernel|linux KERNEL OUTDIR [--links 1|2]
                   [--bytes 33554432] [--io 8192,32768] [--runs 3] [--secs 24]
                   [--cut-at 5] [--cut-for 10] [--mbps 100] [--icount]
                   [--guest DIR] [--first]
"""
import argparse
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import stats  # noqa: E402
from env import env  # noqa: E402
from fs import ROOT, cluster_run, keep_logs, kv, run_nfs, topology  # noqa: E402

SAMPLES = "fs-paper.samples.jsonl"
STREAM = {"size": 8192, "batch": 4, "window": 4, "count": 8192}  # 32 KiB batches, 128 KiB in flight


def keep_fail(tag, logs):
    keep_logs("fs-paper", tag, logs)


def kernel_stream(a):
    """One boot pair (and the router) of this kernel's stream over the
    reliable channel: its RESULT line as an FSB-like dict."""
    w = STREAM
    common = (f"run=stream nics=0 rel=1 size={w['size']} batch={w['batch']} window={w['window']} "
              f"count={w['count']} timeout_ms=30000 nic_mbps=@MBPS@")
    with tempfile.TemporaryDirectory(prefix="fspaper-stream.") as d:
        topo = topology(os.path.abspath(a.kernel), os.path.join(d, "none.img"), 1, a.mbps, a.delay, a.guest, "", 0)
        for n in topo["nodes"]:
            if n["name"] == "s":
                n["append"] = f"{common} role=server peer=@MAC:c:0@"
                n.pop("qemu_extra", None)
            elif n["name"] == "c":
                n["append"] = f"{common} role=client peer=@MAC:s:0@ start_ms=1500"
                n["start_after"] = {"node": "s", "line": "READY stream server"}
        topo["name"] = f"fspaper-stream-{a.delay}".replace(".", "_")
        topo["timeout"] = 300
        r, out, logs = cluster_run(topo, d)
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        for n, text in logs.items():
            with open(os.path.join(a.keep, f"stream-{a.delay}-{n}.log"), "w") as f:
                f.write(text)
    m = re.findall(r"RESULT stream system=kernel role=server .*$", logs["s"], re.M)
    if r.returncode != 0 or not m:
        keep_fail(f"kernel-stream-{a.delay}", dict(logs, runner=r.stdout + r.stderr))
        raise RuntimeError(f"kernel stream pair failed ({r.returncode}): {r.stdout[-400:]}")
    x = kv(m[-1])
    ok = x.get("corrupt") == "0" and x.get("missing") == "0"
    total = w["size"] * w["count"]
    return [{"op": "tcp_stream", "system": "kernel", "io_bytes": w["size"] * w["batch"], "bytes": total,
             "us": total * 8 / (int(x["kbps"]) / 1000) if int(x["kbps"]) else 0, "mbps": int(x["kbps"]) / 1000,
             "verified": "1" if ok else "0", "run": "1", "window_bytes": w["size"] * w["batch"] * w["window"],
             "retransmits": None}], [], {}


def kernel_rtt(a):
    """The round trip of the stream's path for this kernel (its Table 3
    RTT, as Linux's is its ping): user/pingpong.c, 64 bytes, 20 timed
    round trips, over the same topology (and router): the median."""
    with tempfile.TemporaryDirectory(prefix="fspaper-rtt.") as d:
        topo = topology(os.path.abspath(a.kernel), os.path.join(d, "none.img"), 1, a.mbps, a.delay, a.guest, "", 0)
        for n in topo["nodes"]:
            if n["name"] == "s":
                n["append"] = "run=pingpong role=server peer=@MAC:c:0@ nic_mbps=@MBPS@"
                n.pop("qemu_extra", None)
            elif n["name"] == "c":
                n["append"] = "run=pingpong role=client peer=@MAC:s:0@ sizes=64 iters=20 warm=3 nic_mbps=@MBPS@"
                n["start_after"] = {"node": "s", "line": "READY pingpong server"}
        topo["name"] = f"fspaper-rtt-{a.delay}".replace(".", "_")
        topo["timeout"] = 300
        r, out, logs = cluster_run(topo, d)
    m = re.findall(r"RESULT rtt system=kernel .*$", logs["c"], re.M)
    if r.returncode != 0 or not m:
        keep_fail(f"kernel-rtt-{a.delay}", dict(logs, runner=r.stdout + r.stderr))
        raise RuntimeError(f"kernel rtt pair failed ({r.returncode}): {r.stdout[-400:]}")
    x = kv(m[-1])
    return [{"op": "rtt", "system": "kernel", "io_bytes": 64, "bytes": 64, "us": int(x["median_ns"]) / 1000,
             "mbps": 0.0, "verified": "1", "run": "1", "median_ms": int(x["median_ns"]) / 1e6}], [], {}


def kernel_pair(a):
    """One boot pair of this kernel: (its FSB lines, FSPROG lines, cut offsets)."""
    if a.what == "stream":
        return kernel_stream(a)
    if a.what == "rtt":
        return kernel_rtt(a)
    if a.what == "seq":
        client = f"seq_bytes={a.bytes} seq_io={a.io} runs={a.runs} timeout_ms=20000"
    else:
        client = f"wcut_s={a.secs} wcut_mb=32 wcut_io=32768 wcut_sync_mb=4 timeout_ms=20000"
    settings = "poll=irq" + (" icount=1" if a.icount else "")
    with tempfile.TemporaryDirectory(prefix="fspaper.") as d:
        disk = os.path.join(d, "disk.img")
        with open(disk, "wb") as f:
            f.truncate(256 << 20)
        topo = topology(os.path.abspath(a.kernel), disk, a.links, a.mbps, 0, a.guest, client, 0, settings)
        topo["name"] = f"fsri2n-{a.what}-{a.links}l"
        topo["timeout"] = 900
        if a.icount:
            for n in topo["nodes"]:
                n["qemu_extra"] = n.get("qemu_extra", []) + ["-icount", "shift=0"]
        if a.what == "wcut":
            topo["events"] = [
                {"after": {"node": "c", "line": "FSCUT begin"}, "delay": a.cut_at, "action": "cut-visible",
                 "node": "c", "nic": 0},
                {"after": {"node": "c", "line": "FSCUT begin"}, "delay": a.cut_at + a.cut_for,
                 "action": "restore", "node": "c", "nic": 0}]
        r, out, logs = cluster_run(topo, d)
        try:
            summary = json.load(open(os.path.join(out, "summary.json")))
        except (OSError, ValueError):
            summary = {}
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        for n, text in dict(logs, summary=json.dumps(summary, indent=1)).items():
            with open(os.path.join(a.keep, f"{a.what}-{a.links}-{n}.log"), "w") as f:
                f.write(text)
    lines = [kv(ln[ln.index("FSB op="):]) for ln in logs["c"].splitlines() if "FSB op=" in ln]
    prog = [kv(ln[ln.index("FSPROG"):]) for ln in logs["c"].splitlines() if "FSPROG" in ln]
    cut = {}
    for e in summary.get("events") or []:
        if e.get("fired") is not None and e.get("triggered") is not None:
            cut["cut_s" if e["action"].startswith("cut") else "restore_s"] = round(e["fired"] - e["triggered"], 3)
    if r.returncode != 0 or not lines or any(x.get("verified") != "1" for x in lines):
        keep_fail(f"kernel-{a.what}-{a.links}", dict(logs, runner=r.stdout + r.stderr))
        if r.returncode != 0 or not lines:
            raise RuntimeError(f"kernel {a.what} pair failed ({r.returncode}): {r.stdout[-400:]}")
    deaths = len(re.findall(r"link \d+ dead", logs["c"]))
    return [dict(x, system="kernel") for x in lines], prog, dict(cut, client_link_deaths_logged=deaths)


def linux_pair(a):
    """One boot pair of Linux NFS guests (run-nfs.sh): the same three."""
    if a.what == "seq":
        append = f"nfs.seq={a.bytes} nfs.rsize={a.io} nfs.runs={a.runs}"
        extra = []
    elif a.what == "stream":
        append = (f"nfs.stream={STREAM['size'] * STREAM['count']} nfs.streammsg=524288 "
                  f"nfs.sockbuf={a.sockbuf} nfs.runs={a.runs}")
        extra = ["--delay-ms", str(a.delay)] if a.delay else []
    else:
        append = f"nfs.wcut={a.secs} nfs.rsize=32768 nfs.wcutmib=32"
        extra = ["--cut-after", str(a.cut_at), "--cut-for", str(a.cut_for)]
    cmd = ["--links", str(a.links), "--mbps", str(a.mbps), "--timeout", "1200", "--guest", a.guest,
           "--append", append] + extra
    if a.icount:
        cmd.append("--icount")
    r, logs = run_nfs(cmd, "fspaper-linux.")
    lines = [kv(ln[ln.index("FSB op="):]) for ln in r.stdout.splitlines() if ln.startswith("FSB op=")]
    prog = [kv(ln) for ln in r.stdout.splitlines() if ln.startswith("FSPROG")]
    ping = re.search(r"^NFSCLIENT ping .*= ([\d.]+)/([\d.]+)/([\d.]+)", r.stdout, re.M)
    for x in lines:
        if ping:
            x["ping_avg_ms"] = ping.group(2)
    t = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(SEEN|CUT|RESTORE) 1 \S*\s*(?:begin )?at (\S+)",
                                                           r.stdout, re.M)}
    cut = {}
    if "SEEN" in t and "CUT" in t:
        cut["cut_s_host"] = round(t["CUT"] - t["SEEN"], 3)
    if "SEEN" in t and "RESTORE" in t:
        cut["restore_s_host"] = round(t["RESTORE"] - t["SEEN"], 3)
    # the guest's own view (fsbench cutwrite's FSLINK lines: eth0's carrier)
    link = [kv(ln) for ln in r.stdout.splitlines() if ln.startswith("FSLINK")]
    down = next((float(x["t_us"]) / 1e6 for x in link if x.get("eth0") == "0"), None)
    up = next((float(x["t_us"]) / 1e6 for x in link if x.get("eth0") == "1" and down is not None
               and float(x["t_us"]) / 1e6 > down), None)
    if down is not None:
        cut["cut_s"] = round(down, 3)
    if up is not None:
        cut["restore_s"] = round(up, 3)
    if r.returncode != 0 or not lines or any(x.get("verified") != "1" for x in lines):
        keep_fail(f"linux-{a.what}-{a.links}", logs)
        if r.returncode != 0 or not lines:
            raise RuntimeError(f"linux {a.what} pair failed ({r.returncode}): {r.stderr[-400:]}")
    return lines, prog, cut


def samples_of(a, lines, prog, cut, run0):
    """The pair's samples: one per seq_write line, one per write through a cut."""
    out = []
    for i, x in enumerate(lines):
        base = {"what": a.what, "system": x["system"], "links": a.links, "link_mbps": a.mbps,
                "clock": "icount" if a.icount else "real", "io_bytes": int(x["io_bytes"]),
                "bytes": int(x["bytes"]), "us": float(x["us"]), "mbps": float(x["mbps"]),
                "verified": x.get("verified") == "1"}
        if x["op"] == "rtt":
            out.append(dict(base, op="rtt", run=run0 + 1, rtt_added_ms=a.delay, median_ms=x["median_ms"]))
        elif x["op"] == "tcp_stream":
            out.append(dict(base, op="tcp_stream", run=run0 + int(x.get("run", i + 1)), rtt_added_ms=a.delay,
                            **({"ping_avg_ms": float(x["ping_avg_ms"])} if "ping_avg_ms" in x else {}),
                            **({"sndbuf_eff": int(x["sndbuf_eff"])} if "sndbuf_eff" in x else {}),
                            window_bytes=int(x.get("window_bytes", a.sockbuf))))
        elif x["op"] == "seq_write":
            busy_s = float(x["busy_s"])
            out.append(dict(base, op="seq_write", run=run0 + int(x.get("run", i + 1)),
                            busy_c=float(x["busy_c"]), elapsed=float(x["elapsed"]),
                            busy_s=busy_s if busy_s >= 0 else None,
                            **({"wsize_eff": int(x["wsize_eff"])} if "wsize_eff" in x else {})))
        elif x["op"] == "write_through_cut":
            out.append(dict(base, op="write_through_cut", run=run0 + 1, lost=int(x["lost"]),
                            corrupt=int(x["corrupt"]),
                            progress=[[float(p["t_us"]) / 1e6, int(p["bytes"])] for p in prog], **cut,
                            **{k: int(x[k]) for k in ("link_deaths", "link_recoveries", "retransmits") if k in x}))
    return out


def at(progress, t):
    """Bytes written by time t (s), linear between progress points from (0, 0)."""
    pts = [(0.0, 0)] + progress
    for (t0, b0), (t1, b1) in zip(pts, pts[1:]):
        if t <= t1:
            return b0 + (b1 - b0) * (t - t0) / (t1 - t0) if t1 > t0 else b1
    return pts[-1][1]


def phases(x, secs):
    """MB/s (10^6 B/s) before the cut, during it and after the restore, and
    the longest time without progress (s)."""
    p = x["progress"]
    if not p or x.get("cut_s") is None or x.get("restore_s") is None:
        return {}
    end = p[-1][0]
    c, r = x["cut_s"], min(x["restore_s"], end)
    rate = lambda t0, t1: (at(p, t1) - at(p, t0)) / (t1 - t0) / 1e6 if t1 > t0 else None  # noqa: E731
    gaps = [b[0] - a_[0] for a_, b in zip([[0.0, 0]] + p, p)]
    return {"before_mb_s": rate(0.0, c), "during_mb_s": rate(c, r), "after_mb_s": rate(r, end),
            "longest_stall_s": max(gaps) if gaps else None}


def rows_of(samples, a):
    rows, groups = [], {}
    for x in samples:
        groups.setdefault((x["op"], x["system"], x["links"], x["clock"], x["io_bytes"], x.get("rtt_added_ms", 0.0)),
                          []).append(x)
    for (op, system, links, clock, io, delay), xs in sorted(groups.items()):
        xs.sort(key=lambda x: x["run"])
        row = {"system": system, "op": op, "io_bytes": io, "links": links, "rtt_added_ms": delay,
               "link_mbps": xs[0]["link_mbps"], "clock": clock, "bytes": xs[0]["bytes"], "runs": len(xs),
               "mbps": stats.rnd(stats.median([x["mbps"] for x in xs]), 2),
               "mbps_runs": [x["mbps"] for x in xs], "verified": all(x["verified"] for x in xs)}
        row["mb_s"] = stats.rnd(row["mbps"] / 8, 2)
        if op == "rtt":
            for key in ("mb_s", "mbps", "mbps_runs"):
                del row[key]
            row["median_ms"] = stats.rnd(stats.median([x["median_ms"] for x in xs]), 3)
        elif op == "tcp_stream":
            row["window_bytes"] = xs[0]["window_bytes"]
            if "sndbuf_eff" in xs[0]:
                row["sndbuf_eff"] = xs[0]["sndbuf_eff"]
            pings = [x["ping_avg_ms"] for x in xs if x.get("ping_avg_ms") is not None]
            row["ping_avg_ms"] = stats.rnd(stats.median(pings), 3) if pings else None
        elif op == "seq_write":
            cpu = [100.0 * x["busy_c"] / x["elapsed"] for x in xs if x["elapsed"] > 0]
            row["cpu_pct_client"] = stats.rnd(stats.median(cpu), 1)
            row["cpu_pct_client_runs"] = [stats.rnd(v, 1) for v in cpu]
            row["busy_per_byte_client"] = stats.rnd(stats.median([x["busy_c"] / x["bytes"] for x in xs]), 3)
            srv = [x["busy_s"] / x["bytes"] for x in xs if x.get("busy_s") is not None]
            row["busy_per_byte_server"] = stats.rnd(stats.median(srv), 3) if srv else None
            row["busy_unit"] = ("guest instructions (-icount shift=0)" if clock == "icount" else
                                ("TSC ticks" if system == "kernel" else "ns"))
            if "wsize_eff" in xs[0]:
                row["wsize_eff"] = xs[0]["wsize_eff"]
        else:
            ph = [phases(x, a.secs) for x in xs]
            for k in ("before_mb_s", "during_mb_s", "after_mb_s", "longest_stall_s"):
                v = [p[k] for p in ph if p.get(k) is not None]
                row[k] = stats.rnd(stats.median(v), 2) if v else None
            for k in ("cut_s", "restore_s", "cut_s_host", "restore_s_host"):
                v = [x[k] for x in xs if x.get(k) is not None]
                row[k] = stats.rnd(stats.median(v), 2) if v else None
            row["cut_inside"] = all(x.get("cut_s") is not None and x.get("restore_s") is not None and
                                    x["restore_s"] < x["us"] / 1e6 for x in xs)
            row["lost"] = sum(x["lost"] for x in xs)
            row["corrupt"] = sum(x["corrupt"] for x in xs)
            row["progress"] = xs[-1]["progress"]
            for k in ("link_deaths", "link_recoveries", "retransmits"):
                if k in xs[0]:
                    row[k] = [x[k] for x in xs]
        rows.append(row)
    return rows


def write_doc(out, samples, a):
    rows = rows_of(samples, a)
    doc = {"bench": "fspaper",
           "env": dict(env("tcg", "real", max([r["runs"] for r in rows] or [0]), backend="dgram", nic="e1000"),
                       link_mbps={op: sorted({r["link_mbps"] for r in rows if r["op"] == op})
                                  for op in sorted({r["op"] for r in rows})}, seq_bytes=a.bytes, scale=f"{a.bytes >> 20} MiB of the paper's 1.4 GB",
                       wcut_secs=a.secs, cut_at_s=a.cut_at, cut_for_s=a.cut_for,
                       kernel=("user/fsbench.c against user/fsd.c (its own IDE disk, cache=unsafe), both nodes "
                               "poll=irq, fsd defaults; fs_write of io_bytes from a zero-copy buffer, one at a "
                               "time; striped over the links by the reliable channel"),
                       linux=("Linux NFSv3 over TCP (Debian 6.1 client and nfsd, 8 threads, a tmpfs export, "
                              "sync), rsize = wsize = io_bytes; 2 links: balance-rr bond, miimon 100 ms; "
                              "fsbench seqwrite (write()s of io_bytes, fsync, close) and cutwrite (32 KiB "
                              "pwrite()s, fsync every 4 MiB)"),
                       cpu=("client CPU % = busy / elapsed over the timed write: this kernel's sysinfo "
                            "(elapsed less halted TSC), Linux's /proc/timer_list (CLOCK_MONOTONIC less cpu0 "
                            "idle and iowait sleep), each guest one vCPU"),
                       cut=("this kernel: QMP set_link off on the client's NIC 0 (cut-visible), restore "
                            "cut_for_s later; Linux: set_link off on both guests' NIC 0 (run-nfs.sh "
                            "--cut-after --cut-for)"),
                       cut_times=("cut_s, restore_s: seconds from FSCUT begin; this kernel's as the runner "
                                  "fired them after seeing the line; Linux's as the client saw eth0's carrier "
                                  "go and come back (fsbench FSLINK), the runner's view in cut_s_host, "
                                  "restore_s_host")),
           "rows": rows}
    path = os.path.join(out, "fs-paper.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("seq", "wcut", "stream", "rtt"))
    ap.add_argument("system", choices=("kernel", "linux"))
    ap.add_argument("kernel")
    ap.add_argument("out")
    ap.add_argument("--links", type=int, default=1)
    ap.add_argument("--bytes", type=int, default=32 << 20)
    ap.add_argument("--io", default="8192,32768")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--secs", type=int, default=24)
    ap.add_argument("--cut-at", type=float, default=5.0)
    ap.add_argument("--cut-for", type=float, default=10.0)
    ap.add_argument("--mbps", type=int, default=100)
    ap.add_argument("--icount", action="store_true")
    ap.add_argument("--keep", default="", help="a directory for this kernel's console logs")
    ap.add_argument("--delay", type=float, default=0.0, help="stream: ms added to the round trip (router guest)")
    ap.add_argument("--sockbuf", type=int, default=131072, help="stream: Linux's socket buffers (netperf -s)")
    ap.add_argument("--first", action="store_true",
                    help="drop this part's (seq, wcut, stream; real or icount) earlier samples")
    ap.add_argument("--guest", default=os.path.join(ROOT, "build", "linux-baseline"))
    a = ap.parse_args()
    if a.what == "wcut" and a.links < 2:
        ap.error("wcut needs 2 links")
    os.makedirs(a.out, exist_ok=True)
    raw = os.path.join(a.out, SAMPLES)
    samples = [json.loads(x) for x in open(raw) if x.strip()] if os.path.exists(raw) else []
    if a.first:  # this part (and clock) afresh, the others kept
        clock = "icount" if a.icount else "real"
        samples = [x for x in samples if x["what"] != a.what or x["clock"] != clock]
    mine = [x for x in samples if x["what"] == a.what and x["links"] == a.links and
            x.get("rtt_added_ms", 0.0) == a.delay and x["clock"] == ("icount" if a.icount else "real") and
            (x["system"] == "kernel") == (a.system == "kernel")]
    run0 = max([x["run"] for x in mine] or [0])
    t0 = time.monotonic()
    got = None
    for attempt in (1, 2):
        try:
            got = (kernel_pair if a.system == "kernel" else linux_pair)(a)
            break
        except RuntimeError as e:
            print(f"fs-paper: {a.what} {a.system} attempt {attempt} failed: {e}", flush=True)
    if got is None:
        sys.exit(1)
    new = samples_of(a, *got, run0)
    for x in new:
        extra = (f" CPU {100 * x['busy_c'] / x['elapsed']:.1f} %" if x["op"] == "seq_write" else
                 f" +{a.delay} ms: {x['median_ms']} ms" if x["op"] == "rtt" else
                 f" +{a.delay} ms ping {x.get('ping_avg_ms')}" if x["op"] == "tcp_stream" else
                 f" {phases(x, a.secs)} lost {x['lost']} corrupt {x['corrupt']}")
        print(f"fs-paper: {x['system']} {x['op']} {a.links} link(s) {x['io_bytes']} B run {x['run']}: "
              f"{x['mbps']:.1f} Mbit/s{extra} verified {x['verified']}", flush=True)
    samples += new
    with open(raw, "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in samples)
    print(f"fs-paper: wrote {write_doc(a.out, samples, a)} ({time.monotonic() - t0:.0f} s)", flush=True)
    sys.exit(0 if new and all(x["verified"] for x in new) else 1)


if __name__ == "__main__":
    main()
