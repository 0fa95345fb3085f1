#!/usr/bin/env python3
"""RTT of the kernel's pingpong on e1000 with QEMU's interrupt mitigation on
(the default) and off, boot pairs alternating. argv: kernel pairs out.json"""
import json, os, re, statistics, subprocess, sys, tempfile, time
kernel, pairs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sizes = [64, 1500, 8192]
cfg = {"mit_on": "e1000", "mit_off": "e1000,mitigation=off"}
res = {k: {s: [] for s in sizes} for k in cfg}
for i in range(pairs):
    for name, model in cfg.items():
        d = tempfile.mkdtemp(prefix="rttmit-", dir="/tmp")
        env = dict(os.environ, MODEL=model)
        r = subprocess.run(["tools/net-pair.sh", kernel, "run=pingpong role=server peer=@CMAC0@",
                            f"run=pingpong role=client peer=@SMAC0@ sizes={','.join(map(str, sizes))} iters=30 warm=3",
                            d, "300"], env=env, capture_output=True, text=True)
        cl = open(os.path.join(d, "client.log"), errors="replace").read()
        for line in cl.splitlines():
            if line.startswith("RTT "):
                kv = dict(re.findall(r"(\w+)=(\S+)", line))
                res[name][int(kv["bytes"])].append(int(kv["ns"]) / 1000)
        print(name, i, r.returncode, {s: round(statistics.median(res[name][s][-30:]), 1) if res[name][s] else None for s in sizes}, flush=True)
summary = {k: {s: statistics.median(v[s]) for s in sizes} for k, v in res.items()}
print(json.dumps(summary))
json.dump({"samples": res, "median_us": summary, "pairs": pairs}, open(out, "w"), indent=1)
