#!/usr/bin/env python3
"""Round trips and bursts between two VMs of this kernel (Figures 5-7).

make bench-rtt / make bench-burst. Each run boots a server and a client VM
(tools/net-pair.sh: QEMU dgram over unix sockets, TCG, --nic e1000,
virtio or e1000e: QEMU's e1000, virtio-net-pci,disable-legacy=on or e1000e); RUNS boot
pairs per benchmark and configuration, samples pooled over them
(tools/bench/stats.py). T1 in guest instructions comes from one more pair
under -icount shift=0, where the guest TSC counts instructions. Burst pairs
also measure the host CPU time of both QEMU processes per gigabyte
(tools/bench/hostcpu.py) and count the bytes the CPUs copied (io_stats).

A configuration is a system name and extra kernel command-line words:
--variant kernel-noscrub=rxscrub=0 adds one beside the plain "kernel"; the
configurations alternate boot pair by boot pair, so a slow drift of the host
hits them alike. Words the kernel does not know are ignored by it (env
records whether the kernel image mentions each option).

Like the Linux baseline's bench.sh, a real-time pair during which other
processes took more than LB_MAX_OTHER cores (default 0.25) is measured again,
at most LB_BUSY_RETRIES times (default 2); env.host_other_cores lists the
value kept for each pair.
The emulated link's ceiling (kernelnet.py ceiling): RUNS boot pairs that run
the kernel's ceiling=rx / ceiling=tx at boot (kernel/net/ceiling.h) instead of
a program: timed windows of S-byte packets per size and per way the guests
wait for their rings (spin, halt), the windows of every pair pooled per mode
and size; the ceiling of a size is the highest of the modes' medians.
Usage: kernelnet.py rtt|burst|ceiling KERNEL OUTDIR RUNS [--sizes 64,8192] [--quick]
                    [--variant NAME=WORDS ...] [--kernel-variant NAME=KERNEL ...]
                    [--nic e1000|virtio|e1000e]
(--quick: a few repetitions per size, for make bench-smoke;
--kernel-variant NAME=KERNEL: a configuration that boots another kernel
image, e.g. an older commit's, so two kernels are compared in one run
by the same harness). Writes
OUTDIR/NAME-rtt.json or OUTDIR/NAME-burst.json per configuration, or
OUTDIR/ceiling.json.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import hostcpu  # noqa: E402
import inject  # noqa: E402
import rxwork  # noqa: E402
import stats  # noqa: E402
from env import env  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIZES = [64, 128, 256, 512, 1024, 1500, 2048, 4096, 8192]
BATCH = 128
WARM = 1  # warm-up bursts per size and boot
ICOUNT_PAIRS = int(os.environ.get("ICOUNT_PAIRS", "1"))  # -icount burst pairs per system
MAX_OTHER = float(os.environ.get("LB_MAX_OTHER", "0.25"))
BUSY_RETRIES = int(os.environ.get("LB_BUSY_RETRIES", "2"))
OTHER = {}  # configuration -> other processes' cores during each kept pair
KERNELS = {}  # configuration -> its own kernel image (--kernel-variant), else the KERNEL argument


def kernel_of(name, kernel):
    return KERNELS.get(name, kernel)
# QEMU device per NIC family (tools/net-pair.sh MODEL).
MODELS = {"e1000": "e1000", "virtio": "virtio-net-pci,disable-legacy=on", "e1000e": "e1000e"}
NIC = "e1000"


def kv(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


def busy_s():
    """Host CPU seconds busy so far (all CPUs), and this process's with its reaped children."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    t = os.times()
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hostcpu.HZ, \
        t.user + t.system + t.children_user + t.children_system


