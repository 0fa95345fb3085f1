#!/usr/bin/python3
# The cluster runner's self-test (make test-cluster, about 50 s under TCG):
# the host-side parser checks, then real runs of this kernel, each checked
# through its serial logs and summary.json:
#   bridge   three nodes on one bridge, jumbo pingpong verified byte by byte,
#            a visible cut the guest sees, a silent dgram cut (far side down)
#   silent   a tap taken down under a running pingpong: round trips time out
#            with the NIC still up, and pass again once it is restored
#   qemu_error  a QEMU that fails to start is a failure, not status 0
#   timeout  a run past its timeout is killed and says so
#   sigterm  a cut by hand (tools/cluster/cut) on a running cluster; then a
#            runner stopped by SIGTERM kills its QEMU and its namespace
#   sigkill  a runner killed outright takes its QEMU with it; the namespace
#            it left is removed by --cleanup-stale
#   ssh      the ssh transport (hosts.py) to this machine through a stand-in
#            for ssh that runs the remote command here: the kernel shipped,
#            the serial console back through ssh's output, a cut through
#            QMP on the "remote" side, its namespace and files removed
#   hosts_sigkill  two nodes on two namespace hosts joined by VXLAN, the
#            runner killed outright: both QEMUs die with it, --cleanup-stale
#            removes both host namespaces (with the veth and VXLAN devices)
# Usage: tools/cluster/selftest.py KERNEL [OUTDIR]   (boots at most 3 VMs at once)
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "run")
passed = failed = 0


def report(name, why):
    global passed, failed
    if why:
        failed += 1
        print(f"TEST cluster_{name} ... FAIL")
        for w in why:
            print(f"    {w}")
    else:
        passed += 1
        print(f"TEST cluster_{name} ... ok")


def run(topo, out, *extra, timeout=120):
    """Runs the runner to its end; returns (rc, summary or None, output)."""
    p = subprocess.run([RUN, topo, "--out", out, "--kernel", KERNEL, *extra], capture_output=True,
                       text=True, timeout=timeout)
    try:
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
    except (OSError, ValueError):
        s = None
    return p.returncode, s, p.stdout + p.stderr


def log(out, node):
    try:
        with open(os.path.join(out, f"{node}.log"), "rb") as f:
            return f.read().decode("utf-8", "replace").replace("\r", "")
    except OSError:
        return ""


