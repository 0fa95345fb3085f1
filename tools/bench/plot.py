#!/usr/bin/env python3
"""Plots of the benchmark JSON files (BENCH.md), mirroring the paper's figures.
Usage: plot.py KIND JSON... OUT.png   (KIND: exchange)
"""
import json
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_exchange(res, out):
    rows = res["rows"]
    x = [r["bytes"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    views = [("copy_cycles", "exchange_cycles", "TSC cycles (real time, TCG)"),
             ("copy_insns", "exchange_insns", "guest instructions (-icount shift=0)")]
    for ax, (c, e, label) in zip(axes, views):
        ax.plot(x, [r[c] for r in rows], "o-", label="copy (cold source)")
        if c == "copy_cycles":
            ax.plot(x, [r["copy_hot_cycles"] for r in rows], "^:", label="copy (hot source)")
        ax.plot(x, [r[e] for r in rows], "s-", label="exchange_pmem")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("data size S (bytes)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    env = res["env"]
    fig.suptitle(f"Exchange vs copy in the kernel (cf. Tender Fig. 3) - QEMU {env['qemu']} "
                 f"{env['accel']}, {env['runs']} boots, host {env['cpu']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    kind, inputs, out = sys.argv[1], sys.argv[2:-1], sys.argv[-1]
    data = [json.load(open(p)) for p in inputs]
    if kind == "exchange":
        plot_exchange(data[0], out)
    else:
        sys.exit(f"plot.py: unknown kind {kind}")


if __name__ == "__main__":
    main()
