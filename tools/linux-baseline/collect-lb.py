#!/usr/bin/env python3
"""Turn bench-lb.sh's run directories into lb JSON rows (schema: BENCH.md).

    collect-lb.py --out FILE [--env K=V ...] [--check] RUNDIR...

Each RUNDIR is one cluster-runner run (s.log: the sender, r.log: the
receiver, both running lbbench) plus run.json ({"policy", "run", "scale",
"link_mbps"}) written by bench-lb.sh.  One row per run:
  policy            balance-rr | balance-tlb
  system            linux (the mechanism is the policy)
  run, scale, link_mbps
  where             "receiver": process volumes are the payload bytes the
                    receiver verified, binned on its clock (t=0: A's start,
                    the arrival of A's header less the sender's time in it);
                    NIC volumes are the sender's slave tx_bytes (whole
                    frames) on the sender's clock (t=0: A's start)
  c_mbit_10_20      C's Mbit (10^6 bits of payload) in [10 s, 20 s)
  total_mbit_10_20  A + B + C in [10 s, 20 s)
  c_runtime_s       C's start to the receiver's answer that all of C's bytes
                    arrived intact (the sender's clock)
  c_last_byte_s     C's start to the arrival of its last byte (receiver)
  cpu_pct           sender busy % (guest /proc/stat: all but idle and
                    iowait, one vCPU) from C's start to the first of A, B, C
                    to end or be stopped (A and B stop at 40 s)
  nic_mbit_per_10s  {"nic0": [4 windows 0-40 s], "nic1": [...]}
  proc_mbit_per_10s {"A": [4], "B": [4], "C": [4]}
  series            {"bin_s": 0.5, "A": [Mbit/s per bin from 0 s], "B", "C"}
  nic_series        {"bin_s": 0.5, "nic0": [...], "nic1": [...]}
  state             Z if c_runtime_s <= 22 (C done by 30 s after A's start);
                    else X if c_mbit_10_20 >= 0.5 * link_mbps * 10;
                    else Y (the rule agreed with the kernel side)
  bytes, lost, corrupt   per process: verified, written - verified, bad bytes
  retrans           per process: TCP segments sent again (TCP_INFO)
  drops             NIC drop counters of both guests
  warm_s            the wait after the warm-up connections (0: none, fresh
                    tlb entries; see bench-lb.sh)
  nic_in            (when the receiver counted flows per source MAC,
                    LBFLOW) {"A": "n,n,n,n", ...}: per 10 s window the
                    sender NIC (LBSLAVE's index) that carried most of the
                    process's frame bytes, -1 none; balance-rr: every
                    window -1 (striped per packet; its slaves share one MAC)
  flow_mbit_per_10s {"A": {"nic0": [4], "nic1": [4]}, ...}: those bytes
                    (frames, Mbit) per NIC and window (not with balance-rr)
  error             why the run gave no figures (the row has no others then)
With --check (the self-check, make test-linux-lb) it exits 1 unless every
run completed with every byte verified (nothing lost, nothing corrupt), a
state, and both NICs carrying at least 10 % of the bytes over 0-40 s.
Standard library only.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collect import parse_env, rundirs_parser  # noqa: E402  (key=value words of --env, the command line)

PROCS = "ABC"
WINDOWS = 4  # 10 s windows reported: 0-40 s, the paper's Figure 3


def state_of(c_runtime_s, c_mbit_10_20, link_mbps):
    """The X/Y/Z rule (kept identical to the kernel side's)."""
    if c_runtime_s is not None and c_runtime_s <= 22:
        return "Z"
    if c_mbit_10_20 >= 0.5 * link_mbps * 10:
        return "X"
    return "Y"


def kv(line):
    return dict(m.groups() for m in re.finditer(r"(\w+)=(\S+)", line))


def read_lines(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [ln.rstrip("\r\n") for ln in f]
    except OSError:
        return []


def bins(lines, tag, key):
    """{who: [values]} from `TAG key=WHO from=I bytes=a,b,...` lines."""
    out = {}
    for ln in lines:
        if not ln.startswith(tag + " "):
            continue
        f = kv(ln)
        if key not in f or "from" not in f or "bytes" not in f:
            continue
        v = out.setdefault(f[key], [])
        start = int(f["from"])
        vals = [int(x) for x in f["bytes"].split(",") if x.isdigit()]
        if len(v) < start + len(vals):
            v.extend([0] * (start + len(vals) - len(v)))
        v[start:start + len(vals)] = vals
    return out


def window_mbit(vals, bin_s, lo_s, hi_s):
    a, b = int(round(lo_s / bin_s)), int(round(hi_s / bin_s))
    return sum(vals[a:b]) * 8 / 1e6


def row_of(d):
    with open(os.path.join(d, "run.json"), encoding="utf-8") as f:
        meta = json.load(f)
    row = {"policy": meta["policy"], "system": "linux", "run": meta["run"], "scale": meta["scale"],
           "link_mbps": meta["link_mbps"], "where": "receiver"}
    s, r = read_lines(os.path.join(d, "s.log")), read_lines(os.path.join(d, "r.log"))
    if not any(ln.startswith("DONE ok") for ln in s) or not any(ln.startswith("DONE ok") for ln in r):
        why = [ln for ln in s + r if ln.startswith("DONE fail")]
        row["error"] = why[0] if why else "a guest did not finish (no DONE line: see %s)" % d
        return row
    plan = next((kv(ln) for ln in s if ln.startswith("LBPLAN ")), {})
    bin_s = int(plan.get("bin_us", 500000)) / 1e6
    procs = {kv(ln)["p"]: kv(ln) for ln in s if ln.startswith("LBPROC ")}
    cpu = next((kv(ln) for ln in s if ln.startswith("LBCPU ")), {})
    rx = {kv(ln)["p"]: kv(ln) for ln in r if ln.startswith("LBRX ")}
    pb = bins(r, "LBBINS", "p")
    nb = bins(s, "LBNIC", "nic")
    c = procs.get("C", {})
    if c.get("status") != "ok" or "C" not in pb:
        row["error"] = "C did not complete (status %s)" % c.get("status")
        return row
    c_start = int(c["start_us"]) / 1e6
    row["c_mbit_10_20"] = round(window_mbit(pb["C"], bin_s, 10, 20), 3)
    row["total_mbit_10_20"] = round(sum(window_mbit(pb.get(p, []), bin_s, 10, 20) for p in PROCS), 3)
    row["c_runtime_s"] = round(int(c["end_us"]) / 1e6 - c_start, 3)
    row["c_last_byte_s"] = round(int(rx["C"]["last_us"]) / 1e6 - c_start, 3) if "C" in rx else None
    busy = float(cpu.get("busy_pct", -1))
    row["cpu_pct"] = round(busy, 2) if busy >= 0 else None
    row["cpu_interval_s"] = [round(int(cpu.get("from_us", 0)) / 1e6, 3), round(int(cpu.get("to_us", 0)) / 1e6, 3)]
    row["nic_mbit_per_10s"] = {"nic%s" % k: [round(window_mbit(v, bin_s, 10 * w, 10 * w + 10), 3)
                                             for w in range(WINDOWS)] for k, v in sorted(nb.items())}
    row["proc_mbit_per_10s"] = {p: [round(window_mbit(pb.get(p, []), bin_s, 10 * w, 10 * w + 10), 3)
                                    for w in range(WINDOWS)] for p in PROCS}
    row["series"] = {"bin_s": bin_s}
    row["series"].update({p: [round(b * 8 / 1e6 / bin_s, 3) for b in pb.get(p, [])] for p in PROCS})
    row["nic_series"] = {"bin_s": bin_s}
    row["nic_series"].update({"nic%s" % k: [round(b * 8 / 1e6 / bin_s, 3) for b in v] for k, v in sorted(nb.items())})
    row["state"] = state_of(row["c_runtime_s"], row["c_mbit_10_20"], row["link_mbps"])
    row["bytes"] = {p: int(procs[p].get("verified", 0)) for p in PROCS if p in procs}
    row["lost"] = {p: int(procs[p].get("written", 0)) - int(procs[p].get("verified", 0))
                   for p in PROCS if "written" in procs.get(p, {})}
    row["corrupt"] = {p: int(rx[p]["corrupt"]) for p in PROCS if p in rx}
    row["proc_status"] = {p: procs[p].get("status") for p in PROCS if p in procs}
    row["retrans"] = {p: int(procs[p]["retrans"]) for p in PROCS if "retrans" in procs.get(p, {})}
    drops = {}
    for who, lines in (("sender", s), ("receiver", r)):
        for ln in lines:
            if ln.startswith("LBDROPS "):
                f = kv(ln)
                drops["%s_%s" % (who, f.pop("nic"))] = {k: int(v) for k, v in f.items() if v.isdigit()}
    row["drops"] = drops
    row["nice"] = {p: int(procs[p]["nice"]) for p in PROCS if "nice" in procs.get(p, {})}
    row["warm_s"] = int(plan.get("warm_s", 0))
    bond = next((kv(ln) for ln in s if ln.startswith("LBBOND ")), {})
    row["bond"] = {"mode": bond.get("mode"), "xmit_hash_policy": bond.get("hash")}
    flows(row, s, r, bin_s)
    return row


def flows(row, s, r, bin_s):
    """nic_in and flow_mbit_per_10s from the receiver's LBFLOW lines and the
    sender's LBSLAVE addresses (nothing when the run has none)."""
    slaves = [kv(ln) for ln in s if ln.startswith("LBSLAVE ")]
    nic_of = {f["mac"]: int(f["nic"]) for f in slaves}
    striped = (row["bond"].get("mode") or "").startswith("balance-rr")
    if len(nic_of) < len(slaves):  # slaves sharing the bond's MAC (balance-rr): no flow per NIC
        if striped and slaves:
            row["nic_in"] = {p: ",".join(["-1"] * WINDOWS) for p in PROCS}
        return
    fl = {}
    for ln in r:
        if ln.startswith("LBFLOW ") and "mac=" in ln:
            f = kv(ln)
            key = f["p"] + " " + f["mac"]
            fl.setdefault(key, []).append(ln.replace(" mac=" + f["mac"], "").replace("p=" + f["p"], "who=" + key.replace(" ", "/")))
    if not fl or not nic_of:
        return
    per = {}
    for key, lines in fl.items():
        p, mac = key.split(" ")
        vals = bins(lines, "LBFLOW", "who").get(key.replace(" ", "/"), [])
        n = nic_of.get(mac)
        if n is None:
            continue
        per.setdefault(p, {})["nic%d" % n] = [round(window_mbit(vals, bin_s, 10 * w, 10 * w + 10), 3)
                                              for w in range(WINDOWS)]
    row["flow_mbit_per_10s"] = per
    nic_in = {}
    for p in PROCS:
        cells = []
        for w in range(WINDOWS):
            best = max(((v[w], int(k[3:])) for k, v in per.get(p, {}).items()), default=(0, -1))
            cells.append(str(-1 if striped or best[0] <= 0 else best[1]))
        nic_in[p] = ",".join(cells)
    row["nic_in"] = nic_in


def check(rows):
    """Problems found in the rows (empty: all good)."""
    bad = []
    for r in rows:
        name = "%s run %s" % (r["policy"], r["run"])
        if "error" in r:
            bad.append("%s: %s" % (name, r["error"]))
            continue
        if r["state"] not in ("X", "Y", "Z"):
            bad.append("%s: no state" % name)
        if any(r["lost"].values()) or any(r["corrupt"].values()) or len(r["bytes"]) != 3:
            bad.append("%s: lost %s corrupt %s" % (name, r["lost"], r["corrupt"]))
        nic = [sum(v) for _, v in sorted(r["nic_mbit_per_10s"].items())]
        if len(nic) != 2 or min(nic) < 0.1 * sum(nic):
            bad.append("%s: the NICs carried %s Mbit in 0-40 s: not spread" % (name, nic))
    return bad


def main():
    ap = rundirs_parser(__doc__)
    ap.add_argument("--check", action="store_true", help="fail unless every run is complete and intact")
    a = ap.parse_args()
    rows = [row_of(d) for d in a.rundirs if os.path.exists(os.path.join(d, "run.json"))]
    if not rows:
        sys.exit("collect-lb.py: no runs in %s" % " ".join(a.rundirs))
    env = parse_env(a.env)
    env["failed_runs"] = sum(1 for r in rows if "error" in r)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump({"bench": "lb", "env": env, "rows": rows}, f, indent=1)
        f.write("\n")
    if a.check:
        bad = check(rows)
        for b in bad:
            print("collect-lb.py: FAIL %s" % b, file=sys.stderr)
        if bad:
            sys.exit(1)
        print("collect-lb.py: %d runs complete, every byte verified, both NICs used" % len(rows))


if __name__ == "__main__":
    main()
