#!/usr/bin/env python3
"""Interleaved boot pairs, this kernel against each Linux peer (issue 25).

make bench-abab. Rounds of boot pairs, one pair at a time: per round and
test (burst, then the windowed stream), for each peer a pair of this kernel
and right after it a pair of the peer (K P K D: every ratio is taken between
adjacent pairs). The pairs are the existing runners': tools/bench/kernelnet.py's
burst pair and its kernel stream pair (user/stream.c), and
tools/linux-baseline/bench.sh with LB_BOOTS=1, one variant, no -icount pair
(bursts) or its window mode (pktwindow.h, user/stream.c's wire format and
flow control). A pair's figure per size is the median of its bursts or
streams.

Each pair records the host over its window: the 1-minute load average
(/proc/loadavg, at its end), the steal share of all CPU time (/proc/stat's
steal column) and the cores other processes took (all CPUs' busy time, steal
left out, less this process's and its children's). A pair is disturbed when
steal is above ABAB_MAX_STEAL (0.05) or other processes took more than
LB_MAX_OTHER cores (0.25); then the whole round of that test is dropped for
every system alike, and rounds go on until ROUNDS are kept or MAX_ROUNDS
(2 x ROUNDS) ran or --budget-min passed. Per peer and size the ratio
kernel / peer of each kept round, their median and a seeded bootstrap 95 %
interval (stats.bootstrap_ci).

The emulated link's neutral ceiling is measured in every round, before its
tests, with the same drop rule: the kernel's ceiling loop (kernelnet.py
ceiling, one pair, its guest-to-guest modes) and, with the dpdk peer, DPDK's
txonly/rxonly (bench.sh ceiling, one pair). The neutral ceiling of a size in
a round is the higher of the two. A ceiling pair that is disturbed or fails
drops the whole round for every test (its tests are not run); a test round
that is dropped leaves the ceiling's figures out of that test's fractions.
Every burst and stream is given as a fraction of its own round's ceiling:
per test, system and size, the median over the kept rounds of the per-round
fraction (a system's figure in the round over the round's ceiling; the
kernel's figure in a round is the median of its pairs there, one before
each peer) and a seeded bootstrap 95 % interval of that median.

Usage: abab.py KERNEL OUTDIR [--rounds 10] [--max-rounds N] [--sizes 64,1500,8192]
       [--peers packet,dpdk] [--tests burst,stream] [--quick] [--budget-min M]
       [--nic e1000]
       abab.py --reanalyse FROM_DIR OUTDIR   (FROM_DIR's pairs judged again by
       this environment's ABAB_MAX_STEAL and LB_MAX_OTHER, nothing booted)
Writes OUTDIR/abab.json (bench abab: one row per pair, the ceiling's pairs
among them, one per ratio and one per fraction of the ceiling),
OUTDIR/stream.json (bench stream) and the section of OUTDIR/REPORT.md
(abab_report.py). A run from before the ceilings were repeated (one
ceiling.json and linux-dpdk-ceiling.json beside abab.json) is still read
by --reanalyse and the report.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abab_report  # noqa: E402
import check_schema  # noqa: E402
import hostcpu  # noqa: E402
import kernelnet  # noqa: E402
import stats  # noqa: E402
from env import env  # noqa: E402

ROOT = kernelnet.ROOT
PEERS = {"packet": "linux-packet", "mmap": "linux-mmap", "xdp": "linux-afxdp",
         "tuned": "linux-packet-tuned", "tuned-mmap": "linux-mmap-tuned", "dpdk": "linux-dpdk"}
# The ceiling's pairs of a round: the kernel's loop, DPDK's txonly/rxonly (with the dpdk peer).
CEILINGS = {"loop": "kernel-loop", "dpdk": "dpdk-txonly-rxonly"}
MAX_STEAL = float(os.environ.get("ABAB_MAX_STEAL", "0.05"))
MAX_OTHER = float(os.environ.get("LB_MAX_OTHER", "0.25"))
STREAM_COUNT = 4096  # packets a stream: pktproto.h's PB_WIN_COUNT
STREAM_BATCH, STREAM_WINDOW = 64, 2  # PB_WIN_BATCH, PB_WIN_WINDOW; user/stream.c's defaults
STREAM_START_MS = 1500  # the kernel's stream client starts past QEMU e1000's receive hold-off


def host_now():
    """(steal ticks, all ticks, busy ticks less steal, own CPU s, wall s, load1)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    with open("/proc/loadavg") as f:
        load1 = float(f.read().split()[0])
    t = os.times()
    return (v[7], sum(v), v[0] + v[1] + v[2] + v[5] + v[6],
            t.user + t.system + t.children_user + t.children_system, time.monotonic(), load1)


