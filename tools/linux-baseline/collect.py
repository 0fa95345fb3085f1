#!/usr/bin/env python3
"""Turn pktbench output into bench/results JSON (schema: BENCH.md).

    collect.py rtt   --out FILE [--env K=V ...] RAW...
    collect.py burst --out FILE [--env K=V ...] RAW... [--icount RAW...]
    collect.py ceiling --out FILE [--env K=V ...] RAW...
    collect.py window --out FILE [--env K=V ...] RAW...

Each RAW file is the stdout of one run-pair.sh (one boot pair): RESULT lines
from the client and SRVSTAT lines from the server, and for burst pairs the
HOSTCPU lines of tools/bench/hostcpu.py.  Rows pool all repetitions of all
boots the same way as this kernel's (tools/bench/stats.py), plus the per-boot
medians so that boot-to-boot spread stays visible.  Burst rows take t1_insns
and r1_insns_per_pkt (the server's SRVSTAT r1_tsc, warm-ups left out by
--icount-warmup) from the --icount files (runs under QEMU -icount shift=0, where the guest TSC
counts instructions).  The variants beyond packet and mmap (pktbench's xdp,
tuned and tuned-mmap) become systems of their own; their rows name the
settings the client's PORT line gave (config, and xdp_mode for AF_XDP),
every row the guest's kernel (guest_kernel, from --env guest_kernel), and
the Linux row with the best median at each size carries best_linux=true
(burst: the most Mbit/s; rtt: the least median_us), the configuration a
user would pick.  Sizes a variant skipped (SKIP lines: AF_XDP frames over
one UMEM chunk) have no row and are listed in env.skipped.  Ceiling pairs
(dpdkbench --mode ceiling: a txonly sender into an rxonly receiver) give
one row per size: the median of the receiver's 100 ms windows over every
boot, as ceiling.json's rows.  Window pairs (--mode window: the windowed
stream of pktwindow.h) give bench "stream" rows: the median of the pooled
streams' Mbit/s at the receiver per variant and size (ceiling_mbps and ceiling_frac are
added by the harness that measured the ceiling, tools/bench/abab.py).
Standard library only.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import hostcpu  # noqa: E402
import rxwork  # noqa: E402
import stats  # noqa: E402

SYSTEM = {"packet": "linux-packet", "mmap": "linux-mmap", "xdp": "linux-afxdp",
          "tuned": "linux-packet-tuned", "tuned-mmap": "linux-mmap-tuned", "xdp-sg": "linux-afxdp-mb",
          "dpdk": "linux-dpdk"}
ORDER = {v: i for i, v in enumerate(SYSTEM)}  # rows: in SYSTEM's order, by size
BURST_N = 128


def parse_line(line):
    """('RESULT', 'rtt', {'variant': 'packet', ...}) or None."""
    words = line.strip().split()
    if words and words[0] in ("HOSTCPU", "PORT"):
        words.insert(1, "burst" if words[0] == "HOSTCPU" else "port")
    if len(words) < 2 or words[0] not in ("RESULT", "SRVSTAT", "HOSTCPU", "PORT", "SKIP"):
        return None
    fields = {}
    for w in words[2:]:
        key, sep, value = w.partition("=")
        if sep:
            fields[key] = value
    return words[0], words[1], fields


def read_raw(paths):
    """List (one per file) of lists of parsed lines."""
    boots = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            boots.append([p for p in map(parse_line, f) if p])
    return boots


def med(values, digits=1):
    return stats.rnd(stats.median(values), digits)


def group(boots, kind, tag, field, variants=None):
    """{(variant, bytes): [[values of boot 0], [values of boot 1], ...]};
    variants: the variant of each boot, for lines that do not name it."""
    out = {}
    for i, boot in enumerate(boots):
        for k, t, f in boot:
            variant = f.get("variant", variants[i] if variants else None)
            if k != kind or t != tag or field not in f or variant is None:
                continue
            key = (variant, int(f["bytes"]))
            per_boot = out.setdefault(key, [[] for _ in boots])
            per_boot[i].append(float(f[field]))
    return out


def row_key(item):
    (variant, size), _ = item
    return ORDER[variant], size


def flat(per_boot):
    return [x for b in per_boot for x in b]


def rtt_rows(boots):
    rows = []
    for (variant, size), per_boot in sorted(group(boots, "RESULT", "rtt", "us").items(), key=row_key):
        rows.append(dict({"system": SYSTEM[variant], "bytes": size}, **stats.latency(per_boot)))
    return rows


def variant_of(boot):
    return next((f["variant"] for k, _, f in boot if "variant" in f), None)


def rx_windows(boots):
    """[{variant: [window, ...]} per boot]: the server's receive windows
    (SRVSTAT rxwin) joined with insnplugin.so's (SRVSTAT rxw, run-pair.sh
    --count-rx), rxwork.py; a boot without the plugin's lines gives none."""
    out = []
    for boot in boots:
        prog = [f for k, t, f in boot if k == "SRVSTAT" and t == "rxwin"]
        plug = [f for k, t, f in boot if k == "SRVSTAT" and t == "rxw"]
        per = {}
        if plug:
            line = lambda f: " ".join(f"{a}={b}" for a, b in f.items())  # noqa: E731
            for f, w in zip(prog, rxwork.windows(map(line, prog), map(line, plug))):
                per.setdefault(f["variant"], []).append(w)
        out.append(per)
    return out