def namespaces():
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def alive(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"qemu" in f.read()
    except OSError:
        return False


def leftovers(out, s):
    """What a finished run left behind: its namespace, a QEMU, a socket."""
    why = []
    if s and re.search(rf"^{s['namespace']}\b", namespaces(), re.M):
        why.append(f"namespace {s['namespace']} still there")
    for n in (s or {}).get("nodes", []):
        if n["pid"] and alive(n["pid"]):
            why.append(f"QEMU of {n['name']} (pid {n['pid']}) still runs")
    socks = [f for f in os.listdir(out) if f.endswith((".sock", ".qmp"))]
    if socks:
        why.append(f"sockets left: {socks}")
    return why


def balanced(text, node):
    m = re.search(r"^frames: boot=(\d+) exit=(\d+)(.*)$", text, re.M)
    if not m or m.group(1) != m.group(2) or "LEAK" in m.group(3):
        return [f"{node}: frames not back to the boot count ({m.group(0) if m else 'no frames line'})"]
    return []


def need(text, what, node, count=1):
    """what (a regular expression) must match count lines of text."""
    n = len(re.findall(what, text, re.M))
    return [] if n >= count else [f"{node}: '{what}' {n} time(s), wanted {count}"]


PASS = r"^SUITE {}: [1-9]\d* passed, 0 failed$"


def test_bridge():
    out = os.path.join(OUT, "bridge")
    rc, s, text = run(os.path.join(HERE, "topologies", "selftest-bridge.json"), out)
    why = [] if rc == 0 and s and s["ok"] else [f"runner rc {rc}, not ok", *text.splitlines()[-5:]]
    a, b, c = (log(out, n) for n in "abc")
    why += need(a, PASS.format("twonic"), "a")
    why += need(a, PASS.format("pingpong"), "a", 2)
    for name, t in (("b", b), ("c", c)):
        why += need(t, PASS.format("pingpong"), name)
        # the 8960-byte payload went to a and came back through taps and bridge
        why += need(t, "^RESULT rtt system=kernel bytes=8960 n=4 ", name)
    for name, t in (("a", a), ("b", b), ("c", c)):
        why += balanced(t, name)
    if s:
        mtu = [v for net in s["networks"] for v in net.get("mtu", {}).values()]
        if len(mtu) != 5 or set(mtu) != {9000}:
            why.append(f"bridge and taps not all at MTU 9000: {mtu}")
        results = [(e["result"], e["error"]) for e in s["events"]]
        want = [("set_link down", None), ("set_link up", None), ("far set_link down", None), ("wire back", None)]
        if results != want:
            why.append(f"events: {results}, wanted {want}")
    # c's NIC 0 went down and up (the visible cut), then its NIC 1 (b's
    # silent cut of their dgram wire); b's NIC 1 never said down
    order = re.findall(r"^e1000 (\d): link (down|up)$", c, re.M)
    if order != [("0", "down"), ("0", "up"), ("1", "down"), ("1", "up")]:
        why.append(f"c's link changes: {order}")
    if re.search(r"link down", b):
        why.append("b saw a link go down: a silent cut must not show")
    report("bridge", why + leftovers(out, s))


def test_silent():
    out = os.path.join(OUT, "silent")
    rc, s, text = run(os.path.join(HERE, "topologies", "selftest-silent.json"), out)
    x, y = log(out, "x"), log(out, "y")
    why = []
    status = {n["name"]: n["status"] for n in s["nodes"]} if s else {}
    if rc != 1 or status != {"x": 0, "y": 1}:
        why.append(f"runner rc {rc}, statuses {status}: wanted 1 and x=0 y=1 (y's lost round trips)")
    why += need(x, PASS.format("pingpong"), "x", 2)
    why += need(y.split("run: sleeper")[0], PASS.format("pingpong"), "y")  # before the cut
    second = y.split("run: sleeper", 1)[-1]  # the second pingpong, under the cut
    timeouts = second.count("receive -17 (E_TIMEOUT)")
    if timeouts < 2:
        why.append(f"y: {timeouts} round trips timed out during the cut, wanted at least 2")
    after = second.rsplit("E_TIMEOUT", 1)[-1]
    if len(re.findall(r"^RESULT rtt system=kernel bytes=\d+ n=4 ", after, re.M)) < 3:
        why.append("y: round trips did not pass again after the restore")
    why += need(second, r"^TEST every echo came back identical \.\.\. FAIL", "y")
    why += need(second, r"^SUITE pingpong: [1-9]\d* passed, 1 failed$", "y")
    for name, t in (("x", x), ("y", y)):
        why += balanced(t, name)
        if "link down" in t or "echo differs" in t:
            why.append(f"{name}: a link went down or an echo came out of order")
    if s:
        ev = [(e["result"], e["error"]) for e in s["events"]]
        if ev != [("tap down", None), ("wire back", None)] or not s["events"][0]["fired"] < s["events"][1]["fired"]:
            why.append(f"events: {ev}")
    report("silent", why + leftovers(out, s))


def one_node(path, us):
    t = {"name": "selftest-one", "timeout": 60,
         "networks": [{"name": "net0"}, {"name": "loop", "wire": "dgram"}],
         "nodes": [{"name": "z", "kernel": KERNEL, "append": f"run=sleeper us={us}",
                    "nics": [{"net": "net0"}, {"net": "loop"}, {"net": "loop"}]}]}
    with open(path, "w") as f:
        json.dump(t, f)
    return path


def test_qemu_error():
    # QEMU refusing its arguments exits 1, which is also what status 0
    # looks like through isa-debug-exit: it must not pass
    out = os.path.join(OUT, "qemu-error")
    path = one_node(os.path.join(OUT, "bad.json"), 1000)
    with open(path) as f:
        t = json.load(f)
    t["nodes"][0]["qemu_extra"] = ["-no-such-option"]
    with open(path, "w") as f:
        json.dump(t, f)
    rc, s, text = run(path, out)
    z = s["nodes"][0] if s else {}
    why = [] if rc == 1 and z.get("qemu_rc") == 1 and z.get("status") is None else \
        [f"rc {rc}, node {z}"]
    report("qemu_error", why + leftovers(out, s))


def test_timeout():
    out = os.path.join(OUT, "timeout")
    t0 = time.monotonic()
    rc, s, text = run(one_node(os.path.join(OUT, "one.json"), 60000000), out, "--timeout", "4")
    took = time.monotonic() - t0
    why = []
    z = s["nodes"][0] if s else {}
    if rc != 1 or not s or not s["timed_out"] or not z.get("timed_out") or z.get("status") is not None:
        why.append(f"rc {rc}, summary {s and {k: s[k] for k in ('timed_out', 'ok')}}, node {z}")
    if took > 20:
        why.append(f"a 4 s run took {took:.0f} s")
    report("timeout", why + leftovers(out, s))


def start_and_wait(out):
    """Starts a one-node run; returns the runner's Popen once the node runs."""
    os.makedirs(OUT, exist_ok=True)
    shutil.rmtree(out, ignore_errors=True)  # an earlier run's log must not count
    p = subprocess.Popen([RUN, one_node(os.path.join(OUT, "one.json"), 60000000), "--out", out,
                          "--kernel", KERNEL], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        if "run: sleeper" in log(out, "z"):
            return p
        time.sleep(0.1)
    return p


def state(out):
    try:
        with open(os.path.join(out, "state.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def test_sigterm():
    out = os.path.join(OUT, "sigterm")
    p = start_and_wait(out)
    st = state(out)
    # a cut by hand on the running cluster first
    c = subprocess.run([os.path.join(HERE, "cut"), out, "z", "0", "visible"], capture_output=True, text=True)
    for _ in range(50):
        if "e1000 0: link down" in log(out, "z"):
            break
        time.sleep(0.1)
    cut_why = [] if c.returncode == 0 and "e1000 0: link down" in log(out, "z") else \
        [f"tools/cluster/cut: rc {c.returncode} {c.stdout.strip()} {c.stderr.strip()}; the guest saw no link down"]
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = "none: still running 20 s after SIGTERM"
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    why = [] if rc == 143 and s["interrupted"] == "SIGTERM" else [f"rc {rc}, interrupted {s['interrupted']}"]
    if not st.get("nodes", {}).get("z", {}).get("pid"):
        why.append("the node never started")
    if [m["result"] for m in s.get("manual_cuts", [])] != ["set_link down"]:
        why.append(f"summary's manual_cuts: {s.get('manual_cuts')}")
    report("sigterm", cut_why + why + leftovers(out, s))


def test_sigkill():
    out = os.path.join(OUT, "sigkill")
    p = start_and_wait(out)
    st = state(out)
    pid, ns = st.get("nodes", {}).get("z", {}).get("pid"), st.get("namespace")
    p.kill()
    p.wait()
    why = [] if pid and ns else ["the node never started"]
    for _ in range(50):
        if not (pid and alive(pid)):
            break
        time.sleep(0.1)
    else:
        why.append(f"QEMU {pid} outlived its killed runner")
    if ns and not re.search(rf"^{ns}\b", namespaces(), re.M):
        why.append(f"namespace {ns} gone without --cleanup-stale (nothing to test)")
    r = subprocess.run([RUN, "--cleanup-stale"], capture_output=True, text=True, timeout=60)
    if ns and (ns not in r.stdout or re.search(rf"^{ns}\b", namespaces(), re.M)):
        why.append(f"--cleanup-stale did not remove {ns}: {r.stdout.strip()}")
    socks = [f for f in os.listdir(out) if f.endswith((".sock", ".qmp"))]
    if socks:
        why.append(f"--cleanup-stale left sockets: {socks}")
    report("sigkill", why)


def fake_ssh():
    """A stand-in for ssh: runs its last argument (the remote command)
    here with sh, standard input and output passed through, as ssh does."""
    path = os.path.join(OUT, "fake-ssh")
    with open(path, "w") as f:
        f.write('#!/bin/sh\nfor last; do :; done\nexec sh -c "$last"\n')
    os.chmod(path, 0o755)
    return path


def test_ssh():
    out = os.path.join(OUT, "ssh")
    os.makedirs(OUT, exist_ok=True)
    t = json.load(open(one_node(os.path.join(OUT, "ssh.json"), 4000000)))
    t["events"] = [{"after": {"node": "z", "line": "run: sleeper"}, "action": "cut-visible", "node": "z", "nic": 0},
                   {"after": {"node": "z", "line": "e1000 0: link down"}, "action": "restore", "node": "z",
                    "nic": 0}]
    json.dump(t, open(os.path.join(OUT, "ssh.json"), "w"))
    hosts = os.path.join(OUT, "ssh-hosts.json")
    json.dump({"hosts": [{"name": "here", "ssh": "root@localhost", "ssh_command": [fake_ssh()],
                          "workdir": OUT}]}, open(hosts, "w"))
    rc, s, text = run(os.path.join(OUT, "ssh.json"), out, "--hosts", hosts)
    z = log(out, "z")
    why = [] if rc == 0 and s and s["ok"] else [f"runner rc {rc}, not ok", *text.splitlines()[-5:]]
    why += need(z, r"^e1000 0: link down$", "z") + need(z, r"^e1000 0: link up$", "z") + balanced(z, "z")
    cmd = open(os.path.join(out, "z.cmd")).read() if os.path.exists(os.path.join(out, "z.cmd")) else ""
    if "-serial stdio" not in cmd or f"{OUT}/tcl" not in cmd:
        why.append(f"z.cmd: not the remote command line (serial on stdio, kernel shipped): {cmd[:200]}")
    if s:
        if [e["result"] for e in s["events"]] != ["set_link down", "set_link up"]:
            why.append(f"events: {[(e['result'], e['error']) for e in s['events']]}")
        ns = s["hosts"][0]["namespace"]
        if os.path.exists(os.path.join(OUT, ns)):
            why.append(f"the remote work directory {OUT}/{ns} is still there")
    report("ssh", why + leftovers(out, s))


def test_hosts_sigkill():
    out = os.path.join(OUT, "hosts-sigkill")
    shutil.rmtree(out, ignore_errors=True)
    t = json.load(open(one_node(os.path.join(OUT, "two.json"), 60000000)))
    t["nodes"][0]["nics"] = ["net0"]
    t["networks"] = [{"name": "net0"}]
    t["nodes"].append(dict(t["nodes"][0], name="y"))
    json.dump(t, open(os.path.join(OUT, "two.json"), "w"))
    p = subprocess.Popen([RUN, os.path.join(OUT, "two.json"), "--out", out, "--kernel", KERNEL, "--hosts",
                          os.path.join(HERE, "hosts", "netns-pair.json")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        if "run: sleeper" in log(out, "z") and "run: sleeper" in log(out, "y"):
            break
        time.sleep(0.1)
    st = state(out)
    pids = [n.get("pid") for n in st.get("nodes", {}).values()]
    nss = [h["ns"] for h in st.get("hosts", {}).values()]
    why = [] if len(pids) == 2 and all(pids) and len(nss) == 2 else [f"the nodes never started: {st}"]
    vx = subprocess.run(["ip", "-n", nss[1], "-d", "link", "show", "vx0"], capture_output=True,
                        text=True).stdout if nss else ""
    if "vxlan id" not in vx:
        why.append(f"no VXLAN device vx0 on the second host: {vx.strip()}")
    p.kill()
    p.wait()
    for _ in range(50):
        if not any(alive(x) for x in pids if x):
            break
        time.sleep(0.1)
    else:
        why.append("a QEMU outlived its killed runner")
    r = subprocess.run([RUN, "--cleanup-stale"], capture_output=True, text=True, timeout=60)
    left = [x for x in nss if re.search(rf"^{x}\b", namespaces(), re.M)]
    if left or not all(x in r.stdout for x in nss):
        why.append(f"--cleanup-stale left {left}: {r.stdout.strip()}")
    report("hosts_sigkill", why)


def test_host():
    suite = unittest.defaultTestLoader.loadTestsFromNames(["test_topology", "test_hosts"])
    r = unittest.TextTestRunner(stream=open(os.devnull, "w"), verbosity=0).run(suite)
    report("topology_checks", [f"{t}: {e.splitlines()[-1]}" for t, e in r.failures + r.errors] +
           ([] if r.testsRun else ["no test ran"]))


def main():
    global KERNEL, OUT
    if len(sys.argv) < 2:
        print("usage: tools/cluster/selftest.py KERNEL [OUTDIR]", file=sys.stderr)
        return 2
    KERNEL = os.path.abspath(sys.argv[1])
    OUT = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else
                          os.path.join(os.path.dirname(KERNEL), "test-logs", "cluster"))
    sys.path.insert(0, HERE)
    t0 = time.monotonic()
    for t in (test_host, test_bridge, test_silent, test_qemu_error, test_timeout, test_sigterm,
              test_sigkill, test_ssh, test_hosts_sigkill):
        try:
            t()
        except Exception as e:  # one broken test must not hide the others
            report(t.__name__[5:], [f"{type(e).__name__}: {e}"])
    print(f"cluster tests: {passed} passed, {failed} failed in {time.monotonic() - t0:.0f} s; logs in {OUT}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
