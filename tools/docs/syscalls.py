#!/usr/bin/env python3
"""The system-call reference, docs/syscalls.md, written from the code.

Sources: lib/syscalls.def (each SYSCALL line and the structured comments
above it: the format is at the head of that file), lib/include/err.h (the
error codes), lib/include/region.h and lib/include/io.h (the ctrl_vr and
ctrl_io operations' constants), lib/include/sys.h (struct sysinfo's fields).

  syscalls.py            write docs/syscalls.md
  syscalls.py --check    write it too, and exit 1 when it changed or the
                         sources disagree: a call without a section, a
                         section for no call, an error code err.h lacks,
                         arguments or operations that differ from the code
  syscalls.py --selftest break each of those on purpose: every one must fail
"""
import os, re, sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = "docs/syscalls.md"
# The calls whose op argument names constants of a header: prefix and file.
OPS = {"ctrl_vr": ("lib/include/region.h", "VR_OP_"), "ctrl_io": ("lib/include/io.h", "IO_OP_")}
STRUCTS = {"sysinfo": ("lib/include/sys.h", "sysinfo")}
SOURCES = ["lib/syscalls.def", "lib/include/err.h", "lib/include/sys.h"] + sorted({f for f, _ in OPS.values()})

SYSCALL = re.compile(r"^SYSCALL\((\d+),\s*(\w+),\s*([^,]+),\s*\((.*)\)\)\s*$")
ERRNAME = re.compile(r"(?<![A-Za-z0-9_])E_[A-Z0-9]+")


class Bad(Exception):
    pass


def parse_def(text):
    """[(kind, payload)]: ('intro', lines) ('section', title, lines) ('call', dict)."""
    intro, sections, problems = [], [], []
    doc, last = None, None

    def fresh():
        return {"desc": [], "args": [], "ret": [], "errs": [], "ops": [], "ex": []}

    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("//#"):
            if doc:
                problems.append(f"syscalls.def:{n}: documentation above no SYSCALL line")
                doc = None
            sections.append({"title": s[3:].strip(), "prose": [], "calls": []})
            last = None
        elif s.startswith("//|"):
            (sections[-1]["prose"] if sections else intro).append(s[4:] if len(s) > 3 else "")
        elif s.startswith("//:") or s.startswith("//@"):
            doc = doc or fresh()
            if s.startswith("//:"):
                if any(doc[k] for k in ("args", "ret", "errs", "ops", "ex")):
                    problems.append(f"syscalls.def:{n}: a second description: the one above "
                                    "documents no SYSCALL line")
                last = doc["desc"]
                last.append(s[4:])
                continue
            m = re.match(r"//@(\w+)\s?(.*)$", s)
            key, rest = m.group(1), m.group(2)
            if key == "arg" or key == "err" or key == "op":
                k, _, v = rest.partition(":")
                item = [k.strip(), v.strip()]
                doc[{"arg": "args", "err": "errs", "op": "ops"}[key]].append(item)
                last = item
            elif key == "ret":
                doc["ret"].append(rest)
                last = doc["ret"]
            elif key == "ex":
                doc["ex"].append(line.split("//@ex", 1)[1][1:])
                last = None
            else:
                problems.append(f"syscalls.def:{n}: unknown field //@{key}")
        elif s.startswith("//+"):
            if last is None:
                problems.append(f"syscalls.def:{n}: //+ continues nothing")
            elif isinstance(last[-1], str) and len(last) == 2 and last is not doc["desc"] and last is not doc["ret"]:
                last[1] = (last[1] + " " + s[4:]).strip() if s[4:] else last[1] + "\n\n"
            else:
                last.append(s[4:])
        elif SYSCALL.match(s):
            nr, name, ret, params = SYSCALL.match(s).groups()
            if not sections:
                problems.append(f"syscalls.def:{n}: {name} outside any //# section")
                sections.append({"title": "Calls", "prose": [], "calls": []})
            sections[-1]["calls"].append({"nr": int(nr), "name": name, "rtype": ret.strip(),
                                          "params": params.strip(), "doc": doc, "line": n})
            doc, last = None, None
    if doc:
        problems.append("syscalls.def: documentation after the last SYSCALL line")
    return intro, sections, problems


def parse_err(text):
    return {m.group(1): (int(m.group(2)), m.group(3) or "")
            for m in re.finditer(r"^#define (E_[A-Z0-9]+) (\d+)\s*(?://\s*(.*))?$", text, re.M)
            if m.group(1) != "E_NERR"}


def parse_consts(text, prefix):
    """{value: name} of #define PREFIX* 0x.. in a header."""
    out = {}
    for m in re.finditer(r"^#define (%s\w+)\s+(0x[0-9a-fA-F]+|\d+)" % prefix, text, re.M):
        out[int(m.group(2), 0)] = m.group(1)
    return out


