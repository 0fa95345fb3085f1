#!/usr/bin/env python3
"""collect-fs.py: the rows of fs.json from run-nfs.sh outputs (bench-fs.sh).

Each input file is one boot pair's stdout with a first line
"PAIR links=N mbps=R rtt_added_ms=D".  Rows:
  one per measurement of the four patterns: system, links, rsize
    (requested rsize = wsize), rsize_eff (as mounted), noac (bool), pattern
    and op (create_write, overwrite, read_after_mount, read_after_write),
    size_mib, io_bytes, mbps, us (the timed part, see fsbench.c), open_us,
    run, rtt_added_ms, verified;
  one per mount with pattern "rtt_4k": rtt_4k_us (median of n O_DIRECT 4 KiB
    reads), rtt_4k_p99_us, rtt_4k_min_us, n;
  one per cut read with pattern "read_cut": mbps, verified, lost (bytes not
    delivered), corrupt (0 or 1), cut (whether link 0 went down mid-read),
    nic_rx_bytes (per link, during the read).
Usage: collect-fs.py --out OUT.json [--env key=value ...] FILE...
"""
import argparse
import json
import sys

PATTERNS = ("create_write", "overwrite", "read_after_mount", "read_after_write")


def words(line):
    out = {}
    for w in line.split()[1:]:
        if "=" in w:
            k, v = w.split("=", 1)
            out[k] = v
    return out


def base_row(f, pair):
    return {
        "system": f["system"],
        "links": int(f["links"]),
        "rsize": int(f["rsize"]),
        "rsize_eff": int(f["rsize_eff"]) if f.get("rsize_eff", "").isdigit() else None,
        "noac": f["noac"] == "1",
        "rtt_added_ms": pair.get("rtt_added_ms", 0.0),
        "mbps_paced": pair.get("mbps"),
    }


def netdev(line):
    return {k: int(v) for k, v in words(line).items() if v.isdigit()}


def parse(path):
    rows = []
    pair = {}
    before = None
    cut_seen = 0
    lines = open(path).read().splitlines()
    cut_lines = [l for l in lines if l.startswith("CUT ") and " link=" in l]
    for line in lines:
        if line.startswith("PAIR "):
            p = words(line)
            pair = {"links": int(p["links"]), "mbps": float(p.get("mbps", 0) or 0),
                    "rtt_added_ms": float(p.get("rtt_added_ms", 0) or 0)}
        elif line.startswith("NETDEV before"):
            before = netdev(line)
        elif line.startswith("NETDEV after") and rows and rows[-1]["pattern"] == "read_cut":
            after = netdev(line)
            rows[-1]["nic_rx_bytes"] = [after[k] - before.get(k, 0) for k in sorted(after)]
        elif line.startswith("FSB "):
            f = words(line)
            pat = f.get("pattern")
            if pat in PATTERNS:
                r = base_row(f, pair)
                r.update(pattern=pat, op=pat, size_mib=int(f["size_mib"]), io_bytes=int(f["bytes"]),
                         mbps=float(f["mbps"]), us=int(float(f["us"])), open_us=int(float(f["open_us"])),
                         run=int(f["run"]), verified=f["verified"] == "1")
                rows.append(r)
            elif pat == "rtt_4k":
                r = base_row(f, pair)
                r.update(pattern="rtt_4k", op="rtt_4k", io_bytes=4096, rtt_4k_us=float(f["median_us"]),
                         rtt_4k_p99_us=float(f["p99_us"]), rtt_4k_min_us=float(f["min_us"]),
                         n=int(f["n"]), verified=f["verified"] == "1")
                rows.append(r)
            elif pat == "read_cut":
                cut_seen += 1
                want = int(f["size_mib"]) * 1048576
                got = int(f["bytes"])
                ok = f["verified"] == "1"
                r = base_row(f, pair)
                r.update(pattern="read_cut", op="read_cut", size_mib=int(f["size_mib"]), io_bytes=want,
                         mbps=float(f["mbps"]), us=int(float(f["us"])), run=int(f["run"]), verified=ok,
                         lost=want - got, corrupt=0 if ok or got != want else 1,
                         cut=len(cut_lines) >= cut_seen)
                rows.append(r)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    env = {}
    for e in a.env:
        k, v = e.split("=", 1)
        env[k] = int(v) if v.isdigit() else v
    rows = []
    for p in a.files:
        rows += parse(p)
    if not rows:
        sys.exit("collect-fs: no measurement in %s" % " ".join(a.files))
    with open(a.out, "w") as f:
        json.dump({"bench": "fs", "env": env, "rows": rows}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
