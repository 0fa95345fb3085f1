# The hosts of a cluster run (a host list, JSON; docs/multihost.md): its
# parsing, the placement of a topology's nodes on the hosts, and every
# command the runner sends to a host. A host is reached one of three ways,
# its transport: `local` (this machine), `netns` (a network namespace of
# this machine playing a host, the test bed: `ip netns exec`), `ssh` (a real
# host). The commands are built once, as argument lists, and only wrapped
# differently per transport, so what `make test` runs through `ip netns
# exec` is what a rack runs through `ssh`. Each host's bridges are joined
# to the other hosts' by Linux VXLAN devices (one per network and host,
# head-end replication through the all-zero FDB entry). Pure: nothing here
# starts a process, so the host-side tests check every command.
import ipaddress
import re
import shlex

TRANSPORTS = ("local", "netns", "ssh")
VXLAN_PORT = 4789        # IANA's VXLAN port
VXLAN_OVERHEAD = 50      # outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14
UNDERLAY_MTU = 9000 + VXLAN_OVERHEAD
NETNS_DEV = "ul0"        # the veth end in each namespace host of the test bed
ZERO_MAC = "00:00:00:00:00:00"
SSH_OPTIONS = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
               "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]

TOP_KEYS = {"hosts", "vxlan_port", "vni", "comment"}
HOST_KEYS = {"name", "transport", "ssh", "ssh_options", "ssh_command", "address", "dev", "nodes", "workdir",
             "comment"}
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
DEV_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")


class HostsError(Exception):
    """A host list that cannot run this topology; the message says where."""


def _fail(where, msg):
    raise HostsError(f"{where}: {msg}")


def _host(h, where, multi):
    if not isinstance(h, dict):
        _fail(where, "must be an object")
    extra = sorted(set(h) - HOST_KEYS)
    if extra:
        _fail(where, f"unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(HOST_KEYS))})")
    name = h.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        _fail(where, f"name {name!r} must be 1-32 characters of A-Z a-z 0-9 _ . -")
    t = h.get("transport", "ssh" if "ssh" in h else "local")
    if t not in TRANSPORTS:
        _fail(where + ".transport", f"{t!r} must be one of {', '.join(TRANSPORTS)}")
    out = {"name": name, "transport": t, "dev": h.get("dev"), "address": h.get("address")}
    if multi or t == "netns":
        try:
            ipaddress.IPv4Address(out["address"])
        except (ValueError, TypeError):
            _fail(where + ".address", f"{out['address']!r}: the host's IPv4 underlay address is needed")
    if t == "netns":
        if out["dev"] not in (None, NETNS_DEV):
            _fail(where + ".dev", f"a netns host's underlay is the runner's veth {NETNS_DEV}")
        out["dev"] = NETNS_DEV
    elif multi and (not isinstance(out["dev"], str) or not DEV_RE.match(out["dev"])):
        _fail(where + ".dev", f"{out['dev']!r}: the underlay device (its MTU must be >= {UNDERLAY_MTU})")
    if t == "ssh":
        dest = h.get("ssh", out["address"])
        if not isinstance(dest, str) or not dest or dest.startswith("-") or re.search(r"\s", dest):
            _fail(where + ".ssh", f"{dest!r} must be an ssh destination, e.g. root@10.0.0.11")
        opts = h.get("ssh_options", [])
        if not isinstance(opts, list) or not all(isinstance(o, str) for o in opts):
            _fail(where + ".ssh_options", "must be a list of ssh arguments")
        cmd = h.get("ssh_command", ["ssh"])
        if not isinstance(cmd, list) or not cmd or not all(isinstance(o, str) and o for o in cmd):
            _fail(where + ".ssh_command", "must be a non-empty list: the ssh program and its first arguments")
        wd = h.get("workdir", "/tmp")
        if not isinstance(wd, str) or not wd.startswith("/"):
            _fail(where + ".workdir", f"{wd!r} must be an absolute path on that host")
        out.update(ssh=dest, ssh_options=opts, ssh_command=cmd, workdir=wd)
    else:
        for k in ("ssh", "ssh_options", "ssh_command", "workdir"):
            if k in h:
                _fail(where + "." + k, f"only for an ssh host, not {t}")
    nodes = h.get("nodes", [])
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        _fail(where + ".nodes", "must be a list of node names")
    out["nodes"] = list(nodes)
    return out


