#!/usr/bin/env python3
"""Kernel streams, poll=spin (the default) against poll=irq on both ends,
alternating pair by pair. argv: NIC PAIRS SIZES OUT.json KERNEL"""
import json, os, re, statistics, sys
sys.path.insert(0, "tools/bench")  # from the repository root
import kernelnet
nic, pairs, sizes, out, kernel = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")], sys.argv[4], sys.argv[5]
kernelnet.NIC = nic
cfg = {"spin": "", "irq": "poll=irq"}
res = {k: {s: [] for s in sizes} for k in cfg}
for i in range(pairs):
    for name, extra in cfg.items():
        for s in sizes:
            words = f"run=stream size={s} count=4096 batch=64 window=2 {extra}".strip()
            sv, _, _ = kernelnet.pair("kernel-stream", kernel, f"{words} role=server peer=@CMAC0@",
                                      f"{words} role=client peer=@SMAC0@ start_ms=1500", "")
            m = re.findall(r"^RESULT stream system=kernel role=server .*$", sv, re.M)
            v = int(kernelnet.kv(m[-1])["kbps"]) / 1000 if m else None
            res[name][s].append(v)
            print(i, name, s, v, flush=True)
summ = {n: {s: statistics.median([x for x in v[s] if x is not None]) for s in sizes} for n, v in res.items()}
print(json.dumps(summ))
json.dump({"nic": nic, "pairs": pairs, "mbps": res, "median": summ, "configs": cfg}, open(out, "w"), indent=1)
