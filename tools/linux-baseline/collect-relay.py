#!/usr/bin/env python3
"""Relay rows from run-relay.py boots (bench-relay.sh).

    collect-relay.py --out FILE [--env K=V ...] [--quick] BOOTDIR...

Each BOOTDIR holds one boot's result.json.  Rows (BENCH.md's "relay" row),
one per hop count, link count, size and mode, system "linux-router":
  tcp  mbps = median over every connection of every real-time boot
       (relaybench's receiver-timed TCP stream);
  raw  mbps = median over every UDP burst (received * bytes * 8 / T0);
       rtt_us = median UDP round trip of that size.
relay_insns_per_pkt comes from the boots whose routers ran under -icount
shift=0: for each router and each measurement window (its begin and end
marks), busy = (CLOCK_MONOTONIC advance - idle time advance), in TSC ticks
(one per guest instruction under -icount), less the median busy of the
client's empty windows (the marks' own cost on that router), divided by the
IP datagrams it forwarded in the window (Ip ForwDatagrams, both directions:
a TCP window counts the ACKs too).  Two routers: the mean of both; boots:
the median.  relay_busy_ns_per_pkt is the same on the real-time boots, in
ns of the router's clock (no icount).  Without any real-time boot (--quick:
one boot, router under -icount) the Mbit/s and round trips come from the
icount boot and env says so.

--cpu (bench-relay.sh --cpu-boot): the boots are the CPU-work ones (routers
under -icount, the client's NICs paced, UDP bursts only); one row of mode
cpu per hop count, link count and size: relay_insns_per_pkt as above (the
median over the boots; runs_relay_insns_per_pkt each boot's),
relay_insns_raw_per_pkt before the marks' cost, relay_busy_frac the
router's busy share of the window, mbps the client's bursts' median
(received * bytes * 8 / T0, the client's clock), offered_mbps and packets
(datagrams a size, warm-up burst included) from --env.
"""
import argparse
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
from env import env as base_env  # noqa: E402

KV = re.compile(r"(\w+)=(\S*)")


def fields(line):
    return {k: v for k, v in KV.findall(line)}


def med(values, digits=2):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), digits) if values else None


def load(dirs):
    boots = []
    for d in dirs:
        p = os.path.join(d, "result.json")
        try:
            with open(p) as f:
                r = json.load(f)
        except (OSError, ValueError):
            continue
        r["nodes"] = {int(k): v for k, v in r["nodes"].items()}
        r["dir"] = d
        boots.append(r)
    return boots


def windows(lines):
    """{(mode, bytes): [(begin fields, end fields)]} from one router's RMARK lines."""
    out, open_ = {}, {}
    for ln in lines:
        if not ln.startswith("RMARK "):
            continue
        f = fields(ln)
        m = re.match(r"(begin|end)-(\w+)-(\d+)$", f.get("tag", ""))
        if not m:
            continue
        key = (m.group(2), int(m.group(3)))
        if m.group(1) == "begin":
            open_[key] = f
        elif key in open_:
            out.setdefault(key, []).append((open_.pop(key), f))
    return out


def busy(b, e):
    """(busy ticks, busy ns, forwarded) over one window, or None."""
    try:
        dmono = int(e["mono_ns"]) - int(b["mono_ns"])
        didle = int(e["idle_ns"]) - int(b["idle_ns"])
        dtsc = int(e["tsc"]) - int(b["tsc"])
        fwd = int(e["fwd"]) - int(b["fwd"])
    except (KeyError, ValueError):
        return None
    if dmono <= 0 or int(b["idle_ns"]) < 0:
        return None
    ns = dmono - didle
    return ns * dtsc / dmono, ns, fwd


def router_costs(boot):
    """{(mode, bytes): [per-packet cost per router]} in ticks and ns, mark cost removed."""
    nodes = boot["hops"] + 2
    ticks, nss, fwds, marks = {}, {}, {}, []
    for r in range(1, nodes - 1):
        w = windows(boot["nodes"].get(r, []))
        idle = [busy(b, e) for b, e in w.get(("idle", 0), [])]
        idle = [x for x in idle if x]
        mark_t = statistics.median([x[0] for x in idle]) if idle else 0.0
        mark_ns = statistics.median([x[1] for x in idle]) if idle else 0.0
        marks.append(mark_t)
        for key, pairs in w.items():
            if key[0] == "idle":
                continue
            for b, e in pairs:
                x = busy(b, e)
                if not x or x[2] <= 0:
                    continue
                ticks.setdefault(key, {}).setdefault(r, []).append((x[0] - mark_t) / x[2])
                nss.setdefault(key, {}).setdefault(r, []).append((x[1] - mark_ns) / x[2])
                fwds.setdefault(key, {}).setdefault(r, []).append(x[2])

    def mean_of_routers(d):
        return {k: statistics.mean(statistics.median(v) for v in per.values()) for k, per in d.items()}

    return mean_of_routers(ticks), mean_of_routers(nss), {k: statistics.mean(
        statistics.median(v) for v in per.values()) for k, per in fwds.items()}, marks