def parse(data, topo, pid):
    """The hosts of data (a dict) with topo's nodes placed on them, for the
    runner of process id pid. A node named in a host's nodes runs there;
    each other node, in the topology's order, goes to the host with the
    fewest nodes so far (the first of them on a tie). Raises HostsError."""
    if not isinstance(data, dict):
        _fail("hosts file", "must be an object")
    extra = sorted(set(data) - TOP_KEYS)
    if extra:
        _fail("hosts file", f"unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(TOP_KEYS))})")
    raw = data.get("hosts")
    if not isinstance(raw, list) or not raw:
        _fail("hosts", "must be a non-empty list")
    multi = len(raw) > 1
    hosts = [_host(h, f"hosts[{i}]", multi) for i, h in enumerate(raw)]
    for k in ("name", "address"):
        vals = [h[k] for h in hosts if h[k] is not None]
        if len(set(vals)) != len(vals):
            _fail("hosts", f"two hosts have the same {k}")
    kinds = {h["transport"] for h in hosts}
    if "netns" in kinds and (kinds != {"netns"} or len(hosts) != 2):
        _fail("hosts", "netns hosts (the test bed) come as exactly two, joined by one veth pair, and alone")
    port = data.get("vxlan_port", VXLAN_PORT)
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        _fail("hosts file.vxlan_port", f"{port!r} must be a UDP port")
    # Two runs on the same hosts need different VNIs (one VXLAN socket per
    # port demultiplexes by VNI): by default the runner's pid picks them.
    vni = data.get("vni", 1_000_000 + 16 * (pid % 900_000))
    nets = len(topo["networks"])
    if not isinstance(vni, int) or isinstance(vni, bool) or not 1 <= vni <= (1 << 24) - nets:
        _fail("hosts file.vni", f"{vni!r}: VNIs vni..vni+{nets - 1} must lie in 1..{(1 << 24) - 1}")
    for i, h in enumerate(hosts):
        h["index"] = i
        h["ns"] = f"tcl{pid}h{i}"
    place(hosts, topo)
    return {"hosts": hosts, "vxlan_port": port, "vni": vni}


def single(topo, pid):
    """The one-host run of a topology without a host list: this machine,
    namespace tcl<pid>, no VXLAN."""
    h = {"name": "local", "transport": "local", "index": 0, "ns": f"tcl{pid}", "dev": None,
         "address": None, "nodes": [n["name"] for n in topo["nodes"]]}
    return {"hosts": [h], "vxlan_port": VXLAN_PORT, "vni": None}


def place(hosts, topo):
    """Fills each host's nodes: the named ones, then each other one on the
    host with the fewest so far (the first on a tie), in the topology's order. Refuses an unknown or twice-named node,
    an idle host, and a dgram wire between hosts (unix sockets stay on one
    machine)."""
    names = [n["name"] for n in topo["nodes"]]
    where = {}
    for h in hosts:
        for n in h["nodes"]:
            if n not in names:
                _fail(f"hosts[{h['index']}] ({h['name']}).nodes", f"{n!r} is not a node of the topology")
            if n in where:
                _fail(f"hosts[{h['index']}] ({h['name']}).nodes", f"{n} is on {where[n]} already")
            where[n] = h["name"]
    for n in [n for n in names if n not in where]:
        h = min(hosts, key=lambda x: (len(x["nodes"]), x["index"]))
        h["nodes"].append(n)
        where[n] = h["name"]
    for h in hosts:
        h["nodes"].sort(key=names.index)
        if not h["nodes"]:
            _fail(f"hosts[{h['index']}] ({h['name']})", "runs no node of this topology")
    for net in topo["networks"]:
        if net["wire"] == "dgram":
            on = {where[n] for n, _ in net["ends"]}
            if len(on) > 1:
                _fail(f"network {net['name']}", f"a dgram wire stays on one host, its ends are on {', '.join(sorted(on))}")
    return where


