#!/usr/bin/env python3
"""Where this kernel's relay node spends its instructions (make bench-relay,
with the CPU work): a function profile of the relay under -icount.

The relay line of relay.py's CPU work (client, relay, server on dgram
wires, the client's NICs paced, one link) with the relay's QEMU under
-icount shift=0 and the profiling plugin (tools/bench/profplugin.c, as make
profile-t1 uses it, here unwindowed), which counts the guest instructions
of every translation block by its start address; the kernel's symbols
(insnprof.py) map them to functions.
Three boots per size:
  a  P packets at R Mbit/s          (the CPU work's stream)
  b  P packets at R/3 Mbit/s        (the same packets, about three times the time)
  c  3P packets at R Mbit/s         (three times the packets)
Per function, its count over a boot is modelled as a constant (boot and
shutdown) plus x per forwarded packet plus y per second of the relay's
uptime (guest time: ticks, polls, what runs whatever the traffic); the
differences b - a and c - a give x and y (two equations, forwarded frames
and uptime from the relay's RELAY and KERNEL_EXIT lines). The sum of x over
the functions is what the relay's forwarding costs once the time-bound part
is taken out; relay.py's net_per_fwd subtracts the quiet rate over the
forwarding window instead, so the two differ by what the traffic adds to
the time-bound functions (and by the emulator's clock while halted).

Usage: relay_profile.py KERNEL OUTDIR [--sizes 1500,8192] [--mbps 25] [--packets 2048]
Writes OUTDIR/kernel-relay-profile.json: bench relayprofile, one row per
size and function (the top ones by instructions per packet and by
instructions per second; the rest of each part summed as "(rest)").
"""
import argparse
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import insnprof  # noqa: E402
import relay  # noqa: E402
import stats  # noqa: E402
from env import env  # noqa: E402

ROOT = relay.ROOT
TOP, TOP_TIME = 20, 8  # functions listed per size (per packet, per second); the rest summed per part
# The part of the relay's work a function belongs to, by its name: first match.
PARTS = [
    ("NIC driver (e1000 rings, registers)", r"^(e1000_|nd_rx_irq|tx_release|tx_queue|rx_account)"),
    ("DMA pins and checks", r"^(pmem_|dma_|netpkt_)"),
    ("relay and receive path", r"^(drain_some|relay_|demux_|flush_nic|rt_next_hop|txb_|forward|lane_link|pick_link|"
     r"shaper_|take_fragment|dispatch|someone_waits|tx_done|memcmp|memcpy|maybe_refill|set_polling|count_rearm)"),
    ("interrupts and traps", r"^(trap_|kernel_enter|.*_intr$|irq_|apic_|isr_|intr_)"),
    ("timer, scheduler, locks, idle", r"^(kernel_tick|sched_|proc_|worker_|lock_|spin_|check_acquire|"
     r"check_release|klock_|kernel_poll|io_idle_poll|timer_|idle)"),
    ("system calls (the watching program)", r"^(sys_|syscall|copy_to_user|copy_from_user|uaccess)"),
]


def part_of(fn):
    for name, rx in PARTS:
        if re.match(rx, fn):
            return name
    return "other"


