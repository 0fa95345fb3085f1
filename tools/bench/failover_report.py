#!/usr/bin/env python3
"""make bench-failover's last step: merges this kernel's rows
(kernel-failover.json, tools/bench/failover.py) with Linux's
(linux-failover.json, tools/linux-baseline/bench-failover.sh, when it ran)
into failover.json, plots delivered Mbit/s against time for every system
(failover.png: one panel per link count and kind of cut, the first run of
each system, cut and restore marked) and writes REPORT.md's link-failure
section between its markers, beside RI2N's Table 4. Every number in it is
read from those files.

Usage: failover_report.py OUTDIR
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
import sections  # noqa: E402

BEGIN, END = "<!-- failover: begin -->", "<!-- failover: end -->"
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
    return r


def med(rows, k):
    v = [r[k] for r in rows if r.get(k) is not None]
    return round(statistics.median(v), 1) if v else None


def groups(rows):
    g = {}
    for r in rows:
        g.setdefault((r["system"], r["links"], r["cut"]), []).append(r)
    return g


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
    return (f" ({w['links']} links, {w['cut']} cut: {at - w['cut_s']:+.2f} s from the cut, "
            f"{at - w['restore_s']:+.2f} s from the restore)")


def plot(rows, path):
    plt = sections.pyplot("failover")
    if plt is None:
        return
    panels = sorted({(r["links"], r["cut"]) for r in rows})
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 3.2 * len(panels)), squeeze=False)
    for ax, (links, cut) in zip(axes[:, 0], panels):
        firsts = {}
        for r in rows:
            if r["links"] == links and r["cut"] == cut and r.get("series"):
                firsts.setdefault(r["system"], r)
        for sysname, r in sorted(firsts.items()):
            t = [p[0] - r["cut_s"] for p in r["series"]]
            ax.plot(t, [p[1] for p in r["series"]], label=sysname, lw=1)
        if firsts:
            r0 = next(iter(firsts.values()))
            ax.axvline(0, color="red", ls="--", lw=1, label="cut")
            ax.axvline(r0["restore_s"] - r0["cut_s"], color="green", ls="--", lw=1, label="restore")
        ax.set_title(f"{links} links, {cut} cut of link 1 (first run of each system)")
        ax.set_xlabel("s from the cut")
        ax.set_ylabel("delivered Mbit/s (100 ms bins)")
        ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def fmt(v):
    return "-" if v is None else (f"{v:g}" if isinstance(v, (int, float)) else str(v))


def section(doc, rows):
    g = groups(rows)
    out = [BEGIN, "## Link failure (make bench-failover)", "",
           f"A verified stream over L links paced to {doc.get('link_mbps')} Mbit/s each; link 1 of the sender is "
           f"cut {doc.get('cut_at_s')} s after the server is ready (visible: QMP set_link on the NIC; silent: "
           f"its tap taken down on the host) and restored {doc.get('restore_after_s')} s later (RI2N section "
           "4.2). Medians over the runs; `lost` and `corrupt` are the worst run's. detect: from the first "
           "packet the link lost to the sender's last use of it (this kernel: its own measure; Linux: bonding's "
           "log line, null when it never saw the cut); recover: from the restore to the link used again "
           "(Linux: bonding's 'link status definitely up' line; MPTCP prints none); "
           "back: from the restore to the first 500 ms at 0.9 x the rate before; during/left: Mbit/s "
           "during the cut over (L-1)/L of the rate before; Mbit/s: the mean over each window (2 s before the "
           "cut, from 1 s after it to the restore, from 1 s after the restore), the same rule for every "
           "system; max gap: the longest time between two deliveries to the receiving program (this kernel: "
           "batches of 8 packets, so at least a batch's time on one link).", "",
           "| system | links | cut | runs | detect ms | recover ms | back ms | Mbit/s before | during | after "
           "| during/left | max gap ms | lost | corrupt |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (s, links, cut), rs in sorted(g.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0] != "kernel",
                                                                   kv[0][0])):
        fr = [during_frac(r) for r in rs if during_frac(r) is not None]
        lost = max((r.get("lost") or 0) for r in rs) if any(r.get("lost") is not None for r in rs) else None
        corrupt = max((r.get("corrupt") or 0) for r in rs) if any(r.get("corrupt") is not None for r in rs) else None
        out.append(f"| {s} | {links} | {cut} | {len(rs)} | " + " | ".join(
            fmt(med(rs, k)) for k in ("detect_ms", "recover_ms", "rate_back_ms", "mbps_before", "mbps_during",
                                      "mbps_after"))
            + f" | {fmt(round(statistics.median(fr), 3) if fr else None)} | {fmt(med(rs, 'max_gap_ms'))} | "
              f"{fmt(lost)} | {fmt(corrupt)} |")
    out += ["", "RI2N Table 4 (NFS write over two GbE links, MB/s, before and during the failure of one): "
            + "; ".join(f"{k}: {a} -> {b} ({b / RI2N_ONE_LINK:.2f} x one link's {RI2N_ONE_LINK})"
                        for k, (a, b) in RI2N_TABLE4.items()) + ".", ""]
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
                f"{fmt(min(rec) if rec else None)}-{fmt(max(rec) if rec else None)} ms after the restore.", ""]
    out += ["![delivered Mbit/s against time, cut and restore marked](failover.png)", "", END, ""]
    return "\n".join(out)


def main():
    out = sys.argv[1]
    doc = sections.merge(out, "failover")
    if not doc:
        sys.exit("failover: no kernel-failover.json")
    rows = [recompute(r) for r in doc["rows"]]
    doc["rows"] = rows
    with open(os.path.join(out, "failover.json"), "w") as f:
        json.dump(doc, f, indent=1)
    plot(rows, os.path.join(out, "failover.png"))
    sections.write_section(out, section(doc, rows), BEGIN, END)
    print(f"failover: wrote {os.path.join(out, 'failover.json')}, failover.png, REPORT.md section")

if __name__ == "__main__":
    main()
