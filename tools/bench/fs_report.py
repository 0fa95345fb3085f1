#!/usr/bin/env python3
"""make bench-fs's last step: kernel-fs.json, linux-fs.json and the delay
runs' linux-fs-delay*.json (when the Linux part ran) merged into fs.json,
fs.png (Mbit/s against I/O length per pattern: this kernel, each Linux NFS
configuration, SRFS's and NFS's appendix numbers marked as the paper's) and
REPORT.md's file-service section with issue 15's targets met or missed.

Usage: fs_report.py OUTDIR
"""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import sections  # noqa: E402

BEGIN, END = "<!-- fs: begin -->", "<!-- fs: end -->"
PATTERNS = ("create_write", "overwrite", "read_after_mount", "read_after_write")
MIB = 1 << 20
# SRFS on Ether (JAXA-RR-05-004), appendix A (direct connection, 3.3 ms round
# trip, GbE): Mbit/s per I/O length in MB, the mean of 3 runs.
PAPER_SRFS = {
    "create_write": {1: 57.3, 2: 152.5, 4: 195.7, 8: 216.3, 16: 217.4, 32: 222.2},
    "overwrite": {1: 81.9, 2: 158.5, 4: 203.5, 8: 225.5, 16: 226.5, 32: 227.9},
    "read_after_mount": {1: 102.5, 2: 162.7, 4: 220.6, 8: 267.6, 16: 276.2, 32: 278.3},
    "read_after_write": {1: 101.4, 2: 164.3, 4: 219.6, 8: 266.3, 16: 273.3, 32: 278.6},
}
PAPER_NFS = {  # NFS with noac, the same network (A-2 .. A-5)
    "create_write": {1: 13.1, 4: 13.3, 16: 13.2},
    "overwrite": {1: 13.5, 4: 13.4, 16: 13.2},
    "read_after_mount": {1: 7.3, 4: 7.2, 16: 7.2},
    "read_after_write": {1: 17.5, 4: 17.2, 16: 17.2},
}
# The same appendix's small I/O lengths (A-2, A-4, A-6, A-8; Mbit/s, bytes as
# keys), where SRFS lost to NFS with noac: write = create write, read = read
# after mount.
PAPER_SMALL = {
    "srfs_write": {8 << 10: 7.99, 64 << 10: 3.63, 1 << 20: 57.3, 4 << 20: 195.7, 16 << 20: 217.4},
    "nfs_write": {8 << 10: 14.4, 64 << 10: 13.8, 1 << 20: 13.1, 4 << 20: 13.3, 16 << 20: 13.2},
    "srfs_read": {8 << 10: 0.83, 64 << 10: 15.6, 1 << 20: 102.5, 4 << 20: 220.6, 16 << 20: 276.2},
    "nfs_read": {8 << 10: 6.87, 64 << 10: 7.26, 1 << 20: 7.26, 4 << 20: 7.22, 16 << 20: 7.20},
}
# The same report's Table 2 (UDP over the direct GbE path, a traffic
# generator, per frame size in bytes): bandwidth use (%) and UDP Mbit/s,
# each direction (NIED -> JAXA, JAXA -> NIED).
PAPER_TABLE2 = {64: (92.3, 703.3, 92.5, 705.0), 128: (97.3, 841.6, 95.1, 822.6), 256: (98.4, 913.0, 95.9, 890.0),
                512: (98.8, 951.4, 96.4, 927.9), 1024: (98.1, 963.0, 96.7, 949.2),
                1280: (98.6, 971.6, 96.9, 954.7), 1518: (98.3, 971.0, 97.2, 959.8)}
# RI2N/DRV (NFSv3 over TCP, 2 x GbE, rwsize 32 KB, bonnie++ sequential
# write of 1.4 GB; Tables 2 and 4): MB/s.
RI2N = {"gbe_1link": 109.8, "ri2n_2links": 157.2, "ri2n_cut": 109.0}


def load_all(out):
    """fs.json's document: the kernel's rows, then every Linux file's."""
    kdoc = sections.load(os.path.join(out, "kernel-fs.json"))
    if not kdoc:
        return None
    doc = dict(kdoc, rows=list(kdoc["rows"]), linux_env={})
    for p in [os.path.join(out, "linux-fs.json")] + sorted(glob.glob(os.path.join(out, "linux-fs-delay*.json"))):
        ld = sections.load(p)
        if ld:
            doc["rows"] += ld["rows"]
            doc["linux_env"][os.path.basename(p)] = ld.get("env")
    for who in ("kernel", "linux"):  # the CPU work (fs_cpu.py): rows of mode cpu and unpaced
        cd = sections.load(os.path.join(out, f"{who}-fs-cpu.json"))
        if cd:
            doc["rows"] += cd["rows"]
            doc.setdefault("cpu_env", {})[who] = dict(cd.get("env") or {}, idle=cd.get("idle_insns_per_s") or {})
    sw = sections.load(os.path.join(out, "kernel-fs-sweep.json"))
    if sw:
        doc["sweep"] = {"env": sw.get("env"), "cells": sw.get("cells"), "rows": sw["rows"]}
    with open(os.path.join(out, "fs.json"), "w") as f:
        json.dump(doc, f, indent=1)
    return doc