def pair(name, kernel, server, client, kargs, icount=False, watch=False):
    """Boots one pair of configuration name, again while other processes were busy
    (real time only); returns (server log, client log, host CPU windows)."""
    for attempt in range(BUSY_RETRIES + 1):
        (b0, o0), w0 = busy_s(), time.monotonic()
        logs = boot_pair(kernel, server, client, kargs, icount, watch)
        (b1, o1), w1 = busy_s(), time.monotonic()
        other = max(0.0, ((b1 - b0) - (o1 - o0)) / (w1 - w0))
        if icount or other <= MAX_OTHER or attempt == BUSY_RETRIES:
            break
        print(f"bench: {name}: other processes used {other:.2f} cores meanwhile; measuring again",
              flush=True)
        time.sleep(5)
    if not icount:
        OTHER.setdefault(name, []).append(round(other, 2))
    return logs


def boot_pair(kernel, server, client, kargs, icount, watch):
    logdir = tempfile.mkdtemp(prefix="bench-", dir=os.path.join(ROOT, "build"))
    envv = dict(os.environ)
    envv["MODEL"] = MODELS[NIC]
    extra = f"{os.environ.get('BENCH_KARGS', '')} {kargs}".strip()  # words for both VMs
    server, client = f"{server} {extra}".strip(), f"{client} {extra}".strip()
    if icount:
        # R1 as receive work: insnplugin.so's receive windows (rxwork.py).
        so = rxwork.plugin(os.path.join(ROOT, "build", "rxwork"))
        envv["QEMU_EXTRA"] = f"-icount shift=0 -plugin {so},out={logdir}/@SIDE@.rxw"
        server += " icount=1"
        client += " icount=1"
    w = hostcpu.Watch(logdir) if watch else None
    if w:
        w.start()
    r = subprocess.run([os.path.join(ROOT, "tools/net-pair.sh"), kernel, server, client, logdir,
                        "600"], env=envv, capture_output=True, text=True, check=False)
    if w:
        w.stop()
    logs = []
    for side in ("server", "client"):
        with open(os.path.join(logdir, side + ".log"), errors="replace") as f:
            logs.append(f.read())
        rxw = os.path.join(logdir, side + ".rxw")  # the plugin's lines, after the console's
        if os.path.exists(rxw):
            with open(rxw, errors="replace") as f:
                logs[-1] += "\n" + f.read()
    if r.returncode != 0:
        sys.exit(f"bench: a VM failed ({r.stdout.strip()}); logs in {logdir}")
    return logs[0], logs[1], w.windows if w else []


def rtt(kernel, runs, sizes, quick, configs):
    """{system: rows}; every sample of every boot pair pooled."""
    samples = {name: {s: [] for s in sizes} for name in configs}
    arg = ",".join(map(str, sizes))
    iters = "iters=10 warm=2" if quick else "iters=30 warm=3"
    for i in range(runs):
        for name, kargs in configs.items():
            print(f"bench-rtt: {name} pair {i + 1}/{runs} ({len(sizes)} sizes)", flush=True)
            _, cl, _ = pair(name, kernel_of(name, kernel), "run=pingpong role=server peer=@CMAC0@",
                            f"run=pingpong role=client peer=@SMAC0@ sizes={arg} {iters}", kargs)
            boot = {s: [] for s in sizes}
            for line in cl.splitlines():
                if line.startswith("RTT "):
                    d = kv(line)
                    boot[int(d["bytes"])].append(int(d["ns"]) / 1000)
            for s in sizes:
                samples[name][s].append(boot[s])
    return {name: [dict({"system": name, "bytes": s}, **stats.latency(samples[name][s]))
                   for s in sizes] for name in configs}


