#!/usr/bin/env python3
"""REPORT.md's file-service figures of the seed papers (make bench-fs-paper,
issue 26): each table with the paper's numbers (tools/bench/papers.py, RI2N
and SRFS) beside ours, read from the committed JSON:

  RI2N/DRV Table 2  sequential write, MB/s and the client's CPU %, 8 and
                    32 KiB writes, 1 and 2 links (fs-paper.json, seq_write)
  RI2N/DRV Table 4  writes through a 10 s cut of one of two links: before,
                    during, after (fs-paper.json, write_through_cut)
  SRFS Table 3      a netperf-like stream, 128 KiB window: round trip,
                    window / round trip, measured, measured / theoretical
                    (fs-paper.json, tcp_stream)
  SRFS Fig. 3 and the B tables  the four patterns with 4.0 ms added, I/O
                    lengths from 8 KiB (kernel-fs-srfsb.json,
                    linux-fs-srfsb.json)

A part whose JSON is missing says so. Run by tools/bench/fs_paper.sh and by
papers_report.py.

Usage: fs_paper_report.py OUTDIR
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sections  # noqa: E402
from papers import RI2N, SRFS  # noqa: E402

BEGIN, END = "<!-- fs-paper: begin -->", "<!-- fs-paper: end -->"
PATTERNS = ("create_write", "overwrite", "read_after_mount", "read_after_write")
LINK_MBS = 12.5  # one link at 100 Mbit/s, MB/s
OUT_DIR = []  # the results directory being reported (main sets it)


def fmt(x, nd=1):
    return "—" if x is None else f"{x:.{nd}f}"


def size_label(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def one(rows, **match):
    got = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    return got[0] if got else None


def linux_row(rows, op, n, noac):
    """The first Linux row of op at I/O length n, of a mount with noac or
    without; None when there is none."""
    return next((r for r in rows if r["system"] != "kernel" and r["op"] == op and r["io_bytes"] == n
                 and bool(r.get("noac")) == noac), None)


def linux_name(r):
    return "Linux NFSv3" if r["links"] == 1 else "Linux NFSv3, balance-rr bond"


def table2(doc):
    rows = [r for r in doc["rows"] if r["op"] == "seq_write" and r.get("clock") == "real"]
    if not rows:
        return ["RI2N/DRV Table 2: no seq_write rows in fs-paper.json (make bench-fs-paper FSP_PARTS=seq)."]
    env = doc["env"]
    t2 = RI2N["table2"]
    out = ["### RI2N/DRV Table 2: NFS sequential write, MB/s and client %CPU", "",
           f"The paper: bonnie++ writes a {RI2N['file_bytes'] / 1e9:.1f} GB file over NFSv3/TCP, rwsize 8 and 32 KB, "
           "GbE links (2 × Xeon 5110, Linux 2.6.22). Here: a new file of "
           f"{env['seq_bytes'] >> 20} MiB ({env['scale']}) written in writes of 8 KiB and 32 KiB, every NIC paced "
           f"at {rows[0]['link_mbps']} Mbit/s ({LINK_MBS} MB/s a link), the median of {rows[0]['runs']} runs per cell "
           "(the systems' boot pairs interleaved), every byte read back and compared afterwards (verified). "
           "CPU % is the client's busy time over the write divided by the write's elapsed time (this kernel: "
           "sysinfo idle TSC; Linux: /proc/timer_list idle and iowait, one vCPU each, the host's TCG "
           "clock), as bonnie++'s %CPU is the client's.", "",
           "| system | links | 8 KiB MB/s | 8 KiB CPU % | 32 KiB MB/s | 32 KiB CPU % | verified |",
           "|---|---|---|---|---|---|---|"]
    for name, links in (("GbE", 1), ("LCB", 2), ("RI2N/DRV", 2), ("10GbE", 1)):
        p = t2[name]
        out.append(f"| paper: {name} | {links} | {p[8192][0]} | {p[8192][1]} | {p[32768][0]} | {p[32768][1]} | — |")
    for system in ("kernel", "linux-nfs3-tcp"):
        for links in (1, 2):
            a, b = one(rows, system=system, links=links, io_bytes=8192), one(rows, system=system, links=links,
                                                                            io_bytes=32768)
            if not a and not b:
                continue
            name = ("this kernel (fsd/fsbench" + (", striped)" if links > 1 else ")")) if system == "kernel" \
                else linux_name(a or b)
            ver = all(r["verified"] for r in (a, b) if r)
            out.append(f"| {name} | {links} | {fmt(a and a['mb_s'], 2)} | {fmt(a and a['cpu_pct_client'])} | "
                       f"{fmt(b and b['mb_s'], 2)} | {fmt(b and b['cpu_pct_client'])} | {'yes' if ver else 'NO'} |")
    # the two-link gain, as the paper gives it (LCB and RI2N/DRV over GbE: +22 % to +64 %)
    gains = []
    for system, label in (("kernel", "this kernel"), ("linux-nfs3-tcp", "Linux NFS (bond)")):
        for io in (8192, 32768):
            one_l, two_l = one(rows, system=system, links=1, io_bytes=io), one(rows, system=system, links=2,
                                                                             io_bytes=io)
            if one_l and two_l and one_l["mb_s"]:
                gains.append(f"{label} {io >> 10} KiB {100 * (two_l['mb_s'] / one_l['mb_s'] - 1):+.0f} %")
    lo, hi = RI2N["gain_over_gbe"]
    out += ["", f"Two links over one: the paper +{lo * 100:.0f} % to +{hi * 100:.0f} % (LCB and RI2N/DRV over GbE); "
            f"here {'; '.join(gains) or '—'}.", ""]
    ic = [r for r in doc["rows"] if r["op"] == "seq_write" and r.get("clock") == "icount"]
    if ic:
        out += ["CPU work of the same write under `-icount shift=0` (one link, paced alike, one run per system: "
                "a busy guest ns is one instruction; busy instructions per byte written, each end's whole "
                "machine, kernel and program):", "",
                "| system | write length | MB/s (guest clock) | client insns/byte | server insns/byte | "
                "client CPU % |", "|---|---|---|---|---|---|"]
        for r in sorted(ic, key=lambda r: (r["system"] != "kernel", r["io_bytes"])):
            out.append(f"| {'this kernel' if r['system'] == 'kernel' else 'Linux NFSv3'} | {r['io_bytes'] >> 10} KiB "
                       f"| {fmt(r['mb_s'], 2)} | {fmt(r['busy_per_byte_client'], 2)} | "
                       f"{fmt(r['busy_per_byte_server'], 2)} | {fmt(r['cpu_pct_client'])} |")
        for io in (8192, 32768):
            k, lx = one(ic, system="kernel", io_bytes=io), one(ic, system="linux-nfs3-tcp", io_bytes=io)
            if k and lx and lx["busy_per_byte_client"] and lx.get("busy_per_byte_server"):
                out.append(f"\n{io >> 10} KiB: this kernel's client {k['busy_per_byte_client'] / lx['busy_per_byte_client']:.2f}x "
                           f"Linux's instructions per byte, its server "
                           f"{k['busy_per_byte_server'] / lx['busy_per_byte_server']:.2f}x." if k.get('busy_per_byte_server')
                           else "")
        out.append("")
    ic8, ic32 = one(ic, system="kernel", io_bytes=8192), one(ic, system="kernel", io_bytes=32768)
    cpu_hint = ""
    kc = sections.load(os.path.join(OUT_DIR[0], "kernel-fs-cpu.json")) if OUT_DIR else None
    if kc:
        paced = one(kc["rows"], mode="cpu", op="cpu_write", io_bytes=65536)
        unpaced = one(kc["rows"], mode="unpaced", op="cpu_write", io_bytes=65536)
        if paced and unpaced and paced["mbps"] < paced.get("offered_mbps", 0):
            cpu_hint = (f" (kernel-fs-cpu.json shows the same with 64 KiB writes: {fmt(paced['mbps'])} Mbit/s "
                        f"against {paced['offered_mbps']} offered on paced links, {fmt(unpaced['mbps'])} unpaced, so "
                        "the pacer's timing is the candidate)")
    k8, k32 = one(rows, system="kernel", links=1, io_bytes=8192), one(rows, system="kernel", links=1, io_bytes=32768)
    k8b, k32b = one(rows, system="kernel", links=2, io_bytes=8192), one(rows, system="kernel", links=2,
                                                                       io_bytes=32768)
    l32b = one(rows, system="linux-nfs3-tcp", links=2, io_bytes=32768)
    why = ["Causes of the differences:",
           f"- **Scale.** The paper's links are GbE (about 110 MB/s each); ours are paced at {LINK_MBS} MB/s, so "
           "the paper's MB/s are an order of magnitude above ours by construction; the shares of the link are "
           "what compare (GbE 107.9-109.8 MB/s is 86-88 % of 125 MB/s).",
           "- **One write at a time.** This kernel's client has no write-behind: each fs_write returns only once "
           "the server holds the bytes, so a write of 8 KiB (inline in one control message, at most small_max "
           "8896 bytes) costs one round trip, and one of 32 KiB two (the go-ahead, then the data and its "
           "trailer). Its throughput is the write length over that time, not the link's rate"
           + (f": {fmt(k8 and k8['mb_s'], 2)} and {fmt(k32 and k32['mb_s'], 2)} MB/s on one link" if k8 and k32
              else "") +
           ", and a second link does not raise it"
           + (f" ({fmt(k8b and k8b['mb_s'], 2)} and {fmt(k32b and k32b['mb_s'], 2)} MB/s on two)" if k8b and k32b
              else "") +
           ". Linux's NFS client writes into its page cache and sends WRITE RPCs of wsize behind it, several in "
           "flight, until fsync: the NFS behaviour the paper measured.",
           "- **CPU %.** The paper's %CPU is of a 1.6 GHz Xeon at GbE rates (7-16 %); ours is of a TCG vCPU "
           "at a tenth of the rate, where every guest instruction costs host time, so the shares are not the "
           "paper's; between the two systems here they compare (same host, same interleaved runs).",
           ] + ([f"- **32 KiB slower than 8 KiB in this kernel, the CPU idle.** Under -icount its 32 KiB writes "
                 f"moved {fmt(ic32['mb_s'], 2)} MB/s with the client busy {fmt(ic32['cpu_pct_client'])} % of the "
                 f"time (8 KiB: {fmt(ic8['mb_s'], 2)} MB/s, {fmt(ic8['cpu_pct_client'])} %): the extra time of "
                 "the second round trip is spent waiting, not working" + cpu_hint + "; not investigated here."]
                if ic8 and ic32 and ic32["mb_s"] < ic8["mb_s"] else []) + ([f"- **Bond.** balance-rr with TCP reorders segments across the two links (the paper's point "
                 f"about LCB); here the bond gives {fmt(l32b['mb_s'], 2)} MB/s at 32 KiB."] if l32b else [])
    return out + why


def table4(doc):
    rows = [r for r in doc["rows"] if r["op"] == "write_through_cut"]
    if not rows:
        return ["RI2N/DRV Table 4: no write_through_cut rows in fs-paper.json (make bench-fs-paper "
                "FSP_PARTS=wcut)."]
    env = doc["env"]
    t4 = RI2N["table4"]
    out = ["### RI2N/DRV Table 4: writes through a 10 s failure of one of two links", "",
           f"The paper cut one of two GbE links physically while the NFS client kept writing, and restored it "
           f"{RI2N['table4_cut_s']} s later (rwsize 32 KB). Here: 32 KiB writes through a 32 MiB file, over and "
           f"over, for {env['wcut_secs']} s; link 0 cut {env['cut_at_s']:.0f} s after the start and restored "
           f"{env['cut_for_s']:.0f} s later; progress every 4 MiB (Linux: after fsync), every byte of the file "
           f"compared afterwards. Two links at {rows[0]['link_mbps']} Mbit/s each ({2 * LINK_MBS} MB/s, one link "
           f"{LINK_MBS} MB/s). Medians of {rows[0]['runs']} runs, the systems interleaved. Cut times: "
           f"{env['cut_times']}.", "",
           "| system | before MB/s | during MB/s | after MB/s | longest stall s | cut at s | restored at s | "
           "lost bytes | corrupt bytes | runs |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name, (b, d) in t4.items():
        out.append(f"| paper: {name} (GbE × 2) | {b} | {d} | — | — | — | — | 0 (\"no stop\") | — | — |")
    for r in rows:
        name = "this kernel (striped reliable channel)" if r["system"] == "kernel" else \
            "Linux NFSv3, balance-rr bond, miimon 100 ms"
        out.append(f"| {name} | {fmt(r['before_mb_s'], 2)} | {fmt(r['during_mb_s'], 2)} | {fmt(r['after_mb_s'], 2)} | "
                   f"{fmt(r['longest_stall_s'], 2)} | {fmt(r['cut_s'], 2)} | {fmt(r['restore_s'], 2)} | "
                   f"{r['lost']} | {r['corrupt']} | {r['runs']} |")
    k = one(rows, system="kernel")
    lx = next((r for r in rows if r["system"] != "kernel"), None)
    out += ["", "Causes of the differences:",
            f"- **Scale and the writer.** Before the cut the paper's writers filled most of two GbE links (157-180 "
            f"MB/s); ours cannot fill two {LINK_MBS} MB/s links with one 32 KiB write at a time (this kernel, "
            "each a round trip or two) or with fsync every 4 MiB (Linux), so the paper's drop to one link "
            "(to 108.7-109.0 MB/s, 61-69 %) shows here only as far as the writer used the second link"
            + (f": this kernel {fmt(k['before_mb_s'], 2)} → {fmt(k['during_mb_s'], 2)} MB/s" if k else "")
            + (f", Linux {fmt(lx['before_mb_s'], 2)} → {fmt(lx['during_mb_s'], 2)} MB/s" if lx else "") + ".",
            "- **Both continue.** As in the paper, neither system stopped or lost data: lost and corrupt are "
            "counted over the whole file after the run. The longest stall is the longest time between two "
            "progress marks (4 MiB apart): the failure's cost beyond the lost link's share."]
    if k and k.get("link_deaths"):
        out.append(f"- **This kernel's link state.** Its first data channel declared links dead "
                   f"{'/'.join(map(str, k['link_deaths']))} times in the three runs and recovered them as "
                   f"often ({'/'.join(map(str, k['retransmits']))} retransmissions), against one real cut "
                   "each: most deaths are false (a diagnostic run of the same cell, its console logs in "
                   "fs-paper-diag/ (fs_paper.py wcut kernel --keep): 36 of 39 "
                   "deaths 'silent: heartbeats missed', on both links, before the cut as after, each "
                   "recovered within milliseconds). With 10 ms heartbeats a link is silent after about 30 ms "
                   "without a frame, and a TCG vCPU on a host running other VMs (load above the two cores "
                   "here) is descheduled for longer than that; each false death requeues that link's frames "
                   "for the other. This costs the kernel throughput before, during and after the cut alike, "
                   "Linux's bond (carrier and miimon, no heartbeat) not at all."
                   + (f" After the restore it wrote {fmt(k['after_mb_s'], 2)} MB/s, below its "
                      f"{fmt(k['before_mb_s'], 2)} before the cut." if k.get("after_mb_s") is not None
                      and k.get("before_mb_s") and k["after_mb_s"] < 0.9 * k["before_mb_s"] else ""))
    return out


def table3(doc):
    rows = [r for r in doc["rows"] if r["op"] == "tcp_stream"]
    if not rows:
        return ["SRFS Table 3: no tcp_stream rows in fs-paper.json (make bench-fs-paper FSP_PARTS=stream)."]
    t3 = SRFS["table3"]
    w = t3["window_bytes"]
    delays = sorted({r["rtt_added_ms"] for r in rows})
    out = ["### SRFS on Ether Table 3: a netperf-like stream against window / round trip", "",
           "The paper: netperf -s 131072 (TCP window 128 KB) over a GbE path of 3.3 ms round trip (direct) and "
           "4.0 ms (VPN); theoretical a = window / RTT. Here: one link, unpaced (no pacer sets the rate), a "
           "Linux router guest adding the delay with netem (none in the direct cell). Linux: one "
           "TCP connection, SO_SNDBUF = SO_RCVBUF = 131072 (netperf -s), 64 MiB in writes of 512 KiB (netperf "
           "-M 524288), every byte compared at the sink. This kernel: user/stream.c over a reliable channel, "
           "8 KiB packets in batches of 4, 4 batches unacknowledged: 128 KiB in flight, every byte compared. "
           "RTT: each system's own round trip over the same path (Linux: its ping average, 10 pings; this "
           "kernel: user/pingpong.c, the median of 20 round trips of 64 bytes), the router's and TCG's own "
           "delay included; theoretical = 128 KiB / that RTT. Medians of "
           f"{max(r['runs'] for r in rows)} runs.", "",
           "| path | system | RTT ms | window/RTT Mbit/s | measured Mbit/s | measured / theoretical |",
           "|---|---|---|---|---|---|"]
    for key, name in (("direct", "paper: direct"), ("vpn", "paper: VPN")):
        p = t3[key]
        out.append(f"| {name} | Solaris 8 TCP (netperf) | {p['rtt_ms']} | {p['theory_mbps']} | {p['netperf_mbps']} | "
                   f"{p['share'] * 100:.1f} % |")
    rtts = [r for r in doc["rows"] if r["op"] == "rtt"]
    for d in delays:
        for system, label in (("kernel", "this kernel, reliable channel"), ("linux-tcp", "Linux TCP")):
            r = one(rows, system=system, rtt_added_ms=d)
            if not r:
                continue
            if system == "kernel":
                kr = one(rtts, system="kernel", rtt_added_ms=d)
                rtt = kr["median_ms"] if kr else None
            else:
                rtt = r.get("ping_avg_ms")
            theory = w * 8 / (rtt / 1e3) / 1e6 if rtt else None
            share = f"{100 * r['mbps'] / theory:.1f} %" if theory else "—"
            out.append(f"| here: +{d} ms | {label} | {fmt(rtt, 2)} | {fmt(theory)} | {fmt(r['mbps'])} | {share} |")
    def share_of(system, d):
        r = one(rows, system=system, rtt_added_ms=d)
        if system == "kernel":
            rtt = (one(rtts, system="kernel", rtt_added_ms=d) or {}).get("median_ms")
        else:
            rtt = (r or {}).get("ping_avg_ms")
        theory = w * 8 / (rtt / 1e3) / 1e6 if r and rtt else None
        return (r and r["mbps"]), (100 * r["mbps"] / theory if theory else None)

    direct = [(lab, m, f"{sh:.1f} % of theory" if sh is not None else "—")
              for lab, (m, sh) in (("this kernel", share_of("kernel", 0.0)), ("Linux", share_of("linux-tcp", 0.0)))]
    delayed = []
    for d in [x for x in delays if x]:
        km, ks = share_of("kernel", d)
        lm, ls = share_of("linux-tcp", d)
        delayed.append(f"+{d} ms: this kernel {fmt(km)} Mbit/s ({fmt(ks)} % of its theory), Linux {fmt(lm)} "
                       f"({fmt(ls)} %)." )
    if any((share_of("linux-tcp", d)[1] or 0) > 100 for d in delays if d):
        delayed.append("Linux above 100 % means its ping average (taken while the host ran other VMs) "
                       "overstates the round trip its stream saw, so its theory here is a lower bound.")
    if all((share_of("kernel", d)[1] or 100) < 60 for d in delays if d):
        delayed.append("This kernel stays well below its window / RTT: the window is not what limits it.")
    lx_rtt = {d: (one(rows, system="linux-tcp", rtt_added_ms=d) or {}).get("ping_avg_ms") for d in delays}
    k_rtt = {d: (one(rtts, system="kernel", rtt_added_ms=d) or {}).get("median_ms") for d in delays}
    out += ["", "Causes of the differences:",
            "- **The paths' round trips.** The paper added nothing: its 3.3 and 4.0 ms were the measured WAN "
            "round trips. Ours add 3.3 and 4.0 ms to a path whose own round trip under TCG is "
            f"{fmt(lx_rtt.get(0.0), 2)} ms for Linux's ping and {fmt(k_rtt.get(0.0), 2)} ms for this kernel's "
            "pingpong (direct), and more through the router guest, so the RTTs and with them the theoretical "
            "figures are the systems' own, not the paper's; on a host shared with other VMs the RTTs and "
            "rates vary from run to run (each row's runs are in fs-paper.json).",
            "- **Direct.** The paper's theory (310 Mbit/s) was far below its GbE link, so netperf met the "
            "window (81.5 %). Here nothing paces the link and neither system meets window / RTT: "
            + "; ".join(f"{lab} {fmt(m)} Mbit/s ({sh})" for lab, m, sh in direct)
            + ". Both are bound by their emulated CPUs, the kernel's stream (no socket layer, one check "
            "of every byte) at the higher rate.",
            "- **With delay.** " + " ".join(delayed) +
            " Linux doubles SO_SNDBUF (effective send buffer "
            f"{next((r['sndbuf_eff'] for r in rows if r.get('sndbuf_eff')), '—')} bytes) and advertises "
            "about half its doubled receive buffer, so its window is about the 128 KiB asked. This kernel's "
            "is 128 KiB of payload acknowledged per 32 KiB batch, and its server acknowledges a batch only "
            "after checking every byte of it (user/stream.c), which the pingpong round trip leaves out; "
            "this run does not separate that from the router guest's and the host's share."]
    return out


def b_tables(out_dir):
    k = sections.load(os.path.join(out_dir, "kernel-fs-srfsb.json"))
    lx = sections.load(os.path.join(out_dir, "linux-fs-srfsb.json"))
    if not k:
        return ["SRFS Fig. 3 and the B tables: no kernel-fs-srfsb.json (make bench-fs-paper FSP_PARTS=srfsb)."]
    rows = k["rows"] + (lx["rows"] if lx else [])
    delay = next((r["rtt_added_ms"] for r in k["rows"]), None)
    rtt_k = one(k["rows"], op="read_4k_rtt")
    rtt_l = [r for r in rows if r["system"] != "kernel" and r["op"] == "read_4k_rtt"]
    lens = sorted({r["io_bytes"] for r in k["rows"] if r["op"] in PATTERNS})
    bs, bn = SRFS["b_srfs"], SRFS["b_nfs"]
    out = ["### SRFS on Ether Fig. 3 and the B tables: the four patterns, 4.0 ms round trip, from 8 KiB", "",
           "The paper's Fig. 3 plots its B tables (the VPN path: 4.0 ms round trip, GbE, Solaris 8): SRFS "
           "(B-6 to B-9) and NFS mounted with noac (B-2 to B-5), the mean of 3 runs. Here: "
           f"+{delay} ms added by a router guest (netem) on one link paced at 100 Mbit/s; this kernel's "
           "fsd/fsbench, and Linux NFSv3 (rsize = wsize 1 MiB, TCP) with and without noac; medians of "
           f"{k['env'].get('runs')} runs; every read compared. 4 KiB read round trip with the delay: this "
           f"kernel {fmt(rtt_k and rtt_k['median_us'] / 1000, 2)} ms"
           + "".join(f", Linux NFSv3{' with noac' if r.get('noac') else ''} {r['median_us'] / 1000:.2f} ms"
                     for r in rtt_l)
           + ". Mbit/s:", ""]
    lost_paper, lost_here = [], []
    link = k["env"].get("link_mbps") or 100
    for p in PATTERNS:
        out += [f"**{p}**", "",
                "| length | paper SRFS | paper NFS noac | this kernel | Linux NFSv3 | Linux NFSv3 noac |",
                "|---|---|---|---|---|---|"]
        for n in lens:
            kr = one(k["rows"], op=p, io_bytes=n)
            l0, l1 = linux_row(rows, p, n, False), linux_row(rows, p, n, True)
            cache = lambda r: "" if not r or r["mbps"] <= link else " (cache)"  # noqa: E731
            out.append(f"| {size_label(n)} | {fmt(bs[p].get(n), 2)} | {fmt(bn[p].get(n), 2)} | "
                       f"{fmt(kr and kr['mbps'])} | {fmt(l0 and l0['mbps'])}{cache(l0)} | "
                       f"{fmt(l1 and l1['mbps'])}{cache(l1)} |")
            if n in bs[p] and n in bn[p] and bs[p][n] < bn[p][n]:
                lost_paper.append(f"{p} {size_label(n)} ({bs[p][n]:.2f} < {bn[p][n]:.2f})")
            best = max([r["mbps"] for r in (l0, l1) if r and p != "read_after_write"] or [0])
            if kr and best and kr["mbps"] < best:
                lost_here.append(f"{p} {size_label(n)} ({kr['mbps']:.1f} < {best:.1f})")
        out.append("")
    big = max(lens)
    at_big = []
    for p in PATTERNS:
        kr = one(k["rows"], op=p, io_bytes=big)
        l0, l1 = linux_row(rows, p, big, False), linux_row(rows, p, big, True)
        at_big.append((p, kr and kr["mbps"], l0 and l0["mbps"], l1 and l1["mbps"]))
    out += ["Where SRFS lost to NFS in the paper (B tables, lengths both give): " + ("; ".join(lost_paper) or
                                                                                   "nowhere") + ".",
            "Where this kernel lost to the better Linux mount here (read after write left out: Linux's comes "
            "from its client cache, marked (cache) where above the link's rate, which no wire can carry): "
            + ("; ".join(lost_here) or "nowhere") + ".",
            "", "Causes of the differences:",
            "- **Small lengths.** In the paper SRFS lost to NFS at 8 and 64 KiB (SRFS was built for large I/O; "
            "its small I/O went over UDP with the data in the control message, and its read of 8 KiB after a "
            "mount took about 2 s). Here every operation costs at least one round trip of the delayed path "
            f"({fmt(rtt_k and rtt_k['median_us'] / 1000, 2)} ms for this kernel's 4 KiB read), so 8 KiB moves at "
            f"most {fmt(8192 * 8 / (rtt_k['median_us']) if rtt_k else None)} Mbit/s a round trip, and both "
            "systems sit near that bound: this kernel sends up to small_max (8896 bytes) inline in one "
            "control message, larger ones as a go-ahead round trip plus chunks; Linux pays WRITE + COMMIT, "
            "and with noac a GETATTR more per open.",
            "- **Large lengths.** The paper's SRFS rose to 190-207 Mbit/s from 8 MiB (1 MB TCP windows, 8 "
            "streams) while its NFS stayed at 5-15 Mbit/s (Solaris 8, 128 KB window, noac, 32 KB "
            f"transfers). Here, at {size_label(big)}, per pattern this kernel / Linux NFSv3 / with noac: "
            + "; ".join(f"{p} {fmt(a)} / {fmt(b)} / {fmt(c)}" for p, a, b, c in at_big)
            + " Mbit/s, on a 100 Mbit/s link. This kernel fills most of the link (its chunks streamed on "
            "2 channels, a window of 2 chunks each); Linux's NFS, with 1 MiB transfers and a TCP window it "
            "grows itself, does not have the paper's NFS's 13-30 x deficit, but stays well under the link "
            "here: each 1 MiB READ or WRITE is a round trip of the 4 ms path, and its guest's CPU under TCG "
            "is busy (RI2N Table 2's CPU % above); this run does not separate the two.",
            "- **Read after write.** Linux's read after write comes from its page cache, with noac too (noac "
            "drops cached attributes, not data: the file's unchanged attributes keep the pages valid), as "
            "the paper's NFS B-5 was faster than its B-4; this kernel's client has no cache, so its read after "
            "write crosses the wire like read after mount."]
    return out


def section(out_dir):
    doc = sections.load(os.path.join(out_dir, "fs-paper.json"))
    out = [BEGIN, "## File service: the seed papers' remaining figures (RI2N/DRV, SRFS on Ether)", "",
           "Made by `make bench-fs-paper` (tools/bench/fs_paper.sh; the papers' numbers in "
           "tools/bench/papers.py, this section by tools/bench/fs_paper_report.py). Both systems on QEMU "
           "TCG, e1000 NICs, dgram wires, MTU 9000, the same run count each, their boot pairs interleaved.",
           ""]
    if doc:
        for part in (table2, table4, table3):
            out += part(doc) + [""]
    else:
        out += ["No fs-paper.json: RI2N Tables 2 and 4 and SRFS Table 3 not measured.", ""]
    out += b_tables(out_dir) + ["", END]
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    out = sys.argv[1]
    OUT_DIR.append(out)
    sections.write_section(out, section(out), BEGIN, END, after="<!-- fs: end -->")
    print(f"fs-paper: REPORT.md section written in {out}")


if __name__ == "__main__":
    main()
