#!/usr/bin/python3
# The cluster runner: boots the VMs of a topology (topology.py) on Linux
# bridges and dgram wires inside a private network namespace (one per host
# with a host list, hosts.py: bridges joined across hosts by VXLAN), starts each
# node when the line it waits for appears, fires the topology's link cuts,
# and leaves one directory per run: serial logs, QMP sockets while it runs,
# the topology used, state.json and summary.json. Bounded by the topology's
# timeout; on exit, a signal or an error it kills its QEMUs and deletes the
# namespace with its bridges and taps. QEMUs also die with the runner
# (PR_SET_PDEATHSIG), so even a SIGKILL leaves only a namespace, which the
# next run (or --cleanup-stale) removes.
import argparse
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import topology as T  # noqa: E402
import hosts as H  # noqa: E402
from links import Links, LinkError  # noqa: E402

NS_PREFIX = "tcl"
POLL = 0.05
KILL_GRACE = 3.0
EXIT_FAIL, EXIT_USAGE, EXIT_SETUP = 1, 2, 3


def say(msg):
    print(f"cluster: {msg}", flush=True)


class Interrupted(Exception):
    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _on_signal(signum, _frame):
    raise Interrupted(signum)


def _child_setup(parent):
    # The QEMU dies with the runner, whatever kills the runner. Runs in the
    # child between fork and exec; PR_SET_PDEATHSIG survives exec.
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def ip(*args, ns=None, check=True):
    cmd = ["ip"] + (["-n", ns] if ns else []) + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    if check and r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip() or 'failed'}")
    return r.stdout


