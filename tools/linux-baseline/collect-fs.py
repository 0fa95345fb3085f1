#!/usr/bin/env python3
"""collect-fs.py: the Linux NFS rows of fs.json from run-nfs.sh outputs
(bench-fs.sh).  Field names follow docs/benchmarks.md's fs row and the file
service's wishes: system, op, io_bytes, links, rtt_added_ms, mbps, plus

  vers ("3", "4.2"), proto ("tcp"), rsize, wsize (bytes asked for),
  rsize_eff (as mounted), noac (bool), mount_opts (as /proc/mounts shows
  them), bond ("none" or "balance-rr"), pattern (= op) and size_mib;
  one row per configuration, op and length over all runs: runs (count),
  mbps_runs (each run's figure, in run order), mbps (their median), us_runs
  (timed microseconds), verified (every run's bytes compared and equal).

ops: create_write, overwrite, read_after_mount, read_after_write (Mbit/s of
the timed part, see fsbench.c); read_4k_rtt (median_us, p99_us, min_us of n
O_DIRECT 4 KiB reads on one mount; no mbps); read_through_cut (one read of
io_bytes with link 0 cut: mbps, lost = bytes not delivered, corrupt = 1 if
the bytes delivered differ, cut (link 0 went down during the read), cut_at_s
(seconds from the client's announcement of the read to the cut, when the
output has it), nic_rx_bytes (what each link carried during the read)).

Each input file is one boot pair's stdout, its first line
"PAIR links=N mbps=R rtt_added_ms=D".
Usage: collect-fs.py --out OUT.json [--env key=value ...] FILE...
"""
import argparse
import json
import statistics
import sys

PATTERNS = ("create_write", "overwrite", "read_after_mount", "read_after_write")


def words(line):
    out = {}
    for w in line.split()[1:]:
        if "=" in w:
            k, v = w.split("=", 1)
            out[k] = v
    return out


def vers_of(system):
    # linux-nfs3 / linux-nfs4 (4.2) as the file service names them; the
    # guest's tags say linux-nfs3-tcp / linux-nfs42-tcp.
    v = system.replace("linux-nfs", "").replace("-tcp", "")
    return {"3": "3", "42": "4.2", "41": "4.1", "4": "4.0"}.get(v, v)


def config(f, pair, opts):
    vers = vers_of(f["system"])
    return {
        "system": "linux-nfs3" if vers == "3" else "linux-nfs4",
        "vers": vers,
        "proto": "tcp",
        "links": int(f["links"]),
        "bond": "balance-rr" if int(f["links"]) > 1 else "none",
        "rsize": int(f["rsize"]),
        "wsize": int(f["rsize"]),
        "rsize_eff": int(f["rsize_eff"]) if f.get("rsize_eff", "").isdigit() else None,
        "noac": f["noac"] == "1",
        "mount_opts": opts.get((f["system"], f["rsize"], f["noac"])),
        "rtt_added_ms": pair.get("rtt_added_ms", 0.0),
        "link_mbps": pair.get("mbps"),
    }


def parse(path):
    """Returns (per-run measurements, cut rows, rtt rows) of one output."""
    meas, cuts, rtts = [], [], []
    pair, opts, before = {}, {}, {}
    lines = open(path).read().splitlines()
    cut_at = {}
    seen = {}
    for line in lines:
        if line.startswith("SEEN ") or (line.startswith("CUT ") and " link=" in line):
            k = int(line.split()[1])
            t = float(line.rsplit(" ", 1)[1])
            (seen if line.startswith("SEEN") else cut_at)[k] = t
    ncut = 0
    for line in lines:
        if line.startswith("PAIR "):
            p = words(line)
            pair = {"mbps": float(p.get("mbps", 0) or 0), "rtt_added_ms": float(p.get("rtt_added_ms", 0) or 0)}
        elif line.startswith("NFSMOUNT "):
            f = words(line)
            opts[(f["system"], f["rsize"], f["noac"])] = f.get("opts")
        elif line.startswith("NETDEV before"):
            before = {k: int(v) for k, v in words(line).items() if v.isdigit()}
        elif line.startswith("NETDEV after") and cuts and "nic_rx_bytes" not in cuts[-1]:
            after = {k: int(v) for k, v in words(line).items() if v.isdigit()}
            cuts[-1]["nic_rx_bytes"] = [after[k] - before.get(k, 0) for k in sorted(after)]
        elif line.startswith("FSB "):
            f = words(line)
            pat = f.get("pattern")
            if pat in PATTERNS:
                meas.append((config(f, pair, opts), pat, int(f["bytes"]), int(f["size_mib"]), int(f["run"]),
                             float(f["mbps"]), int(float(f["us"])), f["verified"] == "1"))
            elif pat == "rtt_4k":
                r = config(f, pair, opts)
                r.update(op="read_4k_rtt", pattern="read_4k_rtt", io_bytes=4096, median_us=float(f["median_us"]),
                         p99_us=float(f["p99_us"]), min_us=float(f["min_us"]), n=int(f["n"]), runs=1,
                         verified=f["verified"] == "1")
                rtts.append(r)
            elif pat == "read_cut":
                ncut += 1
                want = int(f["size_mib"]) * 1048576
                got = int(f["bytes"])
                ok = f["verified"] == "1"
                r = config(f, pair, opts)
                r.update(op="read_through_cut", pattern="read_through_cut", io_bytes=want,
                         size_mib=int(f["size_mib"]), mbps=float(f["mbps"]), us=int(float(f["us"])), runs=1,
                         verified=ok, lost=want - got, corrupt=0 if ok or got != want else 1,
                         cut=ncut in cut_at,
                         cut_at_s=round(cut_at[ncut] - seen[ncut], 3) if ncut in cut_at and ncut in seen else None)
                cuts.append(r)
    return meas, cuts, rtts


def aggregate(meas):
    groups = {}
    for cfg, pat, nbytes, mib, run, mbps, us, ok in meas:
        key = (json.dumps(cfg, sort_keys=True), pat, nbytes)
        g = groups.setdefault(key, {"cfg": cfg, "pat": pat, "bytes": nbytes, "mib": mib, "runs": []})
        g["runs"].append((run, mbps, us, ok))
    rows = []
    for g in groups.values():
        runs = sorted(g["runs"])
        r = dict(g["cfg"])
        r.update(op=g["pat"], pattern=g["pat"], io_bytes=g["bytes"], size_mib=g["mib"], runs=len(runs),
                 mbps_runs=[x[1] for x in runs], mbps=statistics.median(x[1] for x in runs),
                 us_runs=[x[2] for x in runs], verified=all(x[3] for x in runs))
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
    meas, rows = [], []
    for p in a.files:
        m, c, t = parse(p)
        meas += m
        rows += t + c
    rows = aggregate(meas) + rows
    if not rows:
        sys.exit("collect-fs: no measurement in %s" % " ".join(a.files))
    with open(a.out, "w") as f:
        json.dump({"bench": "fs", "env": env, "rows": rows}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