def sweep_section(doc):
    """The settings against the defaults: Mbit/s per pattern and the 4 KiB
    round trip per setting, and which setting did best."""
    sw = doc.get("sweep")
    if not sw or not sw.get("rows"):
        return []
    e, rows = sw.get("env") or {}, sw["rows"]
    names = list(dict.fromkeys(r["settings"] for r in rows))
    rates = list(dict.fromkeys(r.get("link_mbps", 0) for r in rows))
    out = [f"Settings (the defaults: small_max 8896 B, chunk 256 KiB, 2 streams, window 2, batch 32) against "
           f"each change alone, {e.get('io_mib', '?')} MiB, {e.get('links', '?')} links, "
           f"{e.get('runs', '?')} run(s) each, medians (kernel-fs-sweep.json):", "",
           "| links at | settings | " + " | ".join(PATTERNS) + " | sum Mbit/s | 4 KiB read µs |",
           "|---|---|" + "---:|" * (len(PATTERNS) + 2)]
    best = []
    for rate in rates:
        sums = {}
        for n in names:
            got = {r["op"]: r for r in rows if r["settings"] == n and r.get("link_mbps", 0) == rate}
            if not got:
                continue
            m = [got.get(op, {}).get("mbps") for op in PATTERNS]
            sums[n] = sum(m) if all(x is not None for x in m) else None
            rtt = got.get("read_4k_rtt", {}).get("median_us")
            out.append(f"| {f'{rate} Mbit/s' if rate else 'unpaced'} | {n} | " + " | ".join(fmt(x) for x in m)
                       + f" | {fmt(sums[n])} | {fmt(rtt, 0)} |")
        ok = {n: v for n, v in sums.items() if v is not None}
        if ok and "default" in ok:
            b = max(ok, key=ok.get)
            best.append(f"{f'at {rate} Mbit/s' if rate else 'unpaced'}: {b} ({fmt(ok[b])} Mbit/s; the defaults "
                        f"{fmt(ok['default'])}, {ok['default'] / ok[b]:.2f}× the best)")
    if best:
        out += ["", "Best sum of the four patterns, " + "; ".join(best) + "."]
    out.append("")
    return out


def delay_of(r):
    return round(float(r.get("rtt_added_ms") or 0), 1)


def config(r):
    """A Linux row's mount configuration, as a label."""
    v = "v3" if r["system"] == "linux-nfs3" else "v4.2"
    rs = f"{r.get('rsize', 0) // 1024}K" if (r.get("rsize") or 0) < MIB else f"{r['rsize'] // MIB}M"
    return f"NFS{v} {rs}" + (" noac" if r.get("noac") else "")


def kern(rows, op, links, delay, nbytes=None):
    for r in rows:
        if r["system"] == "kernel" and r["op"] == op and r["links"] == links and delay_of(r) == delay \
                and (nbytes is None or r["io_bytes"] == nbytes):
            return r
    return None


def linux(rows, op, links, delay, nbytes, noac=None):
    """{config label: row} of the Linux rows of one cell."""
    return {config(r): r for r in rows if r["system"].startswith("linux-nfs") and r["op"] == op
            and r["links"] == links and delay_of(r) == delay and r["io_bytes"] == nbytes
            and (noac is None or bool(r.get("noac")) == noac)}


def fmt(v, nd=1):
    return "–" if v is None else f"{v:.{nd}f}"


def verdict(ok):
    return "met" if ok else "missed"


