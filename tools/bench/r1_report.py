#!/usr/bin/env python3
"""REPORT.md's section "R1 as receive work" (issue 25) from the r1 files of
make bench-r1 (tools/bench/r1.py): RESULTS/r1/NIC.json, one per NIC model.

    r1_report.py RESULTS_DIR

For every system and size: the receiving guest's instructions per packet
from waiting idle for the burst to holding its last frame (the payload
check apart, polls that found nothing left out), the check, what was left
out, the background an idle window measured, and the old R1 beside it; then
the targets of issue 25 that compare this kernel with DPDK and the best
AF_XDP mode. Every figure comes from the files; a missing row is an em dash."""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sections  # noqa: E402

BEGIN, END = "<!-- r1-rx: begin -->", "<!-- r1-rx: end -->"
SYSTEMS = ["kernel", "linux-packet", "linux-mmap", "linux-packet-tuned", "linux-mmap-tuned", "linux-afxdp",
           "linux-afxdp-mb", "linux-dpdk"]
AFXDP = ("linux-afxdp", "linux-afxdp-mb")


def fmt(x, nd=0):
    return "—" if x is None else f"{x:,.{nd}f}"


def ratio(a, b):
    return a / b if a is not None and b else None


def verdict(cells, bound):
    known = [q for _, q in cells if q is not None]
    if not known:
        return "not measured"
    return "met" if all(q <= bound for q in known) else "**missed**"


def nic_lines(nic, doc):
    rows = doc["rows"]
    by = {(r["system"], r["bytes"]): r for r in rows}
    systems = [s for s in SYSTEMS if any(r["system"] == s for r in rows)]
    sizes = sorted({r["bytes"] for r in rows})
    get = lambda s, b, k: (by.get((s, b)) or {}).get(k)  # noqa: E731
    e = doc["env"]
    out = [f"### {nic}", "",
           f"QEMU {e.get('qemu')}, {e.get('nic')} NIC model, {e.get('backend')} backend, -icount "
           f"{e.get('icount')}, {e.get('runs')} round(s) of boot pairs, {e.get('reps_per_size')} timed bursts "
           f"per size and pair after warm-ups ({e.get('warmup_kernel')} kernel, {e.get('warmup_linux')} Linux). "
           "Guest kernel: " + ", ".join(sorted({r['guest_kernel'] for r in rows if r.get('guest_kernel')}) or
                                        ["—"]) + "; AF_XDP mode: " +
           (", ".join(sorted({r['xdp_mode'] for r in rows if r.get('xdp_mode')})) or "—") + ".", "",
           "Receive work per packet (median over the bursts; instructions):", "",
           "| bytes | " + " | ".join(systems) + " | kernel / DPDK | kernel / best AF_XDP |",
           "|---|" + "---|" * (len(systems) + 2)]
    goals = {"dpdk": [], "afxdp": []}
    for b in sizes:
        k = get("kernel", b, "r1_rx_insns_per_pkt")
        xdp = [get(s, b, "r1_rx_insns_per_pkt") for s in AFXDP if get(s, b, "r1_rx_insns_per_pkt") is not None]
        q_d = ratio(k, get("linux-dpdk", b, "r1_rx_insns_per_pkt"))
        q_x = ratio(k, min(xdp)) if xdp else None
        goals["dpdk"].append((b, q_d))
        goals["afxdp"].append((b, q_x))
        out.append(f"| {b} | " + " | ".join(fmt(get(s, b, "r1_rx_insns_per_pkt")) for s in systems)
                   + f" | {fmt(q_d, 2)} | {fmt(q_x, 2)} |")
    out += ["", "Beside it, per packet (medians): the payload check (counted apart, not in the receive work) / "
            "polls that found nothing, left out (instructions; empty polls) / the background an idle window "
            "gives a burst's window (timer ticks) / the old R1 (first frame received to reply sent, TSC under "
            "-icount, idle time included, check included):", "",
            "| bytes | system | check | left out (polls) | background | old R1 | samples |",
            "|---|---|---|---|---|---|---|"]
    for b in sizes:
        for s in systems:
            if (s, b) not in by:
                continue
            out.append(f"| {b} | {s} | {fmt(get(s, b, 'r1_rx_check_insns_per_pkt'))} | "
                       f"{fmt(get(s, b, 'r1_rx_left_out_insns_per_pkt'))} "
                       f"({fmt(get(s, b, 'r1_rx_empty_polls_per_pkt'), 1)}) | "
                       f"{fmt(get(s, b, 'r1_rx_background_insns_per_pkt'), 1)} | "
                       f"{fmt(get(s, b, 'r1_insns_per_pkt'))} | {get(s, b, 'n_r1_rx')} |")
    idle = {s: next((r.get("r1_rx_idle_window_insns") for r in rows if r["system"] == s), None) for s in systems}
    ms = next((r.get("r1_rx_idle_window_ms") for r in rows), None)
    out += ["", f"An idle window ({ms} ms, no frame coming, after the last burst) counts, in instructions: "
            + ", ".join(f"{s} {fmt(idle[s])}" for s in systems)
            + ". The background column scales that to a burst window's own length (guest TSC).", ""]
    out.append(f"- Target (issue 25), {nic}: R1 at most 1.5x DPDK's instructions per packet: "
               f"{verdict(goals['dpdk'], 1.5)} ("
               + ", ".join(f"{b} B {fmt(q, 2)}" for b, q in goals["dpdk"]) + ").")
    out.append(f"- Target (issue 25), {nic}: R1 at most 0.2x the best AF_XDP mode's: "
               f"{verdict(goals['afxdp'], 0.2)} ("
               + ", ".join(f"{b} B {fmt(q, 2)}" for b, q in goals["afxdp"])
               + "; no AF_XDP row where the frame does not fit one UMEM chunk).")
    out.append("")
    return out


def section(docs):
    out = [BEGIN, "", "## R1 as receive work (every system, the same events)", "",
           "What the receiving guest executes for a burst of 128 frames, divided by the frames, for every "
           "system alike: a TCG plugin (tools/linux-baseline/insnplugin.c) counts the receiving VM's guest "
           "instructions in a window the server opens while it waits, idle, for the next burst (before the "
           "sender starts it) and closes once its program holds the burst's last frame. So the NIC "
           "interrupt, the driver, the stack, the wake-up and the copy or exchange are inside, whoever does "
           "them; the reply is not. The payload check is counted apart. Waiting is not counted: a halted "
           "vCPU executes nothing, and each system's polls that found nothing are marked and left out "
           "(this kernel's idle-loop poll that took no frame; DPDK's rx_burst returning 0 and the AF_XDP "
           "and TPACKET_V3 ring spins: their user-mode part, the guest kernel's interrupts in between kept; "
           "a recvmmsg or AF_XDP wake-up call that brought nothing: all of it). Linux's own idle is hlt: "
           "no marker in code we do not own. Ratios are kernel / peer.", ""]
    for nic, doc in docs:
        out += nic_lines(nic, doc)
    out.append(END)
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    out = sys.argv[1]
    docs = []
    for path in sorted(glob.glob(os.path.join(out, "r1", "*.json"))):
        doc = sections.load(path)
        if doc and doc.get("rows"):
            docs.append((os.path.splitext(os.path.basename(path))[0], doc))
    if not docs:
        sys.exit(f"r1_report: no r1/*.json in {out}")
    sections.write_section(out, section(docs), BEGIN, END)
    print(f"r1_report: wrote the R1 section of {os.path.join(out, 'REPORT.md')}")


if __name__ == "__main__":
    main()