def parse_struct(text, name):
    """[(field, comment)] of struct NAME's members with their // comments."""
    m = re.search(r"struct %s \{\n(.*?)\n\};" % name, text, re.S)
    rows = []
    for line in m.group(1).splitlines() if m else []:
        f = re.match(r"\s*[\w ]+?\s(\w+);\s*(?://\s*(.*))?$", line)
        c = re.match(r"\s*//\s*(.*)$", line)
        if f:
            rows.append([f.group(1), f.group(2) or ""])
        elif c and rows:
            rows[-1][1] += " " + c.group(1)
    return rows


def params_of(p):
    if p == "void":
        return []
    return [re.search(r"(\w+)\s*$", x.strip()).group(1) for x in p.split(",")]


def para(lines):
    """Joined description lines; an empty line starts a paragraph."""
    out, cur = [], []
    for l in lines:
        if l.strip():
            cur.append(l.strip())
        elif cur:
            out.append(" ".join(cur))
            cur = []
    if cur:
        out.append(" ".join(cur))
    return "\n\n".join(out)


def render(src):
    """(markdown, problems) from {path: text} of SOURCES."""
    intro, sections, problems = parse_def(src["lib/syscalls.def"])
    errs = parse_err(src["lib/include/err.h"])
    md = ["# System calls", "",
          "<!-- Generated by tools/docs/syscalls.py from lib/syscalls.def and lib/include/*.h:",
          "     edit those, then run make syscalls-doc. make test-docs fails when this file is stale. -->", ""]
    md += [para(intro), "", "| nr | call | section |", "|---|---|---|"]
    for sec in sections:
        for c in sec["calls"]:
            md.append(f"| {c['nr']} | [`{c['name']}`](#{c['name']}) | {sec['title']} |")
    md.append("")
    for sec in sections:
        md += [f"## {sec['title']}", ""]
        if sec["prose"]:
            md += [para(sec["prose"]), ""]
        for c in sec["calls"]:
            md += render_call(c, src, errs, problems)
        if sec["title"] == "Error codes":
            md += ["| code | value | cause (`lib/include/err.h`) |", "|---|---|---|"]
            md += [f"| `{k}` | {v} | {w} |" for k, (v, w) in sorted(errs.items(), key=lambda x: x[1][0])]
            md.append("")
            for m in re.finditer(r"`(E_[A-Z0-9]+)` (\d+)", para(sec["prose"])):
                if m.group(1) in errs and errs[m.group(1)][0] != int(m.group(2)):
                    problems.append(f"Error codes: {m.group(1)} is {errs[m.group(1)][0]} in err.h, "
                                    f"{m.group(2)} in the prose")
    text = "\n".join(md).rstrip() + "\n"
    for name in sorted(set(ERRNAME.findall(text)) - set(errs)):
        problems.append(f"the reference names {name}, which lib/include/err.h does not define")
    return text, problems


def render_call(c, src, errs, problems):
    name, d = c["name"], c["doc"]
    if not d or not d["desc"] or not d["ret"] or not d["ex"]:
        problems.append(f"syscalls.def:{c['line']}: {name} has no section (a //: description, "
                        "//@ret and //@ex are needed)")
        return [f"### {name}", "", "(undocumented)", ""]
    md = [f"### {name}", "", "```c", f"{c['rtype']} {name}({c['params']});  // number {c['nr']}", "```", "",
          para(d["desc"]), ""]
    want, got = params_of(c["params"]), [a[0] for a in d["args"]]
    if want != got:
        problems.append(f"syscalls.def:{c['line']}: {name}'s //@arg names {got} differ from its "
                        f"parameters {want}")
    if d["args"]:
        md += ["| argument | meaning |", "|---|---|"]
        md += [f"| `{a}` | {v} |" for a, v in d["args"]]
        md.append("")
    if name in OPS:
        path, prefix = OPS[name]
        consts = parse_consts(src[path], prefix)
        ops = {}
        for v, text in d["ops"]:
            ops[int(v, 0)] = (v, text)
        for v in sorted(set(consts) - set(ops)):
            problems.append(f"{name}: {consts[v]} ({v:#x}, {path}) has no //@op")
        for v in sorted(set(ops) - set(consts)):
            problems.append(f"{name}: //@op {ops[v][0]} names no {prefix}* constant of {path}")
        md += [f"Operations (`op`, constants of `{path}`):", ""]
        md += [f"- `{ops[v][0]}` `{consts.get(v, '?')}`: {ops[v][1].strip()}" for v in sorted(ops)]
        md.append("")
    elif d["ops"]:
        problems.append(f"{name}: //@op on a call without operations")
    if name in STRUCTS:
        path, sname = STRUCTS[name]
        md += [f"`struct {sname}` (`{path}`):", ""]
        md += [f"- `{f}`" + (f": {w.strip()}" if w.strip() else "") for f, w in parse_struct(src[path], sname)]
        md.append("")
    md += ["**Returns** " + para(d["ret"]) + ("" if para(d["ret"]).endswith(".") else "."), ""]
    if d["errs"]:
        md += ["**Errors**", ""]
        for e, why in d["errs"]:
            if e not in errs:
                problems.append(f"{name}: //@err {e} is not in lib/include/err.h")
            md.append(f"- `-{e}`" + (f": {why.strip()}" if why.strip() else ""))
        md.append("")
    md += ["**Example**", "", "```c"] + d["ex"] + ["```", ""]
    return md


