# Link cuts on a running cluster, shared by the runner's events and the
# `cut` command: QMP set_link for what a NIC reports, the tap taken down on
# the host for a bridge wire that dies silently. Which cuts are in force is
# kept in RUN_DIR/links.json (under a lock), so `restore` undoes exactly them.
# Across hosts (hosts.py) each command runs on the node's host, through
# that host's transport; a QMP socket on an ssh host is reached by a small
# Python client run there (QMP_REMOTE).
import fcntl
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hosts as H  # noqa: E402

QMP_TIMEOUT = 5.0
# python3 -c QMP_REMOTE SOCKET COMMAND ARGUMENTS-JSON: the QMP client on an
# ssh host; prints the reply's "return" or "error" as one JSON line.
QMP_REMOTE = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1]); f = s.makefile("rwb")
def go(c, a):
    f.write(json.dumps({"execute": c, **({"arguments": a} if a else {})}).encode() + b"\n"); f.flush()
    while True:
        m = json.loads(f.readline() or '{"error": {"desc": "connection closed"}}')
        if "return" in m or "error" in m:
            return m
go("qmp_capabilities", None)
print(json.dumps(go(sys.argv[2], json.loads(sys.argv[3]))))
"""


class LinkError(Exception):
    pass


def qmp(path, command, arguments=None, timeout=QMP_TIMEOUT):
    """Runs one QMP command on the VM whose QMP socket is path and returns
    its "return" value. QEMU serves one QMP client at a time, so the
    connection is closed again at once."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        f = s.makefile("rwb")

        def reply():
            while True:
                line = f.readline()
                if not line:
                    raise LinkError(f"QMP {path}: connection closed")
                msg = json.loads(line)
                if "return" in msg:
                    return msg["return"]
                if "error" in msg:
                    raise LinkError(f"QMP {command}: {msg['error'].get('desc', msg['error'])}")
                # greetings and asynchronous events are skipped

        def send(cmd, args=None):
            f.write(json.dumps({"execute": cmd, **({"arguments": args} if args else {})}).encode() + b"\n")
            f.flush()
            return reply()

        send("qmp_capabilities")
        return send(command, arguments)
    except (OSError, ValueError) as e:
        raise LinkError(f"QMP {path}: {e}") from None
    finally:
        s.close()


def qmp_on(host, path, command, arguments=None):
    """qmp() on host: in this process when the socket is on this machine,
    else through the host's transport."""
    if not host.remote:
        return qmp(path, command, arguments)
    try:
        r = subprocess.run(host.host_cmd(["python3", "-c", QMP_REMOTE, path, command, json.dumps(arguments)]),
                           capture_output=True, text=True, timeout=QMP_TIMEOUT + 15, stdin=subprocess.DEVNULL)
        msg = json.loads(r.stdout) if r.returncode == 0 else None
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        raise LinkError(f"QMP {host.name}:{path}: {e}") from None
    if msg is None:
        raise LinkError(f"QMP {host.name}:{path}: {r.stderr.strip()[-200:] or 'failed'}")
    if "error" in msg:
        raise LinkError(f"QMP {command}: {msg['error'].get('desc', msg['error'])}")
    return msg["return"]


def _nft(host, script):
    r = subprocess.run(host.ns_cmd(["nft", "-f", "-"]), input=script, capture_output=True,
                       text=True, timeout=10)
    if r.returncode:
        raise LinkError(f"nft in {host.ns} on {host.name}: {r.stderr.strip()}")


def _ip(host, *args):
    r = subprocess.run(host.host_cmd(["ip", "-n", host.ns, *args]), capture_output=True, text=True, timeout=10,
                       stdin=subprocess.DEVNULL)
    if r.returncode:
        raise LinkError(f"ip -n {host.ns} {' '.join(args)} on {host.name}: {r.stderr.strip()}")


