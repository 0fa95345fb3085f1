#!/usr/bin/env python3
"""Turn run-failover.py's run directories into failover JSON (schema: BENCH.md).

    collect-failover.py --out FILE [--env K=V ...] RUNDIR...

One row per run directory (events.json, server.tlog, client.tlog), with
system linux-<system>-tcp for the bonds and linux-mptcp.  Times are on the
receiver's clock, t=0 at its FLOWSTART (the connection's header): host
stamps of console lines and QMP commands are mapped with offset = min(host
stamp - g_us) over the receiver's FLOWBIN lines (each carries the guest time
at which it was printed), so a host stamp h is t = h - offset.  Kernel
messages are placed by their printk time plus the smallest (arrival stamp -
printk time) of that guest (an arrival can be late, never early).
  cut_s, restore_s     the QMP set_link commands (midpoint of the call); with
                       the sender's FLOWMARK lines (run-failover.py cuts on
                       them), interpolated between the receiver's live
                       FLOWBIN lines either side (its clock may run at a
                       rate of its own under -icount: clock_rate)
  cut_client_s, restore_client_s, end_client_s   on the sender's clock
  cpu_samples          both ends' FLOWCPU samples (t_s on each end's clock,
                       busy ns, bytes, mark: one sample's own cost), from
                       which tools/bench/failover_report.py gives the CPU work
  series               [[t_s, mbps], ...], the receiver's 100 ms bins
  mbps_before          median of the bins in the 2 s before the cut
  mbps_during          mean over the bins from cut + 1 s to the restore
  mbps_after           mean over the bins from restore + 1 s to the end of sending
  max_gap_ms           longest time between two reads that returned data (the
                       receiver's measure), or from the last one to the end of
                       sending when the connection never recovered
  detect_ms            cut -> the sender's bonding reports link 0 down (or a new
                       active slave), by printk time on the sender's clock;
                       null when it never does (MPTCP: null)
  recover_ms           restore -> the first bin from which 1 s of delivery
                       averages >= 90 % of mbps_before; null if never
  link_up_ms           restore -> the sender's bonding reports link 0 up again
  detect_far_ms, link_up_far_ms   the same on the receiver
  carrier_down_ms      cut -> the sender's e1000 says "NIC Link is Down"
  sender_bond_changes_before_cut   active slave changes (or none left) on the
                       sender between t=0 and the cut: a bond that flaps
                       before any cut has a detect_ms that means nothing
  lost                 bytes the sender's socket took minus bytes received
  corrupt              received bytes that differ from the pattern
  end                  ok (all delivered), stalled (the connection was alive
                       but had not delivered everything by the end), broken, or
                       no-connection (the guests came up but the receiver never
                       got the flow's header: no cut was made, rates are 0)
  host_other_cores     host CPU that processes other than the two QEMUs took
                       during the flow, in cores (2 here): the run's noise
Standard library only.
"""
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collect import parse_env, rundirs_parser  # noqa: E402  (key=value words of --env, the command line)

SYSTEM = {"bond-rr": "linux-bond-rr-tcp", "bond-ab": "linux-bond-ab-tcp",
          "bond-ab-arp": "linux-bond-ab-arp-tcp", "bond-rr-arp": "linux-bond-rr-arp-tcp",
          "mptcp": "linux-mptcp"}
ORDER = list(SYSTEM)
BIN_S = 0.1
# Bonding's messages (drivers/net/bonding/bond_main.c) about link 0 (eth0).
DOWN = re.compile(r"\(slave eth0\): (link status definitely down|interface is now down)"
                  r"|: making interface the new active one|now running without any active interface")
UP = re.compile(r"\(slave eth0\): (link status definitely up|interface is now up)")
CARRIER_DOWN = re.compile(r"e1000: eth0 NIC Link is Down")
CHANGE = re.compile(r": making interface the new active one|now running without any active interface")
# A live bin line as pktbench prints it; one that a kernel message cut in two
# does not match (its bin is then taken from the FLOWBINS lines).
BIN = re.compile(r"FLOWBIN i=(\d+) bytes=(\d+) g_us=(\d+)( partial=1)?$")


def fields(line):
    return dict(w.partition("=")[::2] for w in line.split()[1:] if "=" in w)


def read_tlog(path):
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            stamp, _, line = raw.rstrip("\n").partition(" ")
            try:
                out.append((float(stamp), line))
            except ValueError:
                continue
    return out