def host_window(a, b):
    """The host over a pair's window: load at its end, steal share, other processes' cores."""
    wall = max(b[4] - a[4], 1e-6)
    total = b[1] - a[1]
    return {"load1": b[5], "steal_frac": round((b[0] - a[0]) / total, 4) if total else 0.0,
            "other_cores": round(max(0.0, ((b[2] - a[2]) / hostcpu.HZ - (b[3] - a[3])) / wall), 3),
            "wall_s": round(wall, 1)}


def disturbed(h):
    return h["steal_frac"] > MAX_STEAL or h["other_cores"] > MAX_OTHER


def judge(got, also=False):
    """Marks the pair rows of one test round disturbed or not, and all of them
    dropped when one is or one failed, or when also (the round's ceiling was
    dropped); returns whether the round was dropped."""
    for g in got:
        g["disturbed"] = disturbed(g)
    drop = also or any(g["disturbed"] or g.get("failed") for g in got)
    for g in got:
        g["dropped"] = drop
    return drop


def kernel_burst(kernel, sizes, quick):
    """{size: median Mbit/s} of one kernel burst pair."""
    res = kernelnet.burst_pair("kernel", kernel, sizes, quick, "", False)[0]
    out = {}
    for s in sizes:
        ds = [d for d in res if int(d["bytes"]) == s]
        out[s] = stats.median([kernelnet.BATCH * s * 8 * int(d["tsc_hz"]) / int(d["t0_tsc"]) / 1e6 for d in ds])
    return out


def kernel_stream(kernel, sizes, quick):
    """{size: Mbit/s} of the kernel's stream: one boot pair a size (user/stream.c
    runs one stream a program), the server's figure: the packets after the
    first batch over their time, which leaves out the first batch's wait for
    QEMU's e1000 to take frames after its receiver is enabled (pktwindow.h
    measures Linux's the same way). The client starts at STREAM_START_MS of
    uptime: QEMU's e1000 holds a NIC's received frames back for a second
    after its receiver is enabled, and a stream begun sooner stalled for
    the rest of that second on its first acknowledgement (a Linux guest
    takes longer than that to boot)."""
    out = {}
    for s in sizes:
        words = f"run=stream size={s} count={STREAM_COUNT} batch={STREAM_BATCH} window={STREAM_WINDOW}"
        sv, _, _ = kernelnet.pair("kernel-stream", kernel, f"{words} role=server peer=@CMAC0@",
                                  f"{words} role=client peer=@SMAC0@ start_ms={STREAM_START_MS}", "")
        m = re.findall(r"^RESULT stream system=kernel role=server .*$", sv, re.M)
        if not m:
            sys.exit(f"abab: the kernel's stream of {s} bytes gave no RESULT")
        out[s] = int(kernelnet.kv(m[-1])["kbps"]) / 1000
    return out


