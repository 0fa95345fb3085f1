#!/usr/bin/env python3
"""make bench-r1: R1 as receive work, every system side by side (issue 25).

    r1.py --kernel KERNEL --guest LB_BUILD --out FILE [--nic e1000] [--sizes 64,1500,8192]
          [--pairs N] [--variants packet,tuned,tuned-mmap,xdp] [--no-dpdk] [--reps N]
          [--kernel-variant NAME=WORD,WORD ...] [--no-kernel]

Boots, under -icount shift=0 with insnplugin.so loaded in the receiving VM,
burst pairs of this kernel (user/burst.c), of the Linux guest's socket
variants (pktbench: all in one boot pair, one after the other) and of DPDK
(dpdkbench), alternating system by system, N rounds (--pairs). Every server
opens a receive window while it waits for the next burst and closes it once
it holds the burst's last frame; the plugin counts the receiving guest's
instructions in it, the payload check apart, the polls that found nothing
left out (rxwork.py). Writes one JSON file (bench "r1", docs/benchmarks.md):
a row per system and size with the median receive work per packet over the
timed bursts (--reps a size, default R1_RX_REPS or 30, after warm-ups),
the check, what was left out, the background an idle window measured, and
the old R1 (first frame to reply sent, `r1_insns_per_pkt`) beside it.
Standard library only."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "linux-baseline"))
import collect  # noqa: E402
import kernelnet  # noqa: E402
import rxwork  # noqa: E402
import stats  # noqa: E402
from env import env  # noqa: E402

LINUX_WARMUP = 2  # pktbench/dpdkbench warm-up bursts per size
FIELDS = ("r1_rx_insns_per_pkt", "r1_rx_check_insns_per_pkt", "r1_rx_p99_insns_per_pkt",
          "r1_rx_left_out_insns_per_pkt", "r1_rx_empty_polls_per_pkt", "n_r1_rx", "r1_rx_per_pair",
          "r1_rx_idle_window_insns", "r1_rx_idle_window_ms", "r1_rx_background_insns_per_pkt")


def kernel_pair(kernel, sizes, nic, kargs=""):
    """One -icount pair of this kernel (with extra command-line words):
    (receive windows, old R1 dicts)."""
    kernelnet.NIC = nic
    r = kernelnet.burst_pair("kernel", kernel, sizes, False, kargs, True)
    return r[6], r[5]


def linux_pair(guest, variants, sizes, nic, reps, logroot):
    """One -icount pair of pktbench or dpdkbench: its parsed lines (collect.read_raw)."""
    logdir = tempfile.mkdtemp(prefix="r1-", dir=logroot)
    out = os.path.join(logdir, "pair.txt")
    with open(out, "w") as f:
        r = subprocess.run([os.path.join(ROOT, "tools/linux-baseline/run-pair.sh"), "--no-build", "--guest", guest,
                            "--nic", nic, "--mode", "burst", "--variant", variants, "--sizes",
                            ",".join(map(str, sizes)), "--runs", str(reps), "--warmup", str(LINUX_WARMUP),
                            "--icount", "--count-rx", "--timeout", str(600 * len(variants.split(","))),
                            "--logdir", logdir], stdout=f, check=False)
    if r.returncode != 0:
        sys.exit(f"bench-r1: the {variants} pair failed; logs in {logdir}")
    return collect.read_raw([out])[0]


def old_r1_linux(boot, variant, size):
    """The old R1 (SRVSTAT burst r1_tsc, warm-ups left out) of one variant and size."""
    v = [float(f["r1_tsc"]) for k, t, f in boot if k == "SRVSTAT" and t == "burst"
         and f.get("variant") == variant and int(f["bytes"]) == size]
    return v[LINUX_WARMUP:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--guest", required=True, help="the Linux guest's build (LB_BUILD)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--nic", default="e1000", choices=sorted(kernelnet.MODELS))
    ap.add_argument("--sizes", default="64,1500,8192")
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--variants", default="packet,tuned,tuned-mmap,xdp")
    ap.add_argument("--no-dpdk", action="store_true")
    ap.add_argument("--no-kernel", action="store_true")
    ap.add_argument("--reps", type=int, default=rxwork.REPS)
    ap.add_argument("--kernel-variant", action="append", default=[],
                    help="NAME=WORD,WORD: this kernel with those command-line words, a system of its own")
    a = ap.parse_args()
    kvars = [("kernel", "")] if not a.no_kernel else []
    for v in a.kernel_variant:
        name, _, words = v.partition("=")
        kvars.append((name, words.replace(",", " ")))
    sizes = [int(s) for s in a.sizes.split(",")]
    rxwork.REPS = a.reps
    logroot = os.path.join(ROOT, "build")
    os.makedirs(logroot, exist_ok=True)
    kwin, kold, lboots, dboots = {n: [] for n, _ in kvars}, {n: [] for n, _ in kvars}, [], []
    for i in range(a.pairs):
        for name, words in kvars:
            print(f"bench-r1: {name} pair {i + 1}/{a.pairs} ({a.nic})", flush=True)
            w, old = kernel_pair(a.kernel, sizes, a.nic, words)
            kwin[name].append(w)
            kold[name].append(old)
        if a.variants:
            print(f"bench-r1: {a.variants} pair {i + 1}/{a.pairs} ({a.nic})", flush=True)
            lboots.append(linux_pair(a.guest, a.variants, sizes, a.nic, a.reps, logroot))
        if not a.no_dpdk:
            print(f"bench-r1: dpdk pair {i + 1}/{a.pairs} ({a.nic})", flush=True)
            dboots.append(linux_pair(a.guest, "dpdk", sizes, a.nic, a.reps, logroot))
    rows = []
    for size in sizes:
        for name, words in kvars:
            f = rxwork.fields([rxwork.timed(w, size, kernelnet.WARM) for w in kwin[name]],
                              [rxwork.idle_windows(w) for w in kwin[name]])
            old = [int(d["r1_tsc"]) for b in kold[name] for d in b if int(d["bytes"]) == size]
            if f:
                rows.append(dict({"system": name, "bytes": size}, **f,
                                 r1_insns_per_pkt=stats.rnd(stats.median(old), 1) if old else None,
                                 **({"kargs": words} if words else {})))
    genv = {}
    gfile = os.path.join(a.guest, "guest.env")
    if os.path.exists(gfile):
        genv = dict(line.strip().split("=", 1) for line in open(gfile) if "=" in line)
    for boots, variants in ((lboots, a.variants.split(",") if a.variants else []), (dboots, ["dpdk"])):
        rx = collect.rx_windows(boots)
        ports = collect.port_settings(boots)
        for v in variants:
            for size in sizes:
                f = rxwork.fields([rxwork.timed(b.get(v, []), size, LINUX_WARMUP) for b in rx],
                                  [rxwork.idle_windows(b.get(v, [])) for b in rx])
                if not f:
                    continue
                old = [x for b in boots for x in old_r1_linux(b, v, size)]
                row = dict({"system": collect.SYSTEM[v], "bytes": size}, **f,
                           r1_insns_per_pkt=stats.rnd(stats.median(old), 1) if old else None)
                collect.add_settings(row, ports.get(v, ("", "")), genv.get("KERNEL_RELEASE"))
                rows.append(row)
    e = env("tcg", "icount", a.pairs, backend="dgram-unix", nic=a.nic)
    e.update({"icount": "shift=0", "counter": "tools/linux-baseline/insnplugin.c receive windows (rxwork.py)",
              "reps_per_size": a.reps, "warmup_kernel": kernelnet.WARM, "warmup_linux": LINUX_WARMUP,
              "variants": " ".join((a.variants.split(",") if a.variants else []) + ([] if a.no_dpdk else ["dpdk"])),
              "idle_window_ms": 200,
              "kernel_variants": " ".join(f"{n}={w.replace(' ', ',')}" for n, w in kvars if w)})
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"bench": "r1", "env": e, "rows": rows}, f, indent=1)
        f.write("\n")
    print(f"bench-r1: wrote {a.out} ({len(rows)} rows)", flush=True)


if __name__ == "__main__":
    main()
