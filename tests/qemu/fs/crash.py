#!/usr/bin/env python3
"""The file service's crash test: the server's VM killed at random moments.

Each round boots the server (user/fsd.c) on one disk image and the crash
client (user/fsc_crash.c) on the cluster runner, two nodes on two dgram
wires. The client reports what the server holds, then creates, writes and
fsyncs files in a loop; once it has begun, the server's QEMU is killed
(SIGKILL) after a random delay, and the client ends when its calls time
out. The next round's report is checked against a model built from the
logs of the rounds before:
  - a file whose fsync returned ("OK k v") holds version v, whole;
  - the file in flight when the server died ("OP k v", no OK) is absent,
    empty or whole at v when it was being created, and holds, sector by
    sector, its old versions or v when it was being rewritten;
  - every other file is as it was; no sector is ever no version whole.
The last round only checks and ends the server with BYE (its kernel exits
0 with every frame back). Prints one TEST line; exit 0 when it passed.

Odd rounds run the server with cache_mb=1: files are written back and
dropped from its memory between the steps (their data in place, the table
not), and the same must hold.

Usage: crash.py KERNEL [--cuts N] [--seeds S,S..] [--max-delay SECONDS] [--name NAME]
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def topology(name, kernel, disk, client_args, server_args=""):
    node = lambda n, append, extra, after=None: dict(
        {"name": n, "kernel": kernel, "mem": "256M", "append": append,
         "nics": [{"net": "w0"}, {"net": "w1"}], "qemu_extra": extra},
        **({"start_after": after} if after else {}))
    return {"name": name, "timeout": 90,
            "networks": [{"name": "w0", "wire": "dgram"}, {"name": "w1", "wire": "dgram"}],
            "nodes": [
                node("s", "run=fsd nics=0,1 peer=@MAC:c:0@,@MAC:c:1@ disk_mb=64 idle_s=60" + server_args,
                     ["-drive", f"file={disk},if=ide,format=raw,cache=unsafe"]),
                node("c", "run=fsc_crash nics=0,1 peer=@MAC:s:0@,@MAC:s:1@ " + client_args, [],
                     {"node": "s", "line": "READY fsd"})]}


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


class Model:
    """What each file may hold: ("absent",), ("empty",), ("full", frozenset
    of versions); expected[k] is the set of states allowed at the next
    report (and for "full" states, the allowed versions)."""

    def __init__(self):
        self.sizes = {}
        self.state = {}      # k -> the state observed at the last report
        self.allowed = {}    # k -> (kinds, versions, why) allowed at the next report; none: absent
        self.flight = None   # (k, v) of the step in flight when the server died
        self.flight_from = None  # what that file held before it
        self.stats = {"mid_write": 0, "torn": 0, "created_absent": 0, "created_empty": 0,
                      "created_whole": 0, "rewrite_old": 0, "rewrite_new": 0, "durable": 0}

    def check_report(self, log):
        errs = []
        for k, size in re.findall(r"^SIZE (\d+) (\d+)", log, re.M):
            self.sizes[int(k)] = int(size)
        seen = {}
        for m in re.finditer(r"^HAVE (\d+) (absent|empty|size=(\d+) vers=([\d,]*) bad=(\d+))", log, re.M):
            k = int(m.group(1))
            if m.group(2) in ("absent", "empty"):
                seen[k] = (m.group(2), frozenset())
                continue
            size, vers, bad = int(m.group(3)), m.group(4), int(m.group(5))
            if bad or size != self.sizes.get(k):
                errs.append(f"file {k}: {m.group(0)} (size {self.sizes.get(k)}, no bad sector wanted)")
            seen[k] = ("full", frozenset(int(v) for v in vers.split(",") if v))
        if sorted(seen) != sorted(self.sizes):
            errs.append(f"report of files {sorted(seen)}, want {sorted(self.sizes)}")
        for k, st in seen.items():
            kinds, vers, why = self.allowed.get(k, ({"absent"}, frozenset(), "never written"))
            ok = st[0] in kinds and (st[0] != "full" or (st[1] and st[1] <= vers))
            if why != "in flight" and st[0] == "full":
                ok = ok and st[1] == vers
            if not ok:
                errs.append(f"file {k}: holds {st[0]} {sorted(st[1])}, allowed {sorted(kinds)} "
                            f"of versions {sorted(vers)} ({why})")
            elif why == "in flight":
                self.stats["mid_write"] += 1
                self.stats["torn"] += len(st[1]) > 1
                if self.flight_from != "full":
                    self.stats["created_" + ("whole" if st[0] == "full" else st[0])] += 1
                else:
                    self.stats["rewrite_new" if st[1] == frozenset([self.flight[1]]) else "rewrite_old"] += 1
            elif why == "durable":
                self.stats["durable"] += 1
        self.state = seen
        return errs

    def apply_ops(self, log):
        """The states allowed at the next report, after this round's steps."""
        cur = dict(self.state)
        flight = None
        durable = set()
        for m in re.finditer(r"^(OP|OK) (\d+) (\d+)", log, re.M):
            kind, k, v = m.group(1), int(m.group(2)), int(m.group(3))
            if kind == "OP":
                flight = (k, v)
            elif flight == (k, v):
                cur[k] = ("full", frozenset([v]))
                durable.add(k)
                flight = None
        self.allowed = {}
        for k, st in cur.items():
            why = "durable" if k in durable else "untouched"
            self.allowed[k] = ({st[0]}, st[1], why)
        self.flight = flight
        if flight:
            k, v = flight
            st = cur.get(k, ("absent", frozenset()))
            self.flight_from = st[0]
            if st[0] == "full":
                self.allowed[k] = ({"full"}, st[1] | {v}, "in flight")
            else:
                kinds = {"absent", "empty", "full"} if st[0] == "absent" else {"empty", "full"}
                self.allowed[k] = (kinds, frozenset([v]), "in flight")
        return flight


