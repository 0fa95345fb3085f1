#!/usr/bin/env python3
"""Link failure during a stream (RI2N section 4.2, Table 4): make bench-failover,
this kernel's part. Also a silent cut while the channel is idle (heartbeats
only: idle_rows) at the first link count.

Each run boots a server and a client VM of this kernel joined by L links
(the cluster runner, tools/cluster/: one QEMU dgram wire per link, as
Linux's run-failover.py; --wire bridge for taps), e1000 or virtio-net
(--nics), every NIC paced to the same rate (nic_mbps=), both VMs under
-icount shift=0 with poll=irq (--no-icount: the real clock). The client
streams over a reliable channel striped on all L links (user/stream.c:
every packet's order, count and bytes checked by the server); CUT_AT s
after the stream starts on the client's clock (its MARK line, which the
runner acts on), link 1 of the client is cut (visible: QMP set_link off on
the client's NIC; silent: on the server's NIC, which the sender does not
see; with --wire bridge its tap taken down on the host, which neither NIC
sees) and restored RESTORE_AFTER s later (the next MARK), as RI2N cut one
network for 10 s. The stream runs on for AFTER s.

From each run (on the server's clock, which the client's is mapped to
linearly by its START and END lines: the server's first and last packet):
- the delivered Mbit/s in 100 ms bins (the server's SERIES line);
- mbps_before, mbps_during, mbps_after: failover_report.windows(), the
  same rule for every system (the mean of the bins in the 2 s before the
  cut, from 1 s after it to the restore, from 1 s after the restore on);
- detect_ms: the sender's own measure, from the first packet the cut link
  lost (the oldest one in flight on it, sent just after the cut) to the
  moment the sender stopped using it (the first "suspected" or "dead" line
  of link 1 after the cut); detect_map_ms: the same moment against the
  cut's time (tens of ms coarser);
- recover_ms: from the restore to the server's "alive again" line of link 1
  (recover_client_ms: the client's);
  rate_back_ms: from the restore to the first 500 ms at 0.9 x mbps_before;
- max_gap_ms: the longest time between two deliveries from 2 s after the
  stream began (past start-up); lost (packets never delivered) and corrupt
  (delivered out of order, of a wrong size or with a wrong byte);
- cpu_samples: both ends' busy ticks (instructions under -icount) and bytes
  every 500 ms (the CPUS lines of cpu_ms=500), from which
  failover_report.cpu_windows() gives the CPU work per window.

Unpaced (--unpaced: the CPU-bound variant of issue 26): no NIC paced
(nic_mbps=0), the same stream as fast as the two ends' CPUs and the
channel's window let it go; under -icount shift=0 a guest's clock is its
instructions while it runs, so the rate on that clock is set by the CPU,
not by the host. count= is the packets of a guessed total rate on the
sender's clock (--unpaced-mbps, per NIC model: UNPACED_GUESS, from trial
runs; low rather than high, as a faster stream ends sooner) over the whole
timeline plus 3 s, so the stream outlasts the restore; the rows go to
OUTDIR/kernel-failover-unpaced.json (no idle-cut runs).

Usage: failover.py KERNEL OUTDIR RUNS [--links 2,4] [--cuts visible,silent]
                   [--nics e1000,virtio] [--nic-links MODEL:L,L;...]
                   [--wire dgram|bridge] [--no-icount] [--mbps R] [--quick]
                   [--unpaced [--unpaced-mbps MODEL:R,...]]
                   [--append] [--first-run R] [--no-idle]
Writes OUTDIR/kernel-failover.json (--append: adds to its rows).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from env import env  # noqa: E402
from failover_report import dumps, windows  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIZE, BATCH = 8192, 8
# Unpaced: the total Mbit/s on the sender's clock the count is made for, per
# NIC model: about the fastest of the trial runs (4 links, both VMs under
# -icount shift=0), which went 2000-3000 (e1000) and 1000-1400 (virtio-net)
# as the two clocks drifted apart (the receiver's at 0.4-1.1 of the
# sender's): a slower run lasts longer.
UNPACED_GUESS = {"e1000": 3200, "virtio": 1500}


def kv(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


# How the pairs are run (main() sets them): the wire (dgram, as Linux's
# run-failover.py: one QEMU dgram/unix wire per link; a silent cut is the
# far NIC's set_link off, or bridge: a tap per NIC, a silent cut the tap
# down on the host), the NIC model, and -icount shift=0 with poll=irq (the
# idle CPU halts: busy ticks are guest instructions) for the CPU work.
OPTS = {"wire": "dgram", "model": "e1000", "icount": True, "cpu_ms": 500}


def topology(kernel, links, mbps, cut, count, cut_at, restore_after, timeout):
    nets = [{"name": f"net{i}", "wire": OPTS["wire"]} for i in range(links)]
    nics = [{"net": f"net{i}", "mbps": mbps, "model": OPTS["model"]} for i in range(links)]
    ids = ",".join(str(i) for i in range(links))
    macs = lambda node: ",".join(f"@MAC:{node}:{i}@" for i in range(links))  # noqa: E731
    # Small batches (8 packets, 8 of them in flight): the server's input_io
    # returns each batch whole, so the time between deliveries it sees is
    # at least a batch's time on the wire (26 ms on one 20 Mbit/s link).
    common = (f"run=stream nics={ids} count={count} size={SIZE} batch={BATCH} window=8 timeout_ms=60000 "
              "nic_mbps=@MBPS@" + (f" cpu_ms={OPTS['cpu_ms']}" if OPTS["cpu_ms"] else "")
              + (" poll=irq icount=1" if OPTS["icount"] else ""))
    extra = {"qemu_extra": ["-icount", "shift=0"]} if OPTS["icount"] else {}
    ready = {"node": "a", "line": "READY"}
    return {
        "name": f"failover-{links}-{cut}", "timeout": timeout,
        "networks": nets,
        "nodes": [
            {"name": "a", "kernel": kernel, "nics": nics,
             "append": f"{common} role=server peer={macs('b')} bin_ms=100 gap_after_ms=2000", **extra},
            {"name": "b", "kernel": kernel, "nics": nics, "start_after": ready,
             "append": f"{common} role=client peer={macs('a')} "
                       f"marks_ms={int(cut_at * 1000)},{int((cut_at + restore_after) * 1000)}", **extra},
        ],
        # On the client's clock: its MARK lines cut_at s from the stream's
        # start and restore_after s later (under -icount the guest's clock
        # may run slower than the host's: the host's seconds would drift).
        "events": [
            {"after": {"node": "b", "line": "MARK stream client i=0"}, "delay": 0, "action": "cut-" + cut,
             "node": "b", "nic": 1},
            {"after": {"node": "b", "line": "MARK stream client i=1"}, "delay": 0, "action": "restore",
             "node": "b", "nic": 1},
        ],
    }


def analyse(out, links, cut, cut_at, restore_after):
    a = open(os.path.join(out, "a.log"), errors="replace").read()
    b = open(os.path.join(out, "b.log"), errors="replace").read()
    summ = json.load(open(os.path.join(out, "summary.json")))
    ev = summ["events"]
    ser = kv(re.search(r"^SERIES stream server.*$", a, re.M).group(0))
    start, bin_ms = int(ser["start_ms"]), int(ser["bin_ms"])
    # The client's clock, mapped to the server's linearly: its START line
    # is the server's first packet, its END line (the last acknowledgement)
    # the server's last (each within a link's latency). Under -icount each
    # VM's clock lags the host's by what the host withholds from it, so
    # the two may run at rates a few % apart.
    c0 = int(kv(re.search(r"^START stream client.*$", b, re.M).group(0))["tsc_ms"])
    cend = re.search(r"^END stream client.*$", b, re.M)
    rate = 1.0
    if cend and "end_ms" in ser and int(kv(cend.group(0))["tsc_ms"]) > c0:
        rate = (int(ser["end_ms"]) - start) / (int(kv(cend.group(0))["tsc_ms"]) - c0)
    to_srv = lambda c_ms: start + (c_ms - c0) * rate  # noqa: E731
    off = start - c0  # at the start
    # The cut and restore: the client's MARK line that triggered each, plus
    # the host's time from seeing it to the action; on the client's clock
    # (cut_client_s, from its START) and mapped to the server's.
    marks = [int(kv(m.group(0))["tsc_ms"]) for m in re.finditer(r"^MARK stream client .*$", b, re.M)]
    cut_cli, restore_cli = (marks[i] + (ev[i]["fired"] - ev[i]["triggered"]) * 1000 for i in (0, 1))
    cut_srv, restore_srv = to_srv(cut_cli), to_srv(restore_cli)
    kb = [int(x) for x in ser["kbytes"].split(",")] if ser.get("kbytes") else []
    series = [[round(i * bin_ms / 1000, 1), round(k * 8 / bin_ms, 2)] for i, k in enumerate(kb)]
    cut_s, restore_s = (cut_srv - start) / 1000, (restore_srv - start) / 1000
    end_s = len(series) * bin_ms / 1000
    before, during, after, back_ms = windows(series, cut_s, restore_s, bin_ms / 1000)
    res = kv(re.search(r"^RESULT stream system=kernel role=server.*$", a, re.M).group(0))
    gap = kv(re.search(r"^GAP stream server.*$", a, re.M).group(0))
    events = []
    for m in re.finditer(r"^io: chan \d+ peer 0 link 1 (suspected|dead|alive again)(.*)$", b, re.M):
        d = kv(m.group(2))
        t = to_srv(int(d["tsc_ms"]))
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
    cpu = {}
    # Each end's samples on its own clock: t from the stream's start.
    for side, log, zero in (("server", a, start), ("client", b, c0)):
        m = re.search(rf"^CPUS stream {side} (.*)$", log, re.M)
        if m:
            d = kv(m.group(1))
            t = [(int(x) - zero) / 1000 for x in d["t_ms"].split(",") if x]
            cpu[side] = {"every_ms": int(d["every_ms"]), "t_s": [round(x, 3) for x in t],
                         "busy": [int(x) for x in d["busy"].split(",") if x],
                         "bytes": [int(x) for x in d["bytes"].split(",") if x], "mark": 0}
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
        "cut_client_s": round((cut_cli - c0) / 1000, 3), "restore_client_s": round((restore_cli - c0) / 1000, 3),
        "end_client_s": round((int(kv(cend.group(0))["tsc_ms"]) - c0) / 1000, 3) if cend else None,
        "clock_rate": round(rate, 4),
        "nic": OPTS["model"], "backend": OPTS["wire"], "icount": OPTS["icount"],
        **({"cpu_samples": cpu} if cpu else {}),
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
            keep = tempfile.mkdtemp(prefix=f"failover-failed-{topo['name']}-")
            shutil.copytree(out, keep, dirs_exist_ok=True)
            tail = f"(logs kept in {keep})\n"
            for n in ("a", "b"):
                try:
                    tail += "".join(open(os.path.join(out, f"{n}.log"), errors="replace").readlines()[-6:])
                except OSError:
                    pass
            raise RuntimeError(f"failover run {topo['name']} failed ({r.returncode}):\n"
                               f"{r.stdout[-600:]}{r.stderr[-600:]}\n{tail}")
        try:
            return analyse_fn(out)
        except (AttributeError, IndexError, KeyError, ValueError) as e:  # the logs lack a line: keep them
            keep = tempfile.mkdtemp(prefix=f"failover-failed-{topo['name']}-")
            shutil.copytree(out, keep, dirs_exist_ok=True)
            raise RuntimeError(f"failover run {topo['name']}: its logs lack a line ({e!r}; kept in {keep})")


def run_one(kernel, links, mbps, cut, cut_at, restore_after, after, timeout, unpaced_mbps=0):
    pkt_s = lambda l: l * mbps * 1e6 / 8 / (SIZE + 30 + 24)  # noqa: E731
    # before/during/after, from the stream's start
    secs = [(cut_at, links), (restore_after, links - 1), (after, links)]
    count = int(sum(s * pkt_s(n) for s, n in secs) // BATCH * BATCH)
    if unpaced_mbps:  # no NIC paced: the guessed total rate over the timeline and 3 s more
        mbps = 0
        count = int((cut_at + restore_after + after + 3) * unpaced_mbps * 1e6 / 8 / SIZE // BATCH * BATCH)
    topo = topology(kernel, links, mbps, cut, count, cut_at, restore_after, timeout)
    try:
        row = cluster(topo, timeout, lambda out: analyse(out, links, cut, cut_at, restore_after))
    except RuntimeError as e:  # once more (kept: the failed run's logs); a second failure ends the benchmark
        print(f"failover: {e}\nfailover: trying once more", flush=True)
        row = cluster(topo, timeout, lambda out: analyse(out, links, cut, cut_at, restore_after))
        row["retried"] = True
    row["count"] = count
    row["paced_mbps"] = mbps or None
    return row


def run_idle(kernel, links, mbps, timeout=90):
    """A silent cut while the channel is idle (heartbeats only): the client
    sends a second's worth, waits for every acknowledgement, sends nothing
    for 3 s, then the rest. Link 1 is cut 1 s (host) into the idle time and
    restored as the stream resumes (its RESUME line). Returns detect_ms (the
    client's own: from the last frame heard on the link to its death),
    detect_map_ms and recover_ms (against the runner's cut and restore, on
    the client's clock through its IDLE and RESUME lines)."""
    per_s = int(links * mbps * 1e6 / 8 / (SIZE + 54)) // BATCH * BATCH
    topo = topology(kernel, links, mbps, "silent", 2 * per_s, 0, 0, timeout)
    topo["name"] = f"failover-{links}-idle"
    topo["nodes"][1]["append"] += f" idle_at={per_s} idle_ms=3000"
    # The restore on the client's RESUME line (its clock: under -icount the
    # host's seconds drift from the guest's), the stream going on.
    idle = {"node": "b", "line": "IDLE stream client"}
    topo["events"] = [{"after": idle, "delay": 1, "action": "cut-silent", "node": "b", "nic": 1},
                      {"after": {"node": "b", "line": "RESUME stream client"}, "delay": 0, "action": "restore",
                       "node": "b", "nic": 1}]
    b, ev = cluster(topo, timeout, lambda out: (
        open(os.path.join(out, "b.log"), errors="replace").read(),
        json.load(open(os.path.join(out, "summary.json")))["events"]))
    idle_ms = int(kv(re.search(r"^IDLE stream client.*$", b, re.M).group(0))["tsc_ms"])
    resume_ms = int(kv(re.search(r"^RESUME stream client.*$", b, re.M).group(0))["tsc_ms"])
    cut = idle_ms + (ev[0]["fired"] - ev[0]["triggered"]) * 1000
    restore = resume_ms + (ev[1]["fired"] - ev[1]["triggered"]) * 1000
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
    ap.add_argument("--nics", default="e1000", help="NIC models, each a cell: e1000,virtio")
    ap.add_argument("--nic-links", default="", help="MODEL:L,L;... link counts of a model (default --links)")
    ap.add_argument("--wire", default="dgram", choices=("dgram", "bridge"))
    ap.add_argument("--no-icount", action="store_true", help="the real clock, no CPU work")
    ap.add_argument("--mbps", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--append", action="store_true", help="add to OUTDIR/kernel-failover.json's rows")
    ap.add_argument("--first-run", type=int, default=1, help="the first run's number (interleaved rounds)")
    ap.add_argument("--no-idle", action="store_true", help="no idle-cut runs")
    ap.add_argument("--unpaced", action="store_true", help="no NIC paced (kernel-failover-unpaced.json)")
    ap.add_argument("--unpaced-mbps", default="",
                    help="unpaced: MODEL:R,... the total Mbit/s guessed for count= (default UNPACED_GUESS)")
    a = ap.parse_args()
    if a.unpaced:
        a.no_idle = True
        UNPACED_GUESS.update({m: int(r) for m, r in (x.split(":") for x in a.unpaced_mbps.split(",") if x)})
    OPTS.update(wire=a.wire, icount=not a.no_icount, cpu_ms=0 if a.no_icount else 500)
    cut_at, restore_after, after = (4, 4, 3) if a.quick else (5, 10, 5)
    path = os.path.join(a.out, "kernel-failover-unpaced.json" if a.unpaced else "kernel-failover.json")
    old = json.load(open(path)) if a.append and os.path.exists(path) else {}
    rows, idle = old.get("rows", []), old.get("idle_rows", [])
    per_model = dict((m, l) for m, l in (x.split(":") for x in a.nic_links.split(";") if x))
    for r in range(a.first_run, a.first_run + a.runs):
        for model in a.nics.split(","):
            OPTS["model"] = model
            for links in [int(x) for x in per_model.get(model, a.links).split(",")]:
                for cut in a.cuts.split(","):
                    print(f"failover: kernel, {model}, {links} links, {cut} cut, run {r}", flush=True)
                    row = run_one(os.path.abspath(a.kernel), links, a.mbps, cut, cut_at, restore_after, after,
                                  timeout=cut_at + restore_after + after + (180 if a.unpaced else 90),
                                  unpaced_mbps=UNPACED_GUESS.get(model, 1000) if a.unpaced else 0)
                    row["run"] = r
                    rows.append(row)
                    print(f"  detect {row['detect_ms']} ms ({row['detect_how']}), recover {row['recover_ms']} ms, "
                          f"Mbit/s {row['mbps_before']}/{row['mbps_during']}/{row['mbps_after']}, "
                          f"max gap {row['max_gap_ms']} ms, lost {row['lost']}, corrupt {row['corrupt']}",
                          flush=True)
        if not a.no_idle:
            OPTS["model"] = a.nics.split(",")[0]
            links = int(per_model.get(OPTS["model"], a.links).split(",")[0])
            print(f"failover: kernel, {links} links, silent cut while idle, run {r}", flush=True)
            row = run_idle(os.path.abspath(a.kernel), links, a.mbps)
            row["run"] = r
            idle.append(row)
            print(f"  detect {row['detect_ms']} ms (mapped {row['detect_map_ms']}), recover {row['recover_ms']} ms",
                  flush=True)
    runs = max([x["run"] for x in rows] or [0])
    doc = {"bench": "failover",
           "env": env("tcg", "icount" if OPTS["icount"] else "real", runs,
                      backend=("dgram: one QEMU dgram/unix wire per link (cluster runner)" if a.wire == "dgram"
                               else "bridge+tap (cluster runner)"), nic=a.nics),
           "link_mbps": None if a.unpaced else a.mbps,
           "pacing": ("none: no NIC paced (nic_mbps=0), as fast as the CPUs and the channel's window let it go"
                      if a.unpaced else f"every NIC paced to {a.mbps} Mbit/s (nic_mbps=)"),
           "cut_at_s": cut_at, "restore_after_s": restore_after, "rows": rows,
           "idle_rows": idle, "heartbeat_ms": 10, "heartbeats_missed": 3, "skew_ms": 10,
           "cpu_clock": ("-icount shift=0 on both VMs, poll=irq: busy ticks (elapsed less halted, sysinfo "
                         "idle_tsc) are guest instructions" if OPTS["icount"] else None)}
    os.makedirs(a.out, exist_ok=True)
    with open(path, "w") as f:
        f.write(dumps(doc))
    print(f"failover: wrote {path}")


if __name__ == "__main__":
    main()
