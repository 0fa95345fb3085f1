#!/usr/bin/env python3
"""Striped streams over 1-4 links between two VMs of this kernel (HXB Table 4,
RI2N Table 3): make bench-multilink.

Each point boots a server and a client VM joined by L point-to-point links
(tools/net-pair.sh, NICS=L: one QEMU dgram wire per NIC pair) and runs
user/stream.c over a channel striped on all L NICs. Every NIC is paced to the
same rate (nic_mbps=, the driver's model of a link's speed), chosen so that
four links stay well inside what the emulator carries on this host: the run
first measures one unpaced link with 1500-byte packets (the smallest size,
where the emulator's per-packet cost is highest) and paces at a fifth of it
(--mbps overrides). Samples of a point are pooled over RUNS boot pairs and
reduced with tools/bench/stats.py like every other benchmark.

The receiver's instructions per packet come from one more pair per size
under -icount shift=0 for 1 and 4 links, unpaced and with poll=timer (a NIC
in polling mode otherwise spins while it waits for the next frames, and
under -icount every spinning instruction would count; with poll=timer the
idle CPU halts between polls on a 20 us tick): the server's machine's busy
ticks (elapsed minus halted, sysinfo.idle_tsc) per packet, kernel and
program together, payload check and the polls included.

CPU work (--cpu: the many-link figure that can tell the systems apart),
every pair under -icount shift=0 with poll=irq (MULTILINK_POLL: the
receiver halts until the NIC's interrupt once its rings are empty, as
Linux's does), one run per call so that
multilink.sh can interleave it with the Linux boots:
  cpu      every NIC paced to --cpu-mbps (the same offered load for Linux,
           chosen far below what either system's CPU carries), a stream of
           --cpu-seconds at that load;
  unpaced  no pacing, --cpu-bytes a stream: the CPU (guest instructions, the
           -icount clock) rather than the host's speed is the limit, and
           Mbit/s is read on the guest clock.
cpu_bound_mbps is the rate the busier end's CPU alone would allow: bytes
per packet over its busy instructions per packet, at the -icount clock's
one instruction per ns. Both ends report their machine's busy instructions (elapsed minus halted,
sysinfo.idle_tsc): the server from its first batch to its last, per packet
after the first batch; the client from its first send to its last ack, per
packet sent. Each call appends its samples to OUTDIR/kernel-multilink-cpu.samples.jsonl
and rewrites OUTDIR/kernel-multilink-cpu.json (rows of mode cpu and unpaced,
medians over every run so far; --cpu-first starts the raw file afresh).

Usage: multilink.py KERNEL OUTDIR RUNS [--links 1,2,3,4] [--sizes 1500,4096,8192]
                    [--mbps R] [--seconds S] [--quick] [--merge]
       multilink.py KERNEL OUTDIR 1 --cpu [--cpu-first] [--links 1,2,3,4] [--sizes 1500,8192]
                    [--cpu-mbps R] [--cpu-seconds S] [--cpu-bytes B]
Writes OUTDIR/kernel-multilink.json (rows per links and size; --merge keeps
the rows of the link counts this run leaves out, at the same --mbps, and
records the run under "merged"), or with --cpu OUTDIR/kernel-multilink-cpu.json.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import sections  # noqa: E402
import stats  # noqa: E402
from env import env  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BATCH = 64
EXTRA = os.environ.get("MULTILINK_EXTRA", "")  # more kernel command-line words for both VMs
# How the CPU-work -icount pairs wait for frames mid-batch: irq (back to
# the NIC's interrupt once its ring is empty, halted until it comes; the
# default) or timer (poll on a 20 us tick, halted between).
POLL = os.environ.get("MULTILINK_POLL", "irq")


def kv(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


def macs(side, n):
    return ",".join(f"@{side}MAC{i}@" for i in range(n))


def pair(kernel, links, size, count, mbps, icount=False, timeout=300, poll="timer", smp=None, model="e1000",
         words="", qemu_extra=""):
    """One boot pair (smp CPUs each, else QEMU_SMP's; NIC model; more words;
    more QEMU arguments, @SIDE@ for server or client: tools/net-pair.sh);
    returns (server RESULT, client RESULT, server LINKS) dicts, each RESULT
    with its side's CPUBUSY fields under "cpubusy" (several CPUs)."""
    nics = ",".join(str(i) for i in range(links))
    pace = f" nic_mbps={','.join([str(mbps)] * links)}" if mbps else ""
    if icount:
        pace += f" poll={poll} icount=1"  # the idle CPU halts while it waits: waiting is not counted
    common = (f"run=stream nics={nics} count={count} size={size} batch={BATCH} timeout_ms=60000{pace}"
              + "".join(f" {w}" for w in (EXTRA, words) if w))
    srv = f"{common} role=server peer={macs('C', links)}"
    cli = f"{common} role=client peer={macs('S', links)}"
    envv = dict(os.environ, NICS=str(links), MODEL=model,
                QEMU_EXTRA=("-icount shift=0 " if icount else "") + qemu_extra,
                **({"QEMU_SMP": str(smp)} if smp else {}))
    with tempfile.TemporaryDirectory(prefix="multilink.") as d:
        r = subprocess.run([os.path.join(ROOT, "tools", "net-pair.sh"), kernel, srv, cli, d, str(timeout)],
                           env=envv, capture_output=True, text=True, check=False)
        logs = {side: sections.read_text(os.path.join(d, f"{side}.log")) for side in ("server", "client")}
    if r.returncode != 0:
        tail = "\n".join((logs["server"] + logs["client"]).splitlines()[-12:])
        raise RuntimeError(f"stream pair links={links} size={size} failed ({r.returncode}):\n{tail}")
    res = {}
    for side in ("server", "client"):
        m = re.findall(r"^RESULT stream .*$", logs[side], re.M)
        res[side] = kv(m[-1]) if m else {}
        cb = re.findall(r"^CPUBUSY stream .*$", logs[side], re.M)
        res[side]["cpubusy"] = kv(cb[-1]) if cb else {}
        ul = re.findall(r"^STATS stream \w+ rx_unlocked=(\d+) settles=(\d+)$", logs[side], re.M)
        if ul:  # frames taken without the kernel lock, and its sections for them
            res[side]["rx_unlocked"], res[side]["rx_settles"] = ul[-1]
    ln = re.findall(r"^LINKS stream server rx(.*)$", logs["server"], re.M)
    shares = {int(n): int(v) for n, v in re.findall(r"nic(\d+)=\d+ share_x1000=(\d+)", ln[-1] if ln else "")}
    return res["server"], res["client"], shares