def linux(bench, variant, sizes, quick, extra=None):
    """The rows of one Linux pair (bench.sh BENCH, LB_BOOTS=1, one variant)."""
    with tempfile.TemporaryDirectory(prefix="abab-linux-") as d:
        e = dict(os.environ, LB_BOOTS="1", LB_VARIANTS=variant, LB_SIZES=",".join(map(str, sizes)),
                 LB_ICOUNT_RUNS="0", LB_BUSY_RETRIES="0", LB_CPU_MS="0", LB_PREBUILT="1",
                 LB_NIC=kernelnet.NIC, LB_BUILD=os.environ.get("LB_BUILD", os.path.join(ROOT, "build/linux-baseline")))
        if quick:
            e.update(LB_RUNS="3", LB_WARMUP="1")
        if bench == "window":  # one stream a size, no warm-up: as the kernel's pair runs it
            e.update(LB_RUNS="1", LB_WARMUP="0")
        e.update(extra or {})
        r = subprocess.run([os.path.join(ROOT, "tools/linux-baseline/bench.sh"), bench, d], env=e,
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            sys.exit(f"abab: bench.sh {bench} {variant} failed:\n{r.stderr[-2000:]}")
        name = {"burst": "linux-burst.json", "window": "linux-stream.json",
                "ceiling": "linux-dpdk-ceiling.json"}[bench]
        with open(os.path.join(d, name)) as f:
            return json.load(f)


def linux_pair(test, variant, sizes, quick):
    """{size: Mbit/s}; a size the variant skipped (AF_XDP's frames over one
    UMEM chunk: env.skipped, "SYSTEM BYTES (why)") maps to its reason, a string."""
    doc = linux("burst" if test == "burst" else "window", variant, sizes, quick)
    fig = {r["bytes"]: r["mbps"] for r in doc["rows"] if r["system"] == PEERS[variant]}
    for text in doc["env"].get("skipped", []):
        m = re.match(r"(\S+) (\d+) \((.*)\)$", text)
        if m and m.group(1) == PEERS[variant] and int(m.group(2)) not in fig:
            fig[int(m.group(2))] = f"skipped ({m.group(3)})"
    return fig


def ceiling_pair(which, kernel, sizes, quick):
    """{size: Mbit/s} of one ceiling pair: the kernel's loop (its best
    guest-to-guest way of waiting, no host-injected receiver) or DPDK's
    txonly/rxonly."""
    if which == "loop":
        rows = kernelnet.ceiling(kernel, 1, sizes, quick, host=False)
        return {r["bytes"]: r["ceiling_mbps"] for r in rows if r["system"] == "link"}
    doc = linux("ceiling", "dpdk", sizes, quick, {"LB_CEIL_MS": "300"} if quick else None)
    return {r["bytes"]: r["mbps"] for r in doc["rows"]}


def run_pair(test, system, kernel, sizes, quick):
    """(figures {size: Mbit/s}, host window, why it failed or None) of one pair.
    A pair that fails (a VM, a check, a timeout) drops its round like a
    disturbed one; the run goes on."""
    a = host_now()
    try:
        if test == "ceiling":
            fig = ceiling_pair(system, kernel, sizes, quick)
        elif system == "kernel":
            fig = (kernel_burst if test == "burst" else kernel_stream)(kernel, sizes, quick)
        else:
            fig = linux_pair(test, system, sizes, quick)
        failed = None
    except SystemExit as e:
        fig, failed = {}, " ".join(str(e).split())[-300:] or "failed"
        print(f"abab: the pair failed: {failed}", flush=True)
    return fig, host_window(a, host_now()), failed


def ceiling_systems(peers):
    return ["loop"] + (["dpdk"] if "dpdk" in peers else [])


def rounds(a, kernel, sizes, after_round):
    """Pair rows of every round run, each marked dropped or kept;
    after_round(rows so far) after each test round. Each round starts with
    the ceiling's pairs; when they are dropped, so is the round's every test."""
    rows, kept = [], {t: 0 for t in a.tests}
    t_end = time.monotonic() + a.budget_min * 60 if a.budget_min else None
    for r in range(a.max_rounds):
        todo = [t for t in a.tests if kept[t] < a.rounds]
        if not todo:
            break
        if t_end and time.monotonic() > t_end:
            print(f"abab: budget of {a.budget_min} min spent after {r} rounds", flush=True)
            break
        cgot = []
        for which in ceiling_systems(a.peers):
            print(f"abab: round {r + 1} ceiling {CEILINGS[which]} ({time.strftime('%T')})", flush=True)
            fig, h, failed = run_pair("ceiling", which, kernel, sizes, a.quick)
            cgot += pair_rows("ceiling", r + 1, CEILINGS[which], None, sizes, fig, h, failed)
        cdrop = judge(cgot)
        rows += cgot
        if cdrop:
            print(f"abab: round {r + 1} dropped for every test by its ceiling: {why(cgot)}", flush=True)
            after_round(rows)
            continue
        for test in todo:
            got = []
            for peer in a.peers:
                for system in ("kernel", peer):
                    print(f"abab: round {r + 1} ({kept[test]}/{a.rounds} kept) {test} "
                          f"{'kernel' if system == 'kernel' else PEERS[system]} ({time.strftime('%T')})", flush=True)
                    fig, h, failed = run_pair(test, system, kernel, sizes, a.quick)
                    name = "kernel" if system == "kernel" else PEERS[system]
                    got += pair_rows(test, r + 1, name, PEERS[peer], sizes, fig, h, failed)
            if judge(got):
                print(f"abab: round {r + 1} {test} dropped: {why(got)}", flush=True)
            else:
                kept[test] += 1
            rows += got
            after_round(rows)
    return rows


def pair_rows(test, rnd, system, peer, sizes, fig, h, failed):
    """One row per size of a pair (a ceiling's pair has no peer)."""
    out = []
    for s in sizes:
        row = {"kind": "pair", "test": test, "round": rnd, "system": system}
        if peer:
            row["peer"] = peer
        x = fig.get(s)
        row.update({"bytes": s, "mbps": None if isinstance(x, str) else stats.rnd(x, 2)}, **h)
        if isinstance(x, str):  # a size this system cannot run: no figure, the round stands
            row["skipped"] = x
        if failed:
            row["failed"] = failed
        out.append(row)
    return out


def why(got):
    worst = max(got, key=lambda g: g["other_cores"])
    return (f"{worst['system']} pair had other processes at {worst['other_cores']} cores, steal "
            f"{max(g['steal_frac'] for g in got)}{', a pair failed' if any(g.get('failed') for g in got) else ''}")


def judge_all(pairs):
    """judge() again over every round of recorded pairs (--reanalyse): the
    ceiling's pairs of a round first, then its tests."""
    cdrop = {}
    for rnd in sorted({g["round"] for g in pairs if g["test"] == "ceiling"}):
        cdrop[rnd] = judge([g for g in pairs if g["test"] == "ceiling" and g["round"] == rnd])
    for key in sorted({(g["test"], g["round"]) for g in pairs if g["test"] != "ceiling"}):
        judge([g for g in pairs if (g["test"], g["round"]) == key], cdrop.get(key[1], False))


def ratio_rows(pairs, peers, sizes, tests):
    out = []
    for test in tests:
        for peer in peers:
            for s in sizes:
                sel = lambda sysname: {g["round"]: g["mbps"] for g in pairs  # noqa: E731
                                       if g["test"] == test and g.get("peer") == PEERS[peer] and g["bytes"] == s
                                       and g["system"] == sysname and not g["dropped"] and g["mbps"]}
                k, p = sel("kernel"), sel(PEERS[peer])
                rs = sorted(set(k) & set(p))
                ratios = [k[r] / p[r] for r in rs]
                ci = stats.bootstrap_ci(ratios)
                out.append({"kind": "ratio", "test": test, "system": "kernel", "peer": PEERS[peer], "bytes": s,
                            "pairs": len(rs), "ratio": stats.rnd(stats.median(ratios), 3),
                            "ratio_ci95": [round(x, 3) for x in ci] if ci else None,
                            "ratios": [round(x, 3) for x in ratios], "rounds": rs,
                            "kernel_mbps": stats.rnd(stats.median([k[r] for r in rs]), 2),
                            "peer_mbps": stats.rnd(stats.median([p[r] for r in rs]), 2)})
    return out


def read_ceilings(d, sizes):
    """{size: (kernel loop, DPDK txonly/rxonly or None)} from the files ceilings() wrote."""
    loop = {r["bytes"]: r["ceiling_mbps"] for r in (load(os.path.join(d, "ceiling.json")) or {"rows": []})["rows"]
            if r["system"] == "link"}
    dpdk = {r["bytes"]: r["mbps"] for r in (load(os.path.join(d, "linux-dpdk-ceiling.json")) or {"rows": []})["rows"]}
    return {s: (loop.get(s), dpdk.get(s)) for s in sizes}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError:
        return None


def round_ceilings(pairs, sizes):
    """{round: {size: (neutral ceiling, kernel loop, DPDK or None)}} of the rounds
    whose ceiling was kept (every ceiling pair of the round has a figure)."""
    out = {}
    for rnd in sorted({g["round"] for g in pairs if g["test"] == "ceiling"}):
        gs = [g for g in pairs if g["test"] == "ceiling" and g["round"] == rnd]
        if any(g["dropped"] for g in gs):
            continue
        per = {}
        for s in sizes:
            fig = {g["system"]: g["mbps"] for g in gs if g["bytes"] == s and g["mbps"]}
            if fig:
                per[s] = (max(fig.values()), fig.get(CEILINGS["loop"]), fig.get(CEILINGS["dpdk"]))
        out[rnd] = per
    return out


def frac_rows(pairs, peers, sizes, tests):
    """bench abab rows of kind frac: per test, system and size, each kept round's
    figure (the kernel's: the median of its pairs in the round) over that
    round's neutral ceiling, their median and its bootstrap 95 % interval."""
    ceil = round_ceilings(pairs, sizes)
    out = []
    for test in tests:
        for name in ["kernel"] + [PEERS[p] for p in peers]:
            for s in sizes:
                per = {}
                for g in pairs:
                    if g["test"] == test and g["system"] == name and g["bytes"] == s and not g["dropped"] \
                            and g["mbps"] and s in ceil.get(g["round"], {}):
                        per.setdefault(g["round"], []).append(g["mbps"])
                rs = sorted(per)
                figs = [stats.median(per[r]) for r in rs]
                tops = [ceil[r][s][0] for r in rs]
                fracs = [f / t for f, t in zip(figs, tops)]
                ci = stats.bootstrap_ci(fracs)
                out.append({"kind": "frac", "test": test, "system": name, "bytes": s, "pairs": len(rs),
                            "rounds": rs, "mbps": stats.rnd(stats.median(figs), 2),
                            "ceiling_mbps": stats.rnd(stats.median(tops), 2),
                            "ceiling_loop_mbps": stats.rnd(stats.median([ceil[r][s][1] for r in rs
                                                                         if ceil[r][s][1]]), 2),
                            "ceiling_dpdk_mbps": stats.rnd(stats.median([ceil[r][s][2] for r in rs
                                                                         if ceil[r][s][2]]), 2),
                            "ceiling_frac": round(stats.median(fracs), 4) if fracs else None,
                            "ceiling_frac_ci95": [round(x, 4) for x in ci] if ci else None,
                            "ceiling_fracs": [round(x, 4) for x in fracs]})
    return out


def stream_rows(pairs, peers, sizes, ceil, ratios, fracs):
    """bench "stream" rows: per system and size, the median over the kept pairs;
    the ceiling from the frac rows (repeated ceilings) or, for a run from
    before them, the one ceiling of ceil ({size: (loop, dpdk)})."""
    out = []
    for name in ["kernel"] + [PEERS[p] for p in peers]:
        for s in sizes:
            # The kernel's pairs before each peer's all count for the kernel.
            xs = [g["mbps"] for g in pairs if g["test"] == "stream" and g["system"] == name
                  and g["bytes"] == s and not g["dropped"] and g["mbps"]]
            if not xs:
                continue
            m = stats.median(xs)
            row = {"system": name, "bytes": s, "mode": "window", "mbps": stats.rnd(m, 2), "pairs": len(xs),
                   "boot_median_mbps": xs}
            fr = next((f for f in fracs if f["test"] == "stream" and f["system"] == name and f["bytes"] == s
                       and f["pairs"]), None)
            if fr:
                row.update({k: fr[k] for k in ("ceiling_mbps", "ceiling_frac", "ceiling_frac_ci95",
                                               "ceiling_fracs", "ceiling_loop_mbps", "ceiling_dpdk_mbps")})
                row["ceiling_rounds"] = fr["rounds"]
            elif ceil.get(s) and any(ceil[s]):
                loop, dpdk = ceil[s]
                top = max(x for x in (loop, dpdk) if x)
                row.update({"ceiling_mbps": top, "ceiling_frac": round(m / top, 4),
                            "ceiling_loop_mbps": loop, "ceiling_dpdk_mbps": dpdk})
            row.update({"packets": STREAM_COUNT, "batch": STREAM_BATCH, "window": STREAM_WINDOW})
            rr = next((r for r in ratios if r["test"] == "stream" and r["peer"] == name and r["bytes"] == s), None)
            if rr:
                row["kernel_ratio"], row["ratio_ci95"] = rr["ratio"], rr["ratio_ci95"]
            out.append(row)
    return out


def netns():
    """As run-all.sh: into a private network namespace with the unix datagram
    queue at 512 (as root), recorded in env.host_setting."""
    if not os.environ.get("BENCH_IN_NETNS") and os.getuid() == 0 and \
            subprocess.run(["unshare", "-n", "true"], check=False).returncode == 0:
        os.execvpe("unshare", ["unshare", "-n", sys.executable] + sys.argv, dict(os.environ, BENCH_IN_NETNS="1"))
    if os.environ.get("BENCH_IN_NETNS") and subprocess.run(
            ["sysctl", "-qw", "net.unix.max_dgram_qlen=512"], check=False).returncode == 0:
        os.environ["BENCH_HOST_SETTING"] = "net.unix.max_dgram_qlen=512 (private network namespace; host default 10)"
    else:
        with open("/proc/sys/net/unix/max_dgram_qlen") as f:
            os.environ["BENCH_HOST_SETTING"] = f"host defaults (net.unix.max_dgram_qlen={f.read().strip()})"


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--reanalyse":
        sys.exit(reanalyse(sys.argv[2], sys.argv[3]))
    netns()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel")
    ap.add_argument("outdir")
    ap.add_argument("--rounds", type=int, default=10, help="kept rounds wanted per test")
    ap.add_argument("--max-rounds", type=int, default=0, help="rounds run at most (default 2 x --rounds)")
    ap.add_argument("--sizes", default="64,1500,8192")
    ap.add_argument("--peers", default="packet,dpdk", help="Linux variants (bench.sh LB_VARIANTS names)")
    ap.add_argument("--tests", default="burst,stream")
    ap.add_argument("--quick", action="store_true", help="a few repetitions per pair (the smoke)")
    ap.add_argument("--budget-min", type=float, default=0, help="start no round after this many minutes")
    ap.add_argument("--nic", choices=sorted(kernelnet.MODELS), default=os.environ.get("NIC", "e1000"))
    a = ap.parse_args()
    a.sizes = [int(x) for x in a.sizes.split(",")]
    a.peers = a.peers.split(",")
    a.tests = a.tests.split(",")
    a.max_rounds = a.max_rounds or 2 * a.rounds
    if any(p not in PEERS for p in a.peers) or any(t not in ("burst", "stream") for t in a.tests):
        sys.exit(f"abab: peers are {', '.join(PEERS)}; tests burst and stream")
    kernelnet.NIC = a.nic
    kernelnet.BUSY_RETRIES = 0  # a disturbed pair drops its round here, for every system alike
    os.makedirs(a.outdir, exist_ok=True)
    os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)  # kernelnet.py's pair logs
    t0 = time.monotonic()
    e = env("tcg", "real", a.rounds, "dgram-unix", a.nic)
    e.update({"rounds_wanted": a.rounds, "max_rounds": a.max_rounds,
              "order": "per peer: kernel pair, then the peer's pair",
              "quick": a.quick, "sizes": a.sizes, "peers": a.peers, "tests": a.tests,
              "linux_streams": 1, "linux_stream_warmups": 0,  # linux(): one stream a size, as the kernel's
              "ceilings": [CEILINGS[w] for w in ceiling_systems(a.peers)],
              "ceiling_per_round": True,  # a ceiling pair each at the start of every round
              "bootstrap": "median of the per-round ratios; percentile interval, 2000 resamples, seed 25"})

    def written(rows):  # after every round: a run cut short keeps what it measured
        e.update(rounds_run=max((g["round"] for g in rows), default=0),
                 minutes=round((time.monotonic() - t0) / 60, 1))
        return write_all(a.outdir, e, rows, {}, quiet=True)
    for old in ("ceiling.json", "linux-dpdk-ceiling.json"):  # an older run's one ceiling
        if os.path.exists(os.path.join(a.outdir, old)):
            os.unlink(os.path.join(a.outdir, old))
    pairs = rounds(a, a.kernel, a.sizes, written)
    written(pairs)
    sys.exit(write_all(a.outdir, e, pairs, {}))


