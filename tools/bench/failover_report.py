#!/usr/bin/env python3
"""make bench-failover's last step: merges this kernel's rows
(kernel-failover.json, tools/bench/failover.py) with Linux's
(linux-failover.json, tools/linux-baseline/bench-failover.sh, when it ran)
into failover.json, plots delivered Mbit/s against time for every system
(failover.png: one panel per link count and kind of cut, the first run of
each system, cut and restore marked) and writes REPORT.md's link-failure
section between its markers, beside RI2N's Table 4. Every number in it is
read from those files.

With --unpaced: the CPU-bound variant instead (make bench-failover with
FAILOVER_UNPACED=1: kernel-failover-unpaced.json, linux-failover-unpaced.json
into failover-unpaced.json) and REPORT.md's unpaced sub-section, right after
the link-failure section, between its own markers (no plot).

Usage: failover_report.py OUTDIR [--unpaced]
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
import sections  # noqa: E402

BEGIN, END = "<!-- failover: begin -->", "<!-- failover: end -->"
UBEGIN, UEND = "<!-- failover-unpaced: begin -->", "<!-- failover-unpaced: end -->"
# An end whose busy share in a window is at least this was held by its CPU
# (under -icount shift=0 its clock is then its instructions).
CPU_BOUND = 0.9
# RI2N Table 4: NFS write throughput before and during a failure of one of two GbE links.
RI2N_TABLE4 = {"LCB (Linux bonding)": (179.9, 108.7), "RI2N/DRV": (157.2, 109.0)}
RI2N_ONE_LINK = 109.8  # Table 2, GbE, rwsize 32 KB
FIELDS = ("detect_ms", "recover_ms", "rate_back_ms", "mbps_before", "mbps_during", "mbps_after", "max_gap_ms")


def windows(series, cut_s, restore_s, bin_s=0.1):
    """Mbit/s before, during and after a cut, the same rule for every
    system: delivered bytes over time (the mean of the 100 ms bins), in the
    2 s before the cut, from 1 s after it to the restore, and from 1 s
    after the restore to half a second before the end (a receiver may take
    a batch at a time: single bins are lumpy, their mean is not); and
    rate_back_ms, from the restore to the first 500 ms whose mean is 0.9 x
    the rate before."""
    if not series or cut_s is None or restore_s is None:
        return None, None, None, None
    end = series[-1][0] + bin_s
    mean = lambda lo, hi: (lambda v: round(sum(v) / len(v), 2) if v else None)(  # noqa: E731
        [m for t, m in series if lo <= t and t + bin_s <= hi + 1e-9])
    before = mean(cut_s - 2, cut_s)
    during = mean(cut_s + 1, restore_s)
    after = mean(restore_s + 1, end - 0.5)
    back = None
    if before:
        for t, _ in series:
            if t >= restore_s and t + 0.5 <= end:
                m = mean(t, t + 0.5)
                if m is not None and m >= 0.9 * before:
                    back = round((t - restore_s) * 1000)
                    break
    return before, during, after, back


PKT_BYTES = 8192  # the kernel's packet payload and Linux's write size: "a packet" for both


def cpu_windows(r, bin_s=0.1):
    """Busy instructions per delivered byte and per delivered packet
    (PKT_BYTES), at each end, before, during and after the cut (the
    windows of windows(), each end on its own clock: the receiver's
    cut_s/restore_s, the sender's cut_client_s/restore_client_s). An end's
    samples (cpu_samples: busy ticks under -icount shift=0, i.e.
    instructions, and its bytes so far, every 500 ms) from the first
    inside a window to the last: the busy ticks between them less the
    samples' own cost (mark each), over the bytes between them (the
    receiver's delivered, the sender's handed to its stack: all delivered
    in the end, lost 0), and those bytes' Mbit/s on that end's own clock
    (SIDE_mbps). None without samples."""
    cs, series = r.get("cpu_samples"), r.get("series")
    if not cs or not series or r.get("cut_s") is None:
        return None
    end = series[-1][0] + bin_s
    cut_c, restore_c = r.get("cut_client_s", r["cut_s"]), r.get("restore_client_s", r["restore_s"])
    end_c = r.get("end_client_s") or end
    spans = {"server": {"before": (r["cut_s"] - 2, r["cut_s"]), "during": (r["cut_s"] + 1, r["restore_s"]),
                        "after": (r["restore_s"] + 1, end - 0.5)},
             "client": {"before": (cut_c - 2, cut_c), "during": (cut_c + 1, restore_c),
                        "after": (restore_c + 1, end_c - 0.5)}}
    out = {}
    for w in ("before", "during", "after"):
        cell = {}
        for side in ("server", "client"):
            c = cs.get(side)
            if not c:
                continue
            lo, hi = spans[side][w]
            idx = [k for k, t in enumerate(c["t_s"]) if lo - 1e-6 <= t <= hi + 1e-6]
            if len(idx) < 2:
                continue
            i, j = idx[0], idx[-1]
            busy = c["busy"][j] - c["busy"][i] - c.get("mark", 0) * (j - i)
            dt = c["t_s"][j] - c["t_s"][i]
            nbytes = c["bytes"][j] - c["bytes"][i]
            cell[f"{side}_span_s"] = round(dt, 3)
            cell[f"{side}_busy_frac"] = round(busy / (dt * 1e9), 4) if dt > 0 else None
            cell[f"{side}_insns_per_byte"] = round(busy / nbytes, 3) if nbytes > 0 else None
            cell[f"{side}_insns_per_pkt"] = round(busy / nbytes * PKT_BYTES) if nbytes > 0 else None
            cell[f"{side}_mbps"] = round(nbytes * 8 / dt / 1e6, 2) if dt > 0 else None  # on that end's clock
        if cell.get("server_insns_per_pkt") is not None and cell.get("client_insns_per_pkt") is not None:
            cell["insns_per_pkt"] = cell["server_insns_per_pkt"] + cell["client_insns_per_pkt"]
            cell["insns_per_byte"] = round(cell["server_insns_per_byte"] + cell["client_insns_per_byte"], 3)
        out[w] = cell
    return out


def recompute(r):
    """A row's Mbit/s windows from its series, by windows(); and for Linux
    rows recover_ms as this kernel's: from the restore to the link used
    again (bonding's "link status definitely up", link_up_ms), the row's
    own restore-to-rate figure kept as recover_rate_ms."""
    if not r["system"].startswith("kernel") and "link_up_ms" in r and "recover_rate_ms" not in r:
        r["recover_rate_ms"], r["recover_ms"] = r.get("recover_ms"), r.get("link_up_ms")
    b, d, a, back = windows(r.get("series"), r.get("cut_s"), r.get("restore_s"))
    if b is not None:
        r["mbps_before"], r["mbps_during"], r["mbps_after"], r["rate_back_ms"] = b, d, a, back
        r["mbps_rule"] = "mean of 100 ms bins: 2 s before the cut; cut+1 s to restore; restore+1 s to end-0.5 s"
    cpu = cpu_windows(r)
    if cpu:
        r["cpu"] = cpu
    return r


def med(rows, k):
    v = [r[k] for r in rows if r.get(k) is not None]
    return round(statistics.median(v), 1) if v else None


def med3(rows, k):
    v = [r[k] for r in rows if r.get(k) is not None]
    return round(statistics.median(v), 3) if v else None


def med_cpu(rows, window, k):
    """Median over the runs of a CPU-work figure (cpu_windows())."""
    v = [r["cpu"][window][k] for r in rows if r.get("cpu", {}).get(window, {}).get(k) is not None]
    return statistics.median(v) if v else None


def nic_of(r):
    return r.get("nic", "e1000")


def groups(rows):
    g = {}
    for r in rows:
        g.setdefault((r["system"], nic_of(r), r["links"], r["cut"]), []).append(r)
    return g


def order(item):
    (s, nic, links, cut), _ = item
    return (nic != "e1000", nic, links, cut != "visible", s != "kernel", s)


def during_frac(r):
    """Throughput during the cut against what the links left carry, from
    the same run's rate before it: (links - 1) / links of it."""
    b, d, n = r.get("mbps_before"), r.get("mbps_during"), r["links"]
    return round(d / (b * (n - 1) / n), 3) if b and d is not None else None


def worst_gap_where(k):
    """Where the worst run's longest gap fell, against its cut and restore."""
    w = max(k, key=lambda r: r["max_gap_ms"])
    at = w.get("max_gap_at_s")
    if at is None or w.get("cut_s") is None:
        return ""
    return (f" ({nic_of(w)}, {w['links']} links, {w['cut']} cut: {at - w['cut_s']:+.2f} s from the cut, "
            f"{at - w['restore_s']:+.2f} s from the restore)")


def plot(rows, path):
    plt = sections.pyplot("failover")
    if plt is None:
        return
    panels = sorted({(nic_of(r), r["links"], r["cut"]) for r in rows})
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 3.0 * len(panels)), squeeze=False)
    for ax, (nic, links, cut) in zip(axes[:, 0], panels):
        firsts = {}
        for r in rows:
            if nic_of(r) == nic and r["links"] == links and r["cut"] == cut and r.get("series"):
                firsts.setdefault(r["system"], r)
        for sysname, r in sorted(firsts.items()):
            t = [p[0] - r["cut_s"] for p in r["series"]]
            ax.plot(t, [p[1] for p in r["series"]], label=sysname, lw=1)
        if firsts:
            r0 = next(iter(firsts.values()))
            ax.axvline(0, color="red", ls="--", lw=1, label="cut")
            ax.axvline(r0["restore_s"] - r0["cut_s"], color="green", ls="--", lw=1, label="restore")
        ax.set_title(f"{nic}, {links} links, {cut} cut of one link (first run of each system)")
        ax.set_xlabel("s from the cut (the receiver's clock)")
        ax.set_ylabel("delivered Mbit/s (100 ms bins)")
        ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) >= 1e5):
        return str(int(v))
    return f"{v:g}" if isinstance(v, float) else str(v)