def client_results(boot):
    out = {}
    for ln in boot["nodes"].get(0, []):
        if ln.startswith("RESULT "):
            mode = ln.split()[1]
            f = fields(ln)
            out.setdefault((mode, int(f["bytes"])), []).append(f)
        elif ln.startswith("LOSS "):
            f = fields(ln)
            out.setdefault(("loss", int(f["bytes"])), []).append(f)
    return out


def rows_for(boots, icount_boots, hops, links, sizes):
    real = [b for b in boots if b["hops"] == hops and b["links"] == links]
    ic = [b for b in icount_boots if b["hops"] == hops and b["links"] == links]
    src = real or ic
    if not src:
        return []
    res = [client_results(b) for b in src]
    costs = [router_costs(b) for b in ic] if hops else []
    real_costs = [router_costs(b) for b in real] if hops else []
    rows = []
    for size in sizes:
        for mode in ("tcp", "raw"):
            key = (mode, size)
            per_boot = [[float(f["mbps"]) for f in r.get(key, [])] for r in res]
            vals = [v for pb in per_boot for v in pb]
            if not vals:
                continue
            row = {"system": "linux-router", "mode": mode, "hops": hops, "links": links, "bytes": size,
                   "mbps": med(vals), "rtt_us": None,
                   "relay_insns_per_pkt": med([c[0].get(key) for c in costs], 0) if hops else None,
                   "relay_copy_bytes_per_pkt": None,
                   "relay_busy_ns_per_pkt": med([c[1].get(key) for c in real_costs], 0) if hops else None,
                   "fwd_pkts": med([c[2].get(key) for c in costs], 0) if hops else None,
                   "n": len(vals), "boot_median_mbps": [med(pb) for pb in per_boot if pb]}
            if mode == "tcp":
                row["retrans_per_conn"] = med([float(f["retrans"]) for r in res for f in r.get(key, [])])
                row["bytes_verified"] = sum(int(f["verified"]) for r in res for f in r.get(key, []))
            else:
                rtts = [float(f["us"]) for r in res for f in r.get(("rtt", size), [])]
                row["rtt_us"] = med(rtts, 1)
                row["rtt_p99_us"] = (round(sorted(rtts)[min(len(rtts) - 1, int(0.99 * len(rtts)))], 1)
                                     if rtts else None)
                row["rtt_n"] = len(rtts)
                row["lost_pkts"] = sum(int(f["lost"]) for r in res for f in r.get(("loss", size), []))
                row["sent_pkts"] = sum(int(f["of"]) for r in res for f in r.get(("loss", size), []))
            rows.append(row)
    return rows


def cpu_rows(boots, sizes, offered, packets):
    """Rows of mode cpu (the docstring's --cpu) from the CPU-work boots."""
    rows = []
    for hops in sorted({b["hops"] for b in boots}):
        for links in sorted({b["links"] for b in boots}):
            bs = [b for b in boots if b["hops"] == hops and b["links"] == links]
            for size in sizes:
                per = []  # per boot: (net, raw, busy share, forwarded), the mean of its routers
                for b in bs:
                    rs = []
                    for r in range(1, hops + 1):
                        w = windows(b["nodes"].get(r, []))
                        idle = [x for x in (busy(p, q) for p, q in w.get(("idle", 0), [])) if x]
                        mark = statistics.median([x[0] for x in idle]) if idle else 0.0
                        for p, q in w.get(("raw", size), []):
                            x = busy(p, q)
                            dmono = int(q["mono_ns"]) - int(p["mono_ns"])
                            if x and x[2] > 0:
                                rs.append(((x[0] - mark) / x[2], x[0] / x[2], x[1] / dmono, x[2]))
                    if rs:
                        per.append(tuple(statistics.mean(v[i] for v in rs) for i in range(4)))
                if not per:
                    continue
                mb = [float(f["mbps"]) for b in bs for f in client_results(b).get(("raw", size), [])]
                lost = sum(int(f["lost"]) for b in bs for f in client_results(b).get(("loss", size), []))
                rows.append({"system": "linux-router", "mode": "cpu", "hops": hops, "links": links, "bytes": size,
                             "offered_mbps": offered * links, "packets": packets, "mbps": med(mb),
                             "relay_insns_per_pkt": med([x[0] for x in per], 0),
                             "relay_insns_raw_per_pkt": med([x[1] for x in per], 0),
                             "runs_relay_insns_per_pkt": [round(x[0]) for x in per],
                             "relay_busy_frac": med([x[2] for x in per], 4),
                             "relay_forwarded": med([x[3] for x in per], 0), "relay_copy_bytes_per_pkt": None,
                             "lost_pkts": lost, "n": len(per)})
    return rows