def burst_pair(name, kernel, sizes, quick, kargs, icount):
    """One burst pair: RESULT dicts, per-size server and client STATS, CPU windows."""
    reps = f"reps=3 warm={WARM}" if quick else f"reps=5 warm={WARM}"
    if icount:  # R1's receive windows: at least rxwork.REPS samples a size
        reps = f"reps={3 if quick else rxwork.REPS} warm={WARM}"
    cpu = "" if icount else f" cpu_ms={200 if quick else 400}"
    sv, cl, windows = pair(name, kernel, "run=burst role=server peer=@CMAC0@",
                           f"run=burst role=client peer=@SMAC0@ sizes={','.join(map(str, sizes))} "
                           f"{reps}{cpu}", kargs, icount, watch=not icount)
    res = [kv(x) for x in cl.splitlines() if x.startswith("RESULT burst")]
    srv = {int(d["bytes"]): d for d in (kv(x) for x in sv.splitlines() if x.startswith("STATS burst size"))}
    cli = {int(d["bytes"]): d for d in (kv(x) for x in cl.splitlines() if x.startswith("STATS burst client"))}
    thr = [int(kv(x)["threshold"]) for x in sv.splitlines() if x.startswith("STATS burst server")]
    # R1 per batch, warm-up batches (the first of each size) left out like the client's.
    r1 = [d for d in (kv(x) for x in sv.splitlines() if x.startswith("R1 burst")) if int(d["i"]) >= WARM]
    rx = rxwork.windows([x for x in sv.splitlines() if x.startswith("RXWIN i=")],
                        [x for x in sv.splitlines() if x.startswith("RXW ")]) if icount else []
    return res, srv, cli, windows, thr, r1, rx


def burst(kernel, runs, sizes, quick, configs):
    """{system: rows}: samples pooled over the real-time pairs, t1_insns from one
    -icount pair, counters and host CPU as pooled totals."""
    real = {name: [] for name in configs}
    insn = {}
    for i in range(runs):
        for name, kargs in configs.items():
            print(f"bench-burst: {name} real-time pair {i + 1}/{runs} ({len(sizes)} sizes)", flush=True)
            real[name].append(burst_pair(name, kernel_of(name, kernel), sizes, quick, kargs, False))
    cpu_pairs = {name: runs for name in configs}
    for name, kargs in configs.items():
        for attempt in range(hostcpu.RETRIES):
            lost = hostcpu.uncaught([w for b in real[name] for w in b[3]], sizes)
            if not lost:
                break
            print(f"bench-burst: {name}: no host CPU window caught at {lost} B; measuring again "
                  f"({attempt + 1}/{hostcpu.RETRIES})", flush=True)
            extra = burst_pair(name, kernel_of(name, kernel), lost, quick, kargs, False)
            # Only its CPU windows count: the other figures keep the planned pairs.
            real[name].append(([], {}, {}, extra[3], [], [], []))
            cpu_pairs[name] += 1
    # -icount pairs alternate system by system too (ICOUNT_PAIRS, default 1):
    # R1 depends on how many frames each wake-up finds, which the host's
    # timing decides even under -icount, so one pair gives no spread.
    for i in range(ICOUNT_PAIRS):
        for name, kargs in configs.items():
            print(f"bench-burst: {name} -icount pair {i + 1}/{ICOUNT_PAIRS} ({len(sizes)} sizes)",
                  flush=True)
            insn.setdefault(name, []).append(
                burst_pair(name, kernel_of(name, kernel), sizes, quick, kargs, True))
    return {name: [burst_row(name, s, real[name], insn[name], cpu_pairs[name]) for s in sizes]
            for name in configs}


