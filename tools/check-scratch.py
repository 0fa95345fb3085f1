#!/usr/bin/env python3
"""No system call keeps caller data in storage shared across processes.

A system call may sleep (a busy ring, a full window, a paced wire) and
other processes' calls run meanwhile: what it copied in from its caller, or
worked out from it, must be the caller's own until it returns. Once
output_io kept its arguments in static arrays and, after a sleep, sent
another process's pages. A call's data lives in the call's own object
(its stack, or the resource it works on, as output_io's arguments live in
the channel). This reads the kernel's C files as text and fails on:
  1. copy_from_user into file-scope storage (static or global), even one
     indexed per process: a table of every process's calls is still
     storage shared across processes, and its index can go wrong;
  2. file-scope arrays sized per call (a dimension IO_MAX_BATCH or
     PKT_MAX_BUFS), unless ALLOWED names them with the reason they hold no
     caller data across a sleep.
Usage: check-scratch.py [ROOT]      exit 1 and one line per fault
       check-scratch.py --selftest  the rules on built-in bad and good code
"""
import os
import re
import sys

PER_CALL = ("IO_MAX_BATCH", "IO_MAX_BUFS", "PKT_MAX_BUFS")
# (file, variable): why it is not a caller's data across a sleep.
ALLOWED = {
    ("kernel/net/reliable.c", "q_of"): "pump's scratch, one per CPU: pump runs under its channel's lock "
                                       "(interrupts off), never sleeps or nests",
    ("kernel/net/reliable.c", "order_of"): "pump's scratch, as q_of",
    ("kernel/net/demux.c", "demux_nics"): "per NIC: its counters, the packet being assembled "
                                          "from its ring, its refill list; never a caller's data",
    ("kernel/net/relay.c", "inflight"): "frames the relay forwards for other nodes: the kernel's "
                                        "own, no process's call fills them",
    ("kernel/res/io.c", "ios"): "the channel table: each entry is one process's channel, "
                                "reached only through its owner's identifier (mine())",
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


def call_sized_structs(texts):
    """Names of the structs defined in texts with a member sized per call,
    directly or through a member of such a struct type."""
    bodies = {}
    for text in texts:
        for m in re.finditer(r"^struct\s+(\w+)\s*\{(.*?)\};", text, re.S | re.M):
            bodies[m.group(1)] = m.group(2)
    names = {n for n, b in bodies.items() if any(k in b for k in PER_CALL)}
    grew = True
    while grew:
        grew = False
        for n, b in bodies.items():
            if n not in names and any(re.search(r"struct\s+%s\s+\w" % x, b) for x in names):
                names.add(n)
                grew = True
    return names


def file_scope_types(text):
    """{name: struct type} of the file-scope variables of a struct type
    (pointers are not storage)."""
    out = {}
    for m in re.finditer(r"^(?:static\s+)?struct\s+(\w+)\s+(\w+)\s*(?:\[|;|=)", text, re.M):
        out[m.group(2)] = m.group(1)
    return out


def faults_of(path, text, sized=None):
    found = []
    scope = file_scope(text)
    sized = call_sized_structs([text]) if sized is None else sized
    types = file_scope_types(text)
    for n, line in enumerate(text.splitlines(), 1):
        for m in COPY_IN.finditer(line):
            name = m.group(1)
            if name in scope:
                found.append(f"{path}:{n}: copy_from_user into file-scope {name}{scope[name]}: "
                             "shared by every process's calls (keep it in the call's own object)")
    for name, dims in scope.items():
        if (any(k in dims for k in PER_CALL) or types.get(name) in sized) and \
                (path, name) not in ALLOWED:
            found.append(f"{path}: file-scope {name}{dims} is sized per call and shared by every "
                         "process: keep it in the call's own object, or list it in "
                         "tools/check-scratch.py with why")
    return found


def check(root):
    texts = {}
    for d, _, files in os.walk(os.path.join(root, "kernel")):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                p = os.path.join(d, f)
                with open(p, errors="replace") as fh:
                    texts[os.path.relpath(p, root)] = fh.read()
    sized = call_sized_structs(texts.values())
    faults = []
    for p, text in sorted(texts.items()):
        if p.endswith(".c"):
            faults += faults_of(p, text, sized)
    return faults


def selftest():
    bad = """static uint64_t uvals[3][IO_MAX_BATCH];
static struct io_pktframes pktframes[IO_MAX_BATCH];
static char line[64], other[IO_MAX_BUFS];
struct out_call { uint64_t v[IO_MAX_BATCH]; };
static struct out_call out_calls[NPROC];
static uint64_t per_proc[NPROC][IO_MAX_BATCH];
long output_io(const uint64_t *a)
{
	copy_from_user(uvals[0], a[0], 8);
	copy_from_user(&line, a[1], 8);
	copy_from_user(out_calls[1].v, a[2], 8);
}
"""
    good = """struct io { uint64_t v[IO_MAX_BATCH]; };
static struct io *ios;
static const uint64_t table[IO_MAX_BATCH] = { 0 };
static long f(const uint64_t *a)
{
	uint64_t local[4];
	struct io *c = &ios[1];
	copy_from_user(local, a[0], 8);
	copy_from_user(c->v, a[1], 8);
}
"""
    b, g = faults_of("bad.c", bad), faults_of("good.c", good)
    names = " ".join(b)
    ok = len(b) == 8 and all(k in names for k in ("uvals", "pktframes", "line", "other", "out_calls", "per_proc")) and not g
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