def _runner_alive(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"cluster.py" in f.read()
    except OSError:
        return False


def _delete_namespace(ns):
    """Kills what runs in namespace ns (only our QEMUs run there), then
    deletes its links and the namespace."""
    for p in ip("netns", "pids", ns, check=False).split():
        try:
            os.kill(int(p), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    for _ in range(50):  # a killed QEMU still holds its taps for a moment
        if not ip("netns", "pids", ns, check=False).split():
            break
        time.sleep(0.1)
    links = ip("-j", "link", "show", ns=ns, check=False)
    try:
        for link in json.loads(links or "[]"):
            if link.get("ifname") != "lo":
                ip("link", "del", link["ifname"], ns=ns, check=False)
    except ValueError:
        pass
    ip("netns", "del", ns, check=False)


def cleanup_stale(quiet=False):
    """Removes namespaces and socket directories of runs whose runner is
    gone; returns their names."""
    gone = []
    try:
        names = os.listdir("/run/netns")
    except OSError:
        names = []
    for name in names:
        m = re.match(rf"^{NS_PREFIX}(\d+)(h\d+)?$", name)
        if m and not _runner_alive(int(m.group(1))):
            _delete_namespace(name)
            gone.append(name)
    tmp = tempfile.gettempdir()
    for d in os.listdir(tmp):
        m = re.match(rf"^{NS_PREFIX}(\d+)\.(sock|run)$", d)
        if not m or _runner_alive(int(m.group(1))):
            continue
        path = os.path.join(tmp, d)
        if m.group(2) == "run":  # the run directory's sockets
            try:
                with open(path) as f:
                    run_dir = f.read().strip()
                for x in os.listdir(run_dir):
                    if x.endswith((".sock", ".qmp")):
                        os.unlink(os.path.join(run_dir, x))
            except OSError:
                pass
            os.unlink(path)
        else:
            shutil.rmtree(path, ignore_errors=True)
        gone.append(d)
    if gone and not quiet:
        say(f"removed leftovers of earlier runs: {', '.join(gone)}")
    return gone


def cleanup_remote(hosts_file):
    """cleanup_stale on the ssh hosts of a host list: the namespaces of
    runs whose runner (on this machine) is gone, with their work
    directories."""
    if not hosts_file:
        return []
    with open(hosts_file) as f:
        data = json.load(f)
    gone = []
    for i, h in enumerate(data.get("hosts", [])):
        if h.get("transport", "ssh" if "ssh" in h else "local") != "ssh":
            continue
        spec = dict(h, ns="", workdir=h.get("workdir", "/tmp"))
        spec.setdefault("ssh", h.get("address"))
        host = H.Host(spec)
        r = subprocess.run(host.host_cmd(["ip", "netns", "list"]), capture_output=True, text=True, timeout=30)
        for line in r.stdout.splitlines():
            m = re.match(rf"^({NS_PREFIX}(\d+)h\d+)\b", line)
            if m and not _runner_alive(int(m.group(2))):
                subprocess.run(host.host_cmd(["sh", "-c", H.teardown_script(dict(spec, ns=m.group(1)))]),
                               capture_output=True, timeout=30)
                gone.append(f"{h.get('name')}:{m.group(1)}")
    return gone


class Node:
    """One VM: its QEMU command, process and outcome."""

    def __init__(self, spec, run):
        self.spec, self.name = spec, spec["name"]
        self.log = os.path.join(run.dir, f"{self.name}.log")
        self.qemu_out = os.path.join(run.dir, f"{self.name}.qemu.txt")
        self.qmp = os.path.join(run.sockdir, f"{self.name}.qmp")
        self.proc = None
        self.start = self.end = None
        self.rc = self.status = None
        self.timed_out = False
        self.not_started = None
        self.stopped = False  # a service node stopped when the others had ended
        self.counts = {}      # line pattern -> occurrences so far
        self._off, self._part = 0, b""

    def watch(self, line):
        self.counts.setdefault(line, 0)

    def scan(self):
        """Counts the watched lines among what the serial log gained."""
        try:
            with open(self.log, "rb") as f:
                f.seek(self._off)
                data = f.read()
        except OSError:
            return
        self._off += len(data)
        lines = (self._part + data).split(b"\n")
        self._part = lines.pop()
        for raw in lines:
            text = raw.decode("utf-8", "replace")
            for pat in self.counts:
                if pat in text:
                    self.counts[pat] += 1

    def seen(self, line, count):
        return self.counts.get(line, 0) >= count

    @property
    def running(self):
        return self.proc is not None and self.end is None

    @property
    def done(self):
        return self.end is not None or self.not_started is not None


class Run:
    def __init__(self, topo, out, timeout, hs=None):
        self.topo, self.dir = topo, out
        self.timeout = timeout
        # the hosts (hosts.py): without a host list, this machine alone
        self.hs = hs or H.single(topo, os.getpid())
        self.hosts = [H.Host(h) for h in self.hs["hosts"]]
        self.host_of = {n: x for x in self.hosts for n in x.spec["nodes"]}
        self.ns = self.hosts[0].ns
        self.made = []        # the hosts whose namespace exists
        self.remote_files = {}  # (host, local path) -> its copy on that ssh host
        self.vxlan = {}       # host -> VXLAN device -> counters, read before teardown
        # A unix socket's path has at most 107 bytes: the sockets go to /tmp
        # when the run directory's path is too long (symbolic links to them
        # in the run directory).
        longest = max([len(n["name"]) + 4 for n in topo["nodes"]] +
                      [len(x["name"]) + 7 for x in topo["networks"]])
        self.sockdir = out if len(out) + 1 + longest <= 107 else \
            os.path.join(tempfile.gettempdir(), f"{NS_PREFIX}{os.getpid()}.sock")
        self.nodes = [Node(n, self) for n in topo["nodes"]]
        self.by_name = {n.name: n for n in self.nodes}
        for n in self.nodes:
            if self.host_of[n.name].remote:  # its QMP socket is on that host
                n.qmp = f"{self.host_of[n.name].workdir}/{n.name}.qmp"
        self.events = [dict(e, index=i, triggered=None, fired=None, result=None, error=None)
                       for i, e in enumerate(topo["events"])]
        self.networks = []
        self.t0, self.wall0 = time.monotonic(), time.time()
        self.timed_out = False
        self.interrupted = None
        for n in self.nodes:
            if n.spec["kind"] == "tender":
                for st in range(3):
                    n.watch(f"KERNEL_EXIT status={st} ")
            if n.spec["start_after"]:
                a = n.spec["start_after"]
                self.by_name[a["node"]].watch(a["line"])
            if n.spec["ok_line"]:
                n.watch(n.spec["ok_line"])
            elif n.spec["kind"] == "linux":
                n.watch("DONE ok")
        for e in self.events:
            if "after" in e:
                self.by_name[e["after"]["node"]].watch(e["after"]["line"])

    def now(self):
        return round(time.monotonic() - self.t0, 3)

    # ---- the network ----

    def tap(self, node, nic):
        return f"t{node}n{nic}"

    def marker(self):
        # names the run directory for --cleanup-stale, should the runner die
        return os.path.join(tempfile.gettempdir(), f"{NS_PREFIX}{os.getpid()}.run")

    def on(self, host, argv, stdin=None, timeout=30):
        """Runs argv on host (outside the run's namespace); its output."""
        cmd = host.host_cmd(argv)
        r = subprocess.run(cmd, stdin=stdin, capture_output=True, text=stdin is None, timeout=timeout)
        if r.returncode:
            err = r.stderr if isinstance(r.stderr, str) else r.stderr.decode("utf-8", "replace")
            raise RuntimeError(f"{host.name}: {shlex.join(argv)[:200]}: {err.strip() or 'failed'}")
        return r.stdout

    def setup_network(self):
        with open(self.marker(), "w") as f:
            f.write(self.dir + "\n")
        os.makedirs(self.sockdir, exist_ok=True)
        if self.sockdir != self.dir:
            for n in self.nodes:
                if not self.host_of[n.name].remote:
                    os.symlink(n.qmp, os.path.join(self.dir, os.path.basename(n.qmp)))
        for h in self.hosts:
            if not h.remote and os.path.exists(f"/run/netns/{h.ns}"):
                _delete_namespace(h.ns)  # left by a killed runner that had our pid
        if self.hosts[0].transport == "netns":
            self.made = list(self.hosts)  # the test bed: both namespaces, one veth pair
            for c in H.testbed_commands(self.hs):
                ip(*c[1:])
        for h in self.hosts:
            if h.remote:
                self.ship(h)
            script = H.host_script(self.hs, h.spec, self.topo, self.tap)
            with open(os.path.join(self.dir, f"{h.name}.setup.sh"), "w") as f:
                f.write(script)
            if h not in self.made:
                self.made.append(h)  # deleted at the end even when the script fails half-way
            self.on(h, ["sh", "-ec", script], timeout=60)
        for net in self.topo["networks"]:
            rec = {"name": net["name"], "wire": net["wire"], "ends": [list(e) for e in net["ends"]]}
            if net["wire"] == "bridge":
                rec["bridge"] = f"br{net['index']}"
            self.networks.append(rec)
        self._check_mtu()

    def ship(self, h):
        """Copies the kernels and initrds of h's nodes to h's work directory
        (an ssh host), through ssh's standard input."""
        self.on(h, ["mkdir", "-p", h.workdir])
        for name in h.spec["nodes"]:
            s = self.by_name[name].spec
            for path in filter(None, (s["kernel"], s["initrd"])):
                if (h.name, path) in self.remote_files:
                    continue
                dst = f"{h.workdir}/f{len(self.remote_files)}-{os.path.basename(path)}"
                with open(path, "rb") as f:
                    self.on(h, ["sh", "-c", f"cat >{shlex.quote(dst)}"], stdin=f, timeout=120)
                self.remote_files[(h.name, path)] = dst

    def links_of(self, h):
        return {link["ifname"]: link for link in json.loads(
            self.on(h, ["ip", "-n", h.ns, "-j", "-s", "-d", "link", "show"]) or "[]")}

    def _check_mtu(self):
        """Every bridge, tap and VXLAN device at MTU 9000, on every host."""
        for h in self.hosts:
            mtu = {i: x["mtu"] for i, x in self.links_of(h).items()}
            mine = {n: k for n, k in self.host_of.items() if k is h}
            for rec in self.networks:
                if "bridge" not in rec or not any(n in mine for n, _ in rec["ends"]):
                    continue
                net = next(x for x in self.topo["networks"] if x["name"] == rec["name"])
                names = [rec["bridge"]] + [self.tap(self.by_name[n].spec["index"], k)
                                           for n, k in rec["ends"] if n in mine]
                if f"vx{net['index']}" in mtu:
                    names.append(f"vx{net['index']}")
                got = {i: mtu.get(i) for i in names}
                if len(self.hosts) == 1:
                    rec["mtu"] = got
                else:
                    rec.setdefault("mtu", {}).update({f"{h.name}:{i}": m for i, m in got.items()})
                bad = [i for i, m in got.items() if m != T.MTU]
                if bad:
                    raise RuntimeError(f"{h.name}: MTU not {T.MTU} on {', '.join(bad)}")

    def read_vxlan(self):
        """Each VXLAN device's frame counters, for summary.json: proof that
        the frames between hosts went through VXLAN."""
        for h in self.made if len(self.hosts) > 1 else []:
            try:
                for i, x in self.links_of(h).items():
                    if i.startswith("vx"):
                        st = x.get("stats64", {})
                        self.vxlan.setdefault(h.name, {})[i] = {
                            "vni": x.get("linkinfo", {}).get("info_data", {}).get("id"),
                            "tx_packets": st.get("tx", {}).get("packets"),
                            "rx_packets": st.get("rx", {}).get("packets"),
                            "tx_bytes": st.get("tx", {}).get("bytes"),
                            "rx_bytes": st.get("rx", {}).get("bytes")}
            except (RuntimeError, OSError, ValueError, subprocess.SubprocessError):
                pass

    def wire_sock(self, net, end, host=None):
        d = host.workdir if host is not None and host.remote else self.sockdir
        return os.path.join(d, f"{net}.{end}.sock")

    # ---- QEMU ----

    def nic_info(self, node):
        out = []
        for c in node.spec["nics"]:
            net = next(x for x in self.topo["networks"] if x["name"] == c["net"])
            info = {"index": c["index"], "net": c["net"], "wire": net["wire"], "mac": c["mac"],
                    "mbps": c["mbps"], "netdev": f"net{c['index']}", "device": f"nic{c['index']}",
                    "model": c.get("model", node.spec["model"])}
            if net["wire"] == "bridge":
                info["tap"] = self.tap(node.spec["index"], c["index"])
            else:
                info["far"] = list(T.far_end(self.topo, node.spec, c["index"]))
                me = net["ends"].index((node.name, c["index"]))
                h = self.host_of[node.name]
                info["local"], info["remote"] = self.wire_sock(net["name"], me, h), self.wire_sock(net["name"], 1 - me, h)
            out.append(info)
        return out

    def qemu_args(self, node):
        s = node.spec
        accel = ["-accel", "kvm", "-cpu", "host"] if os.environ.get("ACCEL") == "kvm" else \
            ["-accel", "tcg", "-cpu", "max"]
        cmdline = T.substitute(self.topo, s)
        if s["kind"] == "linux" and "console=" not in cmdline:
            cmdline = f"console=ttyS0 panic=-1 {cmdline}".strip()
        # On an ssh host the serial console comes back through ssh's
        # standard output, and the kernels are the copies shipped there.
        h = self.host_of[node.name]
        there = (lambda p: self.remote_files.get((h.name, p), p)) if h.remote else (lambda p: p)
        a = ["qemu-system-x86_64", *accel, "-m", s["mem"], "-display", "none", "-monitor", "none",
             "-no-reboot", "-serial", "stdio" if h.remote else f"file:{node.log}",
             "-qmp", f"unix:{node.qmp},server=on,wait=off",
             "-nic", "none", "-kernel", there(s["kernel"]), "-append", cmdline]
        if s["kind"] == "tender":
            a += ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
            # QEMU_SMP=N: this kernel's nodes get N CPUs (make test-smp).
            if os.environ.get("QEMU_SMP"):
                a += ["-smp", os.environ["QEMU_SMP"]]
        if s["initrd"]:
            a += ["-initrd", there(s["initrd"])]
        for c in self.nic_info(node):
            if c["wire"] == "bridge":
                nd = f"tap,id={c['netdev']},ifname={c['tap']},script=no,downscript=no"
            else:
                nd = (f"dgram,id={c['netdev']},local.type=unix,local.path={c['local']},"
                      f"remote.type=unix,remote.path={c['remote']}")
            dev = f"{T.MODELS.get(c['model'], c['model'])},netdev={c['netdev']},id={c['device']},mac={c['mac']}"
            if s["kind"] == "linux":
                dev += ",romfile="  # no iPXE option ROM: it only slows the boot
            a += ["-netdev", nd, "-device", dev]
        return a + s["qemu_extra"]

    def write_state(self, running):
        state = {"namespace": self.ns, "pid": os.getpid(), "running": running, "dir": self.dir,
                 "hosts": {h.name: h.spec for h in self.hosts},
                 "nodes": {n.name: {"index": n.spec["index"], "kind": n.spec["kind"], "qmp": n.qmp,
                                    "host": self.host_of[n.name].name,
                                    "pid": n.proc.pid if n.proc else None,
                                    "nics": self.nic_info(n)} for n in self.nodes}}
        with open(os.path.join(self.dir, "state.json.tmp"), "w") as f:
            json.dump(state, f, indent=1)
        os.replace(os.path.join(self.dir, "state.json.tmp"), os.path.join(self.dir, "state.json"))

    def start(self, node):
        args = self.qemu_args(node)
        with open(os.path.join(self.dir, f"{node.name}.cmd"), "w") as f:
            f.write(shlex.join(args) + "\n")
        h = self.host_of[node.name]
        out = open(node.qemu_out, "wb")
        # ssh: the serial console on stdout, and stdin held open: when it
        # closes (the runner and its ssh gone) the remote QEMU is killed
        log = open(node.log, "wb") if h.remote else out
        parent = os.getpid()
        node.proc = subprocess.Popen(h.qemu_cmd(args), stdin=subprocess.PIPE if h.remote else subprocess.DEVNULL,
                                     stdout=log, stderr=out if h.remote else subprocess.STDOUT,
                                     start_new_session=True, preexec_fn=lambda: _child_setup(parent))
        out.close()
        log.close()
        node.start = self.now()
        self.write_state(True)
        say(f"{node.name}: started at {node.start:.1f} s ({node.spec['kind']}, "
            f"{len(node.spec['nics'])} NIC(s)){'' if len(self.hosts) == 1 else ' on ' + h.name}")

    def reap(self, node):
        rc = node.proc.poll()
        if rc is None:
            return
        node.end, node.rc = self.now(), rc
        node.scan()
        ok_line = node.spec["ok_line"] or ("DONE ok" if node.spec["kind"] == "linux" else None)
        if node.spec["kind"] == "tender":
            # isa-debug-exit: QEMU exits with 2 * status + 1. QEMU's own
            # errors exit 1 too, hence the kernel's last line must agree.
            node.status = (rc - 1) // 2 if rc > 0 and rc % 2 == 1 else None
            if node.status is not None and not node.seen(f"KERNEL_EXIT status={node.status} ", 1):
                node.status = None
        else:
            node.status = 0 if rc == 0 else None
        if node.status == 0 and ok_line and not node.seen(ok_line, 1):
            node.status = 1
        how = f"status {node.status}" if node.status is not None else f"QEMU rc {rc}, no kernel status"
        say(f"{node.name}: exited, {how}, after {node.end - node.start:.1f} s")

    def kill_all(self):
        live = [n for n in self.nodes if n.running and n.proc.poll() is None]
        for n in live:
            n.proc.terminate()
        t = time.monotonic() + KILL_GRACE
        for n in live:
            try:
                n.proc.wait(max(0.1, t - time.monotonic()))
            except subprocess.TimeoutExpired:
                n.proc.kill()
                n.proc.wait()
        for n in self.nodes:
            if n.proc is not None and n.end is None:
                self.reap(n)
                n.status = None
                n.timed_out = self.timed_out
            elif n.proc is None and n.not_started is None:
                n.not_started = "the run ended first"

    # ---- the run ----

    def fire(self, e):
        e["fired"] = self.now()
        try:
            e["result"] = Links(self.dir).fire(e["node"], e["nic"], e["action"], f"event {e['index']}",
                                               peer=e.get("peer"))
            say(f"event {e['index']}: {e['action']} {e['node']} NIC {e['nic']} at {e['fired']:.1f} s: "
                f"{e['result']}")
        except LinkError as err:
            e["error"] = str(err)
            say(f"event {e['index']}: {e['action']} {e['node']} NIC {e['nic']} failed: {err}")

    def step(self):
        for n in self.nodes:
            n.scan()
        for n in self.nodes:
            if n.proc is None and n.not_started is None:
                a = n.spec["start_after"]
                if a is None:
                    self.start(n)
                    continue
                w = self.by_name[a["node"]]
                if w.seen(a["line"], a["count"]):
                    self.start(n)
                elif w.done:
                    n.not_started = f"{w.name} ended before printing {a['line']!r} {a['count']} time(s)"
                    say(f"{n.name}: not started: {n.not_started}")
        now = self.now()
        for e in self.events:
            if e["triggered"] is None:
                if "at" in e:
                    if now >= e["at"]:
                        e["triggered"] = now
                elif self.by_name[e["after"]["node"]].seen(e["after"]["line"], e["after"]["count"]):
                    e["triggered"] = now
            if e["triggered"] is not None and e["fired"] is None and now >= e["triggered"] + e["delay"]:
                self.fire(e)
        for n in self.nodes:
            if n.running:
                self.reap(n)

    def stop_services(self):
        """The service nodes, once every other node has ended: stopped, ok
        when their ok_line was seen."""
        for n in self.nodes:
            if not n.spec.get("service") or not n.running:
                continue
            n.proc.terminate()
            try:
                n.proc.wait(KILL_GRACE)
            except subprocess.TimeoutExpired:
                n.proc.kill()
                n.proc.wait()
            n.end, n.rc, n.stopped = self.now(), n.proc.returncode, True
            n.scan()
            n.status = 0 if n.seen(n.spec["ok_line"], 1) else 1
            say(f"{n.name}: service stopped, status {n.status}, after {n.end - n.start:.1f} s")

    def loop(self):
        while not all(n.done for n in self.nodes if not n.spec.get("service")):
            self.step()
            if self.now() > self.timeout:
                self.timed_out = True
                say(f"timed out after {self.timeout} s: killing what still runs")
                return
            time.sleep(POLL)
        self.stop_services()

    def teardown(self):
        t = time.monotonic()
        self.kill_all()
        self.read_vxlan()
        for h in reversed(self.made):
            if h.remote:
                subprocess.run(h.host_cmd(["sh", "-c", H.teardown_script(h.spec)]), capture_output=True,
                               stdin=subprocess.DEVNULL, timeout=30)
            else:
                _delete_namespace(h.ns)
        self.made = []
        for n in self.nodes:
            for p in (n.qmp, os.path.join(self.dir, os.path.basename(n.qmp))):
                if os.path.lexists(p):
                    os.unlink(p)
        for f in os.listdir(self.sockdir) if os.path.isdir(self.sockdir) else []:
            if f.endswith(".sock"):
                os.unlink(os.path.join(self.sockdir, f))
        if self.sockdir != self.dir:
            shutil.rmtree(self.sockdir, ignore_errors=True)
        if os.path.exists(self.marker()):
            os.unlink(self.marker())
        if os.path.exists(os.path.join(self.dir, "state.json")):
            self.write_state(False)
        self.teardown_s = round(time.monotonic() - t, 3)

    def summary(self, error=None):
        nodes = []
        for n in self.nodes:
            nodes.append({
                "name": n.name, "index": n.spec["index"], "kind": n.spec["kind"],
                "host": self.host_of[n.name].name,
                "pid": n.proc.pid if n.proc else None,
                "status": n.status, "qemu_rc": n.rc, "ok": n.status == 0,
                "started_s": n.start, "ended_s": n.end,
                "run_s": round(n.end - n.start, 3) if n.end is not None and n.start is not None else None,
                "timed_out": n.timed_out, "not_started": n.not_started,
                "service": bool(n.spec.get("service")), "stopped": n.stopped,
                "log": os.path.basename(n.log),
                "nics": [{k: c[k] for k in ("index", "net", "wire", "mac", "mbps", "model", "netdev", "device")
                          if k in c} | ({"tap": c["tap"]} if "tap" in c else {"far": c["far"]})
                         for c in self.nic_info(n)]})
        events = [{k: e.get(k) for k in ("index", "action", "node", "nic", "after", "at", "delay",
                                         "triggered", "fired", "result", "error")} for e in self.events]
        try:  # cuts fired by hand (tools/cluster/cut), times from the start
            with open(os.path.join(self.dir, "links.json")) as f:
                manual = [dict(h, time=round(h["time"] - self.wall0, 3))
                          for h in json.load(f)["history"] if h["by"] == "cut"]
        except (OSError, ValueError, KeyError):
            manual = []
        ok = not error and not self.interrupted and all(n["ok"] for n in nodes)
        s = {"name": self.topo["name"], "ok": ok, "timeout_s": self.timeout, "timed_out": self.timed_out,
             "interrupted": self.interrupted, "error": error, "elapsed_s": self.now(),
             "teardown_s": getattr(self, "teardown_s", None),
             "namespace": self.ns, "networks": self.networks, "nodes": nodes, "events": events,
             "hosts": [{"name": h.name, "transport": h.transport, "namespace": h.ns, "address": h.spec["address"],
                        "nodes": h.spec["nodes"]} for h in self.hosts],
             "vxlan": self.vxlan, "vxlan_port": self.hs["vxlan_port"], "vni": self.hs["vni"],
             "manual_cuts": manual}
        with open(os.path.join(self.dir, "summary.json"), "w") as f:
            json.dump(s, f, indent=1)
        return s


def prepare_dir(out):
    if os.path.isdir(out) and os.listdir(out):
        if not os.path.exists(os.path.join(out, "topology.json")):
            raise T.TopologyError(f"--out {out}: not empty and not an earlier run's directory")
        shutil.rmtree(out)
    os.makedirs(out)


def run(topo, out, timeout, hs=None):
    """Runs topo (on the hosts hs, hosts.parse; None: this machine) with its
    directory out; returns the exit code."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    r = Run(topo, out, timeout, hs)
    error, code = None, 0
    try:
        where = f"namespace {r.ns}" if len(r.hosts) == 1 else "hosts " + ", ".join(
            f"{h.name} ({h.transport} {h.ns}: {' '.join(h.spec['nodes'])})" for h in r.hosts)
        say(f"{topo['name']}: {len(topo['nodes'])} node(s), {len(topo['networks'])} network(s), "
            f"timeout {timeout} s, {where}, logs in {out}")
        r.setup_network()
        r.write_state(True)
        r.loop()
    except Interrupted as e:
        r.interrupted = str(e)
        code = 128 + e.signum
        say(f"interrupted by {e}: cleaning up")
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        error, code = str(e), EXIT_SETUP
        say(f"error: {e}")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        r.teardown()
        s = r.summary(error)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
    unfired = [str(e["index"]) for e in s["events"] if e["fired"] is None]
    if unfired:
        say(f"event(s) {', '.join(unfired)} never fired")
    if code == 0:
        code = 0 if s["ok"] else EXIT_FAIL
        bad = [f"{n['name']}={n['status'] if n['status'] is not None else 'none'}"
               for n in s["nodes"] if not n["ok"]]
        say(f"{topo['name']}: {'ok' if code == 0 else 'FAIL (' + ', '.join(bad) + ')'} "
            f"in {s['elapsed_s']:.1f} s; {out}/summary.json")
    return code


def main(argv=None):
    p = argparse.ArgumentParser(prog="tools/cluster/run", description="Boots the VMs of a topology file.")
    p.add_argument("topology", nargs="?", help="topology JSON file")
    p.add_argument("--out", help="run directory (default build/cluster/NAME-TIMESTAMP)")
    p.add_argument("--timeout", type=float, help="overall timeout in seconds (default: the topology's)")
    p.add_argument("--kernel", help="this kernel's ELF for every node that does not boot Linux")
    p.add_argument("--hosts", help="host list JSON: run the nodes across these hosts (docs/multihost.md)")
    p.add_argument("--check", action="store_true", help="validate the topology and print the QEMU commands")
    p.add_argument("--cleanup-stale", action="store_true", help="remove what earlier runs left behind")
    a = p.parse_args(argv)
    if a.cleanup_stale:
        gone = cleanup_stale(quiet=True) + cleanup_remote(a.hosts)
        say(f"removed {', '.join(gone)}" if gone else "nothing left by earlier runs")
        if not a.topology:
            return 0
    if not a.topology:
        p.error("a topology file is needed")
    reading = a.topology
    try:
        with open(a.topology) as f:
            data = json.load(f)
        if a.kernel:
            for n in data.get("nodes", []) if isinstance(data, dict) else []:
                if isinstance(n, dict) and not n.get("initrd") and n.get("kind") != "linux":
                    n["kernel"] = os.path.abspath(a.kernel)
        topo = T.parse(data, ROOT)
        if a.timeout is not None and a.timeout <= 0:
            raise T.TopologyError("--timeout must be positive")
        hs = None
        if a.hosts:
            reading = a.hosts
            with open(a.hosts) as f:
                hdata = json.load(f)
            hs = H.parse(hdata, topo, os.getpid())
    except H.HostsError as e:
        print(f"cluster: {a.hosts}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        print(f"cluster: {reading}: {e.strerror}", file=sys.stderr)
        return EXIT_USAGE
    except json.JSONDecodeError as e:
        print(f"cluster: {reading}: not JSON: {e}", file=sys.stderr)
        return EXIT_USAGE
    except T.TopologyError as e:
        print(f"cluster: {a.topology}: {e}", file=sys.stderr)
        return EXIT_USAGE
    timeout = a.timeout or topo["timeout"]
    out = os.path.abspath(a.out or os.path.join(
        ROOT, "build", "cluster", f"{topo['name']}-{time.strftime('%Y%m%d-%H%M%S')}"))
    if a.check:
        r = Run(topo, out, timeout, hs)
        if hs:
            for h in r.hosts:
                print(f"# host {h.name} ({h.transport}): sh -ec on it:")
                print(H.host_script(hs, h.spec, topo, r.tap), end="")
        for n in r.nodes:
            print(f"{n.name}: {shlex.join(r.host_of[n.name].qemu_cmd(r.qemu_args(n)) if hs else r.qemu_args(n))}")
        return 0
    try:
        prepare_dir(out)
    except (T.TopologyError, OSError) as e:
        print(f"cluster: {e}", file=sys.stderr)
        return EXIT_USAGE
    with open(os.path.join(out, "topology.json"), "w") as f:
        json.dump(data, f, indent=1)
    if a.hosts:
        with open(os.path.join(out, "hosts.json"), "w") as f:
            json.dump(hdata, f, indent=1)
    cleanup_stale()
    return run(topo, out, timeout, hs)


def cut_main(argv=None):
    p = argparse.ArgumentParser(prog="tools/cluster/cut",
                                description="Cuts or restores one NIC's link on a running cluster.")
    p.add_argument("run_dir")
    p.add_argument("node")
    p.add_argument("nic", type=int)
    p.add_argument("action", choices=["visible", "silent", "pair", "restore"])
    p.add_argument("peer", nargs="?", help="pair: the node whose frames to and from NODE are dropped")
    a = p.parse_args(argv)
    if (a.action == "pair") != (a.peer is not None):
        p.error("a peer goes with pair, and only with pair")
    action = {"visible": "cut-visible", "silent": "cut-silent", "pair": "cut-pair"}.get(a.action, a.action)
    try:
        links = Links(a.run_dir)
        if not links.state.get("running") or not _runner_alive(links.state.get("pid", 0)):
            raise LinkError(f"{a.run_dir}: that run has ended")
        print(f"cut: {a.node} NIC {a.nic}: {links.fire(a.node, a.nic, action, peer=a.peer)}")
        return 0
    except LinkError as e:
        print(f"cut: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