def burst_rows(boots, icount_boots, icount_warmup=0):
    """Rows as this kernel's (tools/bench/kernelnet.py).  No
    cpu_copy_bytes_per_pkt: no counter in the guest counts the bytes its
    CPU copies, and a model of the code paths is not a measurement."""
    fields = ("t0_us", "t1_us", "t2_us", "mbps", "irqs")
    real = {f: group(boots, "RESULT", "burst", f) for f in fields}
    ins = group(icount_boots, "RESULT", "burst", "t1_tsc")
    ins_t0 = group(icount_boots, "RESULT", "burst", "t0_tsc")
    # R1 from the server's line per burst; its first icount_warmup bursts of each
    # size are the client's warm-ups (the client leaves them out of its RESULT lines).
    r1 = {key: [b[icount_warmup:] for b in pb]
          for key, pb in group(icount_boots, "SRVSTAT", "burst", "r1_tsc").items()}
    r1_check = {key: [b[icount_warmup:] for b in pb]
                for key, pb in group(icount_boots, "SRVSTAT", "burst", "check_tsc").items()}
    # dpdkbench only: the receiver's empty polls inside R1 (it never sleeps).
    r1_idle = {key: [b[icount_warmup:] for b in pb]
               for key, pb in group(icount_boots, "SRVSTAT", "burst", "idle_tsc").items()}
    srv = {f: group(boots, "SRVSTAT", "burst", f) for f in ("irqs", "good", "bad", "missing", "ooo")}
    variants = [variant_of(b) for b in boots]
    cpu = {f: group(boots, "HOSTCPU", "burst", f, variants) for f in ("bursts", "cpu_s")}
    rx = rx_windows(icount_boots)
    rows = []
    for key in sorted(real["t0_us"], key=lambda k: row_key((k, None))):
        variant, size = key
        v = {f: flat(real[f].get(key, [])) for f in fields}
        s = {f: flat(srv[f].get(key, [])) for f in srv}
        rx_irqs = [x for x in s["irqs"] if x >= 0]
        tx_irqs = [x for x in v["irqs"] if x >= 0]
        cpu_s, bursts = flat(cpu["cpu_s"].get(key, [])), flat(cpu["bursts"].get(key, []))
        cpu_gb, cpu_null = hostcpu.per_gb(sum(cpu_s), sum(bursts) * BURST_N * size,
                                          [b for b in bursts if b > 0], len(boots))
        rx_fields = rxwork.fields([rxwork.timed(b.get(variant, []), size, icount_warmup, BURST_N) for b in rx],
                                  [rxwork.idle_windows(b.get(variant, [])) for b in rx])
        rows.append(dict({
            "system": SYSTEM[variant], "bytes": size,
            "mbps": med(v["mbps"], 2), "t0_us": med(v["t0_us"]), "t1_us": med(v["t1_us"]),
            "t2_us": med(v["t2_us"]),
            "t1_insns": int(med(flat(ins[key]), 0)) if key in ins else None,
            "t0_insns_icount": int(med(flat(ins_t0[key]), 0)) if key in ins_t0 else None,
            "r1_insns_per_pkt": med(flat(r1[key]), 1) if flat(r1.get(key, [])) else None,
            "r1_check_insns_per_pkt": med(flat(r1_check[key]), 1) if flat(r1_check.get(key, [])) else None,
            "r1_idle_insns_per_pkt": med(flat(r1_idle[key]), 1) if flat(r1_idle.get(key, [])) else None,
            "n_r1": len(flat(r1.get(key, []))),
            "host_cpu_s_per_gb": cpu_gb,
            "host_cpu_s_per_gb_null": cpu_null,
            "doorbells_per_batch": None,
            "irqs_per_batch": stats.rnd(sum(rx_irqs) / len(rx_irqs), 3) if rx_irqs else None,
            "sender_irqs_per_batch": stats.rnd(sum(tx_irqs) / len(tx_irqs), 3) if tx_irqs else None,
            "t1_share": round(statistics.median(
                [a / b for a, b in zip(v["t1_us"], v["t0_us"]) if b > 0]), 3),
            "n": len(v["t0_us"]),
            "n_insns": len(flat(ins[key])) if key in ins else 0,
            "boot_median_mbps": [med(b, 2) for b in real["mbps"][key] if b],
            "host_cpu_bursts": int(sum(bursts)), "host_cpu_windows": len(cpu_s),
            "packets_lost_or_corrupt": int(sum(s["bad"]) + sum(s["missing"])),
            "bursts_checked_by_server": len(s["good"]),
        }, **rx_fields))
    return rows


