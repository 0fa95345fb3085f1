#!/usr/bin/env python3
"""Relaying through intermediate nodes (HXB section 5, Table 6): make
bench-relay, this kernel's part.

Nodes of this kernel in a line on the cluster runner's dgram wires (one
point-to-point wire per link and hop, as the Linux line): hops=0 is
two nodes on one network (direct), hops=1 three (a, one relay, z), hops=2
four (a, two relays, z). The line is a hyper-crossbar with nodes missing:
node k has coordinates (1 x k, 0 ...) in hops+1 dimensions (0.0, 1.0, 1.1
for three nodes), node k and k+1 share dimension k's networks, `links` of
them (L bridges per hop, one NIC each). Every relay runs user/relay.c,
which only watches the kernel's relay counters.

Per hop count, link count and run, three boots:
- a verified stream (user/stream.c, dst= the far node) of 8192-byte
  packets, then one of 1500-byte packets: the server's Mbit/s (every packet's
  order, count and bytes checked; rel=0 on two links: a striped channel
  that reports holes instead of retransmitting);
- round trips (user/pingpong.c) of 1500 and 8192 bytes: the medians.
Then, per hop count >= 1, link count and size, one more stream with the
relay(s) under -icount (shift=0: the TSC counts guest instructions): the
relay's busy ticks per forwarded frame (elapsed minus halted, from its
first forwarded frame to its last, acknowledgements in the reverse
direction included), less the busy rate the relay node had before the
first frame came (timer ticks, user/relay.c's own polling: what it costs
when it forwards nothing, as the Linux side subtracts its marks' cost), i.e.
its instructions per forwarded packet; the mean over the relays for two.

Usage: relay.py KERNEL OUTDIR RUNS [--hops 0,1,2] [--links 1,2] [--insns-only]
Writes OUTDIR/kernel-relay.json (--insns-only: redoes only the -icount
boots and updates the instruction counts of an existing one).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from env import env  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIZES = (1500, 8192)
COUNT = {1500: 8192, 8192: 2048}  # about 12 and 16 MB a stream


def kv(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


def coords(k, dims):
    return ".".join("1" if d < k else "0" for d in range(dims))


def line(kernel, hops, links, server, client, relay_icount=False, name="relay"):
    """The topology: nodes n0 (client) .. n{hops+1} (server)."""
    dims, n = hops + 1, hops + 2
    names = [f"n{k}" for k in range(n)]
    # One point-to-point dgram wire per link and hop, as the Linux line (run-relay.py).
    nets = [{"name": f"d{d}l{j}", "wire": "dgram"} for d in range(hops + 1) for j in range(links)]
    nodes = []
    for k in range(n):
        nics, nicdim, nb = [], [], []
        if k > 0:  # left: dimension k-1; its left neighbour's NICs on it are its right ones
            nics += [{"net": f"d{k - 1}l{j}"} for j in range(links)]
            nicdim += [str(k - 1)] * links
            first = links if k - 1 > 0 else 0
            nb.append(coords(k - 1, dims) + "".join(f"/@MAC:{names[k - 1]}:{first + j}@" for j in range(links)))
        if k < n - 1:  # right: dimension k
            nics += [{"net": f"d{k}l{j}"} for j in range(links)]
            nicdim += [str(k)] * links
            nb.append(coords(k + 1, dims) + "".join(f"/@MAC:{names[k + 1]}:{j}@" for j in range(links)))
        topo = f"node={coords(k, dims)} nicdim={','.join(nicdim)} nb={','.join(nb)}"
        chan = f"nics={','.join(str(j) for j in range(links))} rel=0" if links > 1 else "nic=0"
        if k == 0:
            app = f"{client} {chan} dst={coords(n - 1, dims)} {topo}"
        elif k == n - 1:
            app = f"{server} {chan} dst={coords(0, dims)} {topo}"
        else:
            app = f"run=relay expect=100 idle_ms=1000 busy_ok=1 {topo}"
        node = {"name": names[k], "kernel": kernel, "nics": nics, "append": app}
        if relay_icount and 0 < k < n - 1:
            node["qemu_extra"] = ["-icount", "shift=0"]
        nodes.append(node)
    # relays first, in order, then the server, then the client
    order = list(range(1, n - 1)) + [n - 1, 0]
    for prev, k in zip(order, order[1:]):
        nodes[k]["start_after"] = {"node": names[prev], "line": "READY"}
    return {"name": f"{name}-{hops}h-{links}l", "timeout": 150, "networks": nets,
            "nodes": [nodes[k] for k in order]}


def cluster(topo):
    """Runs topo; returns {node name: serial log}. A failed run raises."""
    with tempfile.TemporaryDirectory(prefix="relay.") as d:
        tp, out = os.path.join(d, "topo.json"), os.path.join(d, "run")
        with open(tp, "w") as f:
            json.dump(topo, f)
        r = subprocess.run([os.path.join(ROOT, "tools", "cluster", "run"), tp, "--out", out,
                            "--timeout", str(topo["timeout"])], capture_output=True, text=True, check=False)
        logs = {}
        for node in topo["nodes"]:
            try:
                logs[node["name"]] = open(os.path.join(out, f"{node['name']}.log"), errors="replace").read()
            except OSError:
                logs[node["name"]] = ""
        if r.returncode != 0:
            tail = "".join(f"--- {n}\n" + "".join(v.splitlines(True)[-5:]) for n, v in logs.items())
            raise RuntimeError(f"relay run {topo['name']} failed ({r.returncode}):\n{r.stdout[-400:]}\n{tail}")
        return logs


def relays(logs, hops):
    return [kv(re.search(r"^RELAY .*$", logs[f"n{k}"], re.M).group(0)) for k in range(1, hops + 1)]


def stream(kernel, hops, links, size, icount=False):
    common = f"run=stream size={size} count={COUNT[size]} batch=64 window=2 timeout_ms=30000"
    topo = line(kernel, hops, links, f"{common} role=server", f"{common} role=client", icount,
                name="relay-icount" if icount else "relay")
    logs = cluster(topo)
    res = kv(re.search(r"^RESULT stream system=kernel role=server.*$", logs[f"n{hops + 1}"], re.M).group(0))
    if res["corrupt"] != "0" or res["missing"] != "0":
        raise RuntimeError(f"stream {hops} hops {links} links {size} B: corrupt {res['corrupt']} "
                           f"missing {res['missing']}")
    return int(res["kbps"]) / 1000, relays(logs, hops)


def rtt(kernel, hops, links):
    sizes = ",".join(str(s) for s in SIZES)
    topo = line(kernel, hops, links, "run=pingpong role=server",
                f"run=pingpong role=client sizes={sizes} iters=30 warm=3")
    logs = cluster(topo)
    out = {}
    for m in re.finditer(r"^RESULT rtt system=kernel .*$", logs["n0"], re.M):
        d = kv(m.group(0))
        out[int(d["bytes"])] = (int(d["median_ns"]) / 1000, int(d["p99_ns"]) / 1000)
    return out, relays(logs, hops)


def measure_insns(kernel, hops, links, size, runs=1):
    """The relays' instructions per forwarded packet (net of the quiet baseline,
    and raw): the mean over the relays of a boot, the median over `runs` boots
    (as many as the Linux routers' -icount boots)."""
    net, raw = [], []
    for _ in range(runs):
        _, rl = stream(kernel, hops, links, size, icount=True)
        net.append(statistics.mean(int(x["net_per_fwd"]) for x in rl))
        raw.append(statistics.mean(int(x["busy_per_fwd"]) for x in rl))
    return round(statistics.median(net)), round(statistics.median(raw))


def insns_only(a, kernel):
    path = os.path.join(a.out, "kernel-relay.json")
    doc = json.load(open(path))
    for r in doc["rows"]:
        if r["hops"] and str(r["hops"]) in a.hops.split(",") and str(r["links"]) in a.links.split(","):
            r["relay_insns_per_pkt"], r["relay_insns_raw_per_pkt"] = measure_insns(kernel, r["hops"], r["links"],
                                                                                   r["bytes"], a.runs)
            print(f"relay: {r['hops']} relay(s), {r['links']} link(s), {r['bytes']} B: "
                  f"{r['relay_insns_per_pkt']} instructions per forwarded packet "
                  f"({r['relay_insns_raw_per_pkt']} before the quiet baseline)", flush=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel")
    ap.add_argument("out")
    ap.add_argument("runs", type=int)
    ap.add_argument("--hops", default="0,1,2")
    ap.add_argument("--links", default="1,2")
    ap.add_argument("--insns-only", action="store_true")
    a = ap.parse_args()
    kernel = os.path.abspath(a.kernel)
    if a.insns_only:
        return insns_only(a, kernel)
    rows = []
    for hops in [int(x) for x in a.hops.split(",")]:
        for links in [int(x) for x in a.links.split(",")]:
            mb = {s: [] for s in SIZES}
            rt = {s: [] for s in SIZES}
            copied, fwd, drops = 0, 0, 0
            for r in range(a.runs):
                print(f"relay: kernel, {hops} relay(s), {links} link(s) per hop, run {r + 1}/{a.runs}", flush=True)
                for size in SIZES:
                    m, rl = stream(kernel, hops, links, size)
                    mb[size].append(m)
                    copied += sum(int(x["copied"]) for x in rl)
                    fwd += sum(int(x["relayed"]) for x in rl)
                    drops += sum(int(x["drop_busy"]) + int(x["drop_down"]) + int(x.get("drop_nomem", 0)) for x in rl)
                    print(f"  stream {size} B: {m:.1f} Mbit/s", flush=True)
                rtts, _ = rtt(kernel, hops, links)
                for size in SIZES:
                    if size in rtts:
                        rt[size].append(rtts[size][0])
                print("  rtt " + ", ".join(f"{s} B {v[0]:.0f} us" for s, v in sorted(rtts.items())), flush=True)
            for size in SIZES:
                insns = raw = None
                if hops:
                    insns, raw = measure_insns(kernel, hops, links, size, a.runs)
                    print(f"  relay instructions per forwarded packet, {size} B: {insns} ({raw} before the "
                          "quiet baseline)", flush=True)
                rows.append({
                    "system": "kernel", "mode": "stream", "hops": hops, "links": links, "bytes": size,
                    "mbps": round(statistics.median(mb[size]), 1) if mb[size] else None,
                    "mbps_runs": [round(x, 1) for x in mb[size]],
                    "rtt_us": round(statistics.median(rt[size]), 1) if rt[size] else None,
                    "rtt_runs_us": [round(x, 1) for x in rt[size]],
                    "relay_insns_per_pkt": insns, "relay_insns_raw_per_pkt": raw,
                    "relay_copy_bytes_per_pkt": (copied / fwd if fwd else 0) if hops else None,
                    "relay_forwarded": fwd if hops else None,
                    "relay_drops": drops if hops else None,
                })
    doc = {"bench": "relay", "env": env("tcg", "real", a.runs, backend="dgram-unix-per-link (cluster runner)",
                                        nic="e1000"),
           "insns_clock": f"icount (relays only, separate boots: {a.runs} per point, median)", "stream_count": COUNT, "rows": rows}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "kernel-relay.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"relay: wrote {os.path.join(a.out, 'kernel-relay.json')}")


if __name__ == "__main__":
    main()
