#!/usr/bin/env python3
"""Replays the balancing decisions a kernel printed against a model of the
rule written apart from kernel/net/balance.c (docs/design.md "Balancing").

The kernel prints, per balancing domain D (one run of user/lbsend.c; the
channels that chose one T and threshold; domains may run side by side):
  LB start dom=D T_ms= overload_pct= cap0= cap1=           capacity in bytes per period
  LB turn period=k dom=D ... nicN_bytes= nicN_pct= nicN_over=  what each NIC carried in period k-1
  LB past period=k dom=D chan= pid= policy= prio= nic= bytes=   each sender in period k-1
  LB decide period=k dom=D at_ms= chan= ... prio= nicF->nicT why=W past_bytes= spare0= spare1=
  LB leave period=k dom=D chan= pid=                        a balanced channel closed: out of the rule
  LB end dom=D periods=                                     its last channel closed
For every decision the model, fed the same turn state and the decisions
before it, must reach the same NIC for the same reason, from the same NIC;
no sender may decide twice in a period; a NIC's overload flag must follow
from its bytes and the threshold. The kernel's rate limit on these lines
("klog: N lines of lb suppressed", kernel/klimit.c) fails every run it
may have cut: a replay with lines missing proves nothing.
Usage: check.py LOG [--quiet]
Prints one line per run and exits 1 on the first run that disagrees.
"""
import re
import sys

WHY = {"no-nic:most-spare": "new", "tlb:most-spare": "tlb", "overloaded+lowest:most-spare": "over",
       "no-overload:most-spare": "spare", "kept:not-on-overloaded": "keep-nover", "kept:not-lowest": "keep-nlow",
       "kept:other-moved": "keep-moved", "kept:own-most-spare": "keep-best"}
KV = re.compile(r"(\w+)=(-?\w+)")


def kv(line):
    return {k: v for k, v in KV.findall(line)}


