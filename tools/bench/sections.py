"""What the per-bench report steps (multilink_report.py, failover_report.py)
share: reading a JSON file (or a runner's log) that may be missing, merging this kernel's rows
with the Linux guest's, putting a section into REPORT.md between its
markers (added at the end when absent), and matplotlib when it is there."""
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_text(path):
    """A text file's content (bytes that are not UTF-8 replaced), or "" when
    it cannot be read: a guest's console log that never came."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def merge(out, name, more=()):
    """kernel-NAME.json and linux-NAME.json (when its part ran) of out into
    NAME.json, and the rows of each linux-M-NAME.json for M in more (its env
    as M_env); returns the merged document, or None without the kernel's."""
    kdoc = load(os.path.join(out, f"kernel-{name}.json"))
    if not kdoc:
        return None
    ldoc = load(os.path.join(out, f"linux-{name}.json"))
    doc = dict(kdoc, rows=list(kdoc["rows"]) + (list(ldoc["rows"]) if ldoc else []))
    if ldoc:
        doc["linux_env"] = ldoc.get("env")
    for m in more:
        mdoc = load(os.path.join(out, f"linux-{m}-{name}.json"))
        if mdoc:
            doc["rows"] += mdoc["rows"]
            doc[f"{m}_env"] = mdoc.get("env")
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump(doc, f, indent=1)
    return doc


def dump(out, name, doc, who):
    """doc as out/name (indented JSON), and "who: wrote PATH"."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, name)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"{who}: wrote {path}")


def write_section(out, text, begin, end, after=None):
    """The section between begin and end replaced by text; when absent, put
    right after the marker `after` (when REPORT.md has it), else at the end."""
    rep = os.path.join(out, "REPORT.md")
    old = open(rep).read() if os.path.exists(rep) else "# Benchmark report\n\n"
    if begin in old and end in old:
        new = old[:old.index(begin)] + text.rstrip("\n") + old[old.index(end) + len(end):]
    elif after and after in old:
        at = old.index(after) + len(after)
        new = old[:at] + "\n\n" + text.rstrip("\n") + old[at:]
    else:
        new = old.rstrip("\n") + "\n\n" + text
    with open(rep, "w") as f:
        f.write(new)


def pyplot(who):
    """matplotlib.pyplot drawing to files (the Agg backend), or None with
    "WHO: no matplotlib, no plot" on stderr when it is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{who}: no matplotlib, no plot", file=sys.stderr)
        return None
    return plt
