"""REPORT.md's DPDK section (report.py calls dpdk_section): this kernel beside
linux-dpdk, the Linux guest driving the same NIC model from user space through
DPDK's poll-mode driver (tools/linux-baseline/dpdkbench.c), size by size, with
the targets of issue 25 that compare the two, and DPDK's txonly/rxonly
ceiling (linux-dpdk-ceiling.json) beside the kernel's ceiling loop
(ceiling.json). Every figure comes from the run's JSON files; a row or file
that is missing gives an em dash, never a guess."""
import json
import os


def _load(d, name):
    p = os.path.join(d, name)
    return json.load(open(p)) if os.path.exists(p) else None


def _by(rows, system):
    return {r["bytes"]: r for r in rows if r["system"] == system}


def _get(r, k):
    return r.get(k) if r else None


def _ratio(a, b):
    return a / b if a is not None and b else None


def _fmt(x, nd=1):
    return "—" if x is None else f"{x:,.{nd}f}"


def _verdict(ok):
    return "—" if ok is None else ("met" if ok else "**missed**")


def _check(x, op, bound):
    """Whether ratio x meets `x op bound` (None when x is unknown)."""
    if x is None:
        return None
    return x >= bound if op == ">=" else x <= bound


def dpdk_section(d, rt, br):
    """Markdown lines; an empty list when the run measured no linux-dpdk row."""
    kb, db = _by(br["rows"], "kernel"), _by(br["rows"], "linux-dpdk")
    kr, dr = _by(rt["rows"], "kernel"), _by(rt["rows"], "linux-dpdk")
    if not db and not dr:
        return []
    env = (br.get("env", {}).get("linux") or {})
    sizes = sorted(set(kb) | set(db) | set(kr) | set(dr))
    out = ["## Against DPDK (the Linux guest's NIC in a poll-mode driver)", "",
           "linux-dpdk is the same Linux guest with no kernel driver on the NIC: it is bound to "
           "`uio_pci_generic` and driven from user space by dpdkbench (tools/linux-baseline/dpdkbench.c). "
           f"Setup: {env.get('dpdk', 'not recorded')}. It speaks the same wire format and protocol as "
           "pktbench, checks every byte, and reads the same clocks. It polls and never sleeps: "
           "its receiver's old R1 (first frame to reply sent) includes the empty polls between frames "
           "(given apart as idle); R1 as receive work, with those polls left out, is in its own section; and "
           "its VM keeps a host core busy while it waits, which on this two-core host also takes "
           "CPU time from the QEMU threads that move frames. Ratios are kernel / DPDK.", "",
           "| bytes | rtt kernel (µs) | rtt DPDK | ratio | burst kernel (Mbit/s) | burst DPDK | ratio | "
           "T1 kernel (insns) | T1 DPDK | ratio | old R1 kernel (insns/pkt) | old R1 DPDK (idle) | ratio | "
           "host CPU kernel (s/GB) | DPDK | ratio |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    goals = {"burst": [], "t1": [], "r1": [], "cpu": [], "rtt": []}
    for b in sizes:
        rk, rd, bk, bd = kr.get(b), dr.get(b), kb.get(b), db.get(b)
        q_rtt = _ratio(_get(rk, "median_us"), _get(rd, "median_us"))
        q_mb = _ratio(_get(bk, "mbps"), _get(bd, "mbps"))
        q_t1 = _ratio(_get(bk, "t1_insns"), _get(bd, "t1_insns"))
        q_r1 = _ratio(_get(bk, "r1_insns_per_pkt"), _get(bd, "r1_insns_per_pkt"))
        q_rx = _ratio(_get(bk, "r1_rx_insns_per_pkt"), _get(bd, "r1_rx_insns_per_pkt"))
        if q_rx is not None:  # R1 as receive work when both pairs counted it
            q_r1 = q_rx
        q_cpu = _ratio(_get(bk, "host_cpu_s_per_gb"), _get(bd, "host_cpu_s_per_gb"))
        goals["burst"].append((b, q_mb, _check(q_mb, ">=", 1)))
        goals["t1"].append((b, q_t1, _check(q_t1, "<=", 1.5)))
        goals["r1"].append((b, q_r1, _check(q_r1, "<=", 1.5)))
        goals["cpu"].append((b, q_cpu, _check(q_cpu, "<=", 0.5)))
        if b >= 1500:
            goals["rtt"].append((b, q_rtt, _check(q_rtt, "<=", 1)))
        out.append(
            f"| {b} | {_fmt(_get(rk, 'median_us'))} | {_fmt(_get(rd, 'median_us'))} | {_fmt(q_rtt, 2)} | "
            f"{_fmt(_get(bk, 'mbps'))} | {_fmt(_get(bd, 'mbps'))} | {_fmt(q_mb, 2)} | "
            f"{_fmt(_get(bk, 't1_insns'), 0)} | {_fmt(_get(bd, 't1_insns'), 0)} | {_fmt(q_t1, 2)} | "
            f"{_fmt(_get(bk, 'r1_insns_per_pkt'), 0)} | {_fmt(_get(bd, 'r1_insns_per_pkt'), 0)} "
            f"({_fmt(_get(bd, 'r1_idle_insns_per_pkt'), 0)}) | {_fmt(q_r1, 2)} | "
            f"{_fmt(_get(bk, 'host_cpu_s_per_gb'), 2)} | {_fmt(_get(bd, 'host_cpu_s_per_gb'), 2)} | "
            f"{_fmt(q_cpu, 2)} |")
    names = {"burst": "Burst throughput at least DPDK's (kernel/DPDK >= 1)",
             "t1": "T1 at most 1.5x DPDK's instructions",
             "r1": "R1 at most 1.5x DPDK's instructions per packet (R1 as receive work where both rows "
                   "have it, else the old R1 of the table)",
             "cpu": "Host CPU per gigabyte at most 0.5x DPDK's",
             "rtt": "Round trip at most DPDK's from 1500 bytes up"}
    out.append("")
    for k, name in names.items():
        cells = goals[k]
        known = [ok for _, _, ok in cells if ok is not None]
        verdict = _verdict(all(known) if known else None)
        out.append(f"- Target (issue 25): {name}: {verdict} ("
                   + ", ".join(f"{b} B {_fmt(q, 2)}" for b, q, _ in cells) + ").")
    out.append("- How to read them: T1 and R1 are guest instructions under `-icount` (the programs' own "
               "work, whatever the host does); round trips, bursts and host CPU are real time on a host "
               "that other processes shared (other processes' cores during each Linux burst pair: "
               f"{env.get('host_other_cores', 'not recorded')}), where a spinning guest competes with "
               "the QEMU threads of both VMs for two cores.")
    out += [""] + _ceiling_lines(d)
    return out


def _ceiling_lines(d):
    dc, kc = _load(d, "linux-dpdk-ceiling.json"), _load(d, "ceiling.json")
    if not dc:
        return ["DPDK's txonly/rxonly ceiling was not measured in this run (no linux-dpdk-ceiling.json).", ""]
    kper = {r["bytes"]: r for r in (kc or {}).get("rows", []) if r.get("system") == "link"}
    out = ["### DPDK's ceiling beside the kernel's", "",
           "A neutral ceiling from the other side: dpdkbench's txonly sender offers pre-built frames "
           "to the driver as fast as it takes them, its rxonly receiver counts what arrives in 100 ms "
           "windows of its own clock (payloads not checked, as the kernel's ceiling loop checks only "
           "headers and ends); median of the windows over the boot pairs. Frames the sending QEMU "
           "could not pass on are lost (`frames_lost`), not retried.", "",
           "| bytes | kernel ceiling (Mbit/s, mode) | DPDK txonly/rxonly (Mbit/s) | DPDK / kernel | "
           "frames received | frames lost |", "|---|---|---|---|---|---|"]
    for r in sorted(dc["rows"], key=lambda r: r["bytes"]):
        k = kper.get(r["bytes"])
        out.append(f"| {r['bytes']} | {_fmt(_get(k, 'ceiling_mbps'))} ({_get(k, 'ceiling_mode') or '—'}) | "
                   f"{_fmt(r['mbps'])} | {_fmt(_ratio(r['mbps'], _get(k, 'ceiling_mbps')), 2)} | "
                   f"{r['frames']:,} | {r['frames_lost']:,} |")
    return out + [""]