class Host:
    """One host of a run: how to run a command there (host_cmd) and inside
    the run's namespace there (ns_cmd). Built from a parsed host, or from
    state.json's copy of it (tools/cluster/cut)."""

    def __init__(self, h):
        self.spec = h
        self.name, self.transport, self.ns = h["name"], h["transport"], h["ns"]
        self.remote = self.transport == "ssh"
        # where an ssh host keeps the run's kernels and QMP sockets
        self.workdir = f"{h['workdir'].rstrip('/')}/{self.ns}" if self.remote else None

    def ssh(self, remote):
        """ssh's argument list running the shell command remote there."""
        return [*self.spec.get("ssh_command", ["ssh"]), *SSH_OPTIONS, *self.spec.get("ssh_options", []),
                self.spec["ssh"], remote]

    def host_cmd(self, argv):
        """argv, run on the host outside the run's namespace (a netns host
        is its namespace)."""
        if self.transport == "local":
            return list(argv)
        if self.transport == "netns":
            return ["ip", "netns", "exec", self.ns, *argv]
        return self.ssh(shlex.join(argv))

    def ns_cmd(self, argv):
        """argv, run inside the run's namespace on the host."""
        inner = ["ip", "netns", "exec", self.ns, *argv]
        return self.ssh(shlex.join(inner)) if self.remote else inner

    def qemu_cmd(self, argv):
        """A QEMU command inside the namespace. Over ssh the remote shell
        starts it in the background and kills it when ssh's standard input
        reaches its end (the runner, or its ssh, has gone), and exits with
        QEMU's status: a remote QEMU dies with the runner as a local one
        does with PR_SET_PDEATHSIG."""
        if not self.remote:
            return self.ns_cmd(argv)
        return self.ssh(shlex.join(["ip", "netns", "exec", self.ns, "sh", "-c", WATCH, "qemu", *argv]))


# Runs "$@" with stdin from /dev/null; a watcher waits for the end of the
# shell's own stdin (ssh's channel, kept as fd 3: a background job's stdin
# is /dev/null) and kills it. Exit status: QEMU's.
WATCH = ('exec 3<&0; "$@" </dev/null 3<&- & q=$!; { cat <&3 >/dev/null; kill $q; } >/dev/null 2>&1 & w=$!; '
         'exec 3<&-; wait $q; rc=$?; kill $w 2>/dev/null; exit $rc')


