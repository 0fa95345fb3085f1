#!/usr/bin/env python3
"""The interleaved-pairs section of REPORT.md (tools/bench/abab.py): per test,
peer and size the kernel / peer ratio with its bootstrap 95 % interval over
the kept rounds, the rounds dropped and why, and every burst and stream as a
fraction of the link's neutral ceiling (measured in every round: the median
of the per-round fractions with its bootstrap 95 % interval; a run from
before that has one ceiling, and its streams alone as fractions of it).
Every figure comes from the directory's abab.json and stream.json.
Usage: abab_report.py RESULTS_DIR   (writes the section into RESULTS_DIR/REPORT.md)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sections  # noqa: E402

BEGIN, END = "<!-- abab begin -->", "<!-- abab end -->"


def fmt(x, nd=2):
    return "—" if x is None else f"{x:.{nd}f}"


def verdict(ci):
    if not ci:
        return "no kept round"
    if ci[0] > 1:
        return "kernel faster"
    if ci[1] < 1:
        return "peer faster"
    return "not separated"


def ratio_table(rows):
    out = ["| test | bytes | peer | rounds | kernel Mbit/s | peer Mbit/s | kernel / peer | 95 % interval | reads | "
           "each kept round |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ci = r.get("ratio_ci95")
        out.append(f"| {r['test']} | {r['bytes']} | {r['peer']} | {r['pairs']} | {fmt(r['kernel_mbps'], 1)} | "
                   f"{fmt(r['peer_mbps'], 1)} | {fmt(r['ratio'], 3)} | "
                   f"{'[' + fmt(ci[0], 3) + ', ' + fmt(ci[1], 3) + ']' if ci else '—'} | {verdict(ci)} | "
                   f"{' '.join(fmt(x) for x in r.get('ratios', [])) or '—'} |")
    return out


def dropped_lines(pairs, env):
    out = []
    seen = {}
    for g in pairs:
        if g["dropped"]:
            seen.setdefault((g["test"], g["round"]), []).append(g)
    cdropped = {rnd for (test, rnd) in seen if test == "ceiling"}
    for (test, rnd), gs in sorted(seen.items()):
        bad = [g for g in gs if g["disturbed"] or g.get("failed")]
        if not bad and rnd in cdropped:
            out.append(f"- {test} round {rnd}: dropped with its round's ceiling")
            continue
        worst = max(bad, key=lambda g: g["other_cores"])
        fails = sorted({f"{g['system']} failed ({g['failed'][-80:]})" for g in bad if g.get("failed")})
        whose = f"the {worst['system']} pair" + (f" of the {worst['peer']} comparison" if worst.get("peer") else "")
        then = "; its tests were not run" if test == "ceiling" else ""
        out.append(f"- {test} round {rnd}: {len({(g['system'], g.get('peer')) for g in bad})} of "
                   f"{len({(g['system'], g.get('peer')) for g in gs})} pairs disturbed or failed; other processes "
                   f"up to {worst['other_cores']} cores ({whose}), steal up to "
                   f"{max(g['steal_frac'] for g in gs)}, load up to {max(g['load1'] for g in gs)}"
                   + ("; " + "; ".join(fails) if fails else "") + then)
    if not out:
        out = ["- none"]
    return [f"Rounds dropped (a pair that failed, or with steal above {env.get('max_steal')} or other "
            f"processes above {env.get('max_other_cores')} cores, drops its round for every system):", ""] + out


def stream_table(rows):
    out = ["| bytes | system | pairs | Mbit/s | neutral ceiling | of it | kernel loop | DPDK txonly/rxonly |",
           "|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["bytes"], r["system"] != "kernel", r["system"])):
        out.append(f"| {r['bytes']} | {r['system']} | {r['pairs']} | {fmt(r['mbps'], 1)} | "
                   f"{fmt(r['ceiling_mbps'], 1)} | {r['ceiling_frac'] * 100:.1f} % | "
                   f"{fmt(r.get('ceiling_loop_mbps'), 1)} | {fmt(r.get('ceiling_dpdk_mbps'), 1)} |")
    return out


def frac_table(rows):
    out = ["| test | bytes | system | rounds | Mbit/s | neutral ceiling | of it | 95 % interval | kernel loop | "
           "DPDK txonly/rxonly | each kept round |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["test"] != "burst", r["bytes"], r["system"] != "kernel", r["system"])):
        ci = r.get("ceiling_frac_ci95")
        pct = lambda x: "—" if x is None else f"{x * 100:.1f} %"  # noqa: E731
        out.append(f"| {r['test']} | {r['bytes']} | {r['system']} | {r['pairs']} | {fmt(r.get('mbps'), 1)} | "
                   f"{fmt(r.get('ceiling_mbps'), 1)} | {pct(r.get('ceiling_frac'))} | "
                   f"{'[' + pct(ci[0]) + ', ' + pct(ci[1]) + ']' if ci else '—'} | "
                   f"{fmt(r.get('ceiling_loop_mbps'), 1)} | {fmt(r.get('ceiling_dpdk_mbps'), 1)} | "
                   f"{' '.join(f'{x * 100:.0f}' for x in r.get('ceiling_fracs', [])) or '—'} |")
    return out


def section(d, into=None):
    """The section of d's run; into: the report it goes into, when not d's
    own (its first paragraph then says where the files are)."""
    doc = sections.load(os.path.join(d, "abab.json"))
    if not doc:
        return None
    env = doc["env"]
    pairs = [r for r in doc["rows"] if r["kind"] == "pair"]
    ratios = [r for r in doc["rows"] if r["kind"] == "ratio"]
    fracs = [r for r in doc["rows"] if r["kind"] == "frac"]
    kept = len({(g["test"], g["round"]) for g in pairs if not g["dropped"] and g["test"] != "ceiling"})
    # What each runner times a pair (kernelnet.py burst_pair; bench.sh's LB_RUNS, abab.py linux()).
    kb, lb, ls = (3, 3, 1) if env.get("quick") else (5, 20, 5)
    # Runs before the streams were evened out say nothing: Linux's 5 (quick: 1) after a warm-up.
    ls, lw = env.get("linux_streams", ls), env.get("linux_stream_warmups", 1)
    lstreams = (f"Linux's {ls} after a warm-up" if lw else
                f"Linux's {ls} a size with no warm-up, every size in one boot pair")
    out = [BEGIN, f"## Interleaved boot pairs: the kernel against each peer ({env.get('nic')})", ""]
    if into:
        rel = os.path.relpath(d, into)
        out += [f"Files: `{rel}/abab.json` (every pair, ratio and fraction), `{rel}/stream.json`, "
                f"`{rel}/REPORT.md`.", ""]
    out += [
           f"{env.get('rounds_run')} rounds run ({env.get('rounds_wanted')} kept per test wanted)"
           f"{' (a smoke: few repetitions a pair)' if env.get('quick') else ''}, {env.get('minutes')} min; "
           f"per round and test, for each peer a kernel pair and right after it the peer's pair. A pair's "
           f"figure is the median of its bursts (128 packets, one reply; the kernel's runner times {kb} a "
           f"size, Linux's {lb}) or streams (4096 packets, 64 a batch, 2 batches unacknowledged at most, a "
           "cumulative acknowledgement per batch, every byte checked, timed at the receiver after the "
           f"first batch; the kernel's runner gives one stream a boot pair, {lstreams}). "
           "The ratio is kernel / peer in each kept round; the table gives their median "
           f"and its bootstrap 95 % interval ({env.get('bootstrap')}). An interval above 1 means the kernel "
           "is faster, below 1 the peer, across 1 that this run cannot separate them. "
           f"{kept} test rounds kept. Host: {env.get('cpu')}, QEMU {env.get('qemu')}, "
           f"{env.get('host_setting', 'host defaults')}.", ""]
    if not env.get("reanalysed_from") and (env.get("max_other_cores", 0) > 0.25 or env.get("max_steal", 0) > 0.05):
        out += [f"This run tolerated other processes up to {env.get('max_other_cores')} cores and steal up to "
                f"{env.get('max_steal')} (`LB_MAX_OTHER`, `ABAB_MAX_STEAL` above the defaults of 0.25 and 0.05): "
                "rounds that the defaults would drop are kept, so the host's load may have disturbed these "
                "figures; read them with the load and steal of each pair in `abab.json`.", ""]
    if env.get("reanalysed_from"):
        out += [f"These are the pairs of the run in `{env['reanalysed_from']}`, judged again "
                f"(`abab.py --reanalyse`) with other processes tolerated up to {env.get('max_other_cores')} cores "
                f"and steal up to {env.get('max_steal')}: rounds that run's own rule dropped are kept here, "
                "so the host's load disturbed these figures; read them with the load and steal of each pair "
                "in `abab.json`.", ""]
    out += ratio_table(ratios) + [""]
    skipped = sorted({(g["system"], g["bytes"], g["skipped"]) for g in pairs if g.get("skipped")})
    if skipped:
        out += ["Not run (no row, no ratio): " + "; ".join(f"{s} at {b} bytes, {why}" for s, b, why in skipped)
                + ". AF_XDP without multi-buffer carries a frame in one 4 KiB UMEM chunk less its headroom.", ""]
    out += dropped_lines(pairs, env) + [""]
    sdoc = sections.load(os.path.join(d, "stream.json"))
    if fracs:
        out += ["Every burst and stream as a fraction of the link's neutral ceiling, measured in every round "
                "before its tests (a ceiling pair disturbed or failed drops the round for every test): the higher "
                "of the kernel's ceiling loop and DPDK's txonly/rxonly"
                f"{'' if any(r.get('ceiling_dpdk_mbps') for r in fracs) else ' (not run: no dpdk peer)'}, "
                "both of which only feed and drain the rings. Per round, a system's figure (the kernel's: "
                "the median of its pairs in the round, one before each peer) over that round's ceiling; the "
                "table gives the median of these fractions over the kept rounds, its bootstrap 95 % interval, "
                "the median ceilings, and each kept round's fraction in per cent:", ""]
        out += frac_table(fracs) + [""]
    elif sdoc:
        out += ["Streams as a fraction of the link's neutral ceiling, measured in this run: the higher of "
                "the kernel's ceiling loop (`ceiling.json`) and DPDK's txonly/rxonly "
                "(`linux-dpdk-ceiling.json`), both of which only feed and drain the rings:", ""]
        out += stream_table(sdoc["rows"]) + [""]
    out += [END, ""]
    return "\n".join(out)


def write(d, into=None):
    """The section into d/REPORT.md, or into INTO/REPORT.md (make bench's
    report of the whole run), saying where the files are."""
    text = section(d, into)
    if text:
        sections.write_section(into or d, text, BEGIN, END)
    return text


def main():
    """abab_report.py ABAB_DIR [REPORT_DIR]"""
    into = sys.argv[2] if len(sys.argv) > 2 else None
    if write(sys.argv[1], into) is None:
        sys.exit(f"abab_report: no abab.json in {sys.argv[1]}")
    print(f"abab_report: wrote the interleaved pairs section of {into or sys.argv[1]}/REPORT.md")


if __name__ == "__main__":
    main()