def check_sections(md, names):
    """Problems: a '### name' heading of the committed file for no call."""
    return [f"{OUT}: section '{h}' names no call of lib/syscalls.def"
            for h in re.findall(r"^### (\S+)", md, re.M) if h not in names]


def read_sources(root):
    return {p: open(os.path.join(root, p), encoding="utf-8").read() for p in SOURCES}


def run(root, check):
    src = read_sources(root)
    text, problems = render(src)
    names = set(m.group(2) for m in map(SYSCALL.match, src["lib/syscalls.def"].splitlines()) if m)
    out = os.path.join(root, OUT)
    old = open(out, encoding="utf-8").read() if os.path.exists(out) else ""
    problems += check_sections(old, names)
    if old != text:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
        if check:
            problems.append(f"{OUT} was stale: rewritten from lib/syscalls.def; commit it")
    for p in problems:
        print("syscalls-doc: " + p)
    return 1 if problems and check else 0


def selftest():
    """Each broken copy of the sources must be refused; the real ones pass."""
    import shutil, tempfile
    base = read_sources(ROOT)
    good, probs = render(base)
    if probs:
        print("syscalls-doc selftest: the real sources fail:", *probs, sep="\n  ")
        return 1
    d = base["lib/syscalls.def"]
    cases = {
        "a call without a section": ("lib/syscalls.def", d.replace("//: The caller's process id.\n", "")),
        "documentation above no call": ("lib/syscalls.def", d.replace("SYSCALL(7, yield, long, (void))\n", "")),
        "an error code err.h lacks": ("lib/syscalls.def", d.replace("//@err E_CHILD:", "//@err E_NOCHILD:")),
        "an error code in prose err.h lacks": ("lib/syscalls.def", d.replace("//: Sleeps,", "//: Sleeps (or -E_NAP),")),
        "an argument the call lacks": ("lib/syscalls.def", d.replace("//@arg usec:", "//@arg us:")),
        "an op the header lacks": ("lib/syscalls.def", d.replace("//@op 0x8000:", "//@op 0x9000:")),
        "a header op undocumented": ("lib/include/io.h", base["lib/include/io.h"] + "\n#define IO_OP_NEW 0x77\n"),
        "an error number differing from err.h": ("lib/syscalls.def", d.replace("`E_GAP` 23", "`E_GAP` 24")),
    }
    failed = 0
    for what, (path, text) in cases.items():
        assert text != base[path], what
        _, probs = render(dict(base, **{path: text}))
        ok = bool(probs)
        print(f"TEST syscalls-doc refuses {what} ... {'ok' if ok else 'FAIL'}")
        failed += not ok
    # The file check: a stale file, and a section for no call, both fail.
    with tempfile.TemporaryDirectory() as tmp:
        for p in SOURCES:
            os.makedirs(os.path.dirname(os.path.join(tmp, p)), exist_ok=True)
            shutil.copy(os.path.join(ROOT, p), os.path.join(tmp, p))
        os.makedirs(os.path.join(tmp, "docs"))
        for what, text in [("a stale file", good.replace("getpid", "getpid2", 1)),
                           ("a section for no call", good + "\n### frobnicate\n")]:
            with open(os.path.join(tmp, OUT), "w") as f:
                f.write(text)
            ok = run(tmp, True) != 0
            print(f"TEST syscalls-doc refuses {what} ... {'ok' if ok else 'FAIL'}")
            failed += not ok
        ok = run(tmp, True) == 0  # rewritten: now current
        print(f"TEST syscalls-doc passes once rewritten ... {'ok' if ok else 'FAIL'}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    if "--selftest" in sys.argv:
        sys.exit(selftest())
    sys.exit(run(ROOT, "--check" in sys.argv))