def host_script(hs, h, topo, tap):
    """The shell script that builds host h's part of the network: its run
    namespace (not for a netns host: the runner made it), a bridge per
    network with a NIC on h, a tap per NIC of h's nodes, and a VXLAN
    device per network that spans hosts, flooding to the other hosts of
    that network. Run on the host with `sh -ec` (host_cmd). tap(node
    index, nic) names a tap."""
    ns, on = h["ns"], set(h["nodes"])
    by_name = {n["name"]: n for n in topo["nodes"]}
    place_of = {n: x["name"] for x in hs["hosts"] for n in x["nodes"]}
    cmds = []
    if h["transport"] != "netns":
        cmds.append(["ip", "netns", "add", ns])
    if h.get("dev"):
        cmds.append(["sh", "-c", f'm=$(cat /sys/class/net/{h["dev"]}/mtu) && [ "$m" -ge {UNDERLAY_MTU} ] || '
                     f'{{ echo "underlay {h["dev"]} on {h["name"]}: MTU ${{m:-unknown}}, VXLAN with 9000-byte '
                     f'frames needs {UNDERLAY_MTU}" >&2; exit 1; }}'])
    cmds.append(["ip", "-n", ns, "link", "set", "lo", "up"])
    cmds.append(["ip", "netns", "exec", ns, "sh", "-c",
                 "for f in all default; do echo 1 >/proc/sys/net/ipv6/conf/$f/disable_ipv6; done"])
    for net in topo["networks"]:
        if net["wire"] != "bridge":
            continue
        mine = [(n, c) for n, c in net["ends"] if n in on]
        if not mine:
            continue
        br = f"br{net['index']}"
        cmds.append(["ip", "-n", ns, "link", "add", br, "type", "bridge", "stp_state", "0", "forward_delay", "0"])
        for n, c in mine:
            t = tap(by_name[n]["index"], c)
            cmds.append(["ip", "-n", ns, "tuntap", "add", "dev", t, "mode", "tap"])
            cmds.append(["ip", "-n", ns, "link", "set", t, "mtu", "9000", "master", br, "up"])
        far = sorted({place_of[n] for n, _ in net["ends"]} - {h["name"]})
        if far:
            vx = f"vx{net['index']}"
            # made in the host's own namespace (its UDP socket and underlay
            # stay there), living in the run's namespace on the bridge
            cmds.append(["ip", "link", "add", vx, "netns", ns, "type", "vxlan", "id", str(hs["vni"] + net["index"]),
                         "local", h["address"], "dstport", str(hs["vxlan_port"]), "dev", h["dev"]])
            cmds.append(["ip", "-n", ns, "link", "set", vx, "mtu", "9000", "master", br, "up"])
            for f in far:
                addr = next(x["address"] for x in hs["hosts"] if x["name"] == f)
                cmds.append(["bridge", "-n", ns, "fdb", "append", ZERO_MAC, "dev", vx, "dst", addr])
        cmds.append(["ip", "-n", ns, "link", "set", br, "mtu", "9000", "up"])
    return "\n".join(shlex.join(c) for c in cmds) + "\n"


def testbed_commands(hs):
    """The local commands that make the two netns hosts of the test bed:
    two namespaces joined by a veth pair (MTU 9050, the least VXLAN needs
    for 9000-byte frames), each end with its host's address, point to point."""
    a, b = hs["hosts"]
    cmds = [["ip", "netns", "add", a["ns"]], ["ip", "netns", "add", b["ns"]],
            ["ip", "link", "add", NETNS_DEV, "netns", a["ns"], "mtu", str(UNDERLAY_MTU), "type", "veth",
             "peer", "name", NETNS_DEV, "netns", b["ns"], "mtu", str(UNDERLAY_MTU)]]
    for x, y in ((a, b), (b, a)):
        cmds.append(["ip", "-n", x["ns"], "addr", "add", x["address"], "peer", y["address"], "dev", NETNS_DEV])
        cmds.append(["ip", "-n", x["ns"], "link", "set", NETNS_DEV, "up"])
    return cmds


def teardown_script(h):
    """An ssh host's teardown: kills what runs in the run's namespace (only
    the run's QEMUs), deletes its links and the namespace, and the work
    directory. A netns or local host's namespace is deleted by the runner
    itself (cluster._delete_namespace)."""
    ns, wd = shlex.quote(h["ns"]), shlex.quote(f"{h['workdir'].rstrip('/')}/{h['ns']}")
    return (f"for p in $(ip netns pids {ns} 2>/dev/null); do kill -9 $p 2>/dev/null; done\n"
            f"i=0; while [ -n \"$(ip netns pids {ns} 2>/dev/null)\" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done\n"
            f"for l in $(ip -n {ns} -o link show 2>/dev/null | sed -n 's/^[0-9]*: \\([^:@]*\\).*/\\1/p'); do\n"
            f"  [ \"$l\" = lo ] || ip -n {ns} link del \"$l\" 2>/dev/null\ndone\n"
            f"ip netns del {ns} 2>/dev/null; rm -rf {wd}; true\n")