def count_for(mbps, links, size, seconds):
    """Packets for about `seconds` at the paced rate, a multiple of the batch."""
    n = int(mbps * 1e6 * links * seconds / 8 / size) if mbps else 2048
    return max(4 * BATCH, (n + BATCH - 1) // BATCH * BATCH)


def cpu_count(links, size, mbps, seconds, nbytes):
    """Packets of a CPU-work stream: the paced load for `seconds`, or `nbytes`
    unpaced; the same bytes as the Linux connections (cpu_bytes), rounded to
    whole batches."""
    want = cpu_bytes(links, mbps, seconds, nbytes)
    return max(4 * BATCH, round(want / size / BATCH) * BATCH)


def cpu_bytes(links, mbps, seconds, nbytes):
    """Stream bytes of a CPU-work point (tools/linux-baseline/bench-multilink.sh
    computes the same for Linux)."""
    return int(links * mbps * 1e6 / 8 * seconds) if mbps else nbytes


def cpu_sample(kernel, mode, links, size, a):
    """One -icount pair of a CPU-work point: a dict of what both ends measured."""
    mbps = a.cpu_mbps if mode == "cpu" else 0
    count = cpu_count(links, size, mbps, a.cpu_seconds, a.cpu_bytes)
    s, c, sh = pair(kernel, links, size, count, mbps, icount=True, timeout=600, poll=POLL)
    if int(s.get("corrupt", 1)) or int(s.get("missing", 1)):
        raise RuntimeError(f"cpu {mode} links={links} size={size}: corrupt {s.get('corrupt')} "
                           f"missing {s.get('missing')}")
    return {"mode": mode, "links": links, "bytes": size, "offered_mbps": mbps * links, "packets": count,
            "stream_bytes": count * size, "mbps": int(s["kbps"]) / 1000,
            "rx_per_pkt": int(s["busy_per_pkt"]), "tx_per_pkt": int(c["busy_per_pkt"]),
            "rx_frac": int(s["busy_x1000"]) / 1000, "tx_frac": int(c["busy_x1000"]) / 1000,
            "reordered": int(s["reordered"]), "shares": {str(k): v for k, v in sh.items()}}


def cpu_rows(samples):
    """Rows of mode cpu and unpaced from every sample so far: medians per point;
    busy_insns_per_pkt is both ends' medians added."""
    pts = {}
    for x in samples:
        pts.setdefault((x["mode"], x["links"], x["bytes"]), []).append(x)
    rows = []
    for (mode, n, size), xs in sorted(pts.items()):
        med = lambda k: stats.median([x[k] for x in xs])  # noqa: E731
        rx, tx, mb = med("rx_per_pkt"), med("tx_per_pkt"), med("mbps")
        share = [stats.median([x["shares"].get(str(k), 0) for x in xs]) / 1000 for k in range(n)]
        rows.append({
            "system": "kernel", "mode": mode, "links": n, "bytes": size, "mbps": stats.rnd(mb, 2),
            "offered_mbps": xs[0]["offered_mbps"], "stream_bytes": xs[0]["stream_bytes"],
            "per_link_mbps": [stats.rnd(mb * f) for f in share],
            "busy_insns_per_pkt": round(rx + tx), "busy_insns_per_pkt_rx": round(rx),
            "busy_insns_per_pkt_tx": round(tx), "busy_insns_per_byte": stats.rnd((rx + tx) / size, 3),
            "busy_frac_rx": stats.rnd(med("rx_frac"), 3), "busy_frac_tx": stats.rnd(med("tx_frac"), 3),
            "cpu_bound_mbps": stats.rnd(size * 8 * 1000 / max(rx, tx, 1), 1),
            "out_of_order": med("reordered"), "r1_insns_per_pkt": round(rx), "n": len(xs),
            "runs_busy_insns_per_pkt": [x["rx_per_pkt"] + x["tx_per_pkt"] for x in xs],
        })
    return rows


def cpu_main(a, links, sizes):
    raw = os.path.join(a.out, "kernel-multilink-cpu.samples.jsonl")  # one sample a line
    samples = [] if a.cpu_first or not os.path.exists(raw) else [json.loads(x) for x in open(raw) if x.strip()]
    for n in links:
        for size in sizes:
            for mode in ("cpu", "unpaced"):
                x = cpu_sample(a.kernel, mode, n, size, a)
                samples.append(x)
                print(f"multilink: cpu {mode} links={n} bytes={size}: {x['mbps']} Mbit/s (guest clock), "
                      f"busy insns/pkt rx {x['rx_per_pkt']} tx {x['tx_per_pkt']} "
                      f"(busy {x['rx_frac']:.3f} / {x['tx_frac']:.3f})", flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(raw, "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in samples)
    rows = cpu_rows(samples)
    doc = {"bench": "multilink", "env": env("tcg", "icount", max(r["n"] for r in rows), "dgram", "e1000"),
           "cpu_clock": f"-icount shift=0 on both VMs, poll={POLL}: busy ticks = guest instructions",
           "cpu_mbps_per_link": a.cpu_mbps, "rows": rows}
    with open(os.path.join(a.out, "kernel-multilink-cpu.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"multilink: wrote {os.path.join(a.out, 'kernel-multilink-cpu.json')}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel")
    ap.add_argument("out")
    ap.add_argument("runs", type=int)
    ap.add_argument("--links", default="1,2,3,4")
    ap.add_argument("--sizes", default="1500,4096,8192")
    ap.add_argument("--mbps", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows of other link counts already in OUTDIR/kernel-multilink.json "
                         "(same --mbps), e.g. --links 6,8 beside a 1-4 run")
    ap.add_argument("--cpu", action="store_true", help="one run of the CPU-work points only")
    ap.add_argument("--cpu-first", action="store_true", help="start kernel-multilink-cpu.samples.jsonl afresh")
    ap.add_argument("--cpu-mbps", type=int, default=25, help="offered load per link (mode cpu)")
    ap.add_argument("--cpu-seconds", type=float, default=2.0)
    ap.add_argument("--cpu-bytes", type=int, default=8 << 20, help="bytes of an unpaced stream")
    a = ap.parse_args()
    links = [int(x) for x in a.links.split(",")]
    sizes = [int(x) for x in a.sizes.split(",")]
    if a.cpu:
        return cpu_main(a, links, sizes)
    calib = None
    if a.mbps:
        rate = a.mbps
    else:
        s, _, _ = pair(a.kernel, 1, min(sizes), count_for(0, 1, min(sizes), 0), 0)
        calib = int(s["kbps"]) // 1000
        rate = max(5, calib // 5 // 5 * 5)
    print(f"multilink: links paced at {rate} Mbit/s each"
          + (f" (a fifth of one unpaced link's {calib} Mbit/s at {min(sizes)} bytes)" if calib else ""),
          flush=True)
    samples = {}  # (links, size) -> lists
    for run in range(a.runs):
        for n in links:
            for size in sizes:
                s, c, sh = pair(a.kernel, n, size, count_for(rate, n, size, a.seconds), rate)
                d = samples.setdefault((n, size), {"mbps": [], "client_mbps": [], "reordered": [],
                                                    "shares": [], "gaps": []})
                d["mbps"].append([int(s["kbps"]) / 1000])
                d["client_mbps"].append([int(c["kbps"]) / 1000])
                d["reordered"].append([int(s["reordered"])])
                d.setdefault("packets", []).append([int(s["packets"])])
                d["gaps"].append(int(s["gaps"]))
                d["shares"].append(sh)
                print(f"multilink: run {run + 1}/{a.runs} links={n} bytes={size}: {int(s['kbps']) / 1000} Mbit/s "
                      f"(client {int(c['kbps']) / 1000}), {s['reordered']} reordered", flush=True)
    r1 = {}
    for n in sorted({min(links), max(links)}):
        for size in sizes:
            s, _, _ = pair(a.kernel, n, size, 512 if a.quick else 1024, 0, icount=True, timeout=600)
            r1[(n, size)] = int(s["busy_per_pkt"])
            print(f"multilink: -icount links={n} bytes={size}: {s['busy_per_pkt']} instructions/packet",
                  flush=True)
    rows = []
    for (n, size), d in sorted(samples.items()):
        mb = stats.median(stats.pooled(d["mbps"]))
        share = {k: stats.median([sh.get(k, 0) for sh in d["shares"]]) / 1000 for k in range(n)}
        rows.append({
            "system": "kernel", "links": n, "bytes": size, "mbps": stats.rnd(mb, 2),
            "client_mbps": stats.rnd(stats.median(stats.pooled(d["client_mbps"]))),
            "boot_mbps": [b[0] for b in d["mbps"]],
            "per_link_mbps": [stats.rnd(mb * share[k]) for k in range(n)],
            "per_link_share": [round(share[k], 3) for k in range(n)],
            "out_of_order": stats.median(stats.pooled(d["reordered"])),
            "out_of_order_frac": stats.rnd(sum(stats.pooled(d["reordered"]))
                                           / max(1, sum(stats.pooled(d["packets"]))), 3),
            "gaps": sum(d["gaps"]),
            "r1_insns_per_pkt": r1.get((n, size)),
            "link_mbps": rate, "n": len(d["mbps"]),
        })
    doc = {"bench": "multilink", "env": env("tcg", "real", a.runs, "dgram", "e1000"),
           "link_mbps": rate, "calibration_mbps": calib, "rows": rows}
    path = os.path.join(a.out, "kernel-multilink.json")
    if a.merge and os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        if old["link_mbps"] != rate:
            sys.exit(f"multilink: --merge: {path} was paced at {old['link_mbps']} Mbit/s a link, this run at {rate}")
        kept = [r for r in old["rows"] if r["links"] not in links]
        merged = old.get("merged", []) + [{"links": links, "env": doc["env"]}]
        doc = dict(old, rows=sorted(kept + rows, key=lambda r: (r["links"], r["bytes"])), merged=merged)
    os.makedirs(a.out, exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"multilink: wrote {os.path.join(a.out, 'kernel-multilink.json')}")


if __name__ == "__main__":
    main()