def check_quick(path):
    """bench-relay.sh --quick's verdict on its output (5 bursts and 1 warm-up, 20 round trips)."""
    with open(path) as f:
        rows = {r["mode"]: r for r in json.load(f)["rows"]}
    t, r = rows.get("tcp"), rows.get("raw")
    bad = []
    if not t or not r:
        bad.append("a tcp or raw row is missing")
    else:
        if t["bytes_verified"] != 8 << 20:
            bad.append("tcp: %s bytes verified of %d" % (t["bytes_verified"], 8 << 20))
        if r["lost_pkts"] or r["rtt_n"] != 20:
            bad.append("raw: %s datagrams lost, %s round trips of 20" % (r["lost_pkts"], r["rtt_n"]))
        if (r["fwd_pkts"] or 0) < 6 * 128:
            bad.append("raw: the router forwarded %s datagrams, fewer than the 6 bursts" % r["fwd_pkts"])
        for x in (t, r):
            if not (x["relay_insns_per_pkt"] or 0) > 0:
                bad.append("%s: router instructions per packet %s" % (x["mode"], x["relay_insns_per_pkt"]))
    print("relay self-check: " + ("; ".join(bad) if bad else "ok: %d TCP bytes verified, %d datagrams and "
                                  "%d round trips through the router, %.0f / %.0f router instructions per "
                                  "forwarded packet (tcp / raw)" % (t["bytes_verified"], r["sent_pkts"],
                                                                    r["rtt_n"], t["relay_insns_per_pkt"],
                                                                    r["relay_insns_per_pkt"])))
    return 1 if bad else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check-quick":
        return check_quick(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE")
    ap.add_argument("--sizes", default="1500,8192")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--cpu", action="store_true", help="CPU-work boots: rows of mode cpu")
    ap.add_argument("boots", nargs="+")
    a = ap.parse_args()
    boots = load(a.boots)
    if a.cpu:
        return cpu_main(a, boots)
    ok = [b for b in boots if b["ok"]]
    real = [b for b in ok if not b["icount"]]
    ic = [b for b in ok if b["icount"]]
    sizes = [int(s) for s in a.sizes.split(",")]
    rows = []
    for hops in sorted({b["hops"] for b in ok}):
        for links in sorted({b["links"] for b in ok}):
            rows += rows_for(real, ic, hops, links, sizes)
    e = base_env("tcg", "real+icount" if real and ic else ("icount" if ic else "real"), a.runs,
                 backend="dgram-unix-per-link", nic="e1000")
    for kv in a.env:
        k, _, v = kv.partition("=")
        e[k] = v
    marks = [m for b in ic for m in router_costs(b)[3]]
    e["mark_cost_insns"] = med(marks, 0)
    e["boots"] = {"real": len(real), "icount": len(ic), "failed": [
        {"hops": b["hops"], "links": b["links"], "icount": b["icount"], "why": b["why"]}
        for b in boots if not b["ok"]]}
    e["boot_seconds"] = {"real": med([b["seconds"] for b in real], 0), "icount": med([b["seconds"] for b in ic], 0)}
    if not real:
        e["note"] = "no real-time boot: Mbit/s and round trips come from the -icount boot (routers slowed)"
    write_doc(a.out, {"bench": "relay", "env": e, "rows": rows})
    return 0 if rows else 1



def write_doc(path, doc):
    """doc as path's JSON, written whole or not at all (a temporary file, renamed)."""
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)

def cpu_main(a, boots):
    ok = [b for b in boots if b["ok"] and b["icount"]]
    e = base_env("tcg", "icount", len({b["dir"] for b in ok}) // max(1, len({(b["hops"], b["links"]) for b in ok})),
                 backend="dgram-unix-per-link", nic="e1000")
    for kv in a.env:
        k, _, v = kv.partition("=")
        e[k] = v
    e["boots"] = {"icount": len(ok), "failed": [{"hops": b["hops"], "links": b["links"], "why": b["why"]}
                                                for b in boots if not b["ok"]]}
    rows = cpu_rows(ok, [int(s) for s in a.sizes.split(",")], int(e["cpu_mbps_per_link"]), int(e["cpu_packets"]))
    write_doc(a.out, {"bench": "relay", "env": e, "rows": rows})
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
