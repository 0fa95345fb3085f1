#!/usr/bin/env bash
# The repository must stand on its own: a clone has nothing beside it.
# Fails when
#  1. a tracked file refers to the steering directory that used to sit
#     beside the repository (a relative path into "shared" one level up), or
#  2. a relative link in README.md or docs/*.md names a file that is not in
#     the repository (tracked, or new and not ignored), points outside it,
#     or names a heading anchor the target Markdown file does not have.
# Links inside code blocks and code spans are not links and are skipped.
# Usage: tools/check-standalone.sh   (checks the checkout it lives in)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
fail=0

# 1. References outside the repository. The pattern is escaped so that this
# file does not match itself.
pat='\.\./shared'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	hits=$(git grep -n -I -E -e "$pat" -- . 2>/dev/null)
else
	hits=$(grep -rnI -E --exclude-dir=.git --exclude-dir=build -e "$pat" . 2>/dev/null)
fi
if [ -n "$hits" ]; then
	echo "check-standalone: files refer to a directory outside the repository:"
	printf '%s\n' "$hits" | sed 's/^/    /'
	fail=1
fi

# 2. Relative links in the project's Markdown.
docs=(README.md docs/*.md)
python3 - "${docs[@]}" <<'EOF' || fail=1
import os, re, subprocess, sys, urllib.parse

root = os.getcwd()
in_git = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"],
                        capture_output=True).returncode == 0

def tracked_or_new(path):
    """The file is in the repository: tracked, or new and not ignored."""
    if not in_git:
        return True
    rel = os.path.relpath(path, root)
    if subprocess.run(["git", "ls-files", "--error-unmatch", "--", rel],
                      capture_output=True).returncode == 0:
        return True
    return subprocess.run(["git", "check-ignore", "-q", "--", rel]).returncode != 0

FENCE = re.compile(r"^\s*(```|~~~)")

def prose_lines(text):
    """(line number, line) outside fenced code blocks, code spans removed."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, re.sub(r"`[^`]*`", "", line)

def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped,
    spaces to hyphens."""
    h = re.sub(r"`|\*\*|__", "", heading.strip().lower())
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)  # a link's text only
    h = "".join(c for c in h if c.isalnum() or c in " -_")
    return h.replace(" ", "-")

anchors_of = {}

def anchors(path):
    if path not in anchors_of:
        seen, out = {}, set()
        fenced = False
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if FENCE.match(line):
                    fenced = not fenced
                    continue
                m = None if fenced else re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m:
                    s = slug(m.group(1))
                    k = seen.get(s, 0)
                    seen[s] = k + 1
                    out.add(s if k == 0 else f"{s}-{k}")
        anchors_of[path] = out
    return anchors_of[path]

LINK = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(][^)]*)?\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")

bad = 0
for doc in sys.argv[1:]:
    if not os.path.isfile(doc):
        continue
    with open(doc, encoding="utf-8", errors="replace") as f:
        text = f.read()
    base = os.path.dirname(os.path.abspath(doc))
    for n, line in prose_lines(text):
        targets = LINK.findall(line)
        m = REFDEF.match(line)
        if m:
            targets.append(m.group(1))
        for t in targets:
            if not t or SCHEME.match(t):
                continue
            path, _, frag = t.partition("#")
            path = urllib.parse.unquote(path)
            full = os.path.normpath(os.path.join(base, path)) if path else os.path.abspath(doc)
            why = None
            if os.path.commonpath([full, root]) != root:
                why = "points outside the repository"
            elif not os.path.exists(full) or not tracked_or_new(full):
                why = "no such file in the repository"
            elif frag and full.endswith(".md") and urllib.parse.unquote(frag).lower() not in anchors(full):
                why = f"no heading for #{frag} in {os.path.relpath(full, root)}"
            if why:
                print(f"check-standalone: {doc}:{n}: link '{t}': {why}")
                bad += 1
sys.exit(1 if bad else 0)
EOF

if [ "$fail" -eq 0 ]; then
	echo "check-standalone: ok (nothing refers outside the repository; every relative link in README.md and docs/ resolves)"
fi
exit "$fail"
