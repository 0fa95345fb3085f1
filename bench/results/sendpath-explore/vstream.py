#!/usr/bin/env python3
"""Kernel streams, configurations alternating pair by pair.
argv: nic pairs sizes out.json NAME=KERNEL[+WORD,WORD] ... (the words go on
both ends' command lines, e.g. irq=build/kernel.elf+poll=irq)"""
import json, os, re, statistics, sys
sys.path.insert(0, "tools/bench")
import kernelnet
nic, pairs, sizes, out = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")], sys.argv[4]
kern, extra = {}, {}
for a in sys.argv[5:]:
    name, v = a.split("=", 1)
    kern[name], _, w = v.partition("+")
    extra[name] = w.replace(",", " ")
kernelnet.NIC = nic
res = {k: {s: [] for s in sizes} for k in kern}
for i in range(pairs):
    for name, k in kern.items():
        for s in sizes:
            words = f"run=stream size={s} count=4096 batch=64 window=2 {extra[name]}".strip()
            sv, _, _ = kernelnet.pair("kernel-stream", k, f"{words} role=server peer=@CMAC0@",
                                      f"{words} role=client peer=@SMAC0@ start_ms=1500", "")
            m = re.findall(r"^RESULT stream system=kernel role=server .*$", sv, re.M)
            v = int(kernelnet.kv(m[-1])["kbps"]) / 1000 if m else None
            res[name][s].append(v)
            print(i, name, s, v, flush=True)
summ = {n: {s: statistics.median([x for x in v[s] if x is not None]) for s in sizes} for n, v in res.items()}
print(json.dumps(summ))
json.dump({"nic": nic, "pairs": pairs, "mbps": res, "median": summ, "kernels": kern, "words": extra},
          open(out, "w"), indent=1)
