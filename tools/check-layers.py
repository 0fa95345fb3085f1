#!/usr/bin/env python3
"""The layers point one way: an allowlist of directions.

Every C or assembly file belongs to one layer; a layer may reach only itself
and the layers it lists in ALLOW, through #include lines and, when a build
directory is given, through the symbols its objects leave undefined (so a
hand-written `extern` that crosses layers is caught too: `nm` per object).

  arch     kernel/arch/                 the only place for asm and registers
  core     kprintf, heap, cmdline, ...  services every layer above may use
  mem      dma.c, uaccess.c             memory as drivers and system calls see it
  res      kernel/res/, elf.c           the resource managers (and the program loader)
  net      kernel/net/ (not netdev)     the transports, below the I/O resource
  seam     kernel/net/netdev.[ch]       the one seam between the I/O path and NICs
  drivers  drivers/                     NICs, disk, console: through dma.h and the seam
  top      main.c, syscall.c, nics.c    initialisation order, the system-call layer, the
                                        driver table
  lib      lib/                         the user library and headers shared with the kernel
  user     user/                        programs: the library only

Usage: check-layers.py [--build DIR] [--selftest]   exit 1 and one line per fault
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

CORE = ("kprintf", "heap", "klimit", "cmdline", "bootinfo", "fbcon", "sched", "blkdev", "progs", "lock")
MEM = ("dma", "uaccess")
TOP = ("main", "syscall", "runner", "bench", "nics")
RES_EXTRA = ("elf",)  # the program loader: the process manager's, beside kernel/res/

# Which layers each layer may reach (itself always). res and net are one
# rank: a channel owns its transport, and a transport reaches the channel's
# identity, counters and sink (io_priv.h) and the frame and process managers.
ALLOW = {
    "arch": {"lib", "core:kprintf"},
    "core": {"arch", "lib"},
    "mem": {"core", "arch", "lib", "res:pmem", "res:vspace", "res:proc"},
    "res": {"core", "arch", "lib", "mem", "net", "seam"},
    "net": {"core", "arch", "lib", "mem", "seam", "res:io_priv", "res:io", "res:res", "res:pmem",
            "res:proc", "res:io_slot",  # io_slot: the channel's sink, where a transport delivers
            "res:tlb"},  # a ring refill first completes the shootdowns a batch gathered
    "seam": {"core", "arch", "lib"},
    "drivers": {"core", "arch", "lib", "mem:dma", "seam"},
    "top": {"core", "arch", "lib", "mem", "res", "net", "seam", "drivers"},
    "lib": set(),
    "user": {"lib"},
}


def layer_of(path):
    """(layer, module) of a path relative to ROOT, or (None, None)."""
    p = path.replace("\\", "/")
    base = os.path.splitext(os.path.basename(p))[0]
    if p.startswith("kernel/arch/"):
        return "arch", base
    if p.startswith("kernel/net/"):
        return ("seam" if base == "netdev" else "net"), base
    if p.startswith("kernel/res/"):
        return "res", base
    if p.startswith("kernel/") and p.count("/") == 1:
        for name, group in (("core", CORE), ("mem", MEM), ("top", TOP), ("res", RES_EXTRA)):
            if base in group:
                return name, base
        return "unplaced", base
    if p.startswith("drivers/"):
        return "drivers", base
    if p.startswith("lib/"):
        return "lib", base
    if p.startswith("user/"):
        return "user", base
    return None, None


def allowed(src, dst):
    """May a file of layer/module src reach layer/module dst?"""
    (sl, _), (dl, dm) = src, dst
    if dl is None or sl is None or sl == dl:
        return True
    allow = ALLOW.get(sl, set())
    return dl in allow or f"{dl}:{dm}" in allow


def resolve(f, name):
    """The path an #include names, as the build resolves it: next to the
    file, then -Ilib/include -Ilib -Ikernel; None for a compiler header."""
    for d in (os.path.dirname(f), "lib/include", "lib", "kernel"):
        cand = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(os.path.join(ROOT, cand)):
            return cand
    return None


def sources():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "kernel", "drivers", "lib", "user"],
                         capture_output=True, text=True, check=False).stdout.split()
    return [f for f in out if f.endswith((".c", ".h", ".S", ".def"))]


def include_faults(files):
    faults = []
    for f in files:
        src = layer_of(f)
        if src[0] == "unplaced":
            faults.append(f"{f}: in no layer (add it to tools/check-layers.py)")
            continue
        with open(os.path.join(ROOT, f), errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                m = re.match(r'\s*#\s*include\s*[<"]([^">]+)[">]', line)
                if not m:
                    continue
                to = resolve(f, m.group(1))
                if to and not allowed(src, layer_of(to)):
                    faults.append(f"{f}:{n}: #include {m.group(1)} -> {to}: {src[0]} may not reach "
                                  f"{layer_of(to)[0]} ({layer_of(to)[1]})")
    return faults


def nm(obj, defined):
    args = ["nm", "--defined-only" if defined else "--undefined-only", obj]
    out = subprocess.run(args, capture_output=True, text=True, check=False).stdout
    return [ln.split()[-1] for ln in out.splitlines() if ln.strip() and
            (not defined or ln.split()[-2] in "TtDdBbRrCW" and ln.split()[-2].isupper())]


# (file, symbol): why this one upward reference is the design.
UPCALLS = {
    ("kernel/arch/x86_64/entry.S", "syscall_dispatch"):
        "the syscall instruction's entry lands in the system-call layer, as a trap in its handler",
}


def symbol_faults(build, root=ROOT):
    """Undefined symbols of each kernel object must be defined in a layer it may reach."""
    objs = []
    for sub in ("k",):
        top = os.path.join(build, sub)
        for d, _, fs in os.walk(top):
            for f in fs:
                if f.endswith(".o") and f != "progs.o":
                    rel = os.path.relpath(os.path.join(d, f), top)[:-2]
                    for ext in (".c", ".S"):
                        if os.path.isfile(os.path.join(root, rel + ext)):
                            objs.append((os.path.join(d, f), rel + ext))
    owner = {}
    for obj, src in objs:
        for sym in nm(obj, True):
            owner.setdefault(sym, layer_of(src))
    faults = []
    for obj, src in objs:
        me = layer_of(src)
        for sym in nm(obj, False):
            if sym in owner and not allowed(me, owner[sym]) and (src, sym) not in UPCALLS:
                faults.append(f"{src}: uses {sym} of {owner[sym][0]} ({owner[sym][1]}): {me[0]} may not "
                              "reach it")
    return faults, len(objs)


def selftest():
    cases = [(("drivers", "e1000"), ("res", "pmem"), False), (("drivers", "e1000"), ("mem", "dma"), True),
             (("drivers", "e1000"), ("seam", "netdev"), True), (("drivers", "e1000"), ("net", "demux"), False),
             (("core", "heap"), ("res", "proc"), False), (("res", "io"), ("net", "transport"), True),
             (("net", "demux"), ("res", "vregion"), False), (("arch", "trap"), ("core", "heap"), False),
             (("user", "x"), ("res", "io"), False), (("lib", "fs"), ("core", "kprintf"), False),
             (("top", "main"), ("drivers", "e1000"), True), (("mem", "uaccess"), ("res", "vspace"), True)]
    bad = [c for c in cases if allowed(c[0], c[1]) != c[2]]
    for c in bad:
        print(f"  check-layers selftest: {c[0]} -> {c[1]} should be {'allowed' if c[2] else 'refused'}")
    # A driver that declares a manager's function by hand (no #include) and
    # calls it: only the symbol check can see it.
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        srcs = {"drivers/net/evil.c": "extern unsigned long pmem_alloc(void);\n"
                                      "unsigned long evil(void) { return pmem_alloc(); }\n",
                "kernel/dma.c": "unsigned long dma_ok(void) { return 1; }\n",
                "drivers/net/good.c": "extern unsigned long dma_ok(void);\n"
                                      "unsigned long good(void) { return dma_ok(); }\n",
                "kernel/res/pmem.c": "unsigned long pmem_alloc(void) { return 0; }\n"}
        for rel, text in srcs.items():
            os.makedirs(os.path.join(t, "src", os.path.dirname(rel)), exist_ok=True)
            os.makedirs(os.path.join(t, "build", "k", os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(t, "src", rel), "w") as f:
                f.write(text)
            subprocess.run(["cc", "-c", "-o", os.path.join(t, "build", "k", rel[:-2] + ".o"),
                            os.path.join(t, "src", rel)], check=True)
        faults, _ = symbol_faults(os.path.join(t, "build"), os.path.join(t, "src"))
    if len(faults) != 1 or "pmem_alloc" not in faults[0] or "evil" not in faults[0]:
        bad.append("symbols")
        print(f"  check-layers selftest: a hand-written extern across layers: {faults}")
    print("check-layers selftest:", "ok" if not bad else "FAIL")
    return 1 if bad else 0


def main():
    args = sys.argv[1:]
    if args == ["--selftest"]:
        sys.exit(selftest())
    build = args[args.index("--build") + 1] if "--build" in args else None
    files = sources()
    faults = include_faults(files)
    nobj = 0
    if build and os.path.isdir(os.path.join(build, "k")):
        more, nobj = symbol_faults(build)
        faults += more
    for f in faults:
        print(f)
    what = f"{len(files)} files' includes" + (f", {nobj} kernel objects' symbols" if nobj else "")
    print(f"layers: {'ok' if not faults else 'FAULTS'} ({what}; allowlist in tools/check-layers.py)")
    sys.exit(1 if faults else 0)


if __name__ == "__main__":
    main()
