#!/usr/bin/env python3
"""make bench-multilink, last step: merges this kernel's rows
(kernel-multilink.json) and the Linux guest's (linux-multilink.json, when
its part ran) into multilink.json, plots Mbit/s against links for every
system and size (multilink.png), and writes the multi-link section of
REPORT.md (between its markers; added at the end if absent), every number
from this run and the targets read against it. kernel-multilink-cpu.json
and linux-multilink-cpu.json (the CPU-work rows, modes cpu and unpaced),
when present, join multilink.json and get their own subsection.

Usage: multilink_report.py OUTDIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import sections  # noqa: E402

BEGIN, END = "<!-- multilink: begin -->", "<!-- multilink: end -->"
# The papers' numbers (MB/s), for the report's side-by-side table.
HXB_TABLE4 = {2: 246, 3: 368, 4: 491, 6: 737, 8: 979}  # PM/Ethernet-HXB, Gigabit Ethernet x N
RI2N_TABLE3 = {"GbE (1 link)": 112, "LCB (2 links)": 222, "RI2N/DRV (2 links)": 222}  # TCP, MB/s


def by(rows, system, mode="paced"):
    return {(r["links"], r["bytes"]): r for r in rows
            if r["system"] == system and r.get("mode", "paced") == mode}


def paced(rows):
    return [r for r in rows if r.get("mode", "paced") == "paced"]


def linux_best(rows, mode, n, size, key, low):
    """(value, system) of the Linux row at (n, size) best in `key` (lowest when
    low), or None."""
    cands = [(r[key], r["system"]) for r in rows if r.get("mode") == mode and r["system"] != "kernel"
             and r["links"] == n and r["bytes"] == size and r.get(key) is not None]
    return (min if low else max)(cands) if cands else None


def against_best(rows, r, best, mode, key):
    """A CPU-work row's last cells: the kernel's `key` over Linux's best
    (value, system), then delivered Mbit/s and receiver busy fraction, the
    kernel's beside that best system's."""
    bo = by(rows, best[1], mode)[(r["links"], r["bytes"])] if best else None
    return [f"{r[key] / best[0]:.2f}x ({best[1]})" if best else "",
            f"{r['mbps']:g} / {bo['mbps']:g}" if bo else f"{r['mbps']:g} / ",
            f"{r['busy_frac_rx'] * 100:.1f} % / {bo['busy_frac_rx'] * 100:.1f} %" if bo
            else f"{r['busy_frac_rx'] * 100:.1f} % / "]


def cpu_section(doc, rows):
    """CPU work under -icount: the figure that can tell the systems apart."""
    k_cpu, k_unp = by(rows, "kernel", "cpu"), by(rows, "kernel", "unpaced")
    if not k_cpu and not k_unp:
        return []
    lsys = sorted({r["system"] for r in rows if r.get("mode") in ("cpu", "unpaced") and r["system"] != "kernel"})
    le = doc.get("cpu_linux_env") or {}
    # How the kernel's -icount pairs waited mid-batch (multilink.py's MULTILINK_POLL).
    irq = "poll=irq" in str(doc.get("cpu_clock", ""))
    wait = ("`poll=irq` so that waiting for the rest of a batch halts until the NIC's interrupt"
            if irq else "`poll=timer` so that waiting for a batch halts on a 20 µs tick")
    out = ["", "### CPU work: busy guest instructions per delivered packet (`-icount shift=0`)", "",
           "Both VMs of every pair run under `-icount shift=0`, so a busy nanosecond of the guest clock is one "
           "guest instruction, whatever else loads the host. Busy = elapsed minus halted (this kernel: "
           f"`sysinfo.idle_tsc`, {wait}; Linux: "
           "CLOCK_MONOTONIC less cpu0's `idle_sleeptime` + `iowait_sleeptime` from /proc/timer_list, less "
           "what an empty pair of those reads costs), kernel and program together, at both ends: rx is the "
           "receiver (server), tx the sender (client), the total their medians added. A packet is one "
           "`bytes`-sized piece of payload (Linux: one write of the stream, which TCP cuts into 9000-byte "
           "segments). Linux as its users tune it: balance-rr with `net.ipv4.tcp_reordering` raised"
           + (f" ({le.get('guest_nic', '').split('balance-rr: ')[-1].split(';')[0]})" if le else "")
           + ", MPTCP with the in-kernel path manager and one subflow per link. Same backend (one `dgram` wire "
           f"per link), same stream bytes, runs interleaved (kernel run, Linux boot round, ...): "
           f"{max([r['n'] for r in rows if r.get('mode') == 'cpu' and r['system'] == 'kernel'] or [0])} "
           f"kernel run(s) a point, Linux {le.get('runs', '?')} boot round(s) of {le.get('runs_per_boot', '?')} "
           "measured connection(s) a size.", ""]
    if k_cpu:
        out += [f"At a fixed offered load: every NIC of both systems paced to **{doc.get('cpu_mbps_per_link')} "
                "Mbit/s** (on the guest clock), far below what either CPU carries (busy fractions below). "
                + ("This kernel's receiver, once its rings are empty mid-batch, puts its NICs back on their "
                   "interrupts and halts until the next frame (`poll=irq`), as Linux's receiver sleeps until "
                   "an interrupt. "
                   if irq else
                   "This kernel's receiver waits for each batch with its NICs in polling mode, which under "
                   "`poll=timer` is a 20 µs tick: that cost accrues per unit of time, not per packet, so at a "
                   "low load it weighs on every packet (the unpaced rows below spread it over more packets per "
                   "second); Linux's receiver sleeps until an interrupt. ")
                + "Delivered rates are given beside: a system that "
                "delivers less than offered spreads its time-bound costs over fewer packets.", "",
                "| links | bytes | offered Mbit/s | kernel rx | kernel tx | kernel insns/pkt | kernel insns/byte | "
                + "".join(f"{s} insns/pkt (rx + tx) | " for s in lsys) + "kernel / Linux best | delivered Mbit/s "
                "kernel / Linux best | busy rx kernel / Linux best |",
                "|" + "---:|" * (10 + len(lsys))]
        for (n, size), r in sorted(k_cpu.items()):
            best = linux_best(rows, "cpu", n, size, "busy_insns_per_pkt", True)
            cells = [str(n), str(size), f"{r['offered_mbps']:g}", str(r["busy_insns_per_pkt_rx"]),
                     str(r["busy_insns_per_pkt_tx"]), str(r["busy_insns_per_pkt"]), f"{r['busy_insns_per_byte']:g}"]
            for s_ in lsys:
                o = by(rows, s_, "cpu").get((n, size))
                cells.append(f"{o['busy_insns_per_pkt']} ({o['busy_insns_per_pkt_rx']} + "
                             f"{o['busy_insns_per_pkt_tx']})" if o else "")
            cells += against_best(rows, r, best, "cpu", "busy_insns_per_pkt")
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    if k_unp:
        out += ["Unpaced: the same streams with no pacing. Under `-icount` the guest clock advances one ns per "
                "instruction while the CPU works and with real time while it halts (waiting for the other VM, "
                "which the host emulates at its own speed), so Mbit/s on the guest clock is still the "
                "emulator's figure whenever a receiver is mostly halted (busy fraction below). The CPU-bound "
                "rate is the measured instructions read as time: bytes per packet over the busier end's busy "
                "instructions per packet at the `-icount` clock's one instruction per ns, the rate that end's "
                "CPU alone would allow.", "",
                "| links | bytes | kernel insns/pkt (rx + tx) | kernel CPU-bound Mbit/s | "
                + "".join(f"{s} CPU-bound Mbit/s | " for s in lsys)
                + "kernel / Linux best | guest-clock Mbit/s kernel / Linux best | busy rx kernel / Linux best |",
                "|" + "---:|" * (7 + len(lsys))]
        for (n, size), r in sorted(k_unp.items()):
            best = linux_best(rows, "unpaced", n, size, "cpu_bound_mbps", False)
            cells = [str(n), str(size), f"{r['busy_insns_per_pkt_rx']} + {r['busy_insns_per_pkt_tx']}",
                     f"{r['cpu_bound_mbps']:g}"]
            for s_ in lsys:
                o = by(rows, s_, "unpaced").get((n, size))
                cells.append(f"{o['cpu_bound_mbps']:g}" if o else "")
            cells += against_best(rows, r, best, "unpaced", "cpu_bound_mbps")
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    n4 = 4  # the targets are stated at 4 links
    cpu4 = [(k_cpu[(n, sz)]["busy_insns_per_pkt"] / b[0], sz, b[1]) for (n, sz) in k_cpu if n == n4
            for b in [linux_best(rows, "cpu", n, sz, "busy_insns_per_pkt", True)] if b]
    if cpu4:
        w = max(cpu4)
        out.append(f"- Target: at {n4} links, this kernel's busy instructions per delivered packet (both ends) at "
                   f"most 0.25x Linux's best. Worst: {w[0]:.2f}x at {w[1]} bytes (against {w[2]}): "
                   f"{'met' if w[0] <= 0.25 else 'missed'}.")
    else:
        out.append(f"- Target: at {n4} links at most 0.25x Linux's best busy instructions per packet: no Linux "
                   "CPU-work rows in this run (not measured).")
    unp4 = [(k_unp[(n, sz)]["cpu_bound_mbps"] / b[0], sz, b[1]) for (n, sz) in k_unp if n == n4
            for b in [linux_best(rows, "unpaced", n, sz, "cpu_bound_mbps", False)] if b]
    if unp4:
        w = min(unp4)
        kr = k_unp[(n4, w[1])]
        lr = by(rows, w[2], "unpaced")[(n4, w[1])]
        gc = [(k_unp[(n, sz)]["mbps"] / b[0], sz, b[1]) for (n, sz) in k_unp if n == n4
              for b in [linux_best(rows, "unpaced", n, sz, "mbps", False)] if b]
        out.append(f"- Target: unpaced striping at {n4} links at least 1.5x Linux's best (CPU-bound Mbit/s). "
                   f"Worst: {w[0]:.2f}x at {w[1]} bytes (against {w[2]}): {'met' if w[0] >= 1.5 else 'missed'}."
                   + (f" On the guest clock: {min(gc)[0]:.2f}x at {min(gc)[1]} bytes (against {min(gc)[2]})."
                      if gc else "")
                   + (f" This kernel's receiver was busy {kr['busy_frac_rx'] * 100:.1f} % of its window there "
                      f"(Linux's {lr['busy_frac_rx'] * 100:.1f} %): its stream stayed bound by the emulator, not "
                      "its CPU"
                      + (", so the CPU-bound rate is what its instructions per packet would allow, not a rate "
                         "it reached." if irq else
                         ", so its count still carries the polling tick of a waiting receiver and the "
                         "CPU-bound rate understates what its CPU would carry.")
                      if kr["busy_frac_rx"] < 0.5 else ""))
    else:
        out.append(f"- Target: unpaced striping at {n4} links at least 1.5x Linux's best: no Linux unpaced rows "
                   "in this run (not measured).")
    return out


def plot(rows, path):
    plt = sections.pyplot("multilink")
    if plt is None:
        return False
    systems = sorted({r["system"] for r in rows}, key=lambda s: (s != "kernel", s))
    sizes = sorted({r["bytes"] for r in rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 3.6), sharey=True)
    axes = axes if len(sizes) > 1 else [axes]
    for ax, size in zip(axes, sizes):
        for s in systems:
            pts = sorted((r["links"], r["mbps"]) for r in rows if r["system"] == s and r["bytes"] == size
                         and r.get("mbps") is not None)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=s)
        k1 = [r for r in rows if r["system"] == "kernel" and r["bytes"] == size and r["links"] == 1]
        if k1:
            xs = sorted({r["links"] for r in rows})
            ax.plot(xs, [k1[0]["mbps"] * x for x in xs], ls=":", color="grey", label="n x kernel's 1 link")
        ax.set_title(f"{size} bytes")
        ax.set_xlabel("links")
        ax.set_xticks(sorted({r["links"] for r in rows}))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Mbit/s (median)")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def section(doc, rows):
    allrows, rows = rows, paced(rows)
    k = by(rows, "kernel")
    links = sorted({r["links"] for r in rows if r["system"] == "kernel"})
    sizes = sorted({r["bytes"] for r in rows if r["system"] == "kernel"})
    others = sorted({r["system"] for r in rows} - {"kernel"})
    e = doc["env"]
    out = [BEGIN, "", "## Many links: striped streams (HXB Table 4, RI2N Table 3)", ""]
    out.append(f"Generated by `make bench-multilink`. Two VMs joined by {min(links)}-{max(links)} links (one QEMU `dgram` wire per "
               f"NIC pair, e1000), every NIC paced to **{doc['link_mbps']} Mbit/s**"
               + (f", a fifth of what one unpaced link carried with 1500-byte packets in this run "
                  f"({doc['calibration_mbps']} Mbit/s), so four links stay inside what the emulator sustains"
                  if doc.get("calibration_mbps") else "")
               + f". This kernel: `stream` over one channel striped on all links (nic_mbps= paces the "
               f"sender's driver). Linux: the same NICs and rates (`tc tbf` per slave) under bonding "
               f"balance-rr. QEMU {e['qemu']}, {e['cpu']}, {e['runs']} boot pair(s) per point, medians of "
               f"the pooled samples."
               + (f" The rate was {doc['calibration_note']}." if doc.get("calibration_note") else "")
               + "".join(f" Rows at {', '.join(map(str, m['links']))} links: this kernel alone, a later run at the "
                         f"same rate a link (multilink.py --merge; QEMU {m['env']['qemu']}, {m['env']['cpu']}, "
                         f"{m['env']['runs']} boot pair(s) per point; host: {m['env'].get('host_setting', '-')})."
                         + (f" {m['note']}." if m.get("note") else "")
                         for m in doc.get("merged", [])))
    out += ["", "| links | bytes | " + " | ".join(["kernel Mbit/s", "of n x 1 link", "per link",
                                                    "out of order", "R1 (insns/pkt)"] +
                                                   [f"{s} Mbit/s" for s in others]) + " |",
            "|" + "---|" * (7 + len(others))]
    for n in links:
        for size in sizes:
            r = k.get((n, size))
            if not r:
                continue
            one = k.get((1, size))
            frac = f"{r['mbps'] / (n * one['mbps']) * 100:.1f} %" if one and one["mbps"] else ""
            per = ", ".join(f"{x:g}" for x in r["per_link_mbps"])
            cells = [str(n), str(size), f"{r['mbps']:g}", frac, per, f"{r['out_of_order']:g}",
                     str(r["r1_insns_per_pkt"] or "")]
            for s in others:
                o = by(rows, s).get((n, size))
                cells.append(f"{o['mbps']:g}" if o and o.get("mbps") is not None else "")
            out.append("| " + " | ".join(cells) + " |")
    out.append("")
    # Targets.
    scale = []
    for n in links:
        if n == 1:
            continue
        for size in sizes:
            r, one = k.get((n, size)), k.get((1, size))
            if r and one and one["mbps"]:
                scale.append((r["mbps"] / (n * one["mbps"]), n, size))
    if scale:
        worst = min(scale)
        out.append(f"- Target: over n links at least 0.95 x n x the one-link rate. Worst: "
                   f"{worst[0] * 100:.1f} % at {worst[1]} links, {worst[2]} bytes "
                   f"({'met' if worst[0] >= 0.95 else 'missed'}). HXB: 98.4 % at 2 links, 97.9 % at 6.")
    out.append("- Both systems are held to the same paced rate, so where neither is short of CPU both "
               "deliver about n x the rate and their ratio tends to 1; Linux TCP also packs its writes into "
               "9000-byte segments whatever the write size, where this kernel sends packets of the stated "
               "size, each with its 30-byte header and 24 bytes of wire overhead in the pacing.")
    rr = [s for s in others if "rr" in s and "tcp" in s]
    if rr and 4 in links:
        ratios = []
        for size in sizes:
            r, o = k.get((4, size)), by(rows, rr[0]).get((4, size))
            if r and o and o.get("mbps"):
                ratios.append((r["mbps"] / o["mbps"], size))
        if ratios:
            w = min(ratios)
            out.append(f"- Target: at 4 links at least 1.5x Linux balance-rr TCP ({rr[0]}). Worst: {w[0]:.2f}x at "
                       f"{w[1]} bytes ({'met' if w[0] >= 1.5 else 'missed'}).")
    elif 4 in links:
        out.append("- Target: at 4 links at least 1.5x Linux balance-rr TCP: no Linux rows in this run "
                   "(not measured).")
    # The widest link count that has R1 (the merged 6 and 8 link rows may have none).
    nr1 = max([n for n in links if any(k.get((n, s), {}).get("r1_insns_per_pkt") for s in sizes)], default=1)
    r1 = [(k[(nr1, s)]["r1_insns_per_pkt"] / k[(1, s)]["r1_insns_per_pkt"], s) for s in sizes
          if (1, s) in k and (nr1, s) in k and k[(1, s)].get("r1_insns_per_pkt")
          and k[(nr1, s)].get("r1_insns_per_pkt")]
    if r1 and nr1 > 1:
        w = max(r1)
        out.append(f"- Target: the receiver's instructions per packet at {nr1} links within 10 % of 1 "
                   f"link (HXB's reason for the lock-free reorder array). Worst: {(w[0] - 1) * 100:+.1f} % at "
                   f"{w[1]} bytes ({'met' if w[0] <= 1.10 else 'missed'}). R1 here is the server machine's busy "
                   f"instructions per packet under `-icount` (elapsed minus halted; unpaced, `poll=timer` so that "
                   f"waiting for frames is halted, not spun), its payload check included.")
    out.append("- Out of order: packets that came ahead of their turn and waited in the reorder window (per run, "
               "median); each was still exchanged into its slot, none copied.")
    out += cpu_section(doc, allrows)
    out += ["", "The papers, for scale (their links are real Gigabit Ethernet; ours are paced emulated links, so "
            "compare ratios, not rates):", "",
            "| | 2 links | 3 | 4 | 6 | 8 |", "|---|---|---|---|---|---|",
            "| PM/Ethernet-HXB (HXB Table 4), MB/s | " + " | ".join(str(HXB_TABLE4[n]) for n in (2, 3, 4, 6, 8))
            + " |", "",
            "RI2N Table 3 (TCP, one-way burst, MB/s): " + ", ".join(f"{k_}: {v}" for k_, v in RI2N_TABLE3.items())
            + ".", "", "![Mbit/s against links](multilink.png)", "", END, ""]
    return "\n".join(out)


def main():
    out = sys.argv[1]
    doc = sections.merge(out, "multilink")
    if not doc:
        sys.exit("multilink: no kernel-multilink.json")
    # The CPU-work rows (multilink.py --cpu, bench-multilink.sh ML_CPU_ONLY=1) join them.
    kc = sections.load(os.path.join(out, "kernel-multilink-cpu.json"))
    lc = sections.load(os.path.join(out, "linux-multilink-cpu.json"))
    if kc:
        doc["rows"] += kc["rows"] + (lc["rows"] if lc else [])
        doc["cpu_env"], doc["cpu_mbps_per_link"] = kc["env"], kc.get("cpu_mbps_per_link")
        doc["cpu_clock"] = kc.get("cpu_clock")
        doc["cpu_linux_env"] = lc["env"] if lc else None
        with open(os.path.join(out, "multilink.json"), "w") as f:
            json.dump(doc, f, indent=1)
    rows = doc["rows"]
    plot(paced(rows), os.path.join(out, "multilink.png"))
    sections.write_section(out, section(doc, rows), BEGIN, END)
    print(f"multilink: wrote {os.path.join(out, 'multilink.json')}, multilink.png, REPORT.md section")

if __name__ == "__main__":
    main()
