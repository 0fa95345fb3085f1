#!/usr/bin/env python3
"""Balancing senders over two NICs (Taniguchi et al. section 4.2, Table 2):
make bench-lb, this kernel's part.

Per policy (rr, tlb, history) one boot pair on the cluster runner
(tests/qemu/lb/topology.json): the sender node runs user/lbsend.c RUNS
times in a row, the receiver node user/lbrecv.c. Scale: links paced to
10 Mbit/s (the paper's 100 / 10) and every count / 10, timing unchanged
(unit_ms=1000: A at 0 s, B at 4 s, C at 8 s, T = 10 s); A and B stop at 40 s.

From each run (the sender's clock, t = 0 at the run's start, which A's first
send follows by a few ms):
- proc_mbit_per_10s, series: each process's payload (1 KiB a send) per 10 s
  and per 0.5 s, from the sends output_io completed (paced: on the wire
  within 4 ms); every one of them was checked by its receiver (count, order,
  every byte) and confirmed before the sender ended;
- nic_mbit_per_10s: the kernel's frame bytes per NIC per period (T = 10 s
  from A's first send: LBNIC);
- c_runtime_s: from C's first send to its receiver's confirmation;
- cpu_pct: the sender machine's busy share (elapsed minus halted) from C's
  start to the first sender to end (LBRUN);
- state: lb_report.state_of; decisions: every LB decide line, replayed
  against tests/qemu/lb/check.py's model (model_agrees); max_rebinds_per_period.

Usage: lb.py KERNEL OUTDIR RUNS [--policies rr,tlb,history] [--quick]
Writes OUTDIR/kernel-lb.json.
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
sys.path.insert(0, os.path.join(ROOT, "tests", "qemu", "lb"))
from env import env  # noqa: E402
import check  # noqa: E402
import lb_report  # noqa: E402

SCALE, MBPS, PKT = 10, 10, 1024
KV = re.compile(r"(\w+)=(\S+)")


def kv(line):
    return dict(KV.findall(line))


def lines(log, tag, run):
    return [kv(l) for l in log.splitlines() if l.startswith(tag + " ") and f" run={run} " in l + " "]


def mbit(sends):
    return sends * PKT * 8 / 1e6


def analyse(log, run, model, unit_s, stop):
    procs = {f["proc"]: f for f in lines(log, "LBPROC", run)}
    series = {f["proc"]: f for f in lines(log, "LBSERIES", run)}
    runl = lines(log, "LBRUN", run)
    nics = {int(f["nic"]): f for f in lines(log, "LBNIC", run)}
    if sorted(procs) != ["A", "B", "C"] or sorted(series) != ["A", "B", "C"] or not runl or len(nics) != 2:
        return {"error": f"run {run}: incomplete output (procs {sorted(procs)}, LBRUN {len(runl)})"}
    bad = [p for p, f in procs.items() if f["confirmed"] != f["sends"]]
    if bad:
        return {"error": f"run {run}: not confirmed by the receiver: {bad}"}
    bin_s = int(series["A"]["bin_ms"]) / 1000
    per_bin = {p: [int(x) for x in series[p]["sends"].split(",") if x] for p in "ABC"}
    n10 = int(round(10 * unit_s / bin_s))
    per10 = {p: [round(mbit(sum(v[k * n10:(k + 1) * n10])), 2) for k in range(4)] for p, v in per_bin.items()}
    nic10 = {f"nic{n}": [round(int(x) * 8 / 1e6, 2) for x in (nics[n]["bytes"].split(",") + ["0"] * 4)[:4]]
             for n in (0, 1)}
    decisions = [d for d in model.decisions] if model else []
    per, last = {}, {}
    for d in decisions:  # a rebind: another NIC than the sender's last decision gave (tlb unbinds)
        if last.get(d[1], -1) >= 0 and d[4] != last[d[1]]:
            per[(d[0], d[1])] = per.get((d[0], d[1]), 0) + 1
        last[d[1]] = d[4]
    row = {
        "run": run, "scale": SCALE, "link_mbps": MBPS, "where": "sender", "unit_s": unit_s,
        "c_mbit_10_20": per10["C"][1], "total_mbit_10_20": round(sum(per10[p][1] for p in "ABC"), 2),
        "c_runtime_s": round(int(procs["C"]["runtime_ms"]) / 1000, 3),
        "c_start_s": round(int(procs["C"]["start_ms"]) / 1000, 3),
        "cpu_pct": round(int(runl[0]["cpu_x1000"]) / 10, 1),
        "cpu_interval_s": round(int(runl[0]["cpu_interval_ms"]) / 1000, 2),
        "nic_mbit_per_10s": nic10, "proc_mbit_per_10s": per10,
        "series": dict({"bin_s": bin_s}, **{p: [round(mbit(x) / bin_s, 2) for x in v] for p, v in per_bin.items()}),
        "sends": {p: int(procs[p]["sends"]) for p in "ABC"},
        "rebinds": {p: int(procs[p]["rebinds"]) for p in "ABC"},
        "nic_in": {p: procs[p]["nic_in"] for p in "ABC"}, "why": {p: procs[p]["why"] for p in "ABC"},
        "max_rebinds_per_period": max(per.values()) if per else 0,
        "decisions": [{"period": d[0], "chan": d[1], "from": d[3], "to": d[4], "why": d[5]} for d in decisions],
        "model_agrees": not model.errors if model else None,
    }
    row["state"] = lb_report.state_of(row)
    return row


def boot(kernel, policy, runs, unit_ms, stop, timeout):
    """One boot pair: RUNS runs of policy. Returns (sender log, receiver log, runner rc)."""
    with open(os.path.join(ROOT, "tests", "qemu", "lb", "topology.json")) as f:
        text = f.read()
    text = text.replace("SEND_ARGS", f"policies={policy} runs={runs} unit_ms={unit_ms} stop={stop} gap_ms=1500")
    text = text.replace("RECV_ARGS", f"runs={runs} unit_ms={unit_ms} timeout_s=90")
    topo = json.loads(text)
    topo["name"] = f"lb-{policy}"
    topo["timeout"] = timeout
    for n in topo["nodes"]:
        n["kernel"] = kernel
    with tempfile.TemporaryDirectory(prefix="lb.") as d:
        tp, out = os.path.join(d, "topo.json"), os.path.join(d, "run")
        with open(tp, "w") as f:
            json.dump(topo, f)
        r = subprocess.run([os.path.join(ROOT, "tools", "cluster", "run"), tp, "--out", out,
                            "--timeout", str(timeout)], capture_output=True, text=True, check=False)
        read = lambda n: open(os.path.join(out, f"{n}.log"), errors="replace").read()  # noqa: E731
        try:
            a, b = read("a"), read("b")
        except OSError:
            a, b = "", ""
        return a, b, r.returncode, r.stdout[-400:] + r.stderr[-400:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel")
    ap.add_argument("out")
    ap.add_argument("runs", type=int)
    ap.add_argument("--policies", default="rr,tlb,history")
    ap.add_argument("--quick", action="store_true", help="timing / 5 (T = 2 s): a look, not the benchmark")
    a = ap.parse_args()
    unit_ms, stop = (200, 40) if a.quick else (1000, 40)
    rows = []
    for pol in a.policies.split(","):
        print(f"lb: kernel, {pol}, {a.runs} run(s) in one boot pair", flush=True)
        timeout = int(a.runs * (stop * unit_ms / 1000 + 12) + 90)
        slog, rlog, rc, tail = boot(os.path.abspath(a.kernel), pol, a.runs, unit_ms, stop, timeout)
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(slog)
            lname = f.name
        models = check.runs(lname)
        os.unlink(lname)
        for r in range(a.runs):
            row = analyse(slog, r, models[r] if r < len(models) and pol != "rr" else None, unit_ms / 1000, stop)
            row.update(policy=pol, system="kernel", run=r)
            if "error" in row and rc:
                row["error"] += f" (runner exit {rc}: {tail.strip()[-200:]})"
            rows.append(row)
            if "error" in row:
                print(f"  run {r}: {row['error']}", flush=True)
            else:
                print(f"  run {r}: state {row['state']}, C {row['c_mbit_10_20']} Mbit in 10-20 s, total "
                      f"{row['total_mbit_10_20']}, C ran {row['c_runtime_s']} s, cpu {row['cpu_pct']} %, "
                      f"model {'agrees' if row['model_agrees'] in (True, None) else 'DISAGREES'}", flush=True)
    doc = {"bench": "lb", "env": env("tcg", "real", a.runs, backend="dgram wires (cluster runner)", nic="e1000"),
           "scale": SCALE, "link_mbps": MBPS, "unit_ms": unit_ms, "stop_s": stop * unit_ms / 1000,
           "period_s": 10 * unit_ms / 1000, "overload_pct": 90, "rows": rows}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "kernel-lb.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"lb: wrote {os.path.join(a.out, 'kernel-lb.json')}")


if __name__ == "__main__":
    main()