def port_settings(boots):
    """{variant: (config, xdp_mode)} from the PORT lines: the settings
    words, and AF_XDP's mode (several if boots differed, joined by '/')."""
    out = {}
    for boot in boots:
        for k, _, f in boot:
            if k != "PORT" or "variant" not in f:
                continue
            cfg = " ".join(f"{a}={b}" for a, b in f.items() if a not in ("variant", "xdp_mode"))
            old = out.get(f["variant"], ("", ""))
            modes = [m for m in old[1].split("/") if m]
            if f.get("xdp_mode") and f["xdp_mode"] not in modes:
                modes.append(f["xdp_mode"])
            out[f["variant"]] = (old[0] or cfg, "/".join(modes))
    return out


def add_settings(row, setting, guest_kernel):
    """row's config and xdp_mode from setting (port_settings' pair for its
    variant) and its guest_kernel, each where there is one."""
    cfg, mode = setting
    if cfg:
        row["config"] = cfg
    if mode:
        row["xdp_mode"] = mode
    if guest_kernel:
        row["guest_kernel"] = guest_kernel


def skipped(boots):
    """'SYSTEM BYTES (max_frame=N)' for every size a variant skipped."""
    out = set()
    for boot in boots:
        for k, _, f in boot:
            if k == "SKIP":
                out.add((ORDER.get(f["variant"], 99), int(f["bytes"]),
                         f"{SYSTEM.get(f['variant'], f['variant'])} {f['bytes']} (max_frame={f.get('max_frame')})"))
    return [t for _, _, t in sorted(out)]


def label(rows, boots, env, key, better):
    """Names each row's settings and kernel; marks the best Linux row per size."""
    inv = {v: k for k, v in SYSTEM.items()}
    ports = port_settings(boots)
    for r in rows:
        add_settings(r, ports.get(inv.get(r["system"]), ("", "")), env.get("guest_kernel"))
    for size in sorted({r["bytes"] for r in rows}):
        cands = [r for r in rows if r["bytes"] == size and r.get(key) is not None]
        if cands:
            best = better(cands, key=lambda r: r[key])
            for r in cands:
                r["best_linux"] = r is best


