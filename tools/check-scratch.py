#!/usr/bin/env python3
"""No system call keeps caller data in storage shared across processes.

A system call may sleep (a busy ring, a full window, a paced wire) and
other processes' calls run meanwhile: what it copied in from its caller, or
worked out from it, must be the caller's own until it returns. Once
output_io kept its arguments in static arrays and, after a sleep, sent
another process's pages. This reads the kernel's C files as text and fails on:
  1. copy_from_user into file-scope storage (static or global), unless
     the variable is per process (its first dimension NPROC, indexed by
     the caller's process slot, like the kernel stacks);
  2. file-scope arrays sized per call (a dimension IO_MAX_BATCH or
     PKT_MAX_BUFS) that are not per process, unless ALLOWED names them with
     the reason they hold no caller data across a sleep.
Usage: check-scratch.py [ROOT]      exit 1 and one line per fault
       check-scratch.py --selftest  the rules on built-in bad and good code
"""
import os
import re
import sys

PER_CALL = ("IO_MAX_BATCH", "IO_MAX_BUFS", "PKT_MAX_BUFS")
# (file, variable): why it is not a caller's data across a sleep.
ALLOWED = {
    ("kernel/net/reliable.c", "q"): "pump's scratch: pump neither sleeps nor nests (interrupts off)",
    ("kernel/net/reliable.c", "order"): "pump's scratch, as q",
}

DECL = re.compile(r"^(?:static\s+)?(?!const\b)(?:volatile\s+)?(?:struct\s+\w+|[a-z_][a-z0-9_]*)\s+"
                  r"\**\s*([A-Za-z_]\w*)\s*((?:\[[^\]]*\])*)\s*(?:__attribute__\S*\s*)?[;=,]")
MULTI = re.compile(r",\s*\**\s*([A-Za-z_]\w*)\s*((?:\[[^\]]*\])*)")
COPY_IN = re.compile(r"copy_from_user\s*\(\s*&?\s*([A-Za-z_]\w*)")


def file_scope(text):
    """{name: dims} of the variables declared at file scope (column 0, not
    const, not a function or a type)."""
    out = {}
    for line in text.splitlines():
        if not line or line[0] in " \t#/}{" or "(" in line.split("=")[0]:
            continue
        if line.startswith(("typedef", "extern", "struct {", "enum", "union")) or \
                re.match(r"^(static\s+)?struct\s+\w+\s*\{", line):
            continue
        m = DECL.match(line)
        if not m:
            continue
        out[m.group(1)] = m.group(2)
        head = line.split("=")[0]
        for extra in MULTI.finditer(head[m.end(2):]):
            out[extra.group(1)] = extra.group(2)
    return out


def per_process(dims):
    return dims.startswith("[NPROC]")


def faults_of(path, text):
    found = []
    scope = file_scope(text)
    for n, line in enumerate(text.splitlines(), 1):
        for m in COPY_IN.finditer(line):
            name = m.group(1)
            if name in scope and not per_process(scope[name]):
                found.append(f"{path}:{n}: copy_from_user into file-scope {name}{scope[name]}: "
                             "shared by every process's calls (make it per call or per process)")
    for name, dims in scope.items():
        if any(k in dims for k in PER_CALL) and not per_process(dims) and (path, name) not in ALLOWED:
            found.append(f"{path}: file-scope {name}{dims} is sized per call and shared by every "
                         "process: per process ([NPROC]) or listed in tools/check-scratch.py with why")
    return found


def check(root):
    faults = []
    for d, _, files in os.walk(os.path.join(root, "kernel")):
        for f in sorted(files):
            if f.endswith(".c"):
                p = os.path.join(d, f)
                with open(p, errors="replace") as fh:
                    faults += faults_of(os.path.relpath(p, root), fh.read())
    return faults


def selftest():
    bad = """static uint64_t uvals[3][IO_MAX_BATCH];
static struct io_pktframes pktframes[IO_MAX_BATCH];
static char line[64], other[IO_MAX_BUFS];
long output_io(const uint64_t *a)
{
	copy_from_user(uvals[0], a[0], 8);
	copy_from_user(&line, a[1], 8);
}
"""
    good = """struct out_call { uint64_t v[IO_MAX_BATCH]; };
static struct out_call out_calls[NPROC];
static const uint64_t table[IO_MAX_BATCH] = { 0 };
static long f(const uint64_t *a)
{
	uint64_t local[4];
	copy_from_user(local, a[0], 8);
	copy_from_user(out_calls[1].v, a[1], 8);
}
"""
    b, g = faults_of("bad.c", bad), faults_of("good.c", good)
    names = " ".join(b)
    ok = len(b) == 5 and all(k in names for k in ("uvals", "pktframes", "line", "other")) and not g
    for x in b + g:
        print("  " + x)
    print("check-scratch selftest:", "ok" if ok else "FAIL")
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--selftest"]:
        sys.exit(selftest())
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    faults = check(os.path.abspath(root))
    for f in faults:
        print(f)
    print(f"check-scratch: {len(faults)} fault(s)")
    sys.exit(1 if faults else 0)


if __name__ == "__main__":
    main()
