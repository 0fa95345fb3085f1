#!/usr/bin/env python3
"""The Linux peers section of REPORT.md: every Linux configuration pktbench
measured (AF_PACKET, PACKET_MMAP, AF_XDP in the best mode the guest kernel
offered, the tuned packet sockets) side by side at each size, the best of
them as a user would pick it (the rows collect.py marks best_linux), and,
when this kernel's rows are in the directory (rtt.json and burst.json of
make bench), the kernel against that best.  Every figure comes from the
directory's JSON files.
Usage: peers_report.py RESULTS_DIR   (writes the section into RESULTS_DIR/REPORT.md)
       peers_report.py --summary OUT.md DIR...   (the section of each DIR, each
       with its NIC and guest kernel, after one table of every DIR's AF_XDP and
       best Linux figures per size: runs of several NICs and kernels side by side)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sections  # noqa: E402

BEGIN, END = "<!-- peers begin -->", "<!-- peers end -->"


def fmt(x, nd=1):
    return "—" if x is None else f"{x:.{nd}f}"


def linux(doc):
    return [r for r in doc["rows"] if r["system"].startswith("linux-")] if doc else []


def by(rows, system):
    return {r["bytes"]: r for r in rows if r["system"] == system}


def setting(r, env=None):
    """The row's mechanism in a few words: AF_XDP's mode, DPDK's poll-mode
    driver, or the settings."""
    if r.get("xdp_mode"):
        return f"AF_XDP {r['xdp_mode']}"
    if r["system"] == "linux-dpdk":
        return f"DPDK {(env or {}).get('dpdk_pmd', '?')}, polling"
    return r.get("config", "defaults")


def title(rows):
    """The section's peers: DPDK named when it ran."""
    dpdk = any(r["system"] == "linux-dpdk" for r in rows)
    return "Linux peers: " + ("DPDK, " if dpdk else "") + "AF_XDP and tuned packet sockets"


def table(rt, br):
    rrows, brows = linux(rt), linux(br)
    systems = list(dict.fromkeys(r["system"] for r in brows + rrows))
    out = ["| bytes | system | settings | rtt median (µs) | p99 | burst Mbit/s | of ceiling | "
           "T1 (insns) | R1 (insns/pkt) | host CPU s/GB |", "|---|---|---|---|---|---|---|---|---|---|"]
    for b in sorted({r["bytes"] for r in rrows + brows}):
        for s in systems:
            r, q = by(rrows, s).get(b), by(brows, s).get(b)
            if not r and not q:
                continue
            best = lambda x: " **best**" if x and x.get("best_linux") else ""  # noqa: E731
            frac = q.get("ceiling_frac") if q else None
            out.append(f"| {b} | {s} | {setting(q or r, (br if q else rt)['env'])} | "
                       f"{fmt(r and r['median_us'])}{best(r)} | "
                       f"{fmt(r and r['p99_us'])} | {fmt(q and q['mbps'])}{best(q)} | "
                       f"{fmt(frac and frac * 100, 0) + ' %' if frac else '—'} | "
                       f"{q['t1_insns'] if q and q.get('t1_insns') is not None else '—'} | "
                       f"{fmt(q and q.get('r1_insns_per_pkt'), 0)} | {fmt(q and q.get('host_cpu_s_per_gb'), 2)} |")
    return out


def best_table(rt, br, krt, kbr):
    out = ["| bytes | best Linux round trip | kernel / it | best Linux burst | kernel / it |",
           "|---|---|---|---|---|"]
    rb = {r["bytes"]: r for r in linux(rt) if r.get("best_linux")}
    bb = {r["bytes"]: r for r in linux(br) if r.get("best_linux")}
    kr, kb = by(krt["rows"] if krt else [], "kernel"), by(kbr["rows"] if kbr else [], "kernel")
    for b in sorted(set(rb) | set(bb)):
        r, q = rb.get(b), bb.get(b)
        rr = kr[b]["median_us"] / r["median_us"] if r and b in kr else None
        qq = kb[b]["mbps"] / q["mbps"] if q and b in kb else None
        out.append(f"| {b} | {r['system'] + ' ' + fmt(r['median_us']) + ' µs' if r else '—'} | "
                   f"{fmt(rr, 2) + 'x' if rr else '—'} | "
                   f"{q['system'] + ' ' + fmt(q['mbps']) + ' Mbit/s' if q else '—'} | "
                   f"{fmt(qq, 2) + 'x' if qq else '—'} |")
    return out


