#!/usr/bin/env python3
"""RTT of the kernel's pingpong, configurations alternating pair by pair.
argv: MODEL PAIRS OUT.json NAME=KERNEL[@MODEL][+WORD,WORD] ...  (a
configuration's own @MODEL, QEMU's -device string, overrides MODEL for it;
its words go on both ends' command lines)"""
import json, os, re, statistics, subprocess, sys, tempfile
model, pairs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conf = {}
for a in sys.argv[4:]:
    name, k = a.split("=", 1)
    k, _, w = k.partition("+")
    k, _, m = k.partition("@")
    conf[name] = (k, m or model, (" " + w.replace(",", " ")) if w else "")
sizes = [64, 1500, 8192]
res = {k: {s: [] for s in sizes} for k in conf}
for i in range(pairs):
    for name, (k, m, w) in conf.items():
        d = tempfile.mkdtemp(prefix="rttab-", dir="/tmp")
        env = dict(os.environ, MODEL=m)
        r = subprocess.run(["tools/net-pair.sh", k, "run=pingpong role=server peer=@CMAC0@" + w,
                            f"run=pingpong role=client peer=@SMAC0@ sizes={','.join(map(str, sizes))} iters=30 warm=3" + w,
                            d, "300"], env=env, capture_output=True, text=True)
        cl = open(os.path.join(d, "client.log"), errors="replace").read()
        boot = {s: [] for s in sizes}
        for line in cl.splitlines():
            if line.startswith("RTT "):
                kv = dict(re.findall(r"(\w+)=(\S+)", line))
                boot[int(kv["bytes"])].append(int(kv["ns"]) / 1000)
        for s in sizes:
            res[name][s].extend(boot[s])
        print(name, i, r.returncode, {s: round(statistics.median(boot[s]), 1) if boot[s] else None for s in sizes}, flush=True)
summary = {k: {s: statistics.median(v[s]) for s in sizes} for k, v in res.items()}
print(json.dumps(summary))
json.dump({"model": model, "samples": res, "median_us": summary, "pairs": pairs,
           "configs": {n: {"kernel": k, "model": m, "words": w.strip()} for n, (k, m, w) in conf.items()}},
          open(out, "w"), indent=1)