class Links:
    """The cut state of one run, from its state.json."""

    def __init__(self, run_dir):
        self.dir = run_dir
        try:
            with open(os.path.join(run_dir, "state.json")) as f:
                self.state = json.load(f)
        except (OSError, ValueError) as e:
            raise LinkError(f"{run_dir}: not a running cluster ({e})") from None
        # a run of one host (or an older state.json): this machine
        specs = self.state.get("hosts") or {"local": {"name": "local", "transport": "local",
                                                      "ns": self.state["namespace"]}}
        self.hosts = {name: H.Host(h) for name, h in specs.items()}

    def _host(self, node):
        return self.hosts[self.state["nodes"][node].get("host", next(iter(self.hosts)))]

    def _nic(self, node, nic):
        n = self.state["nodes"].get(node)
        if n is None:
            raise LinkError(f"no node {node!r} (nodes: {', '.join(self.state['nodes'])})")
        if not isinstance(nic, int) or not 0 <= nic < len(n["nics"]):
            raise LinkError(f"node {node} has no NIC {nic!r} (it has {len(n['nics'])})")
        return n, n["nics"][nic]

    def _set_link(self, node, nic, up):
        n, c = self._nic(node, nic)
        qmp_on(self._host(node), n["qmp"], "set_link", {"name": c["device"], "up": up})

    def _silent(self, node, nic, up):
        n, c = self._nic(node, nic)
        if c["wire"] == "bridge":
            _ip(self._host(node), "link", "set", c["tap"], "up" if up else "down")
        else:  # dgram: the far NIC stops taking and giving frames
            far_node, far_nic = c["far"]
            self._set_link(far_node, far_nic, up)

    def _pair_rules(self, links):
        """The bridge filter that drops frames between the pairs cut
        (cut-pair), rebuilt whole from links.json's state."""
        rules = []
        for key, cur in sorted(links["nics"].items()):
            node, nic = key.rsplit(":", 1)
            mine = self._nic(node, int(nic))[1]["mac"]
            for peer_mac in cur.get("pairs", []):
                rules.append(f"add rule bridge cut pairs ether saddr {mine} ether daddr {peer_mac} drop")
                rules.append(f"add rule bridge cut pairs ether saddr {peer_mac} ether daddr {mine} drop")
        script = ("table bridge cut\ndelete table bridge cut\ntable bridge cut {\n"
                  "\tchain pairs {\n\t\ttype filter hook forward priority 0; policy accept;\n\t}\n}\n"
                  + "\n".join(rules) + "\n")
        for h in self.hosts.values():  # the frames may cross a bridge on either host
            _nft(h, script)

    def _peer_mac(self, node, nic, peer):
        """The MAC of peer's NIC on the network node's NIC nic is on."""
        c = self._nic(node, nic)[1]
        if c["wire"] != "bridge":
            raise LinkError("cut-pair needs a bridge network (a dgram wire joins two NICs only)")
        p = self.state["nodes"].get(peer)
        if p is None:
            raise LinkError(f"no node {peer!r}")
        for pc in p["nics"]:
            if pc["net"] == c["net"]:
                return pc["mac"]
        raise LinkError(f"node {peer} has no NIC on {c['net']}")

    def fire(self, node, nic, action, by="cut", peer=None):
        """Applies action (cut-visible, cut-silent, restore) to NIC nic of
        node; returns a short description of what was done. by (event N or
        cut, the command) goes into links.json's history with the time."""
        self._nic(node, nic)
        lock = os.open(os.path.join(self.dir, "links.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            path = os.path.join(self.dir, "links.json")
            try:
                with open(path) as f:
                    links = json.load(f)
            except (OSError, ValueError):
                links = {"nics": {}, "history": []}
            key = f"{node}:{nic}"
            cur = links["nics"].get(key, {"visible": False, "silent": False})
            done = []
            if action == "cut-visible":
                self._set_link(node, nic, False)
                cur["visible"] = True
                done.append("set_link down")
            elif action == "cut-silent":
                self._silent(node, nic, False)
                cur["silent"] = True
                done.append("tap down" if self._nic(node, nic)[1]["wire"] == "bridge" else "far set_link down")
            elif action == "cut-pair":
                # Silent, and only between node and peer: the bridge drops
                # their frames both ways; everyone else's pass (RI2N's
                # failure between two nodes, per peer).
                mac = self._peer_mac(node, nic, peer)
                cur.setdefault("pairs", [])
                if mac not in cur["pairs"]:
                    cur["pairs"].append(mac)
                links["nics"][key] = cur
                self._pair_rules(links)
                done.append(f"frames to and from {peer} dropped")
            elif action == "restore":
                if cur.get("pairs"):
                    cur["pairs"] = []
                    links["nics"][key] = cur
                    self._pair_rules(links)
                    done.append("pair cuts lifted")
                if cur["silent"]:
                    self._silent(node, nic, True)
                    cur["silent"] = False
                    done.append("wire back")
                if cur["visible"]:
                    self._set_link(node, nic, True)
                    cur["visible"] = False
                    done.append("set_link up")
                if not done:
                    done.append("nothing was cut")
            else:
                raise LinkError(f"unknown action {action!r}")
            links["nics"][key] = cur
            links["history"].append({"time": time.time(), "by": by, "node": node, "nic": nic,
                                     "action": action, "result": ", ".join(done)})
            with open(path + ".tmp", "w") as f:
                json.dump(links, f, indent=1)
            os.replace(path + ".tmp", path)
            return ", ".join(done)
        finally:
            os.close(lock)