def burst_row(name, size, boots, icounts, cpu_pairs=None):
    insn = [d for ic in icounts for d in ic[0]]
    r1s = [d for ic in icounts for d in ic[5] if int(d["bytes"]) == size]
    # Per -icount pair medians: the spread bench-compare calls noise.
    t1_pairs = [int(stats.median(v)) for v in
                ([int(d["t1_tsc"]) for d in ic[0] if int(d["bytes"]) == size] for ic in icounts) if v]
    r1_pairs = [stats.rnd(stats.median(v), 1) for v in
                ([int(d["r1_tsc"]) for d in ic[5] if int(d["bytes"]) == size] for ic in icounts) if v]
    per_boot = [[d for d in b[0] if int(d["bytes"]) == size] for b in boots if b[0]]
    ds = stats.pooled(per_boot)
    hz = int(ds[0]["tsc_hz"])
    us = lambda d, k: int(d[k]) * 1e6 / hz  # noqa: E731
    mbps = lambda d: BATCH * size * 8 / us(d, "t0_tsc")  # noqa: E731
    total = lambda src, k: sum(int(x[size][k]) for x in src if size in x)  # noqa: E731
    srv, cli = [b[1] for b in boots], [b[2] for b in boots]
    pkts, batches = total(srv, "packets"), total(srv, "batches")
    windows = [w for b in boots for w in b[3] if w[0] == size]
    delivered = sum(w[1] for w in windows) * BATCH * size
    cpu, cpu_null = hostcpu.per_gb(sum(w[2] for w in windows), delivered, windows,
                                   cpu_pairs or len(boots))
    ins = [int(d["t1_tsc"]) for d in insn if int(d["bytes"]) == size]
    rx = rxwork.fields([rxwork.timed(ic[6], size, WARM) for ic in icounts],
                       [rxwork.idle_windows(ic[6]) for ic in icounts])
    return dict({
        "system": name, "bytes": size,
        "mbps": stats.rnd(stats.median([mbps(d) for d in ds]), 2),
        "t0_us": stats.rnd(stats.median([us(d, "t0_tsc") for d in ds])),
        "t1_us": stats.rnd(stats.median([us(d, "t1_tsc") for d in ds])),
        "t2_us": stats.rnd(stats.median([us(d, "t2_tsc") for d in ds])),
        "t1_insns": int(stats.median(ins)) if ins else None,
        # R1: the receiver's instructions per packet, first packet in a slot to reply sent.
        "r1_insns_per_pkt": stats.rnd(stats.median([int(d["r1_tsc"]) for d in r1s]), 1) if r1s else None,
        "r1_check_insns_per_pkt": stats.rnd(stats.median([int(d["check_tsc"]) for d in r1s]), 1) if r1s else None,
        "n_r1": len(r1s),
        "host_cpu_s_per_gb": cpu,
        "host_cpu_s_per_gb_null": cpu_null,
        # Both ends' receive copies (the sender's path has no copy).
        "cpu_copy_bytes_per_pkt": stats.rnd((total(srv, "bytes_copied") +
                                             total(cli, "rx_bytes_copied")) / pkts, 2) if pkts else None,
        "rx_copy_bytes_per_pkt": stats.rnd(total(srv, "bytes_copied") / pkts, 2) if pkts else None,
        # The receiver copies frames up to this many bytes; measured at each boot.
        "copy_threshold_per_boot": [t for b in boots for t in b[4]],
        "doorbells_per_batch": stats.rnd(sum(int(d["doorbells"]) for d in ds) / len(ds), 3),
        "irqs_per_batch": stats.rnd(total(srv, "irqs") / batches, 3) if batches else None,
        "n": len(ds), "n_insns": len(ins),
        "t1_insns_per_pair": t1_pairs, "r1_insns_per_pkt_per_pair": r1_pairs,
        "boot_median_mbps": [stats.rnd(stats.median([mbps(d) for d in b]), 2) for b in per_boot if b],
        "host_cpu_bursts": sum(w[1] for w in windows),
        "host_cpu_windows": len(windows),
    }, **rx)


CEIL_MODES = ("spin", "halt")


