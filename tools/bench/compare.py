#!/usr/bin/env python3
"""Two kernels side by side from one kernelnet run (make bench-compare).

Reads OUTDIR/NEW-rtt.json, NEW-burst.json, OLD-rtt.json, OLD-burst.json
(kernelnet.py rtt|burst ... --kernel-variant OLD=IMAGE: the two kernels'
boot pairs alternated in one run) and gives, per size, NEW / OLD for the
round trip (median), the burst rate (median), T1 and R1 (guest
instructions per burst and per packet, -icount pairs). The noise of a
figure is the spread of its per-boot medians (per -icount pair for T1 and
R1, ICOUNT_PAIRS of them): a ratio whose two per-boot ranges overlap is
"within noise". With one -icount pair T1 and R1 have no spread, and any
difference counts. Writes OUTDIR/compare.json
(bench "compare") and OUTDIR/compare.md.
Usage: compare.py OUTDIR [NEW [OLD]]   (default kernel and kernel-old)
"""
import json
import os
import sys

FIGS = [  # (file, field, per-boot field or None, better)
    ("rtt", "median_us", "boot_median_us", "lower"),
    ("burst", "mbps", "boot_median_mbps", "higher"),
    ("burst", "t1_insns", "t1_insns_per_pair", "lower"),
    ("burst", "r1_insns_per_pkt", "r1_insns_per_pkt_per_pair", "lower"),
]


def load(outdir, name, bench):
    with open(os.path.join(outdir, f"{name}-{bench}.json")) as f:
        doc = json.load(f)
    return doc["env"], {r["bytes"]: r for r in doc["rows"]}


def verdict(new, old, nb, ob, better):
    """'better', 'worse' or 'within noise' (per-boot ranges overlap, or no
    ranges: instruction counts, where any change is real)."""
    if new is None or old is None:
        return "not measured"
    if nb and ob and len(nb) > 1 and len(ob) > 1 and min(nb) <= max(ob) and min(ob) <= max(nb):
        return "within noise"
    if new == old:
        return "same"
    return "better" if (new < old) == (better == "lower") else "worse"


def compare(outdir, new="kernel", old="kernel-old"):
    rows, envs = [], {}
    for bench in ("rtt", "burst"):
        en, n = load(outdir, new, bench)
        eo, o = load(outdir, old, bench)
        envs[bench] = {"new": en, "old": eo}
        for size in sorted(set(n) & set(o)):
            for b, field, boot, better in FIGS:
                if b != bench:
                    continue
                nv, ov = n[size].get(field), o[size].get(field)
                nb = n[size].get(boot) if boot else None
                ob = o[size].get(boot) if boot else None
                rows.append({"figure": field, "bytes": size, "new": nv, "old": ov,
                             "ratio": round(nv / ov, 3) if nv is not None and ov else None,
                             "new_boots": nb, "old_boots": ob, "better": better,
                             "verdict": verdict(nv, ov, nb, ob, better)})
    revs = {k: envs["rtt"][k].get("kernel_rev") for k in ("new", "old")}
    return {"bench": "compare", "env": {"new": new, "old": old, "revs": revs, "runs": envs}, "rows": rows}


def markdown(doc):
    e = doc["env"]
    revs = e.get("revs") or {}
    pairs = max((len(r["new_boots"] or []) for r in doc["rows"] if r["figure"] == "t1_insns"), default=1)
    out = [f"{e['new']} ({revs.get('new')}) against {e['old']} ({revs.get('old')}), one run, "
           f"{e['runs']['rtt']['new'].get('runs')} boot pairs each, alternating; T1 and R1 from "
           f"{max(pairs, 1)} -icount pair(s) each, alternating"
           + (" (no spread: any difference counts)." if pairs < 2 else "; noise: the per-pair range."),
           "", f"| figure | bytes | {e['new']} | {e['old']} | ratio | {e['new']} per boot or pair "
           f"| {e['old']} per boot or pair | verdict |", "|---|---:|---:|---:|---:|---|---|---|"]
    span = lambda v: f"{min(v)}-{max(v)}" if v else ""  # noqa: E731
    for r in doc["rows"]:
        out.append(f"| {r['figure']} | {r['bytes']} | {r['new']} | {r['old']} | {r['ratio']} | "
                   f"{span(r['new_boots'])} | {span(r['old_boots'])} | {r['verdict']} |")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    doc = compare(outdir, *sys.argv[2:4])
    with open(os.path.join(outdir, "compare.json"), "w") as f:
        json.dump(doc, f, indent=1)
    md = markdown(doc)
    with open(os.path.join(outdir, "compare.md"), "w") as f:
        f.write(md)
    print(md, end="")


if __name__ == "__main__":
    main()
