#!/usr/bin/env python3
"""collect-rxcpu.py: run-rxcpu.sh boots to the receive rows of the smp
benchmark (docs/benchmarks.md, "smp", op receive).

Usage: collect-rxcpu.py --out OUT.json --warmup N [--env KEY=VALUE ...]
                        --real LAYOUT=DIR... --count LAYOUT=DIR...
LAYOUT is same-cpu (the receiver on the NIC interrupt's CPU) or other-cpu;
DIR one boot's log directory (client.txt, server.txt, and for --count
insns.txt: insnplugin.so's windows, one per burst, in the order of the
server's SRVSTAT burst lines). Per boot and size the median over the bursts
after the first N; the row is the median of the boots' medians.
"""
import argparse
import json
import os
import re
import statistics
import sys

KV = re.compile(r"(\w+)=(\S+)")


def lines(path, tag):
    with open(path, errors="replace") as f:
        return [dict(KV.findall(x)) for x in f.read().replace("\r", "").splitlines()
                if x.startswith(tag + " ")]


def per_size(recs, field, warmup):
    """{bytes: [field of each burst after the warm-ups]}."""
    out = {}
    for r in recs:
        out.setdefault(int(r["bytes"]), []).append(float(r[field]))
    return {b: v[warmup:] for b, v in out.items()}


def irq_delta(d):
    """(NIC interrupts per CPU, RES+CAL IPIs) over the run, from IRQCPU0/IRQCPU."""
    before = {r["irq"]: [int(x) for x in r["counts"].split(",")] for r in lines(d + "/server.txt", "IRQCPU0")}
    after = {r["irq"]: [int(x) for x in r["counts"].split(",")] for r in lines(d + "/server.txt", "IRQCPU")}
    nic, ipis = None, 0
    for irq, a in after.items():
        delta = [x - y for x, y in zip(a, before.get(irq, [0] * len(a)))]
        if irq in ("RES", "CAL"):
            ipis += sum(delta)
        else:
            nic = delta if nic is None else [x + y for x, y in zip(nic, delta)]
    return nic, ipis


def boot(d, warmup, count):
    srv = [r for r in lines(d + "/server.txt", "SRVSTAT") if "r1_tsc" in r]
    with open(d + "/server.txt", errors="replace") as f:
        done = re.search(r"^DONE ok$", f.read(), re.M)
    if not done:
        sys.exit(f"collect-rxcpu: {d}: the server did not end with DONE ok")
    res = {"mbps": per_size(lines(d + "/client.txt", "RESULT"), "mbps", 0),
           "r1_cycles": per_size(srv, "r1_tsc", warmup)}
    nic, ipis = irq_delta(d)
    res["nic_irqs_per_cpu"], res["ipis_per_burst"] = nic, ipis / max(1, len(srv))
    if count:
        wins = [w for w in lines(d + "/insns.txt", "WIN")]
        if len(wins) != len(srv):
            sys.exit(f"collect-rxcpu: {d}: {len(wins)} windows for {len(srv)} bursts")
        per = [dict(bytes=s["bytes"], ins=(int(w["own"]) + int(w["other"])) / (int(s["good"]) + int(s["bad"])),
                    own=int(w["own"]) / (int(s["good"]) + int(s["bad"])))
               for s, w in zip(srv, wins)]
        res["r1_insns"] = per_size(per, "ins", warmup)
        res["r1_insns_rx_cpu"] = per_size(per, "own", warmup)
    return res


def med(v):
    return round(statistics.median(v), 1) if v else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--warmup", type=int, required=True)
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--real", nargs="+", required=True)
    ap.add_argument("--count", nargs="+", required=True)
    a = ap.parse_args()
    boots = {}
    for arg, count in [(x, False) for x in a.real] + [(x, True) for x in a.count]:
        layout, d = arg.split("=", 1)
        boots.setdefault((layout, count), []).append(boot(d, a.warmup, count))
    env = dict(e.split("=", 1) for e in a.env)
    rows = []
    for layout in ("same-cpu", "other-cpu"):
        real, cnt = boots.get((layout, False), []), boots.get((layout, True), [])
        for size in sorted(real[0]["mbps"]) if real else []:
            bm = lambda bs, f: [med(b[f][size]) for b in bs if b[f].get(size)]  # noqa: E731
            rows.append({
                "system": "linux-packet", "op": "receive", "layout": layout, "bytes": size,
                "cpus": int(env.get("smp", 2)), "irq_cpu": int(env.get("irq_cpu", 0)),
                "rx_cpu": int(env.get("irq_cpu", 0)) if layout == "same-cpu" else int(env.get("other_cpu", 1)),
                "mbps": med(bm(real, "mbps")),
                "insns": med(bm(cnt, "r1_insns")), "r1_insns_per_pkt": med(bm(cnt, "r1_insns")),
                "r1_insns_rx_cpu_per_pkt": med(bm(cnt, "r1_insns_rx_cpu")),
                "cycles": med(bm(real, "r1_cycles")), "r1_cycles_per_pkt": med(bm(real, "r1_cycles")),
                "ipis": med([b["ipis_per_burst"] for b in real]),
                "nic_irqs_per_cpu": [b["nic_irqs_per_cpu"] for b in real],
                "boot_mbps": bm(real, "mbps"), "boot_r1_insns": bm(cnt, "r1_insns"),
            })
    env["runs"] = len(a.real) // 2
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"bench": "smp", "env": env, "rows": rows}, f, indent=1)
    print(f"{'layout':<10} {'bytes':>6} {'mbps':>8} {'R1 insns':>9} {'rx cpu':>8} {'R1 cyc':>9} {'ipis/burst':>10}")
    for r in rows:
        print(f"{r['layout']:<10} {r['bytes']:>6} {r['mbps']:>8} {r['r1_insns_per_pkt']!s:>9} "
              f"{r['r1_insns_rx_cpu_per_pkt']!s:>8} {r['cycles']!s:>9} {r['ipis']!s:>10}")


if __name__ == "__main__":
    main()