def ceiling(kernel, runs, sizes, quick, host=True):
    """Rows of ceiling.json: one per mode and size, windows pooled over the pairs;
    host=False leaves out the host-injected receiver (link-host rows)."""
    reps, ms = (1, 50) if quick else (5, 100)
    words = (f"ceiling_sizes={','.join(map(str, sizes))} ceiling_reps={reps} ceiling_ms={ms} "
             f"ceiling_modes={','.join(CEIL_MODES)}")
    per_boot, lost, sent, frames, blocked, host, hcount = [], {}, {}, {}, {}, [], {}
    for i in range(runs):
        print(f"bench-ceiling: pair {i + 1}/{runs} ({len(sizes)} sizes, {len(CEIL_MODES)} modes)",
              flush=True)
        sv, cl, _ = pair("ceiling", kernel, f"run=hello ceiling=rx {words}",
                         f"run=hello ceiling=tx peer=@SMAC0@ {words}", "")
        boot = {}
        for d in (kv(x) for x in sv.splitlines() if x.startswith("CEILING rx mode=")):
            key = (d["mode"], int(d["bytes"]))
            secs = int(d["tsc"]) / int(d["tsc_hz"])
            if int(d["timed"]) > 0 and secs > 0:
                boot.setdefault(key, []).append(int(d["timed"]) * key[1] * 8 / secs / 1e6)
            lost[key] = lost.get(key, 0) + int(d["lost"])
            frames[key] = frames.get(key, 0) + int(d["frames"])
        for d in (kv(x) for x in cl.splitlines() if x.startswith("CEILING tx mode=")):
            key = (d["mode"], int(d["bytes"]))
            sent[key] = sent.get(key, 0) + int(d["sent"])
            b = blocked.setdefault(key, [0, 0])
            b[0] += int(d.get("blocked_tsc", 0))
            b[1] += int(d.get("tsc", 0))
        per_boot.append(boot)
        if not host:
            continue
        # The receive half alone: the same receiver, frames from a host program.
        print(f"bench-ceiling: host-injected receiver {i + 1}/{runs}", flush=True)
        logdir = tempfile.mkdtemp(prefix="bench-inject-", dir=os.path.join(ROOT, "build"))
        status, log = inject.run(kernel, logdir, sizes, reps, ms, list(CEIL_MODES), NIC)
        if status != 0:
            sys.exit(f"bench-ceiling: the host-injected receiver failed; logs in {logdir}")
        hb = {}
        for d in (kv(x) for x in log.splitlines() if x.startswith("CEILING rx mode=")):
            key, secs = (d["mode"], int(d["bytes"])), int(d["tsc"]) / int(d["tsc_hz"])
            if int(d["timed"]) > 0 and secs > 0:
                hb.setdefault(key, []).append(int(d["timed"]) * key[1] * 8 / secs / 1e6)
            c = hcount.setdefault(key, [0, 0])
            c[0], c[1] = c[0] + int(d["frames"]), c[1] + int(d["lost"])
        host.append(hb)
    rows = []
    for s in sizes:
        for m in CEIL_MODES:
            boots = [b.get((m, s), []) for b in per_boot]
            xs = stats.pooled(boots)
            if not xs:
                sys.exit(f"bench-ceiling: no {m} window of {s} bytes was timed")
            rows.append({"system": "link", "mode": m, "bytes": s,
                         "mbps": stats.rnd(stats.median(xs), 2),
                         "n": len(xs), "boot_median_mbps": [stats.rnd(stats.median(b), 2) for b in boots if b],
                         "frames": frames.get((m, s), 0), "frames_sent": sent.get((m, s), 0),
                         "frames_lost": lost.get((m, s), 0), "window_ms": ms,
                         # The sender's share of the windows with nothing it could queue: near
                         # 0, the sender limits the rate; near 1, the receiving side does.
                         "sender_blocked_frac": stats.rnd(blocked[(m, s)][0] / blocked[(m, s)][1], 3)
                         if blocked.get((m, s), [0, 0])[1] else None})
    for s in sizes:  # the ceiling of a size: the best way of waiting, guest to guest
        best = max((r for r in rows if r["bytes"] == s), key=lambda r: r["mbps"])
        for m in CEIL_MODES:
            boots = [b.get((m, s), []) for b in host]
            xs = stats.pooled(boots)
            if xs:
                rows.append({"system": "link-host", "mode": m, "bytes": s,
                             "mbps": stats.rnd(stats.median(xs), 2), "n": len(xs),
                             "boot_median_mbps": [stats.rnd(stats.median(b), 2) for b in boots if b],
                             "frames": hcount[(m, s)][0], "frames_lost": hcount[(m, s)][1],
                             "window_ms": ms})
        for r in rows:
            if r["bytes"] == s:
                r["ceiling_mbps"], r["ceiling_mode"] = best["mbps"], best["mode"]
    return rows


