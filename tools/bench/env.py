"""The environment block every benchmark result carries (BENCH.md)."""
import argparse
import os
import platform
import re
import subprocess


def host_cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def qemu_version():
    try:
        out = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True,
                             text=True, check=False).stdout
        m = re.search(r"version (\S+)", out)
        return m.group(1) if m else "unknown"
    except OSError:
        return "unknown"


def env(accel, clock, runs, backend="none", nic="none"):
    e = {"accel": accel, "clock": clock, "qemu": qemu_version(), "nic": nic,
         "backend": backend, "cpu": host_cpu(), "runs": runs}
    if os.environ.get("BENCH_HOST_SETTING"):
        e["host_setting"] = os.environ["BENCH_HOST_SETTING"]
    return e


def bench_args(doc):
    """The parser of a benchmark's command line: KERNEL OUTDIR RUNS, then its own options."""
    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    ap.add_argument("kernel")
    ap.add_argument("out")
    ap.add_argument("runs", type=int)
    return ap
