#!/usr/bin/env python3
"""pingpong round trips, poll=spin against poll=irq on both ends,
alternating pair by pair. argv: MODEL PAIRS OUT.json KERNEL"""
import json, os, re, statistics, subprocess, sys, tempfile
model, pairs, out, kernel = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
conf = {"spin": "", "irq": " poll=irq"}
sizes = [64, 1500, 8192]
res = {k: {s: [] for s in sizes} for k in conf}
for i in range(pairs):
    for name, extra in conf.items():
        d = tempfile.mkdtemp(prefix="rttpoll-", dir="/tmp")
        env = dict(os.environ, MODEL=model)
        r = subprocess.run(["tools/net-pair.sh", kernel, "run=pingpong role=server peer=@CMAC0@" + extra,
                            f"run=pingpong role=client peer=@SMAC0@ sizes={','.join(map(str, sizes))} iters=30 warm=3" + extra,
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
json.dump({"model": model, "samples": res, "median_us": summary, "pairs": pairs, "configs": conf}, open(out, "w"), indent=1)
