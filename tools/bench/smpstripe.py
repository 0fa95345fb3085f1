#!/usr/bin/env python3
"""make bench-smp-stripe: a striped stream over 4 links with 1, 2 and 4 CPUs
per node (issue 27), this kernel and (--linux) Linux beside it.

Each point boots a server and a client VM, both at -smp N, joined by 4
point-to-point links (tools/net-pair.sh), and runs user/stream.c over a
channel striped on the 4 NICs, unpaced, poll=irq (a NIC whose ring is
empty goes back to interrupts and the idle CPU halts). NIC i's interrupt
and network worker are on CPU i mod N (nicirq=); the programs are not
pinned (the scheduler places them). Each pair runs under -icount shift=0
with QEMU loading insnplugin.so (built with the Linux guest,
tools/linux-baseline/), which gives two figures of the same stream:
  counted  each vCPU's own instructions between stream.c's window markers
           (the server's from the end of its first batch, the client's
           from its first send), blocks with a PAUSE (spin waits) left
           out: the target's figure;
  busy     both ends print, per CPU, the busy ticks per packet (elapsed
           minus halted) and of them the ticks spent waiting for a kernel
           lock (CPUBUSY, sysinfo.cpu_spin_tsc). The ticks are guest
           instructions, but of every CPU: QEMU runs the vCPUs in turns and
           the -icount clock counts all of them, so a CPU's busy time also
           holds what the others ran while it was not halted.
The NIC model is the 82574L (QEMU's e1000e, MSI): the 82540 (e1000) has
only INTx, and QEMU's i440fx routes four slots' INTA to two IOAPIC lines,
so four e1000s cannot take four CPUs' interrupts (nicirq= names one CPU
per line; at -smp 2 every e1000 line would land on CPU 1).
Rounds alternate the CPU counts (1, 2, 4, 1, 2, 4, ...); medians over
RUNS rounds a point. Writes OUTDIR/kernel-smpstripe.json.

--linux: Linux beside it instead (tools/linux-baseline/run-links.sh, the
guest built in --guest): both guests at -smp N, bond0 in balance-rr over
the same 4 NICs (82574L, e1000e.ko, MSI-X), each NIC's vectors on CPU
i mod N (pkt.irqcpu=spread), one TCP connection of --bytes a size after
one warm-up, pktbench not pinned. Debian's 6.1 kernel brings no second CPU
up under -icount, so only the count way: real time, insnplugin.so over the
connection (run-links.sh --count; pktbench marks it at both ends), per
write-size piece ("packet"). Linux has no big kernel lock and no -icount
figures: those columns are null. Writes OUTDIR/linux-smpstripe.json.

--linux --variant dpdk: DPDK instead (dpdkbench --ports 4 --mode window,
tools/linux-baseline/dpdkstripe.h): both guests at -smp N boot
initrd-dpdk.gz with the 4 NICs bound to uio_pci_generic, one lcore a CPU,
NIC i served by lcore i mod N; pktwindow.h's windowed stream (user/
stream.c's, 4096 packets, 64-packet batches, 2 unacknowledged) striped
packet k on NIC k mod 4, one warm-up stream and one measured a size.
Real time, insnplugin.so over each stream (the sender's from its first
send to its last acknowledgement, the receiver's from its first batch
acknowledged to its last packet, 4032 packets) and over an idle window
at the end, with no traffic. The lcores poll and never sleep, so every
CPU's count holds its empty polls: the rows give them per packet
(*_empty_polls_per_pkt), what one costs on that CPU in the idle window
(*_empty_poll_insns) and the count less the user-mode instructions of
every round of an lcore's loop that found nothing (the plugin leaves them
out, WIN idle=: *_work_insns_per_pkt, busiest_work_*). Writes
OUTDIR/linux-dpdk-smpstripe.json.
Usage: smpstripe.py KERNEL OUTDIR RUNS --guest DIR [--cpus 1,2,4] [--sizes 1500,8192]
                    [--bytes 8388608] [--model e1000e] [--linux [--variant bond|dpdk]]
       (KERNEL "-": no boots; the rows again from the samples in OUTDIR's files)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import sections  # noqa: E402
import stats  # noqa: E402
from env import bench_args, env  # noqa: E402
from multilink import BATCH, pair  # noqa: E402

LINKS = 4
PKTWINDOW_COUNT = 4096  # pktproto.h's PB_WIN_COUNT: packets a windowed stream
USER_LO = 1 << 40  # this kernel's programs run from 1 TiB (lib/user.ld); the kernel below


def per_cpu(res, n):
    """(busy, spin) instructions per packet on each of the n CPUs of one end."""
    if n == 1:
        return [int(res["busy_per_pkt"])], [0]
    cb = res["cpubusy"]
    return [int(cb[f"cpu{k}"]) for k in range(n)], [int(cb[f"spin{k}"]) for k in range(n)]


def sample(kernel, n, size, count, model, guest, words=""):
    """One boot pair of this kernel under -icount with insnplugin.so loaded:
    both ways of counting from the same stream."""
    nicirq = ",".join(str(i % n) for i in range(LINKS))
    with tempfile.TemporaryDirectory(prefix="smpstripe.") as d:
        s, c, sh = pair(kernel, LINKS, size, count, 0, icount=True, timeout=900, poll="irq", smp=n,
                        model=model, words=f"nicirq={nicirq} lockcheck=0 {words}".strip(),
                        qemu_extra=f"-plugin {guest}/insnplugin.so,out={d}/@SIDE@.insns,user_lo={USER_LO:#x}")
        w = {side: wins(f"{d}/{side}.insns") for side in ("server", "client")}
        wu = {side: wins(f"{d}/{side}.insns", "user") for side in ("server", "client")}
    if int(s.get("corrupt", 1)) or int(s.get("missing", 1)):
        raise RuntimeError(f"cpus={n} bytes={size}: corrupt {s.get('corrupt')} missing {s.get('missing')}")
    if len(w["server"]) != 1 or len(w["client"]) != 1:
        raise RuntimeError(f"cpus={n} bytes={size}: plugin windows {len(w['server'])}/{len(w['client'])}, not 1")
    rx, rx_spin = per_cpu(s, n)
    tx, tx_spin = per_cpu(c, n)
    timed = int(s["packets"]) - BATCH  # the server's window starts after its first batch
    return {"cpus": n, "bytes": size, "packets": int(s["packets"]), "reordered": int(s["reordered"]),
            "shares": [sh.get(k, 0) for k in range(LINKS)],
            "rx_n": [v // timed for v in w["server"][0]][:n], "tx_n": [v // int(c["packets"]) for v in w["client"][0]][:n],
            "rx_user_n": [v // timed for v in wu["server"][0]][:n] if wu["server"] else None,
            "tx_user_n": [v // int(c["packets"]) for v in wu["client"][0]][:n] if wu["client"] else None,
            "rx": rx, "tx": tx, "rx_spin": rx_spin, "tx_spin": tx_spin, "rx_total": int(s["busy_per_pkt"]),
            "tx_total": int(c["busy_per_pkt"]), "rx_unlocked": int(s.get("rx_unlocked", 0)),
            "rx_settles": int(s.get("rx_settles", 0))}


def wins(path, key="cpus"):
    """insnplugin.so's windows in a file: [[instructions per vCPU], ...], in order
    (key="user": of them, those in user mode)."""
    with open(path, errors="replace") as f:
        return [[int(v) for v in re.search(key + r"=(\S+)", line).group(1).split(",")]
                for line in f if line.startswith("WIN ") and f" {key}=" in line]


# The Linux guests' clock: Linux takes hpet at -smp 2 and more under TCG
# (it finds the TSCs unsynchronised), and every clock read (the DPDK
# sender's deadline checks, pktbench's) is then a system call, several
# thousand kernel instructions a packet that -smp 1 (TSC, vDSO) does not
# have; tsc=reliable keeps the TSC at every CPU count, for the bond's
# guests and DPDK's alike.
CLOCK_WORDS = "no_timer_check tsc=reliable"


def linux_pair(guest, n, sizes, nbytes, model):
    """One Linux boot pair at -smp n: a sample per size (as sample()'s)."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with tempfile.TemporaryDirectory(prefix="smpstripe-linux.") as d:
        r = subprocess.run([os.path.join(root, "tools/linux-baseline/run-links.sh"), "--no-build",
                            "--guest", guest, "--nic", model, "--timeout", "900", "--logdir", d,
                            "--links", str(LINKS), "--bond", "rr", "--proto", "tcp", "--mode", "stream",
                            "--sizes", ",".join(map(str, sizes)), "--runs", "1", "--warmup", "1",
                            "--bytes", str(nbytes), "--count",
                            "--append", f"{CLOCK_WORDS} pkt.irqcpu=spread pkt.sysctl=net.ipv4.tcp_reordering:127"],
                           env=dict(os.environ, LB_SMP=str(n)), capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"linux cpus={n} failed ({r.returncode}):\n{r.stderr[-1500:]}")
        irqs = open(os.path.join(d, "server.txt"), errors="replace").read()
        clock = re.findall(r"^GUEST up .* clocksource=(\S+)", open(os.path.join(d, "client.txt"), errors="replace").read(),
                           re.M)
        # Per side, two windows a size (the warm-up connection, then the
        # measured one), sizes in order; the quit connection (0 bytes) last.
        srv_w, cli_w = wins(os.path.join(d, "server.insns")), wins(os.path.join(d, "client.insns"))
        srv_u, cli_u = (wins(os.path.join(d, "server.insns"), "user"),
                        wins(os.path.join(d, "client.insns"), "user"))
    out, srv = [], {}
    for line in r.stdout.splitlines():
        w = line.split()
        f = dict(x.split("=", 1) for x in w[2:] if "=" in x)
        if w[:2] == ["SRVSTAT", "stream"]:
            srv.setdefault(int(f["bytes"]), []).append(f)
        elif w[:2] == ["RESULT", "stream"]:
            out.append(f)
    samples = []
    for i, c in enumerate(out):
        size = int(c["bytes"])
        sv = srv[size][-1]  # the server prints its warm-up line too: the measured one is last
        if int(sv["verified"]) != int(c["total"]):
            raise RuntimeError(f"linux cpus={n} bytes={size}: {sv['verified']} of {c['total']} verified")
        pkts = int(c["total"]) // size
        rx = [v // pkts for v in srv_w[2 * i + 1]][:n]
        tx = [v // pkts for v in cli_w[2 * i + 1]][:n]
        user = len(srv_u) == len(srv_w) and len(cli_u) == len(cli_w)
        samples.append({"cpus": n, "bytes": size, "packets": pkts, "rx_n": rx, "tx_n": tx,
                        "rx_user_n": [v // pkts for v in srv_u[2 * i + 1]][:n] if user else None,
                        "tx_user_n": [v // pkts for v in cli_u[2 * i + 1]][:n] if user else None,
                        "reordered": int(sv.get("ofo", 0)),
                        "shares": [int(v) for v in sv["nic_rx"].split(",")][:LINKS],
                        "rx_busy_ns": [int(v) // pkts for v in sv["cpu_busy_ns"].split(",")][:n],
                        "irq_counts": re.findall(r"^IRQCPU irq=\S+ counts=(\S+)$", irqs, re.M),
                        "clocksource": clock[0] if clock else None})
    return samples


def stripe_lines(path, role):
    """dpdkbench's STRIPE lines of one side's console, in order: the
    stream windows', then the idle window's (dpdkstripe.h)."""
    out = []
    for line in open(path, errors="replace"):
        w = line.split()
        if w[:2] == ["STRIPE", f"role={role}"]:
            f = dict(x.split("=", 1) for x in w[2:] if "=" in x)
            f["idle"] = "idle" in w
            out.append({k: ([int(v) for v in x.split(",")] if k in ("cpus", "empty", "rx") else x)
                        for k, x in f.items()})
    return out


def dpdk_side(d, side, role, n, warmup):
    """One side's measured streams of a DPDK boot: {(bytes): per-CPU
    counts, empty polls, and the idle window's cost of an empty poll}."""
    st, ws = stripe_lines(os.path.join(d, f"{side}.txt"), role), wins(os.path.join(d, f"{side}.insns"))
    us, ds = wins(os.path.join(d, f"{side}.insns"), "user"), wins(os.path.join(d, f"{side}.insns"), "idle")
    if len(st) != len(ws) or len(ds) != len(ws) or not st or not st[-1]["idle"]:
        raise RuntimeError(f"dpdk cpus={n} {side}: {len(st)} STRIPE lines, {len(ws)} plugin windows")
    idle, iw = st[-1], ds[-1]
    cost = [iw[c] / max(1, e) for c, e in zip(idle["cpus"], idle["empty"])]
    out = {}
    for x, w, u, dw in zip(st[:-1], ws[:-1], us[:-1], ds[:-1]):
        if int(x["stream"]) < warmup:
            continue
        pk = int(x["packets"])
        cpu = [w[c] for c in x["cpus"]][:n]
        out[int(x["bytes"])] = {
            "n": [v // pk for v in cpu], "user": [u[c] // pk for c in x["cpus"]][:n],
            "empty": [round(e / pk, 1) for e in x["empty"]][:n], "cost": [round(c, 1) for c in cost][:n],
            "work": [(w[c] - dw[c]) // pk for c in x["cpus"]][:n],
            "rx": x["rx"]}
    return out




def linux_dpdk_pair(guest, n, sizes, model, warmup=1):
    """One DPDK boot pair at -smp n: a sample per size (as sample()'s, and
    the empty polls)."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with tempfile.TemporaryDirectory(prefix="smpstripe-dpdk.") as d:
        r = subprocess.run([os.path.join(root, "tools/linux-baseline/run-links.sh"), "--no-build",
                            "--guest", guest, "--nic", model, "--timeout", "900", "--logdir", d,
                            "--links", str(LINKS), "--variant", "dpdk", "--mode", "window",
                            "--sizes", ",".join(map(str, sizes)), "--runs", "1", "--warmup", str(warmup),
                            "--count", "--append", CLOCK_WORDS],
                           env=dict(os.environ, LB_SMP=str(n)), capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"dpdk cpus={n} failed ({r.returncode}):\n{r.stderr[-1500:]}")
        rx, tx = dpdk_side(d, "server", "server", n, warmup), dpdk_side(d, "client", "client", n, warmup)
        clock = re.findall(r"^GUEST up .* clocksource=(\S+)", open(os.path.join(d, "client.txt"), errors="replace").read(),
                           re.M)
    mbps, cmbps = {}, {}
    for line in r.stdout.splitlines():
        w = line.split()
        f = dict(x.split("=", 1) for x in w[2:] if "=" in x)
        if w[:2] == ["SRVSTAT", "window"] and "bytes" in f:
            mbps[int(f["bytes"])] = float(f["mbps"])  # the measured stream is the size's last
        elif w[:2] == ["RESULT", "window"]:
            cmbps[int(f["bytes"])] = float(f["mbps"])
    samples = []
    for size in sizes:
        a, b = rx[size], tx[size]
        samples.append({"cpus": n, "bytes": size, "packets": PKTWINDOW_COUNT, "rx_n": a["n"], "tx_n": b["n"],
                        "rx_user_n": a["user"], "tx_user_n": b["user"], "reordered": 0, "shares": a["rx"],
                        "rx_empty_n": a["empty"], "tx_empty_n": b["empty"], "rx_poll_cost": a["cost"],
                        "tx_poll_cost": b["cost"], "rx_work_n": a["work"], "tx_work_n": b["work"],
                        "mbps": mbps[size], "client_mbps": cmbps[size], "clocksource": clock[0] if clock else None})
    return samples


def rows_of(samples, system="kernel"):
    """One row per (cpus, bytes): per-CPU medians over rounds, the busiest CPU
    (per pair, then the median) and its ratio to one CPU's, for the plugin's
    counts and (this kernel) the -icount busy figures."""
    pts = {}
    for x in samples:
        pts.setdefault((x["cpus"], x["bytes"]), []).append(x)
    rows = []
    for (n, size), xs in sorted(pts.items()):
        cs, bs = [x for x in xs if x.get("rx_n")], [x for x in xs if x.get("rx")]
        med = lambda xs, f: stats.median([f(x) for x in xs]) if xs else None  # noqa: E731
        col = lambda xs, key: [med(xs, lambda x: x[key][k]) for k in range(n)] if xs else None  # noqa: E731
        busiest = [max(x["rx_n"] + x["tx_n"]) for x in cs]
        # Kernel mode only: each CPU's count less its user-mode part (the
        # programs' own work, the receiver's byte check on one CPU).
        us = [x for x in cs if x.get("rx_user_n") and x.get("tx_user_n")]
        kern = [max([a - b for a, b in zip(x["rx_n"], x["rx_user_n"])]
                    + [a - b for a, b in zip(x["tx_n"], x["tx_user_n"])]) for x in us]
        unl = [x["rx_unlocked"] / x["packets"] for x in xs if "rx_unlocked" in x and x["packets"]]
        busy = [max(x["rx"] + x["tx"]) for x in bs]
        both = xs
        ps = [x for x in xs if "rx_work_n" in x]  # DPDK's polls
        work = [max(x["rx_work_n"] + x["tx_work_n"]) for x in ps]
        rows.append({
            "system": system, "cpus": n, "links": LINKS, "bytes": size,
            "packets": med(both, lambda x: x["packets"]),
            "rx_insns_per_pkt": col(cs, "rx_n"), "tx_insns_per_pkt": col(cs, "tx_n"),
            "busiest_insns_per_pkt": stats.median(busiest), "runs_busiest_insns_per_pkt": busiest,
            "busiest_rx_insns_per_pkt": med(cs, lambda x: max(x["rx_n"])),
            "busiest_tx_insns_per_pkt": med(cs, lambda x: max(x["tx_n"])),
            "rx_busy_insns_per_pkt": col(bs, "rx"), "tx_busy_insns_per_pkt": col(bs, "tx"),
            "rx_spin_insns_per_pkt": col(bs, "rx_spin"), "tx_spin_insns_per_pkt": col(bs, "tx_spin"),
            "rx_busy_total_insns_per_pkt": med(bs, lambda x: x["rx_total"]),
            "tx_busy_total_insns_per_pkt": med(bs, lambda x: x["tx_total"]),
            "busiest_busy_insns_per_pkt": stats.median(busy), "runs_busiest_busy_insns_per_pkt": busy or None,
            "rx_user_insns_per_pkt": col(us, "rx_user_n"), "tx_user_insns_per_pkt": col(us, "tx_user_n"),
            "rx_user_total_insns_per_pkt": med(us, lambda x: sum(x["rx_user_n"])),
            "busiest_kernel_insns_per_pkt": stats.median(kern) if kern else None,
            "rx_unlocked_share": round(stats.median(unl), 3) if unl and system == "kernel" else None,
            "out_of_order": med(both, lambda x: x["reordered"]),
            "per_link_share": [round(med(both, lambda x: x["shares"][k] / max(1, sum(x["shares"]))), 3)
                               for k in range(LINKS)],
            "pairs": len(cs),
        })
        if ps:
            rows[-1].update({
                "rx_empty_polls_per_pkt": col(ps, "rx_empty_n"), "tx_empty_polls_per_pkt": col(ps, "tx_empty_n"),
                "rx_empty_poll_insns": col(ps, "rx_poll_cost"), "tx_empty_poll_insns": col(ps, "tx_poll_cost"),
                "rx_work_insns_per_pkt": col(ps, "rx_work_n"), "tx_work_insns_per_pkt": col(ps, "tx_work_n"),
                "busiest_work_insns_per_pkt": stats.median(work), "runs_busiest_work_insns_per_pkt": work,
                "mbps": round(med(ps, lambda x: x["mbps"]), 1), "runs_mbps": [x["mbps"] for x in ps],
                "client_mbps": round(med(ps, lambda x: x["client_mbps"]), 1)})
    for key in ("busiest", "busiest_busy", "busiest_kernel", "busiest_work"):
        one = {r["bytes"]: r.get(f"{key}_insns_per_pkt") for r in rows if r["cpus"] == 1}
        for r in rows:
            base, v = one.get(r["bytes"]), r.get(f"{key}_insns_per_pkt")
            if v is None and key == "busiest_work":
                continue
            r[f"{key}_over_1cpu"] = round(v / base, 3) if base and v is not None else None
    return rows


def main():
    ap = bench_args(__doc__)
    ap.add_argument("--cpus", default="1,2,4")
    ap.add_argument("--sizes", default="1500,8192")
    ap.add_argument("--bytes", type=int, default=8 << 20, help="stream bytes per point")
    ap.add_argument("--model", default=os.environ.get("SMPSTRIPE_MODEL", "e1000e"))
    ap.add_argument("--guest", required=True, help="the Linux guest's build (insnplugin.so; --linux: the guest)")
    ap.add_argument("--linux", action="store_true", help="measure the Linux guest instead")
    ap.add_argument("--variant", default="bond", choices=("bond", "dpdk"),
                    help="--linux: bond0 balance-rr TCP (pktbench), or DPDK's striped window (dpdkbench)")
    ap.add_argument("--words", default="", help="more kernel command-line words (rxlock=fine: the lock-free receive path)")
    a = ap.parse_args()
    cpus = [int(x) for x in a.cpus.split(",")]
    sizes = [int(x) for x in a.sizes.split(",")]
    if a.linux and a.variant == "dpdk":
        return dpdk_main(a, cpus, sizes)
    if a.linux:
        return linux_main(a, cpus, sizes)
    if a.kernel == "-":  # no boots: the rows again from the samples kept in the file
        for name in ("kernel-smpstripe.json", "linux-smpstripe.json", "linux-dpdk-smpstripe.json"):
            path = os.path.join(a.out, name)
            if os.path.exists(path):
                with open(path) as f:
                    doc = json.load(f)
                doc["rows"] = rows_of(doc["samples"], doc["rows"][0]["system"] if doc["rows"] else "kernel")
                with open(path, "w") as f:
                    json.dump(doc, f, indent=1)
        return
    samples = []
    for run in range(a.runs):
        for n in cpus:
            for size in sizes:
                count = max(32 * BATCH, round(a.bytes / size / BATCH) * BATCH)
                x = sample(a.kernel, n, size, count, a.model, a.guest, a.words)
                samples.append(x)
                print(f"smpstripe: run {run + 1}/{a.runs} cpus={n} bytes={size}: {x['packets']} packets, "
                      f"insns/pkt counted rx {x['rx_n']} tx {x['tx_n']}, busy rx {x['rx']} (spin "
                      f"{x['rx_spin']}) tx {x['tx']} (spin {x['tx_spin']})", flush=True)
    doc = {"bench": "smpstripe", "env": env("tcg", "icount+plugin", a.runs, "dgram", a.model),
           "links": LINKS, "stream_bytes": a.bytes, "pinned": False, "words": a.words,
           "layout": "NIC i's interrupt and worker on CPU i mod N (nicirq=), programs not pinned",
           "cpu_clock": "-icount shift=0 with insnplugin.so: counted = each vCPU's own instructions (PAUSE "
                        "blocks left out); busy = ticks not halted, every vCPU's instructions meanwhile",
           "rows": rows_of(samples), "samples": samples}
    sections.dump(a.out, "kernel-smpstripe.json", doc, "smpstripe")


def linux_main(a, cpus, sizes):
    samples = []
    for run in range(a.runs):
        for n in cpus:
            for x in linux_pair(a.guest, n, sizes, a.bytes, a.model):
                samples.append(x)
                print(f"smpstripe: linux run {run + 1}/{a.runs} cpus={n} bytes={x['bytes']}: counted insns/pkt "
                      f"rx {x['rx_n']} tx {x['tx_n']}", flush=True)
    doc = {"bench": "smpstripe", "env": env("tcg", "real+plugin", a.runs, "dgram", a.model),
           "links": LINKS, "stream_bytes": a.bytes, "pinned": False,
           "layout": "bond0 balance-rr over 4 NICs, NIC i's MSI-X vectors on CPU i mod N, pktbench not pinned",
           "cpu_clock": "real-time TCG; each vCPU's instructions by insnplugin.so (PAUSE blocks left out)",
           "rows": rows_of(samples, "linux-bond-rr-tcp"), "samples": samples}
    sections.dump(a.out, "linux-smpstripe.json", doc, "smpstripe")


def dpdk_main(a, cpus, sizes):
    samples = []
    for run in range(a.runs):
        for n in cpus:
            for x in linux_dpdk_pair(a.guest, n, sizes, a.model):
                samples.append(x)
                print(f"smpstripe: dpdk run {run + 1}/{a.runs} cpus={n} bytes={x['bytes']}: {x['mbps']} Mbit/s, "
                      f"counted insns/pkt rx {x['rx_n']} tx {x['tx_n']}, empty polls/pkt rx {x['rx_empty_n']} "
                      f"tx {x['tx_empty_n']}, less them rx {x['rx_work_n']} tx {x['tx_work_n']}", flush=True)
    doc = {"bench": "smpstripe", "env": env("tcg", "real+plugin", a.runs, "dgram", a.model),
           "links": LINKS, "stream_packets": PKTWINDOW_COUNT, "pinned": True, "guest_words": CLOCK_WORDS,
           "layout": "DPDK em PMD on each of the 4 NICs (uio_pci_generic), one queue each; one EAL lcore "
                     "per CPU, NIC i polled by the lcore on CPU i mod N; acknowledgements on NIC 0",
           "cpu_clock": "real-time TCG; each vCPU's instructions by insnplugin.so (PAUSE blocks left out; "
                        "DPDK's polls hold none, so empty polls are counted: *_empty_polls_per_pkt, "
                        "*_empty_poll_insns from an idle window, *_work_insns_per_pkt the count less them)",
           "rows": rows_of(samples, "linux-dpdk"), "samples": samples}
    sections.dump(a.out, "linux-dpdk-smpstripe.json", doc, "smpstripe")


if __name__ == "__main__":
    main()
