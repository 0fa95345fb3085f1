#!/usr/bin/env python3
"""make bench-exchange: exchange versus copy inside the kernel (Figure 3).

Boots the kernel with kbench=exchange RUNS times under plain TCG (the TSC is
real time) and RUNS times under -icount shift=0 (the TSC counts guest
instructions); each boot reports per-size medians over 51 repetitions; this
takes the median over boots, writes OUTDIR/exchange.json and OUTDIR/exchange.png
(run it with a Python that has Debian's python3-matplotlib).
Usage: exchange.py KERNEL OUTDIR RUNS
"""
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from env import env  # noqa: E402

LINE = re.compile(r"BENCH exchange bytes=(\d+) pages=(\d+) copy_cycles=(\d+) "
                  r"copy_hot_cycles=(\d+) exchange_cycles=(\d+)")
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def boot(kernel, icount):
    cmd = "kbench=exchange run=hello" + (" icount=1" if icount else "")
    extra = ["-icount", "shift=0"] if icount else []
    out = subprocess.run([os.path.join(ROOT, "tools/qemu-run.sh"), kernel, cmd, "300"] + extra,
                         capture_output=True, text=True, errors="replace", check=False)
    if out.returncode != 0:
        sys.exit(f"bench-exchange: boot failed ({out.returncode}):\n{out.stdout[-2000:]}")
    rows = {}
    for m in LINE.finditer(out.stdout):
        b, _, copy, hot, xchg = map(int, m.groups())
        rows[b] = (copy, hot, xchg)
    return rows


def collect(kernel, runs, icount):
    per_size = {}
    for i in range(runs):
        print(f"bench-exchange: {'icount' if icount else 'real-time'} boot {i + 1}/{runs}",
              flush=True)
        for b, vals in boot(kernel, icount).items():
            per_size.setdefault(b, []).append(vals)
    return {b: tuple(statistics.median(v[k] for v in vs) for k in range(3))
            for b, vs in per_size.items()}


def main():
    kernel, outdir, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    real = collect(kernel, runs, False)
    insn = collect(kernel, runs, True)
    rows = []
    for b in sorted(real):
        c, h, x = real[b]
        ci, _, xi = insn[b]
        rows.append({"bytes": b, "copy_cycles": c, "exchange_cycles": x, "copy_hot_cycles": h,
                     "copy_insns": ci, "exchange_insns": xi,
                     "speedup_cycles": round(c / x, 2), "speedup_insns": round(ci / xi, 2)})
    res = {"bench": "exchange", "env": env("tcg", "real+icount", runs), "rows": rows}
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "exchange.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"{'bytes':>7} {'copy cyc':>9} {'xchg cyc':>9} {'x':>6} {'copy ins':>9} "
          f"{'xchg ins':>9} {'x':>6}")
    for r in rows:
        print(f"{r['bytes']:>7} {r['copy_cycles']:>9} {r['exchange_cycles']:>9} "
              f"{r['speedup_cycles']:>6} {r['copy_insns']:>9} {r['exchange_insns']:>9} "
              f"{r['speedup_insns']:>6}")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "plot.py"),
                    "exchange", os.path.join(outdir, "exchange.json"),
                    os.path.join(outdir, "exchange.png")], check=True)


if __name__ == "__main__":
    main()
