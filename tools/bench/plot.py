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


STYLE = {"kernel": ("o-", "this kernel"), "linux-packet": ("s--", "Linux AF_PACKET"),
         "linux-mmap": ("^:", "Linux PACKET_MMAP")}


def series(rows, system, key):
    pts = sorted((r["bytes"], r[key]) for r in rows if r["system"] == system and r.get(key) is not None)
    return [p[0] for p in pts], [p[1] for p in pts]


def axes_common(ax, ylabel, logy=False):
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("packet size S (bytes)")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def title(fig, res, what):
    env = res["env"]
    fig.suptitle(f"{what}\nQEMU {env['qemu']} {env['accel']}, {env.get('nic', 'e1000')}, dgram/unix, host {env['cpu']}",
                 fontsize=9)


def plot_net(d):
    br = json.load(open(f"{d}/burst.json"))
    rt = json.load(open(f"{d}/rtt.json"))
    fig, ax = plt.subplots(figsize=(6.5, 4.2))  # Figure 5
    for sysname, (st, label) in STYLE.items():
        ax.plot(*series(br["rows"], sysname, "mbps"), st, label=label)
    try:
        ceil = {r["bytes"]: r["ceiling_mbps"] for r in json.load(open(f"{d}/ceiling.json"))["rows"]}
        ax.plot(sorted(ceil), [ceil[b] for b in sorted(ceil)], "k-.", label="link ceiling (same run)")
    except OSError:
        pass  # no ceiling measured in this run
    axes_common(ax, "throughput from T0 (Mbit/s)", logy=True)
    title(fig, br, "Burst throughput, 128 packets + 1-byte reply (cf. Fig. 5)")
    fig.tight_layout()
    fig.savefig(f"{d}/burst.png", dpi=110)
    fig, axs = plt.subplots(1, 3, figsize=(15, 4.2))  # Figure 6
    for sysname, (st, label) in STYLE.items():
        axs[0].plot(*series(br["rows"], sysname, "t1_insns"), st, label=label)
        axs[1].plot(*series(br["rows"], sysname, "t1_us"), st, label=label)
        axs[2].plot(*series(br["rows"], sysname, "t2_us"), st, label=label)
    axes_common(axs[0], "T1: sender in the send call (guest instructions)", logy=True)
    axes_common(axs[1], "T1 (µs, real time)", logy=True)
    axes_common(axs[2], "T2 = T0 - T1 (µs, real time)", logy=True)
    title(fig, br, "Sender CPU time T1 and the rest T2 (cf. Fig. 6)")
    fig.tight_layout()
    fig.savefig(f"{d}/t1t2.png", dpi=110)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))  # Figure 7
    for sysname, (st, label) in STYLE.items():
        ax.plot(*series(rt["rows"], sysname, "median_us"), st, label=label)
    axes_common(ax, "round trip, median (µs)")
    ax.set_ylim(bottom=0)
    title(fig, rt, "Round trip time, one packet each way (cf. Fig. 7)")
    fig.tight_layout()
    fig.savefig(f"{d}/rtt.png", dpi=110)


def main():
    kind = sys.argv[1]
    if kind == "net":
        plot_net(sys.argv[2])
        return
    inputs, out = sys.argv[2:-1], sys.argv[-1]
    data = [json.load(open(p)) for p in inputs]
    if kind == "exchange":
        plot_exchange(data[0], out)
    else:
        sys.exit(f"plot.py: unknown kind {kind}")


if __name__ == "__main__":
    main()
