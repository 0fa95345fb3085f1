#!/usr/bin/env python3
"""Where a send's instructions go: a per-function profile of T1.

make profile-t1 (SIZES=64, REPS=3) boots a pair of this kernel under
-icount shift=0 with tools/bench/profplugin.so loaded, runs user/burst.c
(128 packets in one output_io, the reply, per burst), and counts every
translation block the client executes between the no-op markers burst.c
puts around its output_io. It prints, per burst, each function's
instructions (kernel functions as k:NAME, the program's as u:NAME) beside
the client's own T1 from the same run, which counts the same window with
the TSC (under -icount, one instruction a tick).

  insnprof.py --kernel KERNEL --build BUILD [--sizes 64,8192] [--reps 3]
             [--out DIR] [--top 30] [--rx]

--rx profiles the server's receive windows instead (R1 as receive work:
from waiting for a burst to holding its last frame; its empty polls and
payload check are in the profile, as the functions they run).
  insnprof.py --report FILE --kernel KERNEL [--user ELF] [--windows N] [--top 30]
"""
import argparse
import bisect
import collections
import glob
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def symbols(elf, base_names=False):
    """Sorted (start, end, name) of the ELF's functions (nm -S sizes); with
    base_names, a name's compiler suffix is dropped (plain_check, not
    plain_check.lto_priv.0)."""
    out = subprocess.run(["nm", "-n", "-S", "--defined-only", elf], capture_output=True, text=True,
                         check=True).stdout
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTwW":
            start = int(f[0], 16)
            syms.append((start, start + int(f[1], 16), f[3].split(".")[0] if base_names else f[3]))
    return syms


def locate(tables, addr):
    """'k:NAME' or 'u:NAME' for the function holding addr, else its address."""
    for tag, syms, starts in tables:
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and syms[i][0] <= addr < syms[i][1]:
            return tag + syms[i][2]
    return hex(addr)


def profile(path, kernel, user=None, tags=True):
    """Instructions per function in the plugin's output file (names k:NAME
    and u:NAME; without tags, the kernel's base names alone)."""
    tables = []
    for tag, elf in (("k:", kernel), ("u:", user)):
        if elf:
            syms = symbols(elf, base_names=not tags)
            tables.append((tag if tags else "", syms, [s[0] for s in syms]))
    per = collections.Counter()
    per.windows = []
    with open(path) as f:
        for line in f:
            if line.startswith("window "):
                per.windows.append(int(line.split()[2]))
                continue
            vaddr, insns, runs = line.split()
            per[locate(tables, int(vaddr, 16))] += int(insns) * int(runs)
    return per


def report(per, windows, top, t1=None):
    total = sum(per.values())
    lines = [f"{total / windows:,.0f} instructions per window over {windows} windows"
             + (f" (each: {', '.join(f'{w:,}' for w in per.windows)})" if getattr(per, 'windows', None) else "")
             + (f"; the client's T1 for the same bursts: {t1:,.0f}" if t1 else "")]
    lines.append(f"{'function':44s} {'per window':>11s} {'share':>6s}")
    for name, n in per.most_common(top):
        lines.append(f"{name:44s} {n / windows:11,.0f} {100 * n / total:5.1f}%")
    return "\n".join(lines)


def build_plugin(build):
    """BUILD/profplugin.so, compiled when older than its source."""
    so = os.path.join(build, "profplugin.so")
    src = os.path.join(HERE, "profplugin.c")
    hdr = os.path.join(ROOT, "tools", "linux-baseline", "qemu_plugin_api.h")
    if not os.path.exists(so) or os.path.getmtime(so) < max(os.path.getmtime(src), os.path.getmtime(hdr)):
        subprocess.run(["gcc", "-std=c11", "-shared", "-fPIC", "-fvisibility=hidden", "-O2", "-Wall", "-Wextra",
                        "-Werror", "-o", so, src], check=True)
    return so


def plugin_file(path):
    """The plugin's output for out=PATH (it appends its QEMU's process id)."""
    files = [f for f in glob.glob(path + ".*") if os.path.getsize(f) > 0]
    if len(files) != 1:
        sys.exit(f"profile: {len(files)} plugin files with counts at {path}.*")
    return files[0]


def run_size(args, so, size):
    """Boots the pair for one size; returns (the client's plugin file, its T1s)."""
    out = os.path.join(args.out, f"bytes{size}")
    subprocess.run(["rm", "-rf", out], check=True)
    os.makedirs(out)
    env = dict(os.environ, NICS="1",
               QEMU_EXTRA=f"-icount shift=0 -plugin {so},out={out}/prof,windowed=1,skip=1,count={args.reps}"
                          + (",marks=rx" if args.rx else ""))
    server = "run=burst role=server peer=@CMAC0@ icount=1"
    client = f"run=burst role=client peer=@SMAC0@ sizes={size} reps={args.reps} warm=1 icount=1"
    subprocess.run([os.path.join(ROOT, "tools", "net-pair.sh"), args.kernel, server, client, out, "240"],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    files = [os.path.join(out, f) for f in os.listdir(out) if f.startswith("prof.")]
    counted = [f for f in files if os.path.getsize(f) > 0]  # only one side runs the markers
    t1 = []
    with open(os.path.join(out, "client.log"), errors="replace") as f:
        for line in f:
            if line.startswith("RESULT burst"):
                t1.append(int(next(w for w in line.split() if w.startswith("t1_tsc=")).split("=")[1]))
    if len(counted) != 1 or len(t1) != args.reps:
        sys.exit(f"profile: bytes={size}: {len(counted)} plugin files with counts, {len(t1)} results "
                 f"(want 1 and {args.reps}); logs in {out}")
    return counted[0], t1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--build", help="the build directory (its user/burst.elf, the plugin)")
    ap.add_argument("--user", help="the program's ELF (default BUILD/user/burst.elf)")
    ap.add_argument("--sizes", default="64")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", help="where the runs go (default BUILD/profile)")
    ap.add_argument("--report", help="only read this plugin file")
    ap.add_argument("--windows", type=int, default=1)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--rx", action="store_true", help="the server's receive windows, not T1")
    args = ap.parse_args()
    user = args.user or (os.path.join(args.build, "user", "burst.elf") if args.build else None)
    if args.report:
        print(report(profile(args.report, args.kernel, user), args.windows, args.top))
        return
    if not args.build:
        ap.error("--build is needed to run")
    args.out = args.out or os.path.join(args.build, "profile")
    so = build_plugin(args.build)
    for size in args.sizes.split(","):
        path, t1 = run_size(args, so, int(size))
        print(f"== bytes={size}: " + ("the server's receive window of 128 packets" if args.rx
                                      else "128 packets per output_io"))
        # The warm-up burst's window is left out (skip=1), as from T1, and
        # so is any send after the measured ones (count=reps).
        print(report(profile(path, args.kernel, user), args.reps, args.top,
                     None if args.rx else statistics.median(t1)))


if __name__ == "__main__":
    main()