PRINTK = re.compile(r"\[\s*(\d+\.\d+)\]")


def printk_placed(lines):
    """The lines, kernel messages restamped printk time + offset, offset the
    smallest (arrival - printk time) of that guest: a message's arrival can be
    late (the console was busy), the printk time is when it was logged."""
    ks = [(t, float(m.group(1))) for t, line in lines for m in [PRINTK.match(line)] if m]
    if not ks:
        return lines
    off = min(t - k for t, k in ks)
    return [(float(m.group(1)) + off, line) if m else (t, line)
            for t, line in lines for m in [PRINTK.match(line)]]


def first_after(lines, pattern, since, until):
    """Host stamp of the first line matching pattern in [since, until], or None."""
    for t, line in lines:
        if since <= t <= until and pattern.search(line):
            return t
    return None


def ms(a, b):
    return None if a is None or b is None else round((a - b) * 1000.0, 1)


def window(bins, a, b):
    """mbps of the bins lying wholly inside [a, b)."""
    return [m for t, m in bins if t >= a - 1e-9 and t + BIN_S <= b + 1e-9]


def mean(v):
    return round(sum(v) / len(v), 2) if v else None


def recover(bins, restore, end, before):
    """Seconds from restore to the first bin start from which 1 s of bins
    averages at least 90 % of before; None if that never happens."""
    if not before:
        return None
    for t, _ in bins:
        if t < restore - 1e-9 or t + 1.0 > end + 1e-9:
            continue
        w = window(bins, t, t + 1.0)
        if w and sum(w) / len(w) >= 0.9 * before:
            return max(0.0, t - restore)
    return None


def no_flow_row(ev, rundir):
    """A run in which the guests came up but no flow started (no cut made)."""
    cli = read_tlog(os.path.join(rundir, "client.tlog"))
    cend = next((fields(line) for _, line in cli if line.startswith("FLOWEND role=client")), {})
    return {"system": SYSTEM[ev["system"]], "links": ev["links"], "cut": ev["cut"], "run": ev.get("run", 1),
            "detect_ms": None, "recover_ms": None, "mbps_before": 0.0, "mbps_during": 0.0, "mbps_after": 0.0,
            "max_gap_ms": None, "lost": int(cend.get("written", 0)), "corrupt": 0, "cut_s": None,
            "restore_s": None, "series": None, "end": "no-connection",
            "connected": any(line.startswith("FLOWBEGIN") for _, line in cli),
            "nic": ev.get("nic", "e1000"), "backend": "dgram", "icount": bool(ev.get("icount")),
            "config": ev.get("config"),
            "host_other_cores": ev.get("host_other_cores")}


def series_bytes(srv, send):
    """Bytes per full bin: from the FLOWBINS lines printed at the end when they
    add up to the bytes received, else from the live lines that parse (a
    garbled one leaves its bin out: 'bins_missing' counts them)."""
    full = int(send["bins"])
    ends = {}
    for _, line in srv:
        if line.startswith("FLOWBINS "):
            f = fields(line)
            try:
                for k, v in enumerate(f["bytes"].split(",")):
                    ends[int(f["from"]) + k] = int(v)
            except (KeyError, ValueError):
                ends = None
                break
    if ends is not None and sum(ends.values()) == int(send["received"]) and \
            all(i in ends for i in range(full)):
        return [ends[i] for i in range(full)], 0
    live = {}
    for _, line in srv:
        m = BIN.match(line)
        if m and not m.group(4):
            live[int(m.group(1))] = int(m.group(2))
    return [live.get(i, 0) for i in range(full)], sum(1 for i in range(full) if i not in live)


