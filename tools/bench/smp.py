#!/usr/bin/env python3
"""make bench-smp (kernel side): Figure 3 extended to many CPUs.

Boots the kernel at -smp 2 with run=smpbench RUNS times under plain TCG (the
TSC is real time) and RUNS times under -icount shift=0 (the TSC counts guest
instructions, the critical path's: the other CPU's answer to the IPI runs
while this one waits). Per page count: a local exchange, an exchange into a
space live on the other CPU (one IPI), the same one page per call (one IPI
per page: unbatched), and a cold copy; each boot reports medians over the
program's repetitions, this takes the median over boots. Writes
OUTDIR/kernel-smp.json and, with the Linux side when given, OUTDIR/smp.json,
OUTDIR/smp.png.
Usage: smp.py KERNEL OUTDIR RUNS [LINUX_SMP_JSON]
"""
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from env import env  # noqa: E402

LINE = re.compile(r"SMPX pages=(\d+) local=(\d+) remote=(\d+) per_page=(\d+) copy=(\d+) "
                  r"ipis_remote=(\d+) ipis_per_page=(\d+) remote_wait=(\d+) "
                  r"remote_answer=(\d+) per_page_wait=(\d+) per_page_answer=(\d+)")
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
COLS = ("local", "remote", "per_page", "copy", "ipis_remote", "ipis_per_page", "remote_wait",
        "remote_answer", "per_page_wait", "per_page_answer")


def boot(kernel, icount, cpus):
    # Under -icount the emulated CPUs take turns and every wait for the other
    # one's answer lasts its turn: fewer repetitions (instructions vary little).
    cmd = "run=smpbench " + ("reps=7 icount=1" if icount else "reps=31")
    extra = ["-icount", "shift=0"] if icount else []
    out = subprocess.run([os.path.join(ROOT, "tools/qemu-run.sh"), kernel, cmd, "600"] + extra,
                         capture_output=True, text=True, errors="replace", check=False,
                         env=dict(os.environ, QEMU_SMP=str(cpus)))
    if out.returncode != 0:
        sys.exit(f"bench-smp: boot failed ({out.returncode}):\n{out.stdout[-2000:]}")
    return {int(m.group(1)): dict(zip(COLS, map(int, m.groups()[1:])))
            for m in LINE.finditer(out.stdout)}


def collect(kernel, runs, icount, cpus=2):
    per = {}
    for i in range(runs):
        print(f"bench-smp: kernel {'icount' if icount else 'real-time'} boot {i + 1}/{runs}",
              flush=True)
        for n, vals in boot(kernel, icount, cpus).items():
            per.setdefault(n, []).append(vals)
    return {n: {k: statistics.median(v[k] for v in vs) for k in COLS} for n, vs in per.items()}


def main():
    kernel, outdir, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    real = collect(kernel, runs, False)
    insn = collect(kernel, runs, True)
    rows = []
    for n in sorted(real):
        r, i = real[n], insn[n]
        # The critical path in instructions: the call without its wait for
        # the other CPU's turn, plus that CPU's answer.
        rpath = i["remote"] - i["remote_wait"] + i["remote_answer"]
        ppath = i["per_page"] - i["per_page_wait"] + i["per_page_answer"]
        rows.append({
            "pages": n, "bytes": n * 4096,
            "local_cycles": r["local"], "remote_cycles": r["remote"],
            "per_page_cycles": r["per_page"], "copy_cycles": r["copy"],
            "remote_wait_cycles": r["remote_wait"],
            "local_insns": i["local"], "remote_insns": rpath,
            "per_page_insns": ppath, "copy_insns": i["copy"],
            "remote_answer_insns": i["remote_answer"],
            "remote_insns_with_wait": i["remote"],
            "ipis_remote": i["ipis_remote"], "ipis_per_page": i["ipis_per_page"],
            "remote_over_local_insns": round(rpath / i["local"], 2),
            "copy_over_remote_insns": round(i["copy"] / rpath, 2),
            "copy_over_remote_cycles": round(r["copy"] / r["remote"], 2),
        })
    res = {"bench": "smp-exchange", "system": "kernel",
           "env": dict(env("tcg", "real+icount", runs), smp=2), "rows": rows}
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "kernel-smp.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"{'pages':>5} {'local ins':>10} {'remote ins':>10} {'per-page ins':>12} "
          f"{'copy ins':>10} {'rem/loc':>7} {'copy/rem':>8} {'copy/rem cyc':>12}")
    for r in rows:
        print(f"{r['pages']:>5} {r['local_insns']:>10} {r['remote_insns']:>10} "
              f"{r['per_page_insns']:>12} {r['copy_insns']:>10} "
              f"{r['remote_over_local_insns']:>7} {r['copy_over_remote_insns']:>8} "
              f"{r['copy_over_remote_cycles']:>12}")


if __name__ == "__main__":
    main()