def write_all(out, e, pairs, ceil, quiet=False):
    """abab.json, stream.json (with the stream test) and the report section; 1 on a format fault.
    ceil: the one ceiling of a run from before the repeated ones ({size: (loop, dpdk)}), else {}."""
    peers, sizes, tests = e["peers"], e["sizes"], e["tests"]
    ratios = ratio_rows(pairs, peers, sizes, tests)
    fracs = frac_rows(pairs, peers, sizes, tests) if any(g["test"] == "ceiling" for g in pairs) else []
    e = dict(e, max_steal=MAX_STEAL, max_other_cores=MAX_OTHER)
    docs = {"abab.json": {"bench": "abab", "env": e, "rows": pairs + ratios + fracs}}
    srows = stream_rows(pairs, peers, sizes, ceil, ratios, fracs) if "stream" in tests else []
    if srows:  # none when every stream round was dropped: the report says so
        docs["stream.json"] = {"bench": "stream", "env": dict(e, clock="real"), "rows": srows}
    elif os.path.exists(os.path.join(out, "stream.json")):
        os.unlink(os.path.join(out, "stream.json"))
    bad = 0
    for name, doc in docs.items():
        with open(os.path.join(out, name), "w") as f:
            json.dump(doc, f, indent=1)
        faults = check_schema.check_doc(doc, doc["bench"], None)
        for fault in faults:
            print(f"abab: {name}: {fault}")
        bad += len(faults)
    abab_report.write(out)
    if quiet:
        return 1 if bad else 0
    for r in ratios:
        print(f"abab: {r['test']} {r['bytes']} B kernel / {r['peer']}: {r['ratio']} {r['ratio_ci95']} "
              f"over {r['pairs']} rounds")
    for r in fracs:
        print(f"abab: {r['test']} {r['bytes']} B {r['system']}: {r['ceiling_frac']} {r['ceiling_frac_ci95']} "
              f"of the ceiling over {r['pairs']} rounds")
    print(f"abab: wrote {out} ({e['minutes']} min of pairs)")
    return 1 if bad else 0