def plot(doc, path):
    plt = sections.pyplot("fs")
    if plt is None:
        return
    rows = [r for r in doc["rows"] if r.get("mode") not in ("cpu", "unpaced")]
    cols = sorted({(r["links"], delay_of(r)) for r in rows if r["system"] == "kernel" and r["op"] in PATTERNS},
                  key=lambda c: (c[1], c[0]))
    if not cols:
        return
    fig, axes = plt.subplots(len(PATTERNS), len(cols), figsize=(4.2 * len(cols), 3.2 * len(PATTERNS)),
                             squeeze=False)
    for i, op in enumerate(PATTERNS):
        for j, (links, delay) in enumerate(cols):
            ax = axes[i][j]
            pts = sorted((r["io_bytes"] / MIB, r["mbps"]) for r in rows if r["system"] == "kernel"
                         and r["op"] == op and r["links"] == links and delay_of(r) == delay)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", color="black", lw=2, label="this kernel")
            confs = sorted({config(r) for r in rows if r["system"].startswith("linux-nfs")})
            for c in confs:
                pts = sorted((r["io_bytes"] / MIB, r["mbps"]) for r in rows if r["system"].startswith("linux-nfs")
                             and config(r) == c and r["op"] == op and r["links"] == links
                             and delay_of(r) == delay and r.get("mbps") is not None)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], ":" if "noac" in c else "--", marker=".",
                            lw=1, label=f"Linux {c}")
            s = sorted(PAPER_SRFS[op].items())
            ax.plot([p[0] for p in s], [p[1] for p in s], "s", mfc="none", color="tab:red",
                    label="SRFS (paper, GbE, 3.3 ms)")
            n = sorted(PAPER_NFS[op].items())
            ax.plot([p[0] for p in n], [p[1] for p in n], "^", mfc="none", color="tab:gray",
                    label="NFS noac (paper, GbE, 3.3 ms)")
            cap = links * (rows_link_mbps(rows) or 0)
            if cap:
                ax.axhline(cap, color="black", ls="-.", lw=0.8, alpha=0.6, label="the links' pacing")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{op}, {links} link(s), +{delay} ms", fontsize=9)
            ax.set_xlabel("I/O length (MiB)", fontsize=8)
            ax.set_ylabel("Mbit/s", fontsize=8)
            ax.grid(alpha=0.3, which="both")
    axes[0][0].legend(fontsize=5, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def best_linux(rows, op, links, delay, nbytes, noac=None):
    c = {k: v for k, v in linux(rows, op, links, delay, nbytes, noac).items() if v.get("mbps") is not None}
    if not c:
        return None, None
    k = max(c, key=lambda x: c[x]["mbps"])
    return k, c[k]


def target_2x(rows, delay, out, want, noac=None, label=""):
    """The table and verdict lines of 'want x Linux NFS at >= 4 MiB'."""
    lines, verdicts = [], []
    links_all = sorted({r["links"] for r in rows if r["system"] == "kernel" and delay_of(r) == delay
                        and r["op"] in PATTERNS})
    sizes = sorted({r["io_bytes"] for r in rows if r["system"] == "kernel" and r["op"] in PATTERNS})
    lines += [f"| pattern | links | MiB | kernel Mbit/s | best Linux{label} | its Mbit/s | × | "
              "best over the wire | its Mbit/s | × |", "|---|---:|---:|---:|---|---:|---:|---|---:|---:|"]
    for op in PATTERNS:
        for links in links_all:
            worst, worst_wire, any_linux = None, None, False
            for nb in sizes:
                k = kern(rows, op, links, delay, nb)
                if not k:
                    continue
                bc, br = best_linux(rows, op, links, delay, nb, noac)
                cap = links * (rows_link_mbps(rows) or 100)
                wire = {c: r for c, r in linux(rows, op, links, delay, nb, noac).items()
                        if r.get("mbps") is not None and r["mbps"] <= cap}
                wc = max(wire, key=lambda x: wire[x]["mbps"]) if wire else None
                ratio = k["mbps"] / br["mbps"] if br else None
                wratio = k["mbps"] / wire[wc]["mbps"] if wc else None
                lines.append(f"| {op} | {links} | {nb // MIB} | {fmt(k['mbps'])} | {bc or '–'} | "
                             f"{fmt(br['mbps'] if br else None)} | {fmt(ratio, 2)} | {wc or '–'} | "
                             f"{fmt(wire[wc]['mbps'] if wc else None)} | {fmt(wratio, 2)} |")
                if nb >= 4 * MIB and ratio is not None:
                    any_linux = True
                    worst = ratio if worst is None else min(worst, ratio)
                    if wratio is not None:
                        worst_wire = wratio if worst_wire is None else min(worst_wire, wratio)
            if any_linux:
                verdicts.append(f"- {op}, {links} link(s){', +' + str(delay) + ' ms' if delay else ''}: "
                                f"{verdict(worst >= want)} (lowest {worst:.2f}× the best Linux{label} "
                                f"configuration at 4 MiB and above; " +
                                (f"{worst_wire:.2f}× the best over the wire)" if worst_wire is not None else
                                 "every Linux row faster than the links: its client cache)"))
    out += lines
    return verdicts


def rows_link_mbps(rows):
    for r in rows:
        if r["system"] == "kernel" and r.get("link_mbps"):
            return r["link_mbps"]
    return None


def per_config_table(rows, delay):
    """Per Linux configuration, per pattern and link count: the lowest
    kernel/Linux ratio at 4 MiB and above."""
    confs = sorted({config(r) for r in rows if r["system"].startswith("linux-nfs") and delay_of(r) == delay
                    and r["op"] in PATTERNS})
    links_all = sorted({r["links"] for r in rows if r["system"] == "kernel" and delay_of(r) == delay
                        and r["op"] in PATTERNS})
    cols = [(op, ln) for ln in links_all for op in PATTERNS]
    out = ["| Linux configuration | " + " | ".join(f"{op} {ln}L" for op, ln in cols) + " |",
           "|---|" + "---:|" * len(cols)]
    for c in confs:
        cells = []
        for op, ln in cols:
            worst = None
            for r in rows:
                if r["system"].startswith("linux-nfs") and config(r) == c and r["op"] == op and r["links"] == ln \
                        and delay_of(r) == delay and r["io_bytes"] >= 4 * MIB and r.get("mbps"):
                    k = kern(rows, op, ln, delay, r["io_bytes"])
                    if k:
                        x = k["mbps"] / r["mbps"]
                        worst = x if worst is None else min(worst, x)
            cells.append(fmt(worst, 2) + ("×" if worst is not None else ""))
        out.append(f"| {c} | " + " | ".join(cells) + " |")
    return out


def cpu_label(system):
    """linux-nfs42-tcp-nc4 -> NFSv4.2 nconnect=4."""
    m = re.match(r"linux-nfs(\d)(\d?)-tcp-nc(\d+)", system)
    if not m:
        return "this kernel" if system == "kernel" else system
    return f"NFSv{m.group(1)}{'.' + m.group(2) if m.group(2) else ''} nconnect={m.group(3)}"


def cpu_rows(rows, system=None, mode=None, op=None):
    return [r for r in rows if r.get("mode") in ("cpu", "unpaced") and (system is None or r["system"] == system)
            and (mode is None or r["mode"] == mode) and (op is None or r["op"] == op)]


def cpu_best(rows, mode, op, nb, key, low=True):
    """The Linux row of (mode, op, length) best in key (lowest when low)."""
    c = [r for r in cpu_rows(rows, mode=mode, op=op) if r["system"] != "kernel" and r["io_bytes"] == nb
         and r.get(key) is not None]
    return (min if low else max)(c, key=lambda r: r[key]) if c else None


def size_label(nb):
    return f"{nb // MIB} MiB" if nb >= MIB else f"{nb // 1024} KiB"


def cpu_why(rows, lens):
    """Why the per-byte targets read as they do: how much of each end's
    paced figure at 4 MiB and above is its idle background, and the ratios
    without it (each system's own background taken out)."""
    out, big = [], [nb for nb in lens if nb >= 4 * MIB]
    for op in ("cpu_write", "cpu_read"):
        for end in ("client", "server"):
            key, bkey = f"busy_insns_per_byte_{end}", f"background_insns_per_byte_{end}"
            parts, worst = [], None
            for nb in big:
                k = next((r for r in cpu_rows(rows, "kernel", "cpu", op) if r["io_bytes"] == nb), None)
                b = cpu_best(rows, "cpu", op, nb, key)
                if not k or not b or k.get(bkey) is None or b.get(bkey) is None:
                    continue
                net = (k[key] - k[bkey]) / max(b[key] - b[bkey], 1e-9)
                worst = net if worst is None else max(worst, net)
                parts.append(f"{size_label(nb)}: {k[bkey]:.2f} of {k[key]:.2f} (Linux {b[bkey]:.2f} of {b[key]:.2f})")
            if parts:
                out.append(f"- {op}, {end}: idle background in the paced figure, instructions per byte, "
                           + "; ".join(parts) + f"; without it the highest ratio is {worst:.2f}×.")
    if not out:
        return []
    return ["Where the paced figures' instructions go (each end's idle background, measured over 1 s of no I/O "
            "and scaled to the phase's length, against the same for Linux's best configuration):", ""] + out + [
            "", "What is left is per byte: the service sums every byte with its own Fletcher-64 checksum at both "
            "ends and copies every received byte once (from the channel's slots into the file or the caller's "
            "buffer), where Linux hands the checksum of what it sends, and the cutting of it into frames, to the "
            "emulated e1000 (checksum and TCP segmentation offload, on by default), which costs the guest no "
            "instructions.", ""]


def table2_section(out_dir):
    """SRFS's Table 2 (per frame size) beside this run's committed bursts
    (burst.json, make bench-burst: Mbit/s of 128-packet bursts and the
    fraction of the emulated link's ceiling at that size)."""
    bd = sections.load(os.path.join(out_dir, "burst.json"))
    if not bd:
        return []
    rows = {(r["system"], r["bytes"]): r for r in bd["rows"]}
    sizes = sorted({r["bytes"] for r in bd["rows"]} & {64, 128, 256, 512, 1024, 1500})
    if not sizes:
        return []
    out = ["SRFS's Table 2 (UDP from a traffic generator over its GbE path, per frame size: the link's use and "
           "Mbit/s, each direction) beside this project's bursts per payload size (`burst.json`, make bench-burst: "
           "128 packets and a 1-byte reply, real-time TCG, one e1000 dgram wire; the share is of the emulated "
           "link's own ceiling at that size, as the paper's is of the medium's). Only the shares compare: the "
           "paper's frame size counts the Ethernet header, ours is payload, and 1500 stands beside its 1518:", "",
           "| bytes | paper use % (each way) | paper UDP Mbit/s (each way) | ceiling Mbit/s here | "
           "this kernel Mbit/s (share) | linux-packet Mbit/s (share) |", "|---:|---:|---:|---:|---:|---:|"]
    def cell(r):
        return f"{r['mbps']:.1f} ({r['ceiling_frac'] * 100:.0f} %)" if r and r.get("ceiling_frac") is not None \
            else "–"
    for nb in sizes:
        p = PAPER_TABLE2[1518 if nb == 1500 else nb]
        k, lp = rows.get(("kernel", nb)), rows.get(("linux-packet", nb))
        out.append(f"| {nb} | {p[0]} / {p[2]} | {p[1]} / {p[3]} | "
                   f"{fmt((k or lp or {}).get('ceiling_mbps'))} | {cell(k)} | {cell(lp)} |")
    return out + [""]


def cpu_section(doc):
    """CPU work (fs_cpu.py): busy guest instructions per byte at both ends,
    the CPU-bound rate unpaced, Linux's client cache apart; issue 26's targets."""
    rows = doc["rows"]
    kc = cpu_rows(rows, "kernel")
    if not kc:
        return []
    ke = (doc.get("cpu_env") or {}).get("kernel") or {}
    le = (doc.get("cpu_env") or {}).get("linux") or {}
    lsys = sorted({r["system"] for r in cpu_rows(rows) if r["system"] != "kernel"})
    out = ["### CPU work: busy guest instructions per byte, both ends (`-icount shift=0`)", "",
           "Both VMs of every pair run under `-icount shift=0`, so a busy nanosecond of the guest clock is one "
           "guest instruction whatever the host's load. Busy = elapsed less halted over each phase at each end, "
           "kernel and programs together (this kernel: `sysinfo.idle_tsc`, the server's read through "
           "`FS_OP_STATS`'s `busy_tsc`, nodes on `poll=irq` so the idle CPU halts; Linux: CLOCK_MONOTONIC less "
           "cpu0's `idle_sleeptime` + `iowait_sleeptime` from /proc/timer_list, as the multi-link CPU work, the "
           "server's read by `fsbench busyd` over UDP), less the same over an empty window. One link, "
           f"{ke.get('phase_bytes', 0) // MIB} MiB a phase: for each I/O length, that many bytes in I/Os of the "
           "length at offset 0 of a file of the length (at least one I/O). cpu_write: this kernel one "
           "`fs_write` (until the server's reply), Linux `pwrite` + `fsync`; cpu_read: this kernel one "
           "`fs_read`, Linux `pread` on an `O_DIRECT` descriptor (every byte from the server); every byte read "
           "compared after the phase, outside the window. Linux: "
           f"{', '.join(cpu_label(x) for x in lsys) or 'no rows'} (TCP, rsize = wsize 1 MiB, nfsd with 8 "
           f"threads exporting a tmpfs). Medians over {ke.get('runs', '?')} run(s) for this kernel and "
           f"{le.get('runs', '?')} for Linux, the systems' boots interleaved (run 1 of each, then run 2, ...), "
           f"the same lengths, bytes and links.", ""]
    lens = sorted({r["io_bytes"] for r in kc})
    verdicts = ["Targets (issue 26):", ""]
    for mode in ("cpu", "unpaced"):
        mrows = cpu_rows(rows, "kernel", mode)
        if not mrows:
            continue
        if mode == "cpu":
            out += [f"Paced: every NIC at {ke.get('link_mbps')} Mbit/s (this kernel's pacer, Linux's tbf), the "
                    f"client offering **{ke.get('offered_mbps')} Mbit/s** (I/O i started at i × length × 8 / rate "
                    "on the guest clock), which neither system's CPU comes near (busy fractions below). At this "
                    "load a phase lasts as long for both, so each end's background work (timer ticks while "
                    "halted between I/Os) weighs alike. Instructions per byte, client + server:", ""]
        else:
            out += ["Unpaced: no pacing on the links, I/O back to back: the CPU (guest instructions), not the "
                    "emulator, is the limit. The CPU-bound rate is bytes over the busier end's busy instructions "
                    "at the `-icount` clock's one instruction per ns (as the multi-link CPU work); the guest-clock "
                    "Mbit/s beside it is what the run moved on the guest clock:", ""]
        idle = dict(((doc.get("cpu_env") or {}).get("kernel") or {}).get("idle", {}),
                    **(((doc.get("cpu_env") or {}).get("linux") or {}).get("idle", {})))
        bg = [f"{cpu_label(k.rsplit(' ', 1)[0])} {v['client'] / 1e6:.2f} / {v['server'] / 1e6:.2f}"
              for k, v in sorted(idle.items()) if k.endswith(" " + mode)]
        if bg:
            out += ["Idle background over 1 s of no I/O before the phases (million busy instructions per second, "
                    "client / server; timer ticks and the like, paid however few bytes move): " + "; ".join(bg)
                    + ".", ""]
        for op in ("cpu_write", "cpu_read"):
            head = "| length | this kernel (c + s) | " + "".join(f"{cpu_label(x)} | " for x in lsys)
            head += "client: kernel / best Linux | server: kernel / best Linux | "
            head += ("busy % c / s kernel, best Linux |" if mode == "cpu"
                     else "CPU-bound Mbit/s kernel / best Linux | × | guest-clock Mbit/s kernel / best Linux |")
            out += [f"{op} ({'paced' if mode == 'cpu' else 'unpaced'}), busy instructions per byte:", "", head,
                    "|---:|" + "---:|" * (len(lsys) + (4 if mode == "cpu" else 6))]
            worst = {"client": None, "server": None, "bound": None}
            for nb in lens:
                k = next((r for r in mrows if r["op"] == op and r["io_bytes"] == nb), None)
                if not k:
                    continue
                cells = [size_label(nb),
                         f"{k['busy_insns_per_byte_client']:.2f} + {k['busy_insns_per_byte_server']:.2f}"]
                for x in lsys:
                    lr = next((r for r in cpu_rows(rows, x, mode, op) if r["io_bytes"] == nb), None)
                    cells.append(f"{lr['busy_insns_per_byte_client']:.2f} + {lr['busy_insns_per_byte_server']:.2f}"
                                 if lr else "–")
                for end in ("client", "server"):
                    key = f"busy_insns_per_byte_{end}"
                    b = cpu_best(rows, mode, op, nb, key)
                    x = k[key] / b[key] if b and b[key] else None
                    cells.append(f"{x:.2f}× ({cpu_label(b['system'])})" if x is not None else "–")
                    if x is not None and nb >= 4 * MIB:
                        worst[end] = x if worst[end] is None else max(worst[end], x)
                if mode == "cpu":
                    b = cpu_best(rows, mode, op, nb, "busy_insns_per_byte")
                    cells.append(f"{k['busy_frac_client'] * 100:.1f} / {k['busy_frac_server'] * 100:.1f}, "
                                 + (f"{b['busy_frac_client'] * 100:.1f} / {b['busy_frac_server'] * 100:.1f}"
                                    if b else "–"))
                else:
                    b = cpu_best(rows, mode, op, nb, "cpu_bound_mbps", low=False)
                    x = k["cpu_bound_mbps"] / b["cpu_bound_mbps"] if b else None
                    cells += [f"{k['cpu_bound_mbps']:.0f} / " + (f"{b['cpu_bound_mbps']:.0f} ({cpu_label(b['system'])})"
                                                                 if b else "–"),
                              f"{x:.2f}×" if x is not None else "–",
                              f"{k['mbps']:.0f} / " + (f"{b['mbps']:.0f}" if b else "–")]
                    if x is not None and nb >= 4 * MIB:
                        worst["bound"] = x if worst["bound"] is None else min(worst["bound"], x)
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
            if mode == "cpu":
                for end in ("client", "server"):
                    w = worst[end]
                    verdicts.append(
                        f"- {op}, {end}: at most 0.25× NFS's best busy instructions per byte at 4 MiB and above: "
                        + (f"{verdict(w <= 0.25)} (highest {w:.2f}×)" if w is not None else "not measured"))
            else:
                w = worst["bound"]
                verdicts.append(f"- {op}, unpaced: CPU-bound rate at least 2× NFS's best at 4 MiB and above: "
                                + (f"{verdict(w >= 2)} (lowest {w:.2f}×)" if w is not None else "not measured"))
    cached = [r for r in cpu_rows(rows, op="cpu_read_cached") if r["system"] != "kernel"]
    if cached:
        out += ["Linux's reads from its client cache (`pread` on a buffered descriptor right after the writes: "
                "the page cache, not the wire; this kernel's service has no client cache, so it has no such row), "
                "client + server instructions per byte and guest-clock Mbit/s:", "",
                "| mode | length | " + " | ".join(cpu_label(x) for x in lsys) + " |",
                "|---|---:|" + "---:|" * len(lsys)]
        for mode in ("cpu", "unpaced"):
            for nb in lens:
                cells = []
                for x in lsys:
                    r = next((r for r in cached if r["system"] == x and r["mode"] == mode and r["io_bytes"] == nb),
                             None)
                    cells.append(f"{r['busy_insns_per_byte_client']:.2f} + {r['busy_insns_per_byte_server']:.2f}, "
                                 f"{r['mbps']:.0f} Mbit/s" if r else "–")
                if any(c != "–" for c in cells):
                    out.append(f"| {mode} | {size_label(nb)} | " + " | ".join(cells) + " |")
        out.append("")
    unp = {(r["op"], r["io_bytes"]): r for r in cpu_rows(rows, "kernel", "unpaced")}
    if unp:
        out += ["Small I/O, where SRFS lost to NFS in the paper (appendix A: GbE, 3.3 ms round trip, NFS with "
                "noac; below 128 KB SRFS's create write and read after mount were slower than NFS's), the "
                "paper's Mbit/s beside this run's unpaced ones (guest clock, "
                "one unpaced emulated link under `-icount`; not the same network, so only the shape compares) "
                "and the CPU-bound rates:", "",
                "| length | paper write SRFS / NFS | write here kernel / best NFS (guest clock) | "
                "write CPU-bound kernel / best NFS | paper read SRFS / NFS | read here kernel / best NFS "
                "(guest clock) | read CPU-bound kernel / best NFS |", "|---:|---:|---:|---:|---:|---:|---:|"]
        for nb in lens:
            cells = [size_label(nb)]
            for op, pw in (("cpu_write", "write"), ("cpu_read", "read")):
                k = unp.get((op, nb))
                bm = cpu_best(rows, "unpaced", op, nb, "mbps", low=False)
                bb = cpu_best(rows, "unpaced", op, nb, "cpu_bound_mbps", low=False)
                ps, pn = PAPER_SMALL[f"srfs_{pw}"].get(nb), PAPER_SMALL[f"nfs_{pw}"].get(nb)
                cells += [f"{fmt(ps)} / {fmt(pn)}",
                          f"{fmt(k['mbps'] if k else None, 0)} / {fmt(bm['mbps'] if bm else None, 0)}",
                          f"{fmt(k['cpu_bound_mbps'] if k else None, 0)} / "
                          f"{fmt(bb['cpu_bound_mbps'] if bb else None, 0)}"]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    out += cpu_why(rows, lens)
    unver = [r for r in cpu_rows(rows) if not r.get("verified")]
    out += verdicts + ["", "Every byte read compared equal: "
                       + ("yes." if not unver else f"no, in {len(unver)} rows."), ""]
    return out


def section(doc):
    rows = [r for r in doc["rows"] if r.get("mode") not in ("cpu", "unpaced")]
    e = doc.get("env", {})
    delays = sorted({delay_of(r) for r in rows if r["system"] == "kernel"})
    out = [BEGIN, "## File service against Linux NFS (make bench-fs)", "",
           f"Two nodes of this kernel (user/fsd.c serving, user/fsbench.c timing) on the cluster runner's dgram "
           f"wires, and two Linux guests (Debian's nfsd exporting a tmpfs, mount.nfs), every NIC paced at "
           f"{e.get('link_mbps', 100)} Mbit/s (this kernel's pacer; tbf in Linux), 1 link or 2 (Linux: a "
           f"balance-rr bond); QEMU {e.get('qemu', '?')}, {e.get('accel', 'tcg')}, e1000. SRFS's four patterns "
           "per I/O length: create_write and overwrite are one write call of the length (this kernel: until "
           "the server's reply, the bytes in its memory; Linux: write() + fsync() to the tmpfs export), "
           "read_after_write one read of the file just written, read_after_mount one read after the client "
           "reconnected (Linux: umount + mount); every byte read compared. "
           f"Medians over {e.get('runs', '?')} run(s) for this kernel, "
           f"{', '.join(str((le or {}).get('runs', '?')) for le in doc.get('linux_env', {}).values()) or 'no'} "
           "for Linux. The delay cells add the round trip with a Linux guest bridging the two sides with netem "
           "(the same guest for both systems). SRFS's and NFS's numbers are the report's (GbE, 3.3 ms round "
           "trip, Solaris), marked as the paper's in the plot.", "",
           f"Host: {e.get('host_setting', 'not recorded')} (this kernel's part); "
           + "; ".join(f"{(le or {}).get('host_setting', 'not recorded')} ({n})"
                       for n, le in (doc.get("linux_env") or {}).items()) + ".", ""]
    if not doc.get("linux_env"):
        out += ["No Linux rows: tools/linux-baseline/bench-fs.sh did not run; the targets below that need "
                "them are not evaluated.", ""]
    verdicts = ["Targets (issue 15):", ""]
    for d in delays:
        out += [f"### +{d} ms round trip" if d else "### Directly joined (no added delay)", ""]
        v = target_2x(rows, d, out, 2.0 if not d else 10.0, noac=None if not d else True,
                      label="" if not d else " noac")
        out += [""]
        if any(r["system"].startswith("linux-nfs") and delay_of(r) == d for r in rows):
            out += ["Lowest ratio, this kernel over each Linux configuration, at 4 MiB and above:", ""]
            out += per_config_table(rows, d) + [""]
        if not d:
            verdicts.append("At every I/O length of 4 MiB and above, at least 2× Linux NFS (the best "
                            "configuration per pattern, length and link count):")
        else:
            verdicts.append(f"With {d} ms added, at least 10× NFS with noac (the best noac configuration):")
        verdicts += v or ["- no Linux rows to compare with"]
        verdicts.append("")
    # create_write_fsync (disk), apart
    fs_rows = [r for r in rows if r["system"] == "kernel" and r["op"] == "create_write_fsync"]
    if fs_rows:
        out += ["create_write_fsync (this kernel only, not compared: write + fsync to the server's IDE disk "
                "image, whose port I/O costs ~30 ms per 64 KiB under TCG):", "",
                "| links | +ms | MiB | Mbit/s |", "|---:|---:|---:|---:|"]
        out += [f"| {r['links']} | {delay_of(r)} | {r['io_bytes'] // MIB} | {fmt(r['mbps'])} |"
                for r in sorted(fs_rows, key=lambda r: (delay_of(r), r["links"], r["io_bytes"]))]
        out += [""]
    # the cut
    cut = [r for r in rows if r["op"] == "read_through_cut" and delay_of(r) == 0]
    kc = next((r for r in cut if r["system"] == "kernel"), None)
    one = kern(rows, "read_after_write", 1, 0.0, kc["io_bytes"]) if kc else None
    if not one and kc:
        cand = [r for r in rows if r["system"] == "kernel" and r["op"] == "read_after_write" and r["links"] == 1
                and delay_of(r) == 0]
        one = max(cand, key=lambda r: r["io_bytes"]) if cand else None
    out += ["Through a link cut (2 links, link 0 cut 1 s after the read began, restored at its end):", "",
            "| system | MiB | Mbit/s | lost B | corrupt B | cut inside the read |", "|---|---:|---:|---:|---:|---|"]
    for r in cut:
        name = "this kernel" if r["system"] == "kernel" else config(r)
        out.append(f"| {name} | {r['io_bytes'] // MIB} | {fmt(r.get('mbps'))} | {r.get('lost')} | "
                   f"{r.get('corrupt')} | {r.get('cut')} |")
    out += ["", f"RI2N/DRV (NFSv3 over 2 × GbE, the paper's): {RI2N['ri2n_2links']} MB/s on both links, "
            f"{RI2N['ri2n_cut']} MB/s through the cut, one GbE {RI2N['gbe_1link']} MB/s "
            f"({RI2N['ri2n_cut'] / RI2N['gbe_1link']:.2f}× one link).", ""]
    if kc and one:
        ok = kc.get("lost") == 0 and kc.get("corrupt") == 0 and kc["mbps"] >= 0.9 * one["mbps"]
        verdicts.append(f"- Through a link cut nothing lost and at least 0.9× one link's read: {verdict(ok)} "
                        f"(lost {kc.get('lost')} B, corrupt {kc.get('corrupt')} B, {kc['mbps']:.1f} Mbit/s = "
                        f"{kc['mbps'] / one['mbps']:.2f}× one link's read_after_write of "
                        f"{one['io_bytes'] // MIB} MiB, {one['mbps']:.1f} Mbit/s; the cut "
                        f"{'fell inside the read' if kc.get('cut') else 'came after the read had ended'})")
    else:
        verdicts.append("- Through a link cut: not measured (no 2-link kernel cell or no 1-link read)")
    # 4 KiB round trips
    out += ["4 KiB read round trip (median / p99 µs):", "", "| system | links | +ms | median | p99 |",
            "|---|---:|---:|---:|---:|"]
    rtts = [r for r in rows if r["op"] == "read_4k_rtt"]
    for r in sorted(rtts, key=lambda r: (delay_of(r), r["links"], r["system"] != "kernel", config(r)
                                         if r["system"] != "kernel" else "")):
        name = "this kernel" if r["system"] == "kernel" else config(r)
        out.append(f"| {name} | {r['links']} | {delay_of(r)} | {fmt(r.get('median_us'))} | {fmt(r.get('p99_us'))} |")
    out.append("")
    for d in delays:
        for links in sorted({r["links"] for r in rtts if r["system"] == "kernel" and delay_of(r) == d}):
            k = next(r for r in rtts if r["system"] == "kernel" and r["links"] == links and delay_of(r) == d)
            lin = [r for r in rtts if r["system"] != "kernel" and r["links"] == links and delay_of(r) == d
                   and r.get("median_us")]
            if not lin:
                continue
            b = min(lin, key=lambda r: r["median_us"])
            verdicts.append(f"- 4 KiB read round trip at most 0.5× NFS's, {links} link(s), +{d} ms: "
                            f"{verdict(k['median_us'] <= 0.5 * b['median_us'])} ({k['median_us']:.0f} µs against "
                            f"{b['median_us']:.0f} µs, {config(b)}, the fastest: "
                            f"{k['median_us'] / b['median_us']:.2f}×)")
    cells = doc.get("cells", [])
    out += verdicts + [""]
    for d in [x for x in delays if x]:
        noac = [r["mbps"] for r in rows if r["system"].startswith("linux-nfs") and r.get("noac")
                and delay_of(r) == d and r["op"] in PATTERNS and r["io_bytes"] >= 4 * MIB and r.get("mbps")
                and r["mbps"] <= r["links"] * (rows_link_mbps(rows) or 1e9)]
        if noac:
            out += [f"- With {d} ms added, Linux NFS with noac moved {min(noac):.0f}-{max(noac):.0f} Mbit/s over "
                    "the wire at 4 MiB and above (the paper's NFS: 7-17 Mbit/s, Solaris 8 with a 128 KB TCP "
                    f"window on GbE): 10× that is {10 * min(noac):.0f} Mbit/s or more, beyond what the paced "
                    "links carry, so this target cannot be met on these links whatever the service does.", ""]
    out += ["Notes:", "",
            "- The links are paced at the rate above, so one link carries at most that many Mbit/s: "
            "2× a Linux configuration that already fills most of one link cannot be reached over one link. "
            "Linux rows faster than the links (read_after_write at hundreds of Mbit/s) were served from the "
            "client's page cache, which noac does not turn off (it drops attribute caching only); this "
            "service has no client cache by design (coherency by construction), so every read crosses the "
            "wire. The 'over the wire' columns leave those rows out.",
            "- This kernel's times per cell: " + ", ".join(
                f"{c.get('links')} link(s) +{c.get('rtt_added_ms')} ms {c.get('seconds', 'failed')} s"
                for c in cells) + ".", "",
            ""] + cpu_section(doc) + table2_section(doc.get("out_dir", "")) + sweep_section(doc) + [
            "![Mbit/s against I/O length per pattern](fs.png)", "", END, ""]
    return "\n".join(out)


def main():
    out = sys.argv[1]
    doc = load_all(out)
    if not doc:
        sys.exit("fs: no kernel-fs.json")
    plot(doc, os.path.join(out, "fs.png"))
    sections.write_section(out, section(dict(doc, out_dir=out)), BEGIN, END)
    print(f"fs: wrote {os.path.join(out, 'fs.json')}, fs.png, REPORT.md section")


if __name__ == "__main__":
    main()
