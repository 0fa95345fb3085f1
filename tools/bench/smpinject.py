#!/usr/bin/env python3
"""make bench-smp-inject: one VM receiving from the host injector, 1 vCPU
against 2 (issue 27).

The receiver is a process, user/stream.c's server, fed by
tools/bench/inject.py --stream (the host plays the stream's client: its
frames, window and acknowledgements; the server checks every byte). Two
layouts, in real time (plain TCG, no -icount; the point is the rate):
  1cpu   -smp 1: the NIC's interrupt, its worker and the process on CPU 0;
  2cpu   -smp 2: nicirq=0 (interrupt and worker on CPU 0), runcpu=1 (the
         receiving process on CPU 1).
Rounds alternate the layouts (1cpu first in odd rounds, 2cpu first in even
ones), every size in each; RUNS rounds, medians per point, and the ratio
2cpu / 1cpu of the medians. Beside the rate, each QEMU thread's host CPU
time over the stream (/proc/PID/task/*/stat): the main loop thread runs
the NIC model and the dgram backend, the "CPU n/TCG" threads the vCPUs;
a main loop near 1.0 CPU-second a second is the emulator's limit, not the
guest's.
Writes OUTDIR/kernel-smpinject.json.
Usage: smpinject.py KERNEL OUTDIR RUNS [--sizes 64,1500,8192] [--seconds 3]
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import sections  # noqa: E402
import stats  # noqa: E402
from env import bench_args, env  # noqa: E402
from inject import STREAM_BATCH, stream_run  # noqa: E402

LAYOUTS = {"1cpu": (1, ""), "2cpu": (2, "nicirq=0 runcpu=1")}
# Packets for about --seconds at a first guess of the rate (Mbit/s per
# size, this host's order of magnitude); the figures come from the run.
GUESS_MBPS = {64: 5, 1500: 100, 8192: 600}


def count_for(size, seconds):
    mbps = GUESS_MBPS.get(size, 200)
    n = int(mbps * 1e6 / 8 / size * seconds)
    return max(16 * STREAM_BATCH, n // STREAM_BATCH * STREAM_BATCH)


def one(kernel, logdir, layout, size, count, nic):
    cpus, kargs = LAYOUTS[layout]
    os.environ["QEMU_SMP"] = str(cpus)
    load0 = os.getloadavg()[0]
    status, log, fig = stream_run(kernel, logdir, size, count, kargs, nic)
    res = re.findall(r"^RESULT stream .*$", log, re.M)
    r = dict(re.findall(r"(\w+)=(\S+)", res[-1])) if res else {}
    if status != 0 or not r or int(r.get("corrupt", 1)) or int(r.get("missing", 1)):
        tail = "\n".join(log.splitlines()[-10:])
        raise RuntimeError(f"inject {layout} bytes={size}: status {status}, {fig['acked']}/{count} acked\n{tail}")
    # Each guest CPU's busy share of the stream (elapsed less halted; the
    # idle loop's polling of the NIC counts as busy): CPUBUSY gives each
    # CPU's busy ticks a packet, busy_per_pkt their sum, busy_x1000 the sum
    # over the elapsed time.
    cb = re.findall(r"^CPUBUSY stream server (.*)$", log, re.M)
    frac = int(r["busy_x1000"]) / 1000
    if cb and int(r["busy_per_pkt"]):
        per = dict(re.findall(r"cpu(\d+)=(\d+)", cb[-1]))
        guest = [round(int(per[k]) / int(r["busy_per_pkt"]) * frac, 3) for k in sorted(per, key=int)]
    else:
        guest = [round(frac, 3)]
    wall = fig["inject_s"] or 1.0  # per thread (name#tid: QEMU names several threads after itself)
    threads = {name: round(cpu / wall, 3) for name, (cpu, _) in fig["threads"].items()}
    waits = {name: round(w / wall, 3) for name, (_, w) in fig["threads"].items()}
    return {"layout": layout, "cpus": cpus, "bytes": size, "packets": int(r["packets"]),
            "mbps": int(r["kbps"]) / 1000, "busy_x1000": int(r["busy_x1000"]),
            "main_loop_cpu": max([v for k, v in threads.items() if "TCG" not in k] or [0]),
            "vcpu_cpu": [threads[k] for k in sorted(threads) if "TCG" in k], "threads": threads,
            "main_loop_wait": max([v for k, v in waits.items() if "TCG" not in k] or [0]),
            "vcpu_wait": [waits[k] for k in sorted(waits) if "TCG" in k],
            "host_load": [round(load0, 2), round(os.getloadavg()[0], 2)],
            "guest_cpu_busy": guest,
            "injector_cpu": round(fig["host"]["injector_cpu_s"] / wall, 3),
            "host_busy_cores": round(fig["host"]["host_busy_s"] / wall, 3)}


def rows_of(samples):
    pts = {}
    for x in samples:
        pts.setdefault((x["bytes"], x["layout"]), []).append(x)
    rows = []
    for (size, layout), xs in sorted(pts.items()):
        med = lambda k: stats.median([x[k] for x in xs])  # noqa: E731
        ncpu = len(xs[0]["vcpu_cpu"])
        rows.append({
            "system": "kernel", "bytes": size, "layout": layout, "cpus": xs[0]["cpus"],
            "mbps": stats.rnd(med("mbps"), 2), "runs_mbps": [x["mbps"] for x in xs],
            "kpps": stats.rnd(med("mbps") * 1000 / 8 / size, 1), "packets": med("packets"),
            "guest_busy_frac": stats.rnd(med("busy_x1000") / 1000, 3),
            "host_main_loop_cpu": stats.rnd(med("main_loop_cpu"), 3),
            "host_vcpu_cpu": [stats.rnd(stats.median([x["vcpu_cpu"][k] for x in xs]), 3) for k in range(ncpu)],
            "host_main_loop_wait": stats.rnd(med("main_loop_wait"), 3),
            "host_vcpu_wait": [stats.rnd(stats.median([x["vcpu_wait"][k] for x in xs]), 3) for k in range(ncpu)],
            "verified": True, "n": len(xs), "pairs": len(xs),
            "host_load_1min": stats.rnd(stats.median([x["host_load"][1] for x in xs]), 2),
            # (samples of runs before these were recorded have none)
            "host_injector_cpu": stats.rnd(med("injector_cpu"), 3) if "injector_cpu" in xs[0] else None,
            "host_busy_cores": stats.rnd(med("host_busy_cores"), 3) if "host_busy_cores" in xs[0] else None,
            "host_cores": os.cpu_count(),
            "guest_cpu_busy": ([stats.rnd(stats.median([x["guest_cpu_busy"][k] for x in xs]), 3)
                                for k in range(len(xs[0]["guest_cpu_busy"]))]
                               if "guest_cpu_busy" in xs[0] else None),
        })
    one_cpu = {r["bytes"]: r["mbps"] for r in rows if r["layout"] == "1cpu"}
    for r in rows:
        if r["layout"] == "2cpu" and one_cpu.get(r["bytes"]):
            r["ratio_to_1cpu"] = round(r["mbps"] / one_cpu[r["bytes"]], 3)
            by_round = {(x["round"], x["layout"]): x["mbps"] for x in samples if x["bytes"] == r["bytes"]}
            rounds = sorted({k for k, _ in by_round if (k, "1cpu") in by_round and (k, "2cpu") in by_round})
            r["ratio_ci95"] = stats.ratio_ci95([by_round[(k, "2cpu")] for k in rounds],
                                               [by_round[(k, "1cpu")] for k in rounds])
    return rows


def main():
    ap = bench_args(__doc__)
    ap.add_argument("--sizes", default="64,1500,8192")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--nic", default=os.environ.get("NIC", "e1000"))
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    samples, logdir = [], os.path.join(a.out, "smpinject-logs")
    for run in range(a.runs):
        order = ["1cpu", "2cpu"] if run % 2 == 0 else ["2cpu", "1cpu"]
        for layout in order:
            for size in sizes:
                x = one(a.kernel, logdir, layout, size, count_for(size, a.seconds), a.nic)
                x["round"] = run
                samples.append(x)
                print(f"smpinject: run {run + 1}/{a.runs} {layout} bytes={size}: {x['mbps']} Mbit/s, "
                      f"host main loop {x['main_loop_cpu']}, vCPUs {x['vcpu_cpu']}, injector "
                      f"{x['injector_cpu']}, host busy {x['host_busy_cores']} cores", flush=True)
    doc = {"bench": "smpinject", "env": env("tcg", "real", a.runs, "dgram", a.nic),
           "layouts": {"1cpu": "-smp 1: interrupt, worker and process on CPU 0",
                       "2cpu": "-smp 2: nicirq=0 (interrupt and worker on CPU 0), runcpu=1 (process on CPU 1)"},
           "sender": "tools/bench/inject.py --stream (host process; stream client protocol, window 2 x 64)",
           "rows": rows_of(samples), "samples": samples}
    sections.dump(a.out, "kernel-smpinject.json", doc, "smpinject")


if __name__ == "__main__":
    main()
