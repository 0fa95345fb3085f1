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

CPU work at a fixed offered load (--cpu: one run per call, so that
relay.sh can interleave it with the Linux routers' boots): one relay, 1
and 2 links per hop, each size; the relay under -icount shift=0, the
client's NICs paced to --cpu-mbps each (nic_mbps=, the same offered load
as Linux's tbf on its client's NICs, far below what either relay carries:
busy fractions recorded), a stream of --cpu-packets packets (the Linux
side sends as many datagrams of the same size). Per sample: the relay's
instructions per forwarded packet (net of its quiet baseline, and raw),
its busy share, frames forwarded, the server's Mbit/s. Each call appends
to OUTDIR/kernel-relay-cpu.samples.jsonl (--cpu-first: afresh) and
rewrites OUTDIR/kernel-relay-cpu.json (rows of mode cpu, medians over
every run so far, stats.median as the multi-link CPU-work rows).

Throughput where the host does not decide (--inject): the client replaced
by the host's frame injector (tools/bench/inject.py), one link: per run and
size, the stream injected straight into a server VM (direct, one VM), then
through one relay VM to the server (two VMs); with --lb-guest the same for
Linux guests right after (tools/linux-baseline/inject-relay.py: a router
and relaybench's server, UDP bursts), runs interleaved. Unacknowledged at
most: 128 packets (this kernel), 256 (Linux: 2 bursts). Mbit/s on the host's clock for both
systems: the packets acknowledged from the first acknowledgement to the
last over that time (the kernel server's own figure kept beside); each
VM's vCPU thread's host CPU share over it and the seconds the VMs' threads
waited for a host CPU (runq_wait_frac: over that time, summed over the
threads). Writes OUTDIR/relay-inject.json (rows of
mode inject-direct and inject-relay, both systems, medians over RUNS).

Usage: relay.py KERNEL OUTDIR RUNS [--hops 0,1,2] [--links 1,2] [--append] [--insns-only]
       relay.py KERNEL OUTDIR RUNS --inject [--sizes 1500,8192] [--lb-guest DIR]
       relay.py KERNEL OUTDIR 1 --cpu [--cpu-first] [--links 1,2] [--sizes 1500,8192]
                [--cpu-mbps R] [--cpu-packets N]
Writes OUTDIR/kernel-relay.json and every run's figures in
OUTDIR/kernel-relay.samples.jsonl (--append: adds to those; the rows are the
medians over all; --insns-only: redoes only the -icount boots and updates
the instruction counts of an existing one), or with
--cpu OUTDIR/kernel-relay-cpu.json.
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
import inject  # noqa: E402 (the host's frame injector, --inject)
import stats  # noqa: E402
from env import env  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIZES = (1500, 8192)
COUNT = {1500: 8192, 8192: 2048}  # about 12 and 16 MB a stream
# CPU work: the offered load per link and the packets of a stream, both
# systems (Linux: 16 bursts of 128 datagrams, its warm-up burst included);
# the kernel's stream keeps 2 batches of 64 unacknowledged, the 128 frames
# the kernel holds for a channel (user/stream.c: more are dropped).
CPU_MBPS, CPU_PACKETS, CPU_WINDOW = 25, 2048, 2


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


def cpu_sample(kernel, links, size, mbps, packets):
    """One line of three (client, relay under -icount, server), the client's
    NICs paced to mbps each: what the relay and the server measured."""
    common = f"run=stream size={size} count={packets} batch=64 window={CPU_WINDOW} timeout_ms=60000"
    pace = " nic_mbps=" + ",".join([str(mbps)] * links)
    topo = line(kernel, 1, links, f"{common} role=server", f"{common} role=client{pace}", True, name="relay-cpu")
    logs = cluster(topo)
    res = kv(re.search(r"^RESULT stream system=kernel role=server.*$", logs["n2"], re.M).group(0))
    if res["corrupt"] != "0" or res["missing"] != "0":
        raise RuntimeError(f"cpu stream {links} links {size} B: corrupt {res['corrupt']} missing {res['missing']}")
    rl = relays(logs, 1)[0]
    return {"links": links, "bytes": size, "offered_mbps": mbps * links, "packets": packets,
            "mbps": int(res["kbps"]) / 1000, "insns_per_fwd": int(rl["net_per_fwd"]),
            "raw_per_fwd": int(rl["busy_per_fwd"]), "busy_frac": int(rl["busy_x1000"]) / 1000,
            "forwarded": int(rl["relayed"]), "window_ms": int(rl["window_ms"]),
            "quiet_busy_frac": int(rl["quiet_busy_x1e6"]) / 1e6,
            "drops": int(rl["drop_busy"]) + int(rl["drop_down"]) + int(rl.get("drop_nomem", 0))}


def cpu_rows(samples):
    """Rows of mode cpu: medians per point over every sample so far."""
    pts = {}
    for x in samples:
        pts.setdefault((x["links"], x["bytes"]), []).append(x)
    rows = []
    for (links, size), xs in sorted(pts.items()):
        med = lambda k: stats.median([x[k] for x in xs])  # noqa: E731
        rows.append({
            "system": "kernel", "mode": "cpu", "hops": 1, "links": links, "bytes": size,
            "offered_mbps": xs[0]["offered_mbps"], "packets": xs[0]["packets"], "mbps": stats.rnd(med("mbps"), 2),
            "relay_insns_per_pkt": round(med("insns_per_fwd")), "relay_insns_raw_per_pkt": round(med("raw_per_fwd")),
            "runs_relay_insns_per_pkt": [x["insns_per_fwd"] for x in xs],
            "relay_busy_frac": stats.rnd(med("busy_frac"), 4), "relay_forwarded": round(med("forwarded")),
            "relay_quiet_busy_frac": stats.rnd(med("quiet_busy_frac"), 4),
            "relay_drops": sum(x["drops"] for x in xs), "n": len(xs),
        })
    return rows


def cpu_main(a, kernel):
    raw = os.path.join(a.out, "kernel-relay-cpu.samples.jsonl")  # one sample a line
    samples = [] if a.cpu_first or not os.path.exists(raw) else [json.loads(x) for x in open(raw) if x.strip()]
    for links in [int(x) for x in a.links.split(",")]:
        for size in [int(x) for x in a.sizes.split(",")]:
            x = cpu_sample(kernel, links, size, a.cpu_mbps, a.cpu_packets)
            samples.append(x)
            print(f"relay: cpu {links} link(s) {size} B at {x['offered_mbps']} Mbit/s offered: {x['mbps']} Mbit/s, "
                  f"relay {x['insns_per_fwd']} instructions per forwarded packet ({x['raw_per_fwd']} raw), "
                  f"busy {x['busy_frac']:.3f}", flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(raw, "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in samples)
    rows = cpu_rows(samples)
    doc = {"bench": "relay", "env": env("tcg", "icount", max(r["n"] for r in rows),
                                        backend="dgram-unix-per-link (cluster runner)", nic="e1000"),
           "insns_clock": "-icount shift=0 on the relay only: busy ticks = guest instructions",
           "cpu_mbps_per_link": a.cpu_mbps, "cpu_packets": a.cpu_packets, "rows": rows}
    with open(os.path.join(a.out, "kernel-relay-cpu.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"relay: wrote {os.path.join(a.out, 'kernel-relay-cpu.json')}")


INJECT_COUNT = {s: 2 * n for s, n in COUNT.items()}  # about 25 and 34 MB a stream
# Unacknowledged at most: this kernel's stream 2 batches of 64 (the 128
# frames its kernel holds for a channel), Linux 2 bursts of 128 (its server
# answers a burst once all of it came).
INJECT_WINDOW, INJECT_LINUX_WINDOW = 2, 2


def inject_figures(threads, wall, relay_vm):
    """(server vCPU share, relay vCPU share, seconds waited for a host CPU) of
    an injector run's threads: names "CPU 0/TCG#tid" (one VM) or
    "CPU 0/TCG#vmK:tid" (relay_vm: K of the relay's QEMU)."""
    srv = rel = wait = 0.0
    for name, (cpu_s, wait_s) in threads.items():
        wait += wait_s
        if name.startswith("CPU "):
            if relay_vm is not None and name.split("#", 1)[1].startswith(f"vm{relay_vm}:"):
                rel += cpu_s
            else:
                srv += cpu_s
    return (srv / wall if wall else None), (rel / wall if wall else None), wait


def inject_kernel(kernel, d, mode, size):
    """One injector run of this kernel: a sample dict."""
    n = INJECT_COUNT[size]
    if mode == "inject-direct":
        st, log, fig = inject.stream_run(kernel, d, size, n, "", "e1000", window=INJECT_WINDOW)
    else:
        st, log, _, fig = inject.relay_stream_run(kernel, d, size, n, "", "e1000", window=INJECT_WINDOW)
    m = re.search(r"^RESULT stream system=kernel role=server.*$", log, re.M)
    res = kv(m.group(0)) if m else {}
    if st != 0 or res.get("corrupt") != "0" or res.get("missing") != "0":
        raise RuntimeError(f"inject {mode} {size} B failed (status {st}): {res}")
    srv, rel, wait = inject_figures(fig["threads"], fig["inject_s"], 1 if mode == "inject-relay" else None)
    return {"mbps": fig["span_acked"] * size * 8 / fig["inject_s"] / 1e6, "guest_mbps": int(res["kbps"]) / 1000,
            "srv": srv, "rel": rel, "wait": wait, "wall": fig["inject_s"]}


def inject_linux(guest, mode, size):
    """One injector run of Linux guests (tools/linux-baseline/inject-relay.py)."""
    hops = 1 if mode == "inject-relay" else 0
    r = subprocess.run([os.path.join(ROOT, "tools", "linux-baseline", "inject-relay.py"), "--hops", str(hops),
                        "--size", str(size), "--bursts", str(INJECT_COUNT[size] // 128), "--window",
                        str(INJECT_LINUX_WINDOW), "--guest", guest], capture_output=True, text=True, check=False)
    m = re.search(r"^RESULT inject .*$", r.stdout, re.M)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"Linux inject {mode} {size} B failed ({r.returncode}): {r.stdout[-300:]} {r.stderr[-300:]}")
    res = kv(m.group(0))
    threads = {}
    for t in re.finditer(r"^HOSTTHREAD name=(\S+) cpu_s=(\S+) runq_wait_s=(\S+)", r.stdout, re.M):
        threads[t.group(1).replace("_", " ", 1) if t.group(1).startswith("CPU_") else t.group(1)] = (
            float(t.group(2)), float(t.group(3)))
    # vm0 is the server (booted first), vm1 the router
    srv, rel, wait = inject_figures(threads, float(res["secs"]), 1 if hops else None)
    return {"mbps": float(res["mbps"]), "guest_mbps": None, "srv": srv, "rel": rel, "wait": wait,
            "wall": float(res["secs"])}


def inject_main(a, kernel):
    sizes = [int(x) for x in a.sizes.split(",")]
    systems = ["kernel"] + (["linux-router"] if a.lb_guest else [])
    samples = {}
    with tempfile.TemporaryDirectory(prefix="relay-inject.") as d:
        for run in range(a.runs):
            for size in sizes:
                for system in systems:
                    for mode in ("inject-direct", "inject-relay"):
                        x = (inject_kernel(kernel, d, mode, size) if system == "kernel"
                             else inject_linux(a.lb_guest, mode, size))
                        x["waitfrac"] = x["wait"] / x["wall"] if x["wall"] else None
                        samples.setdefault((system, mode, size), []).append(x)
                        print(f"relay: inject run {run + 1}/{a.runs} {system} {mode} {size} B: {x['mbps']:.1f} "
                              f"Mbit/s, host CPU: server vCPU {x['srv'] or 0:.2f}, relay vCPU {x['rel'] or 0:.2f}, "
                              f"waited {x['wait']:.2f} s", flush=True)
    rows = []
    for (system, mode, size), xs in sorted(samples.items()):
        med = lambda k: stats.median([x[k] for x in xs if x[k] is not None])  # noqa: E731
        rows.append({"system": system, "mode": mode, "hops": 1 if mode == "inject-relay" else 0, "links": 1,
                     "bytes": size, "packets": INJECT_COUNT[size], "mbps": stats.rnd(med("mbps"), 1),
                     "mbps_runs": [round(x["mbps"], 1) for x in xs],
                     "server_mbps": stats.rnd(med("guest_mbps"), 1) if system == "kernel" else None,
                     "server_vcpu_frac": stats.rnd(med("srv"), 3),
                     "relay_vcpu_frac": stats.rnd(med("rel"), 3) if mode == "inject-relay" else None,
                     "runq_wait_s": stats.rnd(med("wait"), 3), "wall_s": stats.rnd(med("wall"), 3),
                     "runq_wait_frac": stats.rnd(med("waitfrac"), 3), "relay_insns_per_pkt": None, "n": len(xs)})
    doc = {"bench": "relay", "env": env("tcg", "real", a.runs, backend="dgram-unix (host injector)", nic="e1000"),
           "inject_count": INJECT_COUNT, "inject_unacked": {"kernel": INJECT_WINDOW * 64,
                                                             "linux-router": INJECT_LINUX_WINDOW * 128},
           "rows": rows}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "relay-inject.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"relay: wrote {os.path.join(a.out, 'relay-inject.json')}")


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
    ap.add_argument("--append", action="store_true",
                    help="add this call's runs to OUTDIR/kernel-relay.samples.jsonl (interleaved rounds)")
    ap.add_argument("--first-run", type=int, default=0, help="the first run's number (default: after the last)")
    ap.add_argument("--cpu", action="store_true", help="one run of the CPU-work points only")
    ap.add_argument("--cpu-first", action="store_true", help="start kernel-relay-cpu.samples.jsonl afresh")
    ap.add_argument("--inject", action="store_true", help="the host's injector as the client")
    ap.add_argument("--lb-guest", default="", help="--inject: the Linux guest (build/linux-baseline) for its rows")
    ap.add_argument("--sizes", default=",".join(str(s) for s in SIZES), help="--cpu: sizes")
    ap.add_argument("--cpu-mbps", type=int, default=CPU_MBPS, help="offered load per link")
    ap.add_argument("--cpu-packets", type=int, default=CPU_PACKETS, help="packets a stream")
    a = ap.parse_args()
    kernel = os.path.abspath(a.kernel)
    if a.cpu:
        return cpu_main(a, kernel)
    if a.inject:
        return inject_main(a, kernel)
    if a.insns_only:
        return insns_only(a, kernel)
    # Every run's figures (kernel-relay.samples.jsonl): --append adds this
    # call's runs to those already there (relay.sh interleaves one kernel
    # run with one Linux run), the rows are the medians over all of them.
    spath = os.path.join(a.out, "kernel-relay.samples.jsonl")  # one line per cell: {"cell": "H,L", ...}
    samples = {}
    if a.append and os.path.exists(spath):
        samples = {x["cell"]: x for x in (json.loads(ln) for ln in open(spath) if ln.strip())}
    first = a.first_run or (1 + max([len(v["mbps"][str(SIZES[0])]) for v in samples.values()] or [0]))
    for hops in [int(x) for x in a.hops.split(",")]:
        for links in [int(x) for x in a.links.split(",")]:
            c = samples.setdefault(f"{hops},{links}", {
                "cell": f"{hops},{links}", "mbps": {str(s): [] for s in SIZES}, "rtt": {str(s): [] for s in SIZES},
                "insns": {str(s): [] for s in SIZES}, "raw": {str(s): [] for s in SIZES},
                "copied": 0, "fwd": 0, "drops": 0})
            for r in range(first, first + a.runs):
                print(f"relay: kernel, {hops} relay(s), {links} link(s) per hop, run {r}", flush=True)
                for size in SIZES:
                    m, rl = stream(kernel, hops, links, size)
                    c["mbps"][str(size)].append(round(m, 1))
                    c["copied"] += sum(int(x["copied"]) for x in rl)
                    c["fwd"] += sum(int(x["relayed"]) for x in rl)
                    c["drops"] += sum(int(x["drop_busy"]) + int(x["drop_down"]) + int(x.get("drop_nomem", 0))
                                      for x in rl)
                    print(f"  stream {size} B: {m:.1f} Mbit/s", flush=True)
                rtts, _ = rtt(kernel, hops, links)
                for size in SIZES:
                    if size in rtts:
                        c["rtt"][str(size)].append(round(rtts[size][0], 1))
                print("  rtt " + ", ".join(f"{s} B {v[0]:.0f} us" for s, v in sorted(rtts.items())), flush=True)
                for size in SIZES if hops else ():
                    insns, raw = measure_insns(kernel, hops, links, size, 1)
                    c["insns"][str(size)].append(insns)
                    c["raw"][str(size)].append(raw)
                    print(f"  relay instructions per forwarded packet, {size} B: {insns} ({raw} before the "
                          "quiet baseline)", flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(spath, "w") as f:
        f.writelines(json.dumps(c) + "\n" for _, c in sorted(samples.items()))
    rows = []
    for key, c in sorted(samples.items()):
        hops, links = (int(x) for x in key.split(","))
        for size in SIZES:
            mb, rt, ins, raw = (c[k][str(size)] for k in ("mbps", "rtt", "insns", "raw"))
            rows.append({
                "system": "kernel", "mode": "stream", "hops": hops, "links": links, "bytes": size,
                "mbps": round(statistics.median(mb), 1) if mb else None,
                "mbps_runs": mb,
                "rtt_us": round(statistics.median(rt), 1) if rt else None,
                "rtt_runs_us": rt,
                "relay_insns_per_pkt": round(statistics.median(ins)) if ins else None,
                "relay_insns_raw_per_pkt": round(statistics.median(raw)) if raw else None,
                "relay_copy_bytes_per_pkt": (c["copied"] / c["fwd"] if c["fwd"] else 0) if hops else None,
                "relay_forwarded": c["fwd"] if hops else None,
                "relay_drops": c["drops"] if hops else None,
            })
    runs = max(len(c["mbps"][str(SIZES[0])]) for c in samples.values())
    doc = {"bench": "relay", "env": env("tcg", "real", runs, backend="dgram-unix-per-link (cluster runner)",
                                        nic="e1000"),
           "insns_clock": "icount (relays only, separate boots: one per point and run, median)",
           "stream_count": COUNT, "rows": rows}
    if a.first_run:
        doc["env"]["interleaved"] = "rounds of one run of this kernel, then one of Linux's (relay.sh)"
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "kernel-relay.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"relay: wrote {os.path.join(a.out, 'kernel-relay.json')}")


if __name__ == "__main__":
    main()