def known(kernel, kargs):
    """Whether the kernel image mentions every option of kargs (else it ignores them)."""
    with open(kernel, "rb") as f:
        image = f.read()
    return all(w.split("=")[0].encode() in image for w in kargs.split())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", choices=("rtt", "burst", "ceiling"))
    ap.add_argument("kernel")
    ap.add_argument("outdir")
    ap.add_argument("runs", type=int, help="boot pairs per configuration")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--quick", action="store_true", help="a few repetitions per size")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=WORDS",
                    help="another configuration: system NAME, extra kernel words")
    ap.add_argument("--kernel-variant", action="append", default=[], metavar="NAME=KERNEL",
                    help="another configuration: system NAME, another kernel image (e.g. an older "
                         "commit's build), alternating with the others pair by pair")
    ap.add_argument("--nic", choices=sorted(MODELS), default=os.environ.get("NIC", "e1000"),
                    help="both VMs' NIC (default $NIC, else e1000)")
    a = ap.parse_args()
    global NIC
    NIC = a.nic
    sizes = [int(x) for x in a.sizes.split(",")]
    configs = {"kernel": ""}
    for v in a.variant:
        name, _, kargs = v.partition("=")
        configs[name] = kargs.replace(",", " ")
    for v in a.kernel_variant:
        name, _, path = v.partition("=")
        configs[name], KERNELS[name] = "", os.path.abspath(path)
    which = a.bench
    os.makedirs(a.outdir, exist_ok=True)
    if which == "ceiling":
        rows = ceiling(a.kernel, a.runs, sizes, a.quick)
        e = env("tcg", "real", a.runs, "dgram-unix", NIC)
        e["host_other_cores"] = ",".join(map(str, OTHER.get("ceiling", [])))
        e["modes"] = ",".join(CEIL_MODES)
        out = os.path.join(a.outdir, "ceiling.json")
        with open(out, "w") as f:
            json.dump({"bench": "ceiling", "env": e, "rows": rows}, f, indent=1)
        for r in rows:
            print(json.dumps(r))
        print(f"bench-ceiling: wrote {out}")
        return
    res = (rtt if which == "rtt" else burst)(a.kernel, a.runs, sizes, a.quick, configs)
    clock = "real" if which == "rtt" else "real+icount"
    os.makedirs(a.outdir, exist_ok=True)
    for name, rows in res.items():
        e = env("tcg", clock, a.runs, "dgram-unix", NIC)
        e["kargs"] = f"{os.environ.get('BENCH_KARGS', '')} {configs[name]}".strip()
        e["host_other_cores"] = ",".join(map(str, OTHER.get(name, [])))
        if configs[name]:
            e["kargs_known"] = known(a.kernel, configs[name])
        e["kernel_image"] = os.path.relpath(kernel_of(name, os.path.abspath(a.kernel)), ROOT)
        if os.environ.get("KERNEL_REV_" + name.replace("-", "_").upper()):
            e["kernel_rev"] = os.environ["KERNEL_REV_" + name.replace("-", "_").upper()]
        out = os.path.join(a.outdir, f"{name}-{which}.json")
        with open(out, "w") as f:
            json.dump({"bench": which, "env": e, "rows": rows}, f, indent=1)
        for r in rows:
            print(json.dumps(r))
        print(f"bench-{which}: wrote {out}")


if __name__ == "__main__":
    main()