def reanalyse(src, out):
    """The pairs of an earlier run (src/abab.json) judged again by this run's
    thresholds (ABAB_MAX_STEAL, LB_MAX_OTHER) into out, with its ceilings."""
    doc = load(os.path.join(src, "abab.json"))
    if not doc:
        sys.exit(f"abab: no abab.json in {src}")
    pairs = [r for r in doc["rows"] if r["kind"] == "pair"]
    judge_all(pairs)
    os.makedirs(out, exist_ok=True)
    for name in ("ceiling.json", "linux-dpdk-ceiling.json"):
        if os.path.exists(os.path.join(src, name)) and os.path.abspath(src) != os.path.abspath(out):
            with open(os.path.join(src, name)) as f, open(os.path.join(out, name), "w") as g:
                g.write(f.read())
    e = dict(doc["env"], reanalysed_from=os.path.basename(os.path.abspath(src)))
    inv = {v: k for k, v in PEERS.items()}
    e.setdefault("sizes", sorted({g["bytes"] for g in pairs}))
    e.setdefault("peers", list(dict.fromkeys(inv[g["peer"]] for g in pairs if g.get("peer"))))
    e.setdefault("tests", list(dict.fromkeys(g["test"] for g in pairs if g["test"] != "ceiling")))
    return write_all(out, e, pairs, read_ceilings(out, e["sizes"]))


if __name__ == "__main__":
    main()
