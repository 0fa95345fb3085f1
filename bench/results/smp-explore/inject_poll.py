#!/usr/bin/env python3
"""The injector's stream (make bench-smp-inject's) with poll=spin, the
default, beside poll=irq, on 1 and 2 vCPUs: ROUNDS rounds, each layout and
mode in turn, 1500 and 8192 bytes. Writes OUT in smpinject's format, its
rows also carrying ratio_to_spin (poll=irq over poll=spin, same layout)
and ratio_to_1cpu in each mode.
  python3 bench/results/smp-explore/inject_poll.py KERNEL OUT [ROUNDS]
(from the repository root)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools", "bench"))
import smpinject  # noqa: E402
from env import env  # noqa: E402

LAYOUTS = {"1cpu": (1, ""), "2cpu": (2, "nicirq=0 runcpu=1"),
           "1cpu-irq": (1, "poll=irq"), "2cpu-irq": (2, "nicirq=0 runcpu=1 poll=irq")}
SIZES = (1500, 8192)


def main():
    kernel, out, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 3
    smpinject.LAYOUTS.update(LAYOUTS)
    logs = os.path.join(os.path.dirname(os.path.abspath(out)), "inject-poll-logs")
    samples = []
    for rnd in range(rounds):
        for lay in LAYOUTS:
            for size in SIZES:
                x = smpinject.one(kernel, logs, lay, size, smpinject.count_for(size, 3), "e1000")
                x["round"] = rnd
                samples.append(x)
                print(rnd, lay, size, x["mbps"], flush=True)
    rows = smpinject.rows_of(samples)
    by = {(r["bytes"], r["layout"]): r for r in rows}
    for r in rows:
        irq = r["layout"].endswith("-irq")
        base = by.get((r["bytes"], "1cpu-irq" if irq else "1cpu"))
        if base and r["layout"].startswith("2cpu"):
            r["ratio_to_1cpu"] = round(r["mbps"] / base["mbps"], 3)
        if irq:
            r["ratio_to_spin"] = round(r["mbps"] / by[(r["bytes"], r["layout"][:-4])]["mbps"], 3)
    doc = {"bench": "smpinject", "env": env("tcg", "real", rounds, "dgram", "e1000"),
           "layouts": {"1cpu": "-smp 1 (poll=spin, the default)", "2cpu": "-smp 2: nicirq=0 runcpu=1 (poll=spin)",
                       "1cpu-irq": "-smp 1 poll=irq", "2cpu-irq": "-smp 2: nicirq=0 runcpu=1 poll=irq"},
           "sender": "tools/bench/inject.py --stream (host process; stream client protocol, window 2 x 64)",
           "rows": rows, "samples": samples}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