def boot(kernel, so, size, packets, mbps, path):
    """One relay line with the relay profiled; returns its RELAY fields and
    uptime_us (its KERNEL_EXIT line's)."""
    common = f"run=stream size={size} count={packets} batch=64 window={relay.CPU_WINDOW} timeout_ms=60000"
    topo = relay.line(kernel, 1, 1, f"{common} role=server", f"{common} role=client nic_mbps={mbps}", True,
                      name="relay-profile")
    for n in topo["nodes"]:
        if n["name"] == "n1":
            n["qemu_extra"] = n["qemu_extra"] + ["-plugin", f"{so},out={path}"]
    logs = relay.cluster(topo)
    rl = relay.kv(re.search(r"^RELAY .*$", logs["n1"], re.M).group(0))
    rl["uptime_us"] = re.search(r"^KERNEL_EXIT .*uptime_us=(\d+)", logs["n1"], re.M).group(1)
    return rl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel")
    ap.add_argument("out")
    ap.add_argument("--sizes", default="1500,8192")
    ap.add_argument("--mbps", type=int, default=relay.CPU_MBPS)
    ap.add_argument("--packets", type=int, default=relay.CPU_PACKETS)
    a = ap.parse_args()
    kernel = os.path.abspath(a.kernel)
    rows, checks = [], {}
    with tempfile.TemporaryDirectory(prefix="relay-profile.") as d:
        so = insnprof.build_plugin(d)
        for size in [int(x) for x in a.sizes.split(",")]:
            runs = {}
            for tag, pk, rate in (("a", a.packets, a.mbps), ("b", a.packets, max(1, a.mbps // 3)),
                                  ("c", 3 * a.packets, a.mbps)):
                path = os.path.join(d, f"{size}-{tag}.txt")
                rl = boot(kernel, so, size, pk, rate, path)
                counts = insnprof.profile(insnprof.plugin_file(path), kernel, tags=False)
                runs[tag] = (counts, int(rl["uptime_us"]) / 1e6, int(rl["relayed"]), rl)
                print(f"relay_profile: {size} B, {pk} packets at {rate} Mbit/s: {rl['relayed']} forwarded in "
                      f"{rl['window_ms']} ms ({rl['uptime_us']} us up), {rl['busy_per_fwd']} busy instructions "
                      "per forwarded packet", flush=True)
            (fa, ta, na, ra), (fb, tb, nb, _), (fc, tc, nc, _) = runs["a"], runs["b"], runs["c"]
            # [nc-na tc-ta; nb-na tb-ta] [x; y] = [fc-fa; fb-fa]
            n1, t1, n2, t2 = nc - na, tc - ta, nb - na, tb - ta
            det = n1 * t2 - n2 * t1
            fns = set(fa) | set(fb) | set(fc)
            per = {f: ((fc[f] - fa[f]) * t2 - (fb[f] - fa[f]) * t1) / det for f in fns}
            rate = {f: (n1 * (fb[f] - fa[f]) - n2 * (fc[f] - fa[f])) / det for f in fns}
            shown = sorted(fns, key=lambda f: -per[f])[:TOP]
            shown += [f for f in sorted(fns, key=lambda f: -rate[f]) if f not in shown][:TOP_TIME]
            for f in shown:
                rows.append({"bytes": size, "links": 1, "function": f, "part": part_of(f),
                             "insns_per_pkt": stats.rnd(per[f], 1), "insns_per_s": round(rate[f])})
            for p in [p[0] for p in PARTS] + ["other"]:
                rest = [f for f in fns if f not in shown and part_of(f) == p]
                if rest:
                    rows.append({"bytes": size, "links": 1, "function": "(rest)", "part": p,
                                 "insns_per_pkt": stats.rnd(sum(per[f] for f in rest), 1),
                                 "insns_per_s": round(sum(rate[f] for f in rest))})
            checks[str(size)] = {"insns_per_pkt": round(sum(per.values())), "insns_per_s": round(sum(rate.values())),
                                 "net_per_fwd_a": int(ra["net_per_fwd"]), "busy_per_fwd_a": int(ra["busy_per_fwd"]),
                                 "boots": {k: {"packets": v[2], "uptime_s": round(v[1], 3)} for k, v in runs.items()}}
    doc = {"bench": "relayprofile", "env": env("tcg", "icount", 1, backend="dgram-unix-per-link (cluster runner)",
                                                 nic="e1000"),
           "mbps": a.mbps, "packets": a.packets, "totals": checks,
           "parts": [p[0] for p in PARTS] + ["other"], "rows": rows}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "kernel-relay-profile.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"relay_profile: wrote {os.path.join(a.out, 'kernel-relay-profile.json')}")


if __name__ == "__main__":
    main()
