#!/usr/bin/env python3
"""Turn pktbench output into bench/results JSON (schema: BENCH.md).

    collect.py rtt   --out FILE [--env K=V ...] RAW...
    collect.py burst --out FILE [--env K=V ...] RAW... [--icount RAW...]

Each RAW file is the stdout of one run-pair.sh (one boot pair): RESULT lines
from the client and SRVSTAT lines from the server.  Rows get medians over all
repetitions of all boots, plus the per-boot medians so that boot-to-boot
spread stays visible.  Burst rows take t1_insns from the --icount files (runs
under QEMU -icount shift=0, where the guest TSC counts instructions).
Standard library only.
"""
import argparse
import json
import math
import statistics
import sys

SYSTEM = {"packet": "linux-packet", "mmap": "linux-mmap"}
ORDER = {"packet": 0, "mmap": 1}  # rows: packet first, then mmap, by size
BURST_N = 128
COPYBREAK = 256  # e1000 driver: received frames up to this length are copied


def parse_line(line):
    """('RESULT', 'rtt', {'variant': 'packet', ...}) or None."""
    words = line.strip().split()
    if len(words) < 2 or words[0] not in ("RESULT", "SRVSTAT"):
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


def percentile(values, p):
    """Nearest-rank percentile."""
    v = sorted(values)
    k = max(1, min(len(v), math.ceil(p / 100.0 * len(v))))
    return v[k - 1]


def med(values, digits=1):
    return round(statistics.median(values), digits) if values else None


def group(boots, kind, tag, field):
    """{(variant, bytes): [[values of boot 0], [values of boot 1], ...]}"""
    out = {}
    for i, boot in enumerate(boots):
        for k, t, f in boot:
            if k != kind or t != tag or field not in f or "variant" not in f:
                continue
            key = (f["variant"], int(f["bytes"]))
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
        us = flat(per_boot)
        rows.append({
            "system": SYSTEM[variant], "bytes": size,
            "median_us": med(us), "p99_us": round(percentile(us, 99), 1),
            "min_us": round(min(us), 1), "mean_us": round(statistics.fmean(us), 1),
            "n": len(us), "boot_median_us": [med(b) for b in per_boot if b],
        })
    return rows


def frame_len(payload):
    return max(60, 14 + 16 + payload)


def copy_model(variant, payload):
    """Bytes the CPUs copy per data packet, sender plus receiver (a model of
    the code paths, not a measurement): packet copies the frame in send()
    and in recv(); mmap copies it into the TX ring (from the program's
    prepared buffer; the kernel then maps ring pages into the skb and copies
    only the 14-byte link header) and from the skb into the RX ring; the
    e1000 driver copies received frames of up to 256 bytes (copybreak)."""
    n = frame_len(payload)
    rx_driver = n if n <= COPYBREAK else 0
    if variant == "packet":
        return 2 * n + rx_driver
    return n + 14 + n + rx_driver


def burst_rows(boots, icount_boots):
    fields = ("t0_us", "t1_us", "t2_us", "mbps", "irqs")
    real = {f: group(boots, "RESULT", "burst", f) for f in fields}
    ins = group(icount_boots, "RESULT", "burst", "t1_tsc")
    ins_t0 = group(icount_boots, "RESULT", "burst", "t0_tsc")
    srv = {f: group(boots, "SRVSTAT", "burst", f) for f in ("irqs", "good", "bad", "missing", "ooo")}
    rows = []
    for key in sorted(real["t0_us"], key=lambda k: row_key((k, None))):
        variant, size = key
        v = {f: flat(real[f].get(key, [])) for f in fields}
        s = {f: flat(srv[f].get(key, [])) for f in srv}
        rx_irqs = [x for x in s["irqs"] if x >= 0]
        tx_irqs = [x for x in v["irqs"] if x >= 0]
        rows.append({
            "system": SYSTEM[variant], "bytes": size,
            "mbps": med(v["mbps"]), "t0_us": med(v["t0_us"]), "t1_us": med(v["t1_us"]),
            "t2_us": med(v["t2_us"]),
            "t1_insns": int(med(flat(ins[key]), 0)) if key in ins else None,
            "t0_insns_icount": int(med(flat(ins_t0[key]), 0)) if key in ins_t0 else None,
            "cpu_copy_bytes_per_pkt": copy_model(variant, size),
            "doorbells_per_batch": None,
            "irqs_per_batch": med(rx_irqs) if rx_irqs else None,
            "sender_irqs_per_batch": med(tx_irqs) if tx_irqs else None,
            "t1_share": round(statistics.median(
                [a / b for a, b in zip(v["t1_us"], v["t0_us"]) if b > 0]), 3),
            "n": len(v["t0_us"]),
            "n_insns": len(flat(ins[key])) if key in ins else 0,
            "boot_median_mbps": [med(b) for b in real["mbps"][key] if b],
            "packets_lost_or_corrupt": int(sum(s["bad"]) + sum(s["missing"])),
            "bursts_checked_by_server": len(s["good"]),
        })
    return rows


def parse_env(pairs):
    env = {}
    for p in pairs:
        key, _, value = p.partition("=")
        env[key] = int(value) if value.isdigit() else value
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", choices=("rtt", "burst"))
    ap.add_argument("raw", nargs="+", help="run-pair.sh outputs, one per boot pair")
    ap.add_argument("--icount", nargs="*", default=[], help="burst outputs under -icount")
    ap.add_argument("--out", required=True)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE (an integer or a string)")
    a = ap.parse_args()
    boots = read_raw(a.raw)
    if a.bench == "rtt":
        rows = rtt_rows(boots)
    else:
        rows = burst_rows(boots, read_raw(a.icount))
    if not rows:
        sys.exit("collect.py: no RESULT lines in %s" % " ".join(a.raw))
    doc = {"bench": a.bench, "env": parse_env(a.env), "rows": rows}
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