def wait_line(path, pattern, proc, limit):
    t = time.monotonic() + limit
    while time.monotonic() < t and proc.poll() is None:
        if re.search(pattern, read(path), re.M):
            return True
        time.sleep(0.05)
    return False


def kill_node(out, node):
    with open(os.path.join(out, "state.json")) as f:
        pid = json.load(f)["nodes"][node]["pid"]
    try:
        os.kill(pid, signal.SIGKILL)  # the QEMU the runner started for it (ip netns exec execs it)
    except ProcessLookupError:
        pass  # it ended first


def series(a, kernel, logs, seed, stats):
    """One disk, a.cuts rounds killed and a last one that checks: the
    reasons it failed, the kill delays."""
    disk = os.path.join(logs, f"{a.name}-{seed}-disk.img")
    with open(disk, "wb") as f:
        f.truncate(64 << 20)
    model, errs, kills = Model(), [], []
    for r in range(a.cuts + 1):
        last = r == a.cuts
        name = f"{a.name}-{seed}-{r}"
        out = os.path.join(logs, name)
        topo = os.path.join(logs, name + ".json")
        # odd rounds: a server that keeps one file in memory, so that files are
        # written back and dropped (evicted) between the steps
        with open(topo, "w") as f:
            json.dump(topology(name, kernel, disk, f"timeout_ms=2000 round={r} seed={seed} last={int(last)}",
                               " cache_mb=1" if r % 2 else ""), f)
        if os.path.isdir(out):
            subprocess.run(["rm", "-rf", out], check=True)
        with open(out + ".runner", "w") as rf:
            proc = subprocess.Popen([os.path.join(ROOT, "tools/cluster/run"), topo, "--out", out,
                                     "--timeout", "90"], stdout=rf, stderr=subprocess.STDOUT)
        clog = os.path.join(out, "c.log")
        delay = None
        if not last and wait_line(clog, r"^OP ", proc, 60):
            delay = random.Random(seed * 7919 + r).uniform(0, a.max_delay)
            time.sleep(delay)
            kill_node(out, "s")
            # the client's report is in once it says the server is gone; its
            # channels' slow close is not looked at
            if wait_line(clog, r"^CRASH gone", proc, 30):
                kill_node(out, "c")
        rc = proc.wait()
        log = read(clog)
        why = model.check_report(log)
        if last:
            if rc != 0 or "CRASH checked" not in log:
                why.append(f"the last round: runner exit {rc}, 'CRASH checked' "
                           f"{'seen' if 'CRASH checked' in log else 'missing'}")
        elif delay is None or "CRASH gone" not in log:
            why.append(f"the client never began its steps or did not end "
                       f"({'no kill' if delay is None else 'no CRASH gone line'})")
        else:
            flight = model.apply_ops(log)
            steps = len(re.findall(r"^OK ", log, re.M))
            kills.append(delay)
            print(f"  seed {seed} cut {r + 1}: after {delay:.2f} s, {steps} steps done, "
                  f"{'file %d version %d in flight' % flight if flight else 'between steps'}")
        errs += [f"seed {seed} round {r}: {w}" for w in why]
        if why:
            print(f"  seed {seed} round {r}: logs {out}")
            break
    for k, v in model.stats.items():
        stats[k] = stats.get(k, 0) + v
    if not errs:
        os.unlink(disk)
    return errs, kills


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel")
    ap.add_argument("--cuts", type=int, default=3, help="server kills per seed")
    ap.add_argument("--seeds", default="1", help="comma-separated: one disk and its series of cuts each")
    ap.add_argument("--max-delay", type=float, default=4.0, help="a kill comes 0..this many s into the steps")
    ap.add_argument("--name", default="fs-crash")
    a = ap.parse_args()
    kernel = os.path.abspath(a.kernel)
    logs = os.path.join(os.path.dirname(kernel), "test-logs")
    os.makedirs(logs, exist_ok=True)
    t0, errs, kills, s = time.monotonic(), [], [], {}
    for seed in [int(x) for x in a.seeds.split(",") if x]:
        e, k = series(a, kernel, logs, seed, s)
        errs += e
        kills += k
        if e:
            break
    print(f"  {len(kills)} cuts, seeds {a.seeds}: {s['mid_write']} mid-step ({s['created_absent']} created "
          f"and absent, {s['created_empty']} empty, {s['created_whole']} whole; {s['rewrite_old']} rewrites "
          f"old or torn, {s['rewrite_new']} new; {s['torn']} torn at sectors), {s['durable']} fsync'ed "
          f"files intact")
    secs = int(time.monotonic() - t0)
    if errs:
        print(f"TEST {a.name} ... FAIL")
        for e in errs:
            print("    " + e)
        return 1
    print(f"TEST {a.name} ... ok ({secs}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