class Run:
    def __init__(self, line):
        f = kv(line)
        self.pct = int(f["overload_pct"])
        self.cap = [int(f["cap0"]), int(f["cap1"])]
        self.past = [0, 0]
        self.period = 0
        self.senders = {}   # chan -> dict(prio, past_nic, past_vol, nic, moved, policy)
        self.decided = set()
        self.new_period()
        self.decisions = []  # (period, chan, policy, from, to, why)
        self.turns = []      # (period, past bytes, over flags)
        self.errors = []

    def new_period(self):
        self.charge = [0, 0]
        self.nbound = [0, 0]

    def over(self, n):
        return self.cap[n] and self.past[n] * 100 >= self.cap[n] * self.pct

    def spare(self, n, history):
        return self.cap[n] - (self.past[n] if history else 0) - self.charge[n]

    def most_spare(self, history):
        best = 0
        for n in range(1, len(self.cap)):
            sn, sb = self.spare(n, history), self.spare(best, history)
            if sn > sb or (sn == sb and self.nbound[n] < self.nbound[best]):
                best = n
        return best

    def bind(self, s, n, charge, history):
        old = s["nic"]
        if old >= 0 and old != n:
            s["moved"] = True
        s["nic"] = n
        self.nbound[n] += 1
        if charge and n != old:
            self.charge[n] += s["past_vol"]
            if history and old >= 0:
                self.charge[old] -= s["past_vol"]
        return n

    def rule(self, chan, s, policy):
        history = policy == "history"
        cur = s["nic"]
        if not history or cur < 0:
            why = "new" if history else "tlb"
            return self.bind(s, self.most_spare(history), True, history), why
        if not (self.over(0) or self.over(1)):
            return self.bind(s, self.most_spare(True), True, True), "spare"
        p = s["past_nic"]
        if p < 0 or not self.over(p):
            return self.bind(s, cur, False, True), "keep-nover"
        others = [o for c, o in self.senders.items() if c != chan and o["past_nic"] == p]
        if any(o["prio"] < s["prio"] for o in others):
            return self.bind(s, cur, False, True), "keep-nlow"
        if any(o["moved"] for o in others):
            return self.bind(s, cur, False, True), "keep-moved"
        n = self.most_spare(True)
        if n == cur:
            return self.bind(s, cur, False, True), "keep-best"
        return self.bind(s, n, True, True), "over"

    def turn(self, line):
        f = kv(line)
        self.period = int(f["period"])
        self.past = [int(f["nic0_bytes"]), int(f["nic1_bytes"])]
        flags = [int(f["nic0_over"]), int(f["nic1_over"])]
        for n in (0, 1):
            if bool(flags[n]) != bool(self.over(n)):
                self.errors.append(f"period {self.period}: nic{n} overload flag {flags[n]} against its bytes")
        self.turns.append((self.period, list(self.past), flags))
        self.new_period()
        for s in self.senders.values():
            s["moved"] = False
            if s["policy"] == "tlb":
                s["nic"] = -1

    def past_line(self, line):
        f = kv(line)
        chan = int(f["chan"])
        s = self.senders.setdefault(chan, {"nic": -1, "moved": False})
        s.update(prio=int(f["prio"]), past_nic=int(f["nic"]), past_vol=int(f["bytes"]), policy=f["policy"])

    def decide(self, line):
        f = kv(line)
        chan, period, policy = int(f["chan"]), int(f["period"]), f["policy"]
        m = re.search(r"nic(-?\d+)->nic(-?\d+) why=(\S+)", line)
        frm, to, why = int(m.group(1)), int(m.group(2)), WHY.get(m.group(3), m.group(3))
        if (period, chan) in self.decided:
            self.errors.append(f"period {period}: chan {chan} decided twice")
        self.decided.add((period, chan))
        s = self.senders.setdefault(chan, {"nic": -1, "moved": False, "past_nic": -1, "past_vol": 0})
        s["prio"], s["policy"] = int(f["prio"]), policy
        if s["nic"] != frm:
            self.errors.append(f"period {period}: chan {chan} decided from nic{frm}, the model has nic{s['nic']}")
            s["nic"] = frm
        want_to, want_why = self.rule(chan, s, policy)
        if (want_to, want_why) != (to, why):
            self.errors.append(f"period {period}: chan {chan} ({policy}) nic{frm}->nic{to} {why}; "
                               f"the model: nic{want_to} {want_why}")
        self.decisions.append((period, chan, policy, frm, to, why))


SUPPRESSED = re.compile(r"klog: (\d+) lines of lb suppressed")


def runs(path):
    out, cur = [], {}  # every run in the order they started; the running one of each domain
    with open(path, errors="replace") as fh:
        for line in fh:
            line = line.strip()
            m = SUPPRESSED.search(line)
            if m:
                for r in list(cur.values()) or out[-1:]:
                    r.errors.append(f"{m.group(1)} balancer lines suppressed by the kernel: no replay")
                continue
            if not line.startswith("LB "):
                continue
            dom = kv(line).get("dom", "0")
            if line.startswith("LB start"):
                cur[dom] = Run(line)
                out.append(cur[dom])
                continue
            r = cur.get(dom)
            if r is None:
                continue
            if line.startswith("LB turn"):
                r.turn(line)
            elif line.startswith("LB past"):
                r.past_line(line)
            elif line.startswith("LB decide"):
                r.decide(line)
            elif line.startswith("LB leave"):
                r.senders.pop(int(kv(line)["chan"]), None)
            elif line.startswith("LB end"):
                del cur[dom]
    return out


def main():
    quiet = "--quiet" in sys.argv
    rs = runs(sys.argv[1])
    bad = 0
    for i, r in enumerate(rs):
        pol = sorted({d[2] for d in r.decisions}) or ["rr"]
        if r.errors:
            bad += 1
            print(f"run {i} ({','.join(pol)}): {len(r.errors)} disagreement(s) with the model")
            for e in r.errors[:8]:
                print("   ", e)
        elif not quiet:
            print(f"run {i} ({','.join(pol)}): {len(r.decisions)} decisions over {len(r.turns)} turns agree "
                  f"with the model")
    if not rs:
        print("no balancing domain in the log")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
