#!/usr/bin/env python3
"""Turn bench-multilink.sh's boot pairs into multilink JSON (schema: BENCH.md).

    collect-multilink.py --out FILE [--env K=V ...] RAW...

Each RAW file is one boot pair: a first line
    PAIR kind=calib|rr|mptcp|icount links=N boot=B warmup=W mbps=R
written by bench-multilink.sh, then run-links.sh's stdout (RESULT lines of
the client, SRVSTAT lines of the server).  Rows, one per system, link count
and size:
  linux-bond-rr-tcp     one TCP connection over bond0 in balance-rr
  linux-bond-rr-packet  128-frame AF_PACKET bursts over the same bond0
  linux-mptcp           one MPTCP connection, one subflow per link (no bond)
mbps pools every measured repetition of every boot pair and takes the median
(tools/bench/stats.py); streams use the receiver's first-to-last-byte time.
per_link_mbps splits each stream's rate by the bytes each of the server's
NICs received (medians per link); r1_insns_per_pkt is the burst receiver's
instructions per packet from the -icount pairs (server SRVSTAT r1_tsc).
CPU work (bench-multilink.sh step 4), kinds cpu-rr, cpu-mptcp (paced: the
offered load) and unp-rr, unp-mptcp (unpaced), all under -icount shift=0:
rows of mode "cpu" and "unpaced" for linux-bond-rr-tcp and linux-mptcp.
Per connection and end, busy = busy_ns (CLOCK_MONOTONIC less idle time,
one ns a guest instruction) less mark_ns (what an empty pair of reads
costs), per packet = busy / (connection bytes / write size): a "packet" is
one write-size piece of the stream, the kernel's packet payload; rx is the
server, tx the client; busy_insns_per_pkt adds the two ends' medians;
cpu_bound_mbps = bytes x 8 / the busier end's instructions per packet (one a ns).
Standard library only.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import stats  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collect import parse_env  # noqa: E402  (key=value words of --env)

SYSTEMS = {"rr": "linux-bond-rr-tcp", "mptcp": "linux-mptcp"}


def parse(path):
    """(pair fields, [(kind, tag, fields), ...]) of one raw file."""
    head, lines = None, []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            fields = dict(x.partition("=")[::2] for x in w[1:] if "=" in x)
            if w[0] == "PAIR":
                head = fields
            elif w[0] in ("RESULT", "SRVSTAT") and len(w) > 1:
                lines.append((w[0], w[1], fields))
    if head is None:
        sys.exit("collect-multilink.py: %s has no PAIR line" % path)
    return head, lines


def measured(lines, kind, tag, warmup):
    """Lines of one kind/tag per size, the first `warmup` of each size left
    out (the server prints its warm-up lines too, the client does not)."""
    out = {}
    for k, t, f in lines:
        if k == kind and t == tag:
            out.setdefault(int(f["bytes"]), []).append(f)
    return {size: v[warmup:] for size, v in out.items()}


def med(values, digits=2):
    return stats.rnd(stats.median(values), digits)


def stream_rows(pairs, kind):
    """{(links, size): row} for the stream pairs of one kind."""
    acc = {}
    for head, lines in pairs:
        if head["kind"] != kind:
            continue
        links, w = int(head["links"]), int(head["warmup"])
        for size, srv in measured(lines, "SRVSTAT", "stream", w).items():
            a = acc.setdefault((links, size), {"mbps": [], "share": [], "ofo": [], "mofo": [],
                                               "sub": [], "boots": {}, "bad": 0})
            for f in srv:
                rx = [int(x) for x in f.get("nic_rx", "").split(",") if x]
                mbps = float(f["mbps"])
                a["mbps"].append(mbps)
                a["boots"].setdefault(head["boot"], []).append(mbps)
                if sum(rx) > 0:
                    a["share"].append([mbps * x / sum(rx) for x in rx[:links]])
                a["ofo"].append(int(f.get("ofo", -1)))
                a["mofo"].append(int(f.get("mptcp_ofo", -1)))
                a["sub"].append(int(f.get("subflows", -1)))
                if f.get("status") != "0" or f.get("verified") != f.get("total"):
                    a["bad"] += 1
        for size, res in measured(lines, "RESULT", "stream", 0).items():
            a = acc[(links, size)]
            a.setdefault("retrans", []).extend(int(f.get("retrans", -1)) for f in res)
    rows = {}
    for (links, size), a in acc.items():
        per_link = [med([s[i] for s in a["share"] if len(s) > i]) for i in range(links)]
        ofo = [x for x in (a["mofo"] if kind == "mptcp" else a["ofo"]) if x >= 0]
        row = {
            "system": SYSTEMS[kind], "links": links, "bytes": size,
            "mbps": med(a["mbps"]), "per_link_mbps": per_link,
            "out_of_order": med(ofo, 1) if ofo else None,
            "out_of_order_unit": ("MPTCP segments queued out of order per connection (MPTcpExt OFOQueue)"
                                  if kind == "mptcp" else
                                  "TCP segments queued out of order per connection (TcpExt TCPOFOQueue)"),
            "r1_insns_per_pkt": None,
            "retrans_per_conn": med([x for x in a.get("retrans", []) if x >= 0], 1),
            "n": len(a["mbps"]),
            "boot_median_mbps": [med(v) for _, v in sorted(a["boots"].items())],
            "bytes_unverified_conns": a["bad"],
        }
        if kind == "mptcp":
            row["subflows"] = med([x for x in a["sub"] if x >= 0], 0)
            row["tcp_ofo_per_conn"] = med([x for x in a["ofo"] if x >= 0], 1)
        rows[(links, size)] = row
    return rows


def burst_rows(pairs):
    acc = {}
    for head, lines in pairs:
        if head["kind"] not in ("rr", "icount"):
            continue
        links, w = int(head["links"]), int(head["warmup"])
        if head["kind"] == "icount":
            for size, srv in measured(lines, "SRVSTAT", "burst", w).items():
                a = acc.setdefault((links, size), {"mbps": [], "boots": {}, "r1": [], "ooo": [], "good": 0,
                                                   "lost": 0})
                a["r1"].extend(float(f["r1_tsc"]) for f in srv)
            continue
        for size, res in measured(lines, "RESULT", "burst", 0).items():
            a = acc.setdefault((links, size), {"mbps": [], "boots": {}, "r1": [], "ooo": [], "good": 0,
                                               "lost": 0})
            for f in res:
                a["mbps"].append(float(f["mbps"]))
                a["boots"].setdefault(head["boot"], []).append(float(f["mbps"]))
        for size, srv in measured(lines, "SRVSTAT", "burst", w).items():
            a = acc[(links, size)]
            for f in srv:
                a["ooo"].append(int(f["ooo"]))
                a["good"] += int(f["good"])
                a["lost"] += int(f["bad"]) + int(f["missing"])
    rows = {}
    for (links, size), a in acc.items():
        if not a["mbps"]:
            continue
        rows[(links, size)] = {
            "system": "linux-bond-rr-packet", "links": links, "bytes": size,
            "mbps": med(a["mbps"]), "per_link_mbps": None,
            "out_of_order": med(a["ooo"], 1),
            "out_of_order_unit": "packets of a 128-packet burst arriving after a later one (the server takes them in any order)",
            "r1_insns_per_pkt": med(a["r1"], 1) if a["r1"] else None,
            "n": len(a["mbps"]), "n_r1": len(a["r1"]),
            "boot_median_mbps": [med(v) for _, v in sorted(a["boots"].items())],
            "packets_lost_or_corrupt": a["lost"],
        }
    return rows


def cpu_rows(pairs):
    """{(kind, mode, links, size): row} of the CPU-work pairs."""
    acc = {}
    for head, lines in pairs:
        mode, _, kind = head["kind"].partition("-")
        if mode not in ("cpu", "unp") or kind not in SYSTEMS:
            continue
        links, w = int(head["links"]), int(head["warmup"])
        srv_all = measured(lines, "SRVSTAT", "stream", w)
        cli_all = measured(lines, "RESULT", "stream", 0)
        for size, srv in srv_all.items():
            a = acc.setdefault((kind, mode, links, size), {"mbps": [], "rx": [], "tx": [], "rxf": [], "txf": [],
                                                            "ofo": [], "share": [], "bytes": set(),
                                                            "offered": int(head["mbps"]) * links, "bad": 0})
            for f in srv:
                busy, mark, win = int(f.get("busy_ns", -1)), int(f.get("mark_ns", 0)), int(f.get("win_ns", 0))
                pkts = int(f["total"]) / size
                a["mbps"].append(float(f["mbps"]))
                a["bytes"].add(int(f["total"]))
                if busy >= 0 and pkts:
                    a["rx"].append((busy - max(0, mark)) / pkts)
                    a["rxf"].append(busy / win if win else 0)
                rx = [int(x) for x in f.get("nic_rx", "").split(",") if x]
                if sum(rx) > 0:
                    a["share"].append([float(f["mbps"]) * x / sum(rx) for x in rx[:links]])
                ofo = int(f.get("mptcp_ofo" if kind == "mptcp" else "ofo", -1))
                if ofo >= 0:
                    a["ofo"].append(ofo)
                if f.get("status") != "0" or f.get("verified") != f.get("total"):
                    a["bad"] += 1
            for f in cli_all.get(size, []):
                busy, mark, win = int(f.get("busy_ns", -1)), int(f.get("mark_ns", 0)), int(f.get("win_ns", 0))
                pkts = int(f["total"]) / size
                if busy >= 0 and pkts:
                    a["tx"].append((busy - max(0, mark)) / pkts)
                    a["txf"].append(busy / win if win else 0)
    rows = {}
    for (kind, mode, links, size), a in acc.items():
        if not a["rx"] or not a["tx"]:
            continue
        rx, tx = stats.median(a["rx"]), stats.median(a["tx"])
        rows[(kind, mode, links, size)] = {
            "system": SYSTEMS[kind], "mode": "cpu" if mode == "cpu" else "unpaced", "links": links,
            "bytes": size, "mbps": med(a["mbps"]), "offered_mbps": a["offered"],
            "stream_bytes": max(a["bytes"]),
            "per_link_mbps": [med([s[i] for s in a["share"] if len(s) > i]) for i in range(links)],
            "busy_insns_per_pkt": round(rx + tx), "busy_insns_per_pkt_rx": round(rx),
            "busy_insns_per_pkt_tx": round(tx), "busy_insns_per_byte": stats.rnd((rx + tx) / size, 3),
            "busy_frac_rx": stats.rnd(stats.median(a["rxf"]), 3), "busy_frac_tx": stats.rnd(stats.median(a["txf"]), 3),
            "cpu_bound_mbps": stats.rnd(size * 8 * 1000 / max(rx, tx, 1), 1),
            "out_of_order": med(a["ofo"], 1) if a["ofo"] else None, "r1_insns_per_pkt": round(rx),
            "n": len(a["rx"]), "runs_busy_insns_per_pkt": [round(x + y) for x, y in zip(a["rx"], a["tx"])],
            "bytes_unverified_conns": a["bad"],
        }
    return rows


def calibration(pairs):
    """The unpaced one-link medians: {"tcp": {size: mbps}, "packet": {...}}."""
    tcp, raw = {}, {}
    for head, lines in pairs:
        if head["kind"] != "calib":
            continue
        w = int(head["warmup"])
        for size, srv in measured(lines, "SRVSTAT", "stream", w).items():
            tcp.setdefault(size, []).extend(float(f["mbps"]) for f in srv)
        for size, res in measured(lines, "RESULT", "burst", 0).items():
            raw.setdefault(size, []).extend(float(f["mbps"]) for f in res)
    return {"tcp": {str(s): med(v) for s, v in sorted(tcp.items())},
            "packet": {str(s): med(v) for s, v in sorted(raw.items())}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE")
    ap.add_argument("--calibration", action="store_true",
                    help="print the unpaced one-link medians as JSON and stop")
    a = ap.parse_args()
    pairs = [parse(p) for p in a.raw]
    if a.calibration:
        json.dump(calibration(pairs), sys.stdout)
        print()
        return
    rows = {}
    for kind in ("rr", "mptcp"):
        rows.update({(kind, k): r for k, r in stream_rows(pairs, kind).items()})
    rows.update({("packet", k): r for k, r in burst_rows(pairs).items()})
    order = {"rr": 0, "packet": 1, "mptcp": 2}
    out = [rows[k] for k in sorted(rows, key=lambda k: (order[k[0]], k[1]))]
    cpu = cpu_rows(pairs)
    out += [cpu[k] for k in sorted(cpu, key=lambda k: (k[1], order[k[0]], k[2], k[3]))]
    if not out:
        sys.exit("collect-multilink.py: no measurements in %s" % " ".join(a.raw))
    env = parse_env(a.env)
    env["unpaced_one_link_mbps"] = calibration(pairs)
    doc = {"bench": "multilink", "env": env, "rows": out}
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