def kfmt(v):
    """Instructions per packet in thousands."""
    return "-" if v is None else f"{v / 1000:.1f}k"


def bfmt(v):
    return "-" if v is None else f"{v:.2f}"


def cpu_targets(g):
    """At 4 links, per NIC, cut and window: this kernel's median busy
    instructions per delivered packet (both ends) over the lowest Linux
    system's (its best), [(nic, cut, window, kernel, best system, its value,
    ratio)]."""
    out = []
    for (s, nic, links, cut), rs in sorted(g.items()):
        if s != "kernel" or links != 4:
            continue
        for w in ("before", "during", "after"):
            k = med_cpu(rs, w, "insns_per_pkt")
            lin = [(med_cpu(lr, w, "insns_per_pkt"), ls) for (ls, ln, ll, lc), lr in g.items()
                   if ls != "kernel" and ln == nic and ll == links and lc == cut]
            lin = [x for x in lin if x[0]]
            if k and lin:
                v, best = min(lin)
                out.append((nic, cut, w, k, best, v, round(k / v, 3)))
    return out


def configs(rows):
    """{(Linux system, NIC): its guests' bonding or MPTCP words}."""
    return {(r["system"], nic_of(r)): r["config"] for r in rows if r.get("config")}


def section(doc, rows):
    g = groups(rows)
    lenv = doc.get("linux_env") or {}
    out = [BEGIN, "## Link failure (make bench-failover)", "",
           f"A verified stream over L links paced to {doc.get('link_mbps')} Mbit/s each (the offered load, which "
           "neither system saturates); one link is cut "
           f"{doc.get('cut_at_s')} s after the stream starts and restored {doc.get('restore_after_s')} s later "
           "(RI2N section 4.2), visibly (QMP set_link off on the sender's NIC) or silently (on the receiver's "
           "NIC: the sender's keeps its carrier). Both systems alike: one QEMU dgram wire per link "
           f"(this kernel: {doc['env'].get('backend')}; Linux: {lenv.get('backend', '-')}), "
           f"{doc['env'].get('clock')} clock ({doc.get('cpu_clock') or 'real time'}), the cut and restore on "
           "the sender's own clock (its MARK / FLOWMARK lines), the same runs per cell in interleaved rounds "
           "(this kernel's cells, then Linux's), medians over the runs. Linux as its users would tune it for "
           "failover (tools/linux-baseline/run-failover.py, tuned(): miimon and the ARP monitor at their "
           "shortest intervals that did not fail over for nothing on this shared host; MPTCP with one subflow "
           "per link, the receiver announcing each further address): "
           + "; ".join(f"{s} on {n}: `{c}`" for (s, n), c in sorted(configs(rows).items()))
           + ". e1000 reports a link change through its 2 s watchdog; virtio-net at once.", "",
           "### CPU work", "",
           "Busy guest instructions (under -icount shift=0 a busy ns is one instruction: elapsed less halted; "
           "this kernel: sysinfo idle_tsc; Linux: CLOCK_MONOTONIC less the idle and iowait time of "
           "/proc/timer_list, less each read's own cost) at both ends, sampled every 500 ms on each end's "
           "clock, per delivered packet of 8192 bytes (this kernel's packet payload, Linux's write) and per "
           "byte: the receiver's over the bytes it took in, the sender's over the bytes it handed to its "
           "stack (all delivered: lost 0), in the windows of the timing table (2 s before the cut, from 1 s "
           "after it to the restore, from 1 s after the restore to the end).", "",
           "| system | NIC | links | cut | runs | insns/pkt before | during | after | recv insns/B before | during "
           "| after | send insns/B before | during | after |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (s, nic, links, cut), rs in sorted(g.items(), key=order):
        if not any(r.get("cpu") for r in rs):
            continue
        out.append(f"| {s} | {nic} | {links} | {cut} | {len(rs)} | "
                   + " | ".join(kfmt(med_cpu(rs, w, "insns_per_pkt")) for w in ("before", "during", "after"))
                   + " | " + " | ".join(bfmt(med_cpu(rs, w, "server_insns_per_byte"))
                                        for w in ("before", "during", "after"))
                   + " | " + " | ".join(bfmt(med_cpu(rs, w, "client_insns_per_byte"))
                                        for w in ("before", "during", "after")) + " |")
    tg = cpu_targets(g)
    if tg:
        met = all(x[6] <= 0.25 for x in tg)
        out += ["", "Target (issue 26): at 4 links, this kernel's busy instructions per delivered packet at most "
                "0.25x Linux's best (the lowest of bonding and MPTCP in the same cell): "
                + "; ".join(f"{nic} {cut} {w}: {x / 1000:.1f}k against {best} {v / 1000:.1f}k = {ratio:.3f}x"
                            for nic, cut, w, x, best, v, ratio in tg)
                + f": met in {sum(1 for x in tg if x[6] <= 0.25)} of {len(tg)} cells"
                + (", so met." if met else ", so missed.")]
    out += ["", "### Timing", "",
            "detect: from the first packet the link lost to the sender's last use of it (this kernel: its own "
            "measure; Linux: bonding's log line on the sender's clock, null when it never saw the cut); "
            "recover: from the restore to the link used again (Linux: bonding's 'link status definitely up' "
            "line; MPTCP prints none); back: from the restore to the first 500 ms at 0.9 x the rate before; "
            "during/left: Mbit/s during the cut over (L-1)/L of the rate before; Mbit/s: the mean over each "
            "window on the receiver's clock, the same rule for every system; max gap: the longest time between "
            "two deliveries to the receiving program (this kernel: batches of 8 packets, so at least a batch's "
            "time on one link). Times and rates are on the guests' clocks (detect on the sender's, Mbit/s on the "
            "receiver's). Under -icount a guest's clock advances by its instructions while it runs and by the "
            "host's time while it halts, so it falls behind the host's by the host time spent on it outside "
            "guest instructions (device emulation: more for a driver that touches its NIC's registers more "
            "often) and by what a busy host withholds: the two guests' clocks can run at different rates, and "
            "Mbit/s on a slow receiver's clock read high. clock rate: receiver seconds per sender second over "
            "the run (this kernel: from its first and last packet) or between the cut and the restore (Linux); "
            "the CPU work above does not depend on it.", "",
            "| system | NIC | links | cut | runs | detect ms | recover ms | back ms | Mbit/s before | during | after "
            "| during/left | max gap ms | lost | corrupt | clock rate |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (s, nic, links, cut), rs in sorted(g.items(), key=order):
        fr = [during_frac(r) for r in rs if during_frac(r) is not None]
        lost = max((r.get("lost") or 0) for r in rs) if any(r.get("lost") is not None for r in rs) else None
        corrupt = max((r.get("corrupt") or 0) for r in rs) if any(r.get("corrupt") is not None for r in rs) else None
        out.append(f"| {s} | {nic} | {links} | {cut} | {len(rs)} | " + " | ".join(
            fmt(med(rs, k)) for k in ("detect_ms", "recover_ms", "rate_back_ms", "mbps_before", "mbps_during",
                                      "mbps_after"))
            + f" | {fmt(round(statistics.median(fr), 3) if fr else None)} | {fmt(med(rs, 'max_gap_ms'))} | "
              f"{fmt(lost)} | {fmt(corrupt)} | {fmt(med3(rs, 'clock_rate'))} |")
    out += ["", "RI2N Table 4 (NFS write over two GbE links, MB/s, before and during the failure of one): "
            + "; ".join(f"{k}: {a} -> {b} ({b / RI2N_ONE_LINK:.2f} x one link's {RI2N_ONE_LINK})"
                        for k, (a, b) in RI2N_TABLE4.items()) + ".", ""]
    ab = [r for r in rows if r["system"] == "linux-bond-ab-arp-tcp"]
    if ab:
        nc = sum(1 for r in ab if r.get("end") == "no-connection")
        out += ["Active-backup with the ARP monitor on e1000: QEMU's e1000 takes no frame for 1 s after every "
                "write of its receive control register (hw/net/e1000.c, flush_queue_timer), and bonding writes "
                "it (through the driver's rx-mode) each time it makes a slave active, as the bond's multicast "
                "lists move to it. With arp_missed_max x arp_interval under 1 s the new active slave is declared "
                "dead before it can hear anything, and the two bonds of a back-to-back pair flap against each "
                "other for ever (the earlier 0 Mbit/s rows, arp_interval 100 ms and the default 2 missed: no "
                "connection). Here the product outlasts the hold-off on e1000 (its config above); virtio-net "
                "has no hold-off. On this "
                "wiring (one wire per link, no switch) a backup slave hears nothing (the peer sends on its own "
                "active slave only), so it is never up under the ARP monitor: a cut of the active link leaves "
                "the bond with no slave until both ends find the same one again. "
                f"{len(ab) - nc} of {len(ab)} runs connected; "
                f"{sum(1 for r in ab if r.get('sender_bond_changes_before_cut'))} of them changed the sender's "
                "active slave before any cut.", ""]
    k = [r for r in rows if r["system"] == "kernel"]
    if k:
        silent = [r["detect_ms"] for r in k if r["cut"] == "silent" and r.get("detect_ms") is not None]
        fr = [during_frac(r) for r in k if during_frac(r) is not None]
        back = [r["rate_back_ms"] for r in k if r.get("rate_back_ms") is not None]
        out += ["Targets, this kernel, every run: "
                f"silent-cut detection {fmt(max(silent) if silent else None)} ms at worst (target 50); "
                f"lost {max(r['lost'] for r in k)}, corrupt {max(r['corrupt'] for r in k)} (target 0); "
                f"during/left {fmt(min(fr) if fr else None)} at worst (target 0.95); "
                f"back to the full rate {fmt(max(back) if back else None)} ms after the restore at worst "
                "(target 1000); longest delivery gap "
                f"{fmt(max(r['max_gap_ms'] for r in k))} ms at worst against detection plus one "
                "retransmission" + worst_gap_where(k) + ".", ""]
    idle = doc.get("idle_rows") or []
    if idle:
        det = [r["detect_ms"] for r in idle if r.get("detect_ms") is not None]
        rec = [r["recover_ms"] for r in idle if r.get("recover_ms") is not None]
        out += [f"A silent cut while the channel is idle (heartbeats only, {idle[0]['links']} links, "
                f"{len(idle)} runs): detected in {fmt(min(det) if det else None)}-{fmt(max(det) if det else None)} ms "
                f"from the last frame heard on the link ({doc.get('heartbeats_missed')} heartbeat periods of "
                f"{doc.get('heartbeat_ms')} ms: the target is within 3 periods); back "
                + (f"{fmt(min(rec))}-{fmt(max(rec))} ms" if rec else "(not seen)")
                + " after the restore (as the stream resumes).", ""]
    out += ["![delivered Mbit/s against time, cut and restore marked](failover.png)", "", END, ""]
    return "\n".join(out)


def limit(r, window="before"):
    """What held an unpaced run in a window: "receiver CPU" or "sender CPU"
    (that end busy CPU_BOUND of the window or more; the busier one when
    both), else "emulator" (neither CPU full: the host's time in QEMU's
    devices and wires, outside guest instructions); None without CPU work."""
    c = (r.get("cpu") or {}).get(window) or {}
    rx, tx = c.get("server_busy_frac"), c.get("client_busy_frac")
    if rx is None or tx is None:
        return None
    if max(rx, tx) < CPU_BOUND:
        return "emulator"
    return "receiver CPU" if rx >= tx else "sender CPU"


def unpaced_section(doc, rows):
    g = groups(rows)
    lenv = doc.get("linux_env") or {}
    out = [UBEGIN, "### Unpaced: the CPU as the limit (make bench-failover FAILOVER_UNPACED=1)", "",
           "The same cut and restore with nothing paced: this kernel's stream with no NIC shaped "
           "(`nic_mbps=0`), Linux's TCP or MPTCP flow with no `tbf` on any NIC "
           f"(this kernel: {doc.get('pacing')}; Linux: {lenv.get('pacing', '-')}). "
           "Both VMs under `-icount shift=0`, so while a guest runs its clock is its instructions: an end that is "
           f"busy {CPU_BOUND:g} of a window or more is held by its CPU, and the Mbit/s on its clock are what its "
           "CPU allows, whatever else the host runs. An end that halts waits for frames on the host's time "
           "(QEMU's device models and wires, outside guest instructions): when neither end is busy that much, "
           "the emulator set the rate, not the CPU. The same wires as the paced runs (this kernel: "
           f"{doc['env'].get('backend')}; Linux: {lenv.get('backend', '-')}), the same cells, cut "
           f"{doc.get('cut_at_s')} s after the start on the sender's clock and restored "
           f"{doc.get('restore_after_s')} s later, the same windows and rules as the paced tables above, "
           f"{doc['env'].get('runs')} interleaved rounds for both systems (this kernel's cells, then Linux's), "
           "medians over the runs. Mbit/s on the receiver's clock; busy: each end's share of the window "
           "(receiver / sender); limit: what held the stream before the cut (the runs' most common verdict); "
           "sender Mbit/s: the bytes the sender handed to its stack in the same windows on its own clock (from its "
           "CPU samples; the two clocks part: clock rate, receiver seconds per sender second); "
           "insns/pkt: both ends' busy instructions per delivered 8192-byte packet.", "",
           "| system | NIC | links | cut | runs | Mbit/s before | during | after | during/left | detect ms "
           "| lost | corrupt | busy before (recv / send) | busy during | limit | sender Mbit/s before | during "
           "| after | insns/pkt before | during | after | clock rate |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lim = {}
    for (s, nic, links, cut), rs in sorted(g.items(), key=order):
        fr = [during_frac(r) for r in rs if during_frac(r) is not None]
        lost = max((r.get("lost") or 0) for r in rs) if any(r.get("lost") is not None for r in rs) else None
        corrupt = max((r.get("corrupt") or 0) for r in rs) if any(r.get("corrupt") is not None for r in rs) else None
        busy = lambda w: "/".join(bfmt(med_cpu(rs, w, k)) for k in ("server_busy_frac", "client_busy_frac"))  # noqa
        ls = [limit(r) for r in rs if limit(r)]
        verdict = max(set(ls), key=ls.count) if ls else None
        lim[(s, nic, links, cut)] = verdict
        out.append(f"| {s} | {nic} | {links} | {cut} | {len(rs)} | "
                   + " | ".join(fmt(med(rs, k)) for k in ("mbps_before", "mbps_during", "mbps_after"))
                   + f" | {fmt(round(statistics.median(fr), 3) if fr else None)} | {fmt(med(rs, 'detect_ms'))} | "
                     f"{fmt(lost)} | {fmt(corrupt)} | {busy('before')} | {busy('during')} | {verdict or '-'} | "
                   + " | ".join(fmt(None if med_cpu(rs, w, "client_mbps") is None
                                    else round(med_cpu(rs, w, "client_mbps"), 1)) for w in ("before", "during", "after"))
                   + " | " + " | ".join(kfmt(med_cpu(rs, w, "insns_per_pkt")) for w in ("before", "during", "after"))
                   + f" | {fmt(med3(rs, 'clock_rate'))} |")
    out.append("")
    by_sys = {}
    for (s, n, _l, c), v in sorted(lim.items(), key=lambda x: (x[0][1] != "e1000", x[0][1], x[0][3])):
        by_sys.setdefault(s, []).append(f"{v or '-'} on {n}" + (f" ({c} cut)" if len({k[3] for k in lim}) > 1 else ""))
    out.append("What held each system before the cut (the CPU only where an end was busy "
               f"{CPU_BOUND:g} of the window): "
               + "; ".join(f"{s}: {', '.join(v)}" for s, v in sorted(by_sys.items(),
                                                                      key=lambda x: (x[0] != "kernel", x[0])))
               + ".")
    early = [r for r in rows if r.get("cut_s") is not None and r["cut_s"] < 2.5]
    if early:
        out.append(f"{len(early)} of {len(rows)} runs had the cut less than 2.5 s into the stream on the receiver's "
                   "clock (a receiver's clock slower than the sender's: "
                   + ", ".join(sorted({f"{r['system']} {nic_of(r)}" for r in early}))
                   + "): their 2 s before it reach back into the stream's start-up (this kernel on e1000: QEMU's 1 s "
                   "receive hold-off once the NIC is set up), so the receiver's Mbit/s before read low; the "
                   "sender's, on its own clock from its start, do not.")
    k = [r for r in rows if r["system"] == "kernel"]
    if k:
        out.append(f"This kernel, every run: lost {max(r['lost'] for r in k)}, corrupt "
                   f"{max(r['corrupt'] for r in k)} (target 0).")
    tg = cpu_targets(g)
    if tg:
        out.append("Busy instructions per delivered packet at 4 links against Linux's best in the same cell: "
                   + "; ".join(f"{nic} {cut} {w}: {x / 1000:.1f}k against {best} {v / 1000:.1f}k = {ratio:.3f}x"
                               for nic, cut, w, x, best, v, ratio in tg) + ".")
    out += ["", UEND, ""]
    return "\n".join(out)


def dumps(doc):
    """JSON, indented, each row's series and CPU samples on one line."""
    keep = {}
    rows = []
    for i, r in enumerate(doc["rows"]):
        r = dict(r)
        for k in ("series", "cpu_samples"):
            if k in r:
                tag = f"@{k}{i}@"
                keep[tag] = json.dumps(r[k], separators=(",", ":"))
                r[k] = tag
        rows.append(r)
    text = json.dumps(dict(doc, rows=rows), indent=1)
    for tag, v in keep.items():
        text = text.replace(f'"{tag}"', v)
    return text + "\n"


def main():
    out = sys.argv[1]
    if sys.argv[2:] == ["--unpaced"]:
        doc = sections.merge(out, "failover-unpaced")
        if not doc:
            sys.exit("failover: no kernel-failover-unpaced.json")
        rows = [recompute(r) for r in doc["rows"]]
        for r in rows:
            r["limit"] = limit(r)
        doc["rows"] = rows
        with open(os.path.join(out, "failover-unpaced.json"), "w") as f:
            f.write(dumps(doc))
        sections.write_section(out, unpaced_section(doc, rows), UBEGIN, UEND, after=END)
        print(f"failover: wrote {os.path.join(out, 'failover-unpaced.json')}, REPORT.md unpaced sub-section")
        return
    doc = sections.merge(out, "failover")
    if not doc:
        sys.exit("failover: no kernel-failover.json")
    rows = [recompute(r) for r in doc["rows"]]
    doc["rows"] = rows
    with open(os.path.join(out, "failover.json"), "w") as f:
        f.write(dumps(doc))
    plot(rows, os.path.join(out, "failover.png"))
    sections.write_section(out, section(doc, rows), BEGIN, END)
    print(f"failover: wrote {os.path.join(out, 'failover.json')}, failover.png, REPORT.md section")

if __name__ == "__main__":
    main()