def section(d):
    rt = sections.load(os.path.join(d, "linux-rtt.json"))
    br = sections.load(os.path.join(d, "linux-burst.json"))
    if not rt and not br:
        return None
    env = (br or rt)["env"]
    krt, kbr = sections.load(os.path.join(d, "rtt.json")), sections.load(os.path.join(d, "burst.json"))
    skipped = sorted(set((rt or {}).get("env", {}).get("skipped", []) + (br or {}).get("env", {}).get("skipped", [])))
    out = [BEGIN, f"## {title(linux(rt) + linux(br))} ({env.get('nic', '?')})", "",
           f"Guest kernel {env.get('guest_kernel', '?')}, interrupt throttle rate "
           f"{env.get('itr', 'default')}; {env.get('boots', '?')} boot pairs per variant, medians of "
           "the pooled samples. Settings: each variant's own (pktbench's PORT line). **best** marks "
           "the Linux configuration a user would pick at that size: the least median round trip, "
           "the most burst Mbit/s.", ""]
    out += table(rt, br) + [""]
    out += ["Best Linux per size" + (" against this kernel (kernel / best: below 1 for round "
                                     "trips and above 1 for bursts means the kernel is better)"
                                     if krt or kbr else "") + ":", ""]
    out += best_table(rt, br, krt, kbr) + [""]
    if skipped:
        out += ["- Not measured: " + "; ".join(skipped) + ". Without XDP multi-buffer a frame "
                "must fit one 4 KiB UMEM chunk less the 256-byte XDP headroom (and, for native XDP "
                "on virtio-net, an MTU of 3500 that the driver accepts).", ""]
    if env.get("dpdk"):
        out += [f"- linux-dpdk: {env['dpdk']}.", ""]
    if any(r["system"] == "linux-mmap-tuned" for r in linux(rt) + linux(br)):
        out += ["- linux-mmap-tuned receives through a TPACKET_V3 ring: a block reaches user space when "
                "full or when its retire timer (1 ms, in jiffies) fires, which sets its round trip; "
                "it is there for bursts."]
    out += [END, ""]
    return "\n".join(out)


def summary(dirs):
    """One table over several runs: per run and size, AF_XDP's mode and
    figures and the best Linux configuration."""
    out = ["# Linux peers: DPDK, AF_XDP and tuned packet sockets, run by run", "",
           "Written by `tools/bench/peers_report.py --summary` from the JSON files beside each "
           "section; each run measured its own variants in the same boot pairs. Where a run's "
           "directory also holds this kernel's rows (`kernel-*.json`, `ceiling.json`, merged into "
           "`rtt.json` and `burst.json` with its own REPORT.md by report.py), they were measured "
           "by kernelnet.py as a separate step, as `make bench` does; a run without a ceiling of "
           "its own names the one its fractions use in `env.ceiling_from`.", "",
           "| run | NIC | guest kernel | bytes | AF_XDP mode | AF_XDP rtt (µs) | AF_XDP burst (Mbit/s) | "
           "DPDK rtt (µs) | DPDK burst (Mbit/s) | best rtt | best burst |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for d in dirs:
        rt = sections.load(os.path.join(d, "linux-rtt.json"))
        br = sections.load(os.path.join(d, "linux-burst.json"))
        if not rt or not br:
            continue
        env = br["env"]
        for b in sorted({r["bytes"] for r in rt["rows"] + br["rows"]}):
            xr = [r for r in rt["rows"] if r["bytes"] == b and r["system"].startswith("linux-afxdp")]
            xb = [r for r in br["rows"] if r["bytes"] == b and r["system"].startswith("linux-afxdp")]
            best = lambda rows: next((r for r in rows if r["bytes"] == b and r.get("best_linux")), None)  # noqa: E731
            rb, bb = best(rt["rows"]), best(br["rows"])
            dr, db = by(rt["rows"], "linux-dpdk").get(b), by(br["rows"], "linux-dpdk").get(b)
            out.append(f"| {os.path.basename(d.rstrip('/'))} | {env.get('nic')} | {env.get('guest_kernel', '?')} | {b} | "
                       + (" / ".join(f"{r['system'][len('linux-'):]} {r.get('xdp_mode', '?')}" for r in xb) or "—")
                       + " | " + (" / ".join(fmt(r["median_us"]) for r in xr) or "—")
                       + " | " + (" / ".join(fmt(r["mbps"]) for r in xb) or "—")
                       + f" | {fmt(dr and dr['median_us'])} | {fmt(db and db['mbps'])}"
                       + f" | {rb['system'] + ' ' + fmt(rb['median_us']) if rb else '—'}"
                       + f" | {bb['system'] + ' ' + fmt(bb['mbps']) if bb else '—'} |")
    out.append("")
    for d in dirs:
        text = section(d)
        if text:
            out += [text.replace("## Linux peers", f"## {os.path.basename(d.rstrip('/'))}: Linux peers", 1)]
    return "\n".join(out)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--summary":
        with open(sys.argv[2], "w") as f:
            f.write(summary(sys.argv[3:]))
        print(f"peers_report: wrote {sys.argv[2]}")
        return
    d = sys.argv[1]
    text = section(d)
    if text is None:
        sys.exit(f"peers_report: no linux-rtt.json or linux-burst.json in {d}")
    sections.write_section(d, text, BEGIN, END)
    print(f"peers_report: wrote the Linux peers section of {d}/REPORT.md")


if __name__ == "__main__":
    main()
