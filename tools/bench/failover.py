#!/usr/bin/env python3
"""Link failure during a stream (RI2N section 4.2, Table 4): make bench-failover,
this kernel's part. Also a silent cut while the channel is idle (heartbeats
only: idle_rows) at the first link count.

Each run boots a server and a client VM of this kernel joined by L links (L
Linux bridges of the cluster runner, tools/cluster/), every NIC paced to the
same rate (nic_mbps=). The client streams over a reliable channel striped on
all L links (user/stream.c: every packet's order, count and bytes checked by
the server); CUT_AT s after the server is ready, link 1 of the client is cut
(visible: QMP set_link on the client's NIC; silent: its tap taken down on the
host, which neither NIC sees) and restored RESTORE_AFTER s later, as RI2N cut
one network for 10 s. The stream runs on for AFTER s.

From each run (all on the server's clock, which the runner's host times of
the cut and restore are mapped to through the server's READY line):
- the delivered Mbit/s in 100 ms bins (the server's SERIES line);
- mbps_before, mbps_during, mbps_after: failover_report.windows(), the
  same rule for every system (the mean of the bins in the 2 s before the
  cut, from 1 s after it to the restore, from 1 s after the restore on);
- detect_ms: the sender's own measure, from the first packet the cut link
  lost (the oldest one in flight on it, sent just after the cut) to the
  moment the sender stopped using it (the first "suspected" or "dead" line
  of link 1 after the cut); detect_map_ms: the same moment against the
  host's cut time, mapped (tens of ms coarser);
- recover_ms: from the restore to the server's "alive again" line of link 1
  (recover_client_ms: the client's, through the coarser client mapping);
  rate_back_ms: from the restore to the first 500 ms at 0.9 x mbps_before;
- max_gap_ms: the longest time between two deliveries from 2 s after the
  stream began (past start-up); lost (packets never delivered) and corrupt
  (delivered out of order, of a wrong size or with a wrong byte).

Usage: failover.py KERNEL OUTDIR RUNS [--links 2,4] [--cuts visible,silent]
                   [--mbps R] [--quick]
Writes OUTDIR/kernel-failover.json.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from env import env  # noqa: E402
from failover_report import windows  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIZE, BATCH = 8192, 8


def kv(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


def topology(kernel, links, mbps, cut, count, cut_at, restore_after, timeout):
    nets = [{"name": f"net{i}"} for i in range(links)]
    nics = [{"net": f"net{i}", "mbps": mbps} for i in range(links)]
    ids = ",".join(str(i) for i in range(links))
    macs = lambda node: ",".join(f"@MAC:{node}:{i}@" for i in range(links))  # noqa: E731
    # Small batches (8 packets, 8 of them in flight): the server's input_io
    # returns each batch whole, so the time between deliveries it sees is
    # at least a batch's time on the wire (26 ms on one 20 Mbit/s link).
    common = (f"run=stream nics={ids} count={count} size={SIZE} batch={BATCH} window=8 timeout_ms=60000 "
              "nic_mbps=@MBPS@")
    ready = {"node": "a", "line": "READY"}
    return {
        "name": f"failover-{links}-{cut}", "timeout": timeout,
        "networks": nets,
        "nodes": [
            {"name": "a", "kernel": kernel, "nics": nics,
             "append": f"{common} role=server peer={macs('b')} bin_ms=100 gap_after_ms=2000"},
            {"name": "b", "kernel": kernel, "nics": nics, "start_after": ready,
             "append": f"{common} role=client peer={macs('a')}"},
        ],
        "events": [
            {"after": ready, "delay": cut_at, "action": "cut-" + cut, "node": "b", "nic": 1},
            {"after": ready, "delay": cut_at + restore_after, "action": "restore", "node": "b", "nic": 1},
        ],
    }


def analyse(out, links, cut, cut_at, restore_after):
    a = open(os.path.join(out, "a.log"), errors="replace").read()
    b = open(os.path.join(out, "b.log"), errors="replace").read()
    summ = json.load(open(os.path.join(out, "summary.json")))
    ev = summ["events"]
    ready = kv(re.search(r"^READY stream server.*$", a, re.M).group(0))
    ready_ms, ready_host = int(ready["tsc_ms"]), ev[0]["triggered"]
    srv_ms = lambda host_s: ready_ms + (host_s - ready_host) * 1000  # noqa: E731
    cut_srv, restore_srv = srv_ms(ev[0]["fired"]), srv_ms(ev[1]["fired"])
    ser = kv(re.search(r"^SERIES stream server.*$", a, re.M).group(0))
    start, bin_ms = int(ser["start_ms"]), int(ser["bin_ms"])
    kb = [int(x) for x in ser["kbytes"].split(",")] if ser.get("kbytes") else []
    series = [[round(i * bin_ms / 1000, 1), round(k * 8 / bin_ms, 2)] for i, k in enumerate(kb)]
    cut_s, restore_s = (cut_srv - start) / 1000, (restore_srv - start) / 1000
    end_s = len(series) * bin_ms / 1000
    before, during, after, back_ms = windows(series, cut_s, restore_s, bin_ms / 1000)
    res = kv(re.search(r"^RESULT stream system=kernel role=server.*$", a, re.M).group(0))
    gap = kv(re.search(r"^GAP stream server.*$", a, re.M).group(0))
    # The client's clock, mapped to the server's by the first packet: it
    # left the client (its START line) and reached the server within a
    # link's latency.
    cstart = kv(re.search(r"^START stream client.*$", b, re.M).group(0))
    off = start - int(cstart["tsc_ms"])
    events = []
    for m in re.finditer(r"^io: chan \d+ peer 0 link 1 (suspected|dead|alive again)(.*)$", b, re.M):
        d = kv(m.group(2))
        t = int(d["tsc_ms"]) + off
        det = re.search(r"detected in (\d+) us", m.group(2))
        events.append((m.group(1), t, int(det.group(1)) / 1000 if det else None))
    first = next((e for e in events if e[0] != "alive again" and e[1] >= cut_srv - 100), None)
    alive = next((e for e in events if e[0] == "alive again" and e[1] >= restore_srv - 100), None)
    # The server's own "alive again" for the link, on its clock (which the
    # runner's restore time maps to exactly, through READY): the client's
    # clock is mapped by its first packet, which start-up may delay.
    srv_alive = next((int(kv(m.group(1))["tsc_ms"]) for m in
                      re.finditer(r"^io: chan \d+ peer 0 link 1 alive again(.*)$", a, re.M)
                      if int(kv(m.group(1))["tsc_ms"]) >= restore_srv - 100), None)
    lk = re.search(r"^LINK stream client peer=0 link=1 (.*)$", b, re.M)
    skews = [int(kv(m.group(0)).get("max_skew_us", 0)) for m in re.finditer(r"^LINK stream client .*$", b, re.M)]
    return {
        "system": "kernel", "links": links, "cut": cut, "bytes": SIZE,
        "detect_ms": round(first[2], 1) if first else None,
        "detect_how": first[0] if first else None,
        "detect_map_ms": round(first[1] - cut_srv, 1) if first else None,
        "recover_ms": round(srv_alive - restore_srv, 1) if srv_alive is not None else None,
        "recover_client_ms": round(alive[1] - restore_srv, 1) if alive else None,
        "rate_back_ms": back_ms,
        "mbps_before": before, "mbps_during": during, "mbps_after": after,
        "max_gap_ms": round(int(gap["max_gap_us"]) / 1000, 1),
        "max_gap_at_s": round(int(gap["at_ms"]) / 1000, 2),  # from the stream's start, like cut_s
        "lost": int(res["missing"]), "corrupt": int(res["corrupt"]),
        "retransmits": int(kv(re.search(r"^RELIABLE stream client.*$", b, re.M).group(0))["retransmits"]),
        "rto": int(kv(re.search(r"^RELIABLE stream client.*$", b, re.M).group(0))["rto"]),
        "link1_client": kv(lk.group(1)) if lk else {},
        "max_skew_unsuspected_ms": round(max(skews) / 1000, 1) if skews else None,
        "cut_s": round(cut_s, 2), "restore_s": round(restore_s, 2), "series": series,
    }


def cluster(topo, timeout, analyse_fn):
    """Runs topo on the cluster runner in a scratch directory and returns
    analyse_fn(run directory); a failed run raises with the logs' tails."""
    with tempfile.TemporaryDirectory(prefix="failover.") as d:
        tp, out = os.path.join(d, "topo.json"), os.path.join(d, "run")
        with open(tp, "w") as f:
            json.dump(topo, f)
        r = subprocess.run([os.path.join(ROOT, "tools", "cluster", "run"), tp, "--out", out,
                            "--timeout", str(timeout)], capture_output=True, text=True, check=False)
        if r.returncode != 0:
            tail = ""
            for n in ("a", "b"):
                try:
                    tail += "".join(open(os.path.join(out, f"{n}.log"), errors="replace").readlines()[-6:])
                except OSError:
                    pass
            raise RuntimeError(f"failover run {topo['name']} failed ({r.returncode}):\n"
                               f"{r.stdout[-600:]}{r.stderr[-600:]}\n{tail}")
        return analyse_fn(out)