def ceiling_rows(boots):
    """One row per size: the receiver's windows pooled over the boots (the
    first window of a size, which starts at its first frame, included)."""
    wins = group(boots, "RESULT", "ceiling", "mbps")
    frames = group(boots, "SRVSTAT", "ceiling", "frames")
    sent = group(boots, "SRVSTAT", "ceiling", "sent")
    rows = []
    for key in sorted(wins, key=lambda k: row_key((k, None))):
        variant, size = key
        got, out = int(sum(flat(frames.get(key, [])))), int(sum(flat(sent.get(key, []))))
        rows.append({
            "system": SYSTEM[variant], "mode": "txonly-rxonly", "bytes": size,
            "mbps": med(flat(wins[key]), 2), "n": len(flat(wins[key])),
            "boot_median_mbps": [med(b, 2) for b in wins[key] if b],
            "frames": got, "frames_sent": out, "frames_lost": max(out - got, 0),
            "window_ms": 100, "ceiling_mbps": med(flat(wins[key]), 2), "ceiling_mode": "txonly-rxonly",
        })
    return rows


def window_rows(boots, warmup=0):
    """bench "stream" rows: one per variant and size, streams pooled over the
    boots. mbps is the receiver's (SRVSTAT window: the packets after the first
    batch, as user/stream.c's server), each boot's first `warmup` streams of a
    size left out; client_mbps the sender's, first send to last acknowledgement."""
    rates = {key: [b[warmup:] for b in pb] for key, pb in group(boots, "SRVSTAT", "window", "mbps").items()}
    client = group(boots, "RESULT", "window", "mbps")
    rows = []
    for (variant, size), per_boot in sorted(rates.items(), key=row_key):
        rows.append({"system": SYSTEM[variant], "bytes": size, "mode": "window",
                     "mbps": med(flat(per_boot), 2), "n": len(flat(per_boot)),
                     "boot_median_mbps": [med(b, 2) for b in per_boot if b],
                     "client_mbps": med(flat(client.get((variant, size), [])), 2)})
    return rows


def parse_env(pairs):
    env = {}
    for p in pairs:
        key, _, value = p.partition("=")
        env[key] = int(value) if value.isdigit() else value
    return env


def rundirs_parser(doc):
    """The command line of collect-failover.py and collect-lb.py: run
    directories, --out FILE and --env KEY=VALUE (parse_env); doc's first
    line describes it."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("rundirs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE (an integer or a string)")
    return ap


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", choices=("rtt", "burst", "ceiling", "window"))
    ap.add_argument("raw", nargs="+", help="run-pair.sh outputs, one per boot pair")
    ap.add_argument("--icount", nargs="*", default=[], help="burst outputs under -icount")
    ap.add_argument("--icount-warmup", type=int, default=0,
                    help="warm-up bursts per size in each --icount boot (their server lines are left "
                         "out); window: warm-up streams per size in each boot")
    ap.add_argument("--out", required=True)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE (an integer or a string)")
    a = ap.parse_args()
    boots = read_raw(a.raw)
    if a.bench == "rtt":
        rows = rtt_rows(boots)
    elif a.bench == "ceiling":
        rows = ceiling_rows(boots)
    elif a.bench == "window":
        rows = window_rows(boots, a.icount_warmup)
    else:
        rows = burst_rows(boots, read_raw(a.icount), a.icount_warmup)
    if not rows:
        sys.exit("collect.py: no RESULT lines in %s" % " ".join(a.raw))
    env = parse_env(a.env)
    if a.bench not in ("ceiling", "window"):
        label(rows, boots, env, *(("median_us", min) if a.bench == "rtt" else ("mbps", max)))
    if skipped(boots):
        env["skipped"] = skipped(boots)
    doc = {"bench": "stream" if a.bench == "window" else a.bench, "env": env, "rows": rows}
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
