#!/usr/bin/env python3
"""collect-smp.py: tlbbench boots (run-tlb.sh logs) to the Linux rows of the
smp benchmark (docs/benchmarks.md, "smp").

Usage: collect-smp.py --out OUT.json [--env KEY=VALUE ...]
                      --real DIR... --count DIR...
Each DIR is one boot's log directory: tlb.txt (the guest's serial log) and,
for --count boots, insns.txt (insnplugin.so's windows, in order). A TLB line
with windows=W takes the next W windows; the first is the untimed warm-up.
Per boot, each row's medians over its windows; the row is the median of the
boots' medians (the statistic of the kernel's exchange benchmark).
"""
import argparse
import json
import os
import re
import statistics
import sys

OP = {"copy": "copy", "local": "exchange_local", "shared": "exchange_local_shared",
      "remote": "exchange_remote", "batch": "exchange_remote_batch",
      "unbatched": "exchange_remote_unbatched"}
ORDER = {k: i for i, k in enumerate(OP)}
LAYOUTS = ["one-cpu", "same-cpu", "other-cpu", "all-cpus"]
SYSTEM = {"memcpy": "linux-memcpy", "munmap": "linux-munmap", "mremap": "linux-mremap"}
KV = re.compile(r"(\w+)=(\S+)")


def tlb_lines(path):
    """The measurement lines of one boot, in order, as dicts; fails unless
    tlbbench ended with DONE ok."""
    with open(path, errors="replace") as f:
        text = f.read().replace("\r", "")
    if not re.search(r"^DONE ok$", text, re.M):
        sys.exit(f"collect-smp: {path}: no 'DONE ok'")
    cpus = re.search(r"GUEST up .*cpus=(\d+)", text)
    mhz = re.search(r"^TLB begin .*tsc_mhz=([\d.]+)", text, re.M)
    rows = [dict(KV.findall(line)) for line in text.splitlines()
            if line.startswith("TLB layout=") and " op=" in line]
    return rows, int(cpus.group(1)) if cpus else None, float(mhz.group(1)) if mhz else None


def windows(path):
    with open(path) as f:
        return [dict(KV.findall(line)) for line in f if line.startswith("WIN ")]


def key(r):
    return (r["layout"], r["mech"], r["op"], int(r["bytes"]))


def med(v):
    return statistics.median(v) if v else None


def count_boot(d):
    """{key: (own, other) medians per window} of one --count boot."""
    rows, _, _ = tlb_lines(os.path.join(d, "tlb.txt"))
    wins = windows(os.path.join(d, "insns.txt"))
    out, i = {}, 0
    for r in rows:
        w = int(r["windows"])
        mine = wins[i + 1:i + w]
        i += w
        if len(mine) != w - 1:
            sys.exit(f"collect-smp: {d}: {len(wins)} windows, fewer than the TLB lines ask for")
        if any(x["cpu"] != "0" for x in mine):
            sys.exit(f"collect-smp: {d}: a window on another CPU than 0")
        out[key(r)] = (med([int(x["own"]) for x in mine]), med([int(x["other"]) for x in mine]),
                       med([int(x["own"]) + int(x["other"]) for x in mine]))
    if i != len(wins):
        sys.exit(f"collect-smp: {d}: {len(wins)} windows, {i} asked for by the TLB lines")
    return out


def rnd(x, n=1):
    return None if x is None else round(x, n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--real", nargs="+", required=True)
    ap.add_argument("--count", nargs="+", required=True)
    a = ap.parse_args()
    real, meta, cpus, mhz = {}, {}, set(), []
    for d in a.real:
        rows, c, m = tlb_lines(os.path.join(d, "tlb.txt"))
        cpus.add(c)
        mhz.append(m)
        for r in rows:
            real.setdefault(key(r), []).append(r)
            meta[key(r)] = r
    counts = {}
    for d in a.count:
        for k, v in count_boot(d).items():
            counts.setdefault(k, []).append(v)
    tsc_mhz = med(mhz)
    out = []
    for k in sorted(meta, key=lambda k: (k[3], ORDER[k[2]], LAYOUTS.index(k[0]), k[1])):
        r, boots = meta[k], real[k]
        pkts = int(r["pkts"])
        cyc = [int(b["tsc"]) for b in boots]
        cnt = counts.get(k, [])
        own, other, both = (med([c[i] for c in cnt]) for i in range(3))
        row = {
            "system": SYSTEM[r["mech"]], "op": OP[r["op"]], "layout": r["layout"],
            "bytes": int(r["bytes"]), "pages": int(r["pages"]), "cpus": max(cpus),
            "pkts": pkts, "calls": int(r["calls"]),
            "insns": rnd(both / pkts if both is not None else None),
            "insns_caller": rnd(own / pkts if own is not None else None),
            "insns_other_cpus": rnd(other / pkts if other is not None else None),
            "cycles": rnd(med(cyc) / pkts),
            "us": rnd(med(cyc) / pkts / tsc_mhz, 2),
            "ipis": rnd(med([float(b["ipis"]) for b in boots]), 2),
            "cal": rnd(med([float(b["cal"]) for b in boots]), 2),
            "remote_ran": f"{sum(int(b['ran']) for b in boots)}/{sum(int(b['reps']) for b in boots)}",
            "reps": int(r["reps"]),
            "boot_cycles": [int(c) for c in cyc],
            "boot_insns": [c[2] for c in cnt],
        }
        if pkts > 1:
            row["batch_cycles"] = med(cyc)
            row["batch_insns"] = both
        out.append(row)
    env = dict(e.split("=", 1) for e in a.env)
    env["tsc_mhz"] = rnd(tsc_mhz)
    env["runs"] = len(a.real)
    env["runs_count"] = len(a.count)
    res = {"bench": "smp", "env": env, "rows": out}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"{'bytes':>6} {'system':<13} {'op':<26} {'layout':<9} {'insns':>9} {'caller':>9} {'other':>8} "
          f"{'cycles':>10} {'us':>8} {'ipis':>6}")
    for r in out:
        print(f"{r['bytes']:>6} {r['system']:<13} {r['op']:<26} {r['layout']:<9} {r['insns'] or '-':>9} "
              f"{r['insns_caller'] or '-':>9} {r['insns_other_cpus'] or '-':>8} {r['cycles']:>10} "
              f"{r['us']:>8} {r['ipis']:>6}")


if __name__ == "__main__":
    main()