def row(rundir):
    with open(os.path.join(rundir, "events.json")) as f:
        ev = json.load(f)
    if ev.get("no_flow"):
        return no_flow_row(ev, rundir)
    if not ev.get("ok"):
        raise ValueError("run failed: %s" % ev.get("error"))
    srv = printk_placed(read_tlog(os.path.join(rundir, "server.tlog")))
    cli = printk_placed(read_tlog(os.path.join(rundir, "client.tlog")))
    binl = [(t, BIN.match(line)) for t, line in srv if BIN.match(line)]
    send = next((fields(line) for _, line in srv if line.startswith("FLOWEND role=server")), None)
    cend = next((fields(line) for _, line in cli if line.startswith("FLOWEND role=client")), None)
    if not binl or send is None or cend is None:
        raise ValueError("no FLOWBIN or FLOWEND lines")
    offsets = [t - int(m.group(3)) / 1e6 for t, m in binl]
    offset = min(offsets)
    half = len(offsets) // 2
    # Clock agreement: the smallest offset over each half of the run.
    skew_ms = round((min(offsets[half:]) - min(offsets[:half])) * 1000.0, 2) if half else None
    per_bin, missing = series_bytes(srv, send)
    bins = [(round(i * BIN_S, 1), b * 8 / BIN_S / 1e6) for i, b in enumerate(per_bin)]
    h_cut = sum(ev["host_cut"]) / 2
    h_restore = sum(ev["host_restore"]) / 2
    cut_s, restore_s = h_cut - offset, h_restore - offset
    marks = {int(f["i"]): f for f in (fields(line) for _, line in cli if line.startswith("FLOWMARK "))}
    g_cut = g_restore = None  # the cut and restore on the sender's clock (CLOCK_MONOTONIC, s)
    cut_c = restore_c = None  # the same from the sender's start
    if "host_mark_cut" in ev and 0 in marks and 1 in marks:
        # Cut on the sender's FLOWMARK lines: its clock (t=0 its start,
        # within a link's latency of the receiver's FLOWSTART), plus the
        # host's time from the line to the QMP command.
        d_cut, d_restore = h_cut - ev["host_mark_cut"], h_restore - ev["host_mark_restore"]
        cut_c = int(marks[0]["t_us"]) / 1e6 + d_cut
        restore_c = int(marks[1]["t_us"]) / 1e6 + d_restore
        g_cut = int(marks[0]["mono_us"]) / 1e6 + d_cut
        g_restore = int(marks[1]["mono_us"]) / 1e6 + d_restore
        # On the receiver's clock: interpolated between its live FLOWBIN
        # lines either side of the instant (stamp, g_us). Under -icount a
        # guest's clock runs slower than the host's by what the host spends
        # on it outside guest instructions (device emulation, a busy host),
        # and at a rate of its own: one offset for the whole run drifts by
        # seconds (here the receiver's clock ran at 0.6 of the sender's).
        pts = sorted((t, int(m.group(3)) / 1e6) for t, m in binl)

        def local(h):
            lo = [p for p in pts if p[0] <= h]
            hi = [p for p in pts if p[0] >= h]
            if lo and hi and hi[0][0] > lo[-1][0]:
                (h0, g0), (h1, g1) = lo[-1], hi[0]
                return g0 + (g1 - g0) * (h - h0) / (h1 - h0)
            return h - offset
        cut_s, restore_s = local(h_cut), local(h_restore)
    end_s = ev["flow_ms"] / 1000.0
    h_end = offset + end_s
    before = window(bins, cut_s - 2.0, cut_s)
    mbps_before = round(statistics.median(before), 2) if before else None
    status = send["status"]
    gap_us = int(send["max_gap_us"])
    if status != "eof":  # a stall that lasted to the end of sending
        gap_us = max(gap_us, int(end_s * 1e6) - int(send["last_us"]))
    written, received = int(cend["written"]), int(send["received"])
    rec = recover(bins, restore_s, end_s, mbps_before)
    raw_cli = read_tlog(os.path.join(rundir, "client.tlog"))

    def sender_ms(pattern, since_g, since_h, h_from):
        """The sender's first kernel message matching pattern after a cut
        or restore: by its printk time against the sender's clock when the
        cut was on it (FLOWMARK), else by host stamps."""
        if since_g is None:
            return ms(first_after(cli, pattern, since_h, h_end), h_from)
        for _, line in raw_cli:
            m = PRINTK.match(line)
            if m and float(m.group(1)) >= since_g and pattern.search(line):
                return round((float(m.group(1)) - since_g) * 1000.0, 1)
        return None
    cpu = {}
    for side, lines in (("server", srv), ("client", cli)):
        f = next((fields(line) for _, line in lines if line.startswith("FLOWCPU role=%s " % side)), None)
        if f:
            cpu[side] = {"every_ms": int(f["every_ms"]), "mark": max(0, int(f["mark_ns"])),
                         "t_s": [round(int(x) / 1e6, 4) for x in f["t_us"].split(",") if x],
                         "busy": [int(x) for x in f["busy_ns"].split(",") if x],
                         "bytes": [int(x) for x in f["bytes"].split(",") if x]}
    return {
        "system": SYSTEM[ev["system"]], "links": ev["links"], "cut": ev["cut"], "run": ev.get("run", 1),
        "detect_ms": sender_ms(DOWN, g_cut, h_cut, h_cut),
        "recover_ms": None if rec is None else round(rec * 1000.0, 1),
        "mbps_before": mbps_before,
        "mbps_during": mean(window(bins, cut_s + 1.0, restore_s)),
        "mbps_after": mean(window(bins, restore_s + 1.0, end_s)),
        "max_gap_ms": round(gap_us / 1000.0, 1),
        "lost": written - received,
        "corrupt": int(send["corrupt"]),
        "cut_s": round(cut_s, 3), "restore_s": round(restore_s, 3),
        "series": [[t, round(m, 2)] for t, m in bins],
        "end": {"eof": "ok"}.get(status, status),
        "link_up_ms": sender_ms(UP, g_restore, h_restore, h_restore),
        "detect_far_ms": ms(first_after(srv, DOWN, h_cut, h_end), h_cut),
        "link_up_far_ms": ms(first_after(srv, UP, h_restore, h_end), h_restore),
        "carrier_down_ms": sender_ms(CARRIER_DOWN, g_cut, h_cut, h_cut),
        "cut_node": "sender" if ev.get("cut_node") == "client" else "receiver",
        "mbps_per_link": ev["mbps"], "write_bytes": ev["size"], "sent_s": end_s,
        "written": written, "received": received,
        "retrans": int(cend.get("retrans", -1)), "ofo": int(send.get("ofo", -1)),
        "subflows": int(send.get("subflows", -1)),
        "nic_rx": [int(x) for x in send.get("nic_rx", "").split(",") if x],
        "qmp_ms": round((ev["host_cut"][1] - ev["host_cut"][0]) * 1000.0, 2),
        "clock_skew_ms": skew_ms,
        "host_other_cores": ev.get("host_other_cores"),
        "bins_missing": missing,
        "sender_bond_changes_before_cut": sum(1 for t, line in cli if offset <= t < h_cut and CHANGE.search(line)),
        "nic": ev.get("nic", "e1000"), "backend": "dgram", "icount": bool(ev.get("icount")),
        "config": ev.get("config"),
        "cut_on": "sender-marks" if g_cut is not None else "host-seconds",
        **({"restore_on_host": ev["restore_on_host"]} if ev.get("restore_on_host") else {}),
        **({"cut_client_s": round(cut_c, 3), "restore_client_s": round(restore_c, 3), "end_client_s": end_s,
            "clock_rate": round((restore_s - cut_s) / (restore_c - cut_c), 4)}
           if cut_c is not None and restore_c > cut_c else {}),
        **({"cpu_samples": cpu} if cpu else {}),
    }