def run_one(kernel, links, mbps, cut, cut_at, restore_after, after, timeout):
    pkt_s = lambda l: l * mbps * 1e6 / 8 / (SIZE + 30 + 24)  # noqa: E731
    # 2 s of start-up before the stream begins, then before/during/after
    secs = [(cut_at - 2, links), (restore_after, links - 1), (after, links)]
    count = int(sum(s * pkt_s(n) for s, n in secs) // BATCH * BATCH)
    topo = topology(kernel, links, mbps, cut, count, cut_at, restore_after, timeout)
    row = cluster(topo, timeout, lambda out: analyse(out, links, cut, cut_at, restore_after))
    row["count"] = count
    return row


def run_idle(kernel, links, mbps, timeout=90):
    """A silent cut while the channel is idle (heartbeats only): the client
    sends a second's worth, waits for every acknowledgement, sends nothing
    for 3 s, then the rest. Link 1 is cut 1 s into the idle time and
    restored 1 s later. Returns detect_ms (the client's own: from the last
    frame heard on the link to its death), detect_map_ms and recover_ms
    (against the runner's cut and restore, mapped to the client's clock
    through its IDLE line)."""
    per_s = int(links * mbps * 1e6 / 8 / (SIZE + 54)) // BATCH * BATCH
    topo = topology(kernel, links, mbps, "silent", 2 * per_s, 0, 0, timeout)
    topo["name"] = f"failover-{links}-idle"
    topo["nodes"][1]["append"] += f" idle_at={per_s} idle_ms=3000"
    idle = {"node": "b", "line": "IDLE stream client"}
    topo["events"] = [{"after": idle, "delay": 1, "action": "cut-silent", "node": "b", "nic": 1},
                      {"after": idle, "delay": 2, "action": "restore", "node": "b", "nic": 1}]
    b, ev = cluster(topo, timeout, lambda out: (
        open(os.path.join(out, "b.log"), errors="replace").read(),
        json.load(open(os.path.join(out, "summary.json")))["events"]))
    idle_ms = int(kv(re.search(r"^IDLE stream client.*$", b, re.M).group(0))["tsc_ms"])
    cli = lambda host_s: idle_ms + (host_s - ev[0]["triggered"]) * 1000  # noqa: E731
    cut, restore = cli(ev[0]["fired"]), cli(ev[1]["fired"])
    dead = alive = None
    for m in re.finditer(r"^io: chan \d+ peer 0 link 1 (dead|alive again)(.*)$", b, re.M):
        t = int(kv(m.group(2))["tsc_ms"])
        det = re.search(r"detected in (\d+) us", m.group(2))
        if m.group(1) == "dead" and dead is None and t >= cut - 50:
            dead = (t, int(det.group(1)) / 1000)
        if m.group(1) == "alive again" and alive is None and t >= restore - 50:
            alive = t
    return {"system": "kernel", "links": links, "cut": "silent-idle",
            "detect_ms": round(dead[1], 1) if dead else None,
            "detect_map_ms": round(dead[0] - cut, 1) if dead else None,
            "recover_ms": round(alive - restore, 1) if alive else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel")
    ap.add_argument("out")
    ap.add_argument("runs", type=int)
    ap.add_argument("--links", default="2,4")
    ap.add_argument("--cuts", default="visible,silent")
    ap.add_argument("--mbps", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    cut_at, restore_after, after = (4, 4, 3) if a.quick else (5, 10, 5)
    rows = []
    for links in [int(x) for x in a.links.split(",")]:
        for cut in a.cuts.split(","):
            for r in range(a.runs):
                print(f"failover: kernel, {links} links, {cut} cut, run {r + 1}/{a.runs}", flush=True)
                row = run_one(os.path.abspath(a.kernel), links, a.mbps, cut, cut_at, restore_after, after,
                              timeout=cut_at + restore_after + after + 90)
                row["run"] = r
                rows.append(row)
                print(f"  detect {row['detect_ms']} ms ({row['detect_how']}), recover {row['recover_ms']} ms, "
                      f"Mbit/s {row['mbps_before']}/{row['mbps_during']}/{row['mbps_after']}, "
                      f"max gap {row['max_gap_ms']} ms, lost {row['lost']}, corrupt {row['corrupt']}", flush=True)
    idle = []
    for links in [int(x) for x in a.links.split(",")][:1]:
        for r in range(a.runs):
            print(f"failover: kernel, {links} links, silent cut while idle, run {r + 1}/{a.runs}", flush=True)
            row = run_idle(os.path.abspath(a.kernel), links, a.mbps)
            row["run"] = r
            idle.append(row)
            print(f"  detect {row['detect_ms']} ms (mapped {row['detect_map_ms']}), recover {row['recover_ms']} ms",
                  flush=True)
    doc = {"bench": "failover", "env": env("tcg", "real", a.runs, backend="bridge+tap (cluster runner)",
                                           nic="e1000"),
           "link_mbps": a.mbps, "cut_at_s": cut_at, "restore_after_s": restore_after, "rows": rows,
           "idle_rows": idle, "heartbeat_ms": 10, "heartbeats_missed": 3, "skew_ms": 10}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "kernel-failover.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"failover: wrote {os.path.join(a.out, 'kernel-failover.json')}")


if __name__ == "__main__":
    main()