def dumps(doc):
    """JSON, indented, with each row's series and CPU samples on one line
    each (200 bins a run)."""
    keep = []
    for i, r in enumerate(doc["rows"]):
        for k in ("series", "cpu_samples"):
            if k in r:
                keep.append(("@%s%d@" % (k, i), json.dumps(r[k], separators=(",", ":"))))
                r[k] = keep[-1][0]
    text = json.dumps(doc, indent=1)
    for tag, v in keep:
        text = text.replace('"%s"' % tag, v)
    for r in doc["rows"]:
        for k in ("series", "cpu_samples"):
            if isinstance(r.get(k), str):
                r[k] = json.loads(dict(keep)[r[k]])
    return text


def main():
    ap = rundirs_parser(__doc__)
    a = ap.parse_args()
    rows, failed = [], []
    for d in a.rundirs:
        try:
            rows.append(row(d))
        except (OSError, ValueError, KeyError) as e:
            print("collect-failover.py: %s: %s" % (d, e), file=sys.stderr)
            failed.append(os.path.basename(d.rstrip("/")))
    if not rows:
        sys.exit("collect-failover.py: no usable run in %s" % " ".join(a.rundirs))
    rank = {s: i for i, s in enumerate(SYSTEM[k] for k in ORDER)}
    rows.sort(key=lambda r: (r.get("nic", "e1000"), r["links"], rank[r["system"]], r["cut"] != "visible",
                             r["run"]))
    env = parse_env(a.env)
    env["failed_runs"] = failed
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(dumps({"bench": "failover", "env": env, "rows": rows}) + "\n")


if __name__ == "__main__":
    main()
