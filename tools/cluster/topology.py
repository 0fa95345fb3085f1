# A cluster topology (JSON): its parsing, validation and the values derived
# from it (MACs, device names, the command-line substitutions). Everything
# here is pure: no file but the topology and the kernels is read, nothing is
# started, so the host-side tests exercise it directly.
import json
import os
import re

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
MEM_RE = re.compile(r"^[0-9]+[MG]$")
TOKEN_RE = re.compile(r"@([A-Z]+)((?::[^@:\s]*)*)@")
WIRES = ("bridge", "dgram")
ACTIONS = ("cut-visible", "cut-silent", "cut-pair", "restore")
MODELS = {"e1000": "e1000", "virtio": "virtio-net-pci,disable-legacy=on"}
MAX_NODES = 15  # one MAC byte per node: (node + 1) << 4
MAX_NICS = 16
MTU = 9000

TOP_KEYS = {"name", "timeout", "networks", "nodes", "events", "comment"}
NET_KEYS = {"name", "wire", "comment"}
NODE_KEYS = {"name", "kernel", "initrd", "append", "model", "mem", "nics", "start_after",
             "qemu_extra", "kind", "ok_line", "service", "comment"}
NIC_KEYS = {"net", "mbps", "model", "mac", "comment"}
AFTER_KEYS = {"node", "line", "count"}
EVENT_KEYS = {"after", "at", "delay", "action", "node", "nic", "peer", "comment"}


class TopologyError(Exception):
    """A topology that cannot run; the message says where and why."""


def _fail(where, msg):
    raise TopologyError(f"{where}: {msg}")


def _keys(obj, allowed, where):
    if not isinstance(obj, dict):
        _fail(where, f"must be an object, not {type(obj).__name__}")
    extra = sorted(set(obj) - allowed)
    if extra:
        _fail(where, f"unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(allowed))})")


def _name(obj, where):
    n = obj.get("name")
    if not isinstance(n, str) or not NAME_RE.match(n):
        _fail(where, f"name {n!r} must be 1-32 characters of A-Z a-z 0-9 _ . - (not starting with . _ -)")
    return n


def _number(v, where, lo, integer=False):
    ok = isinstance(v, int) if integer else isinstance(v, (int, float))
    if not ok or isinstance(v, bool) or v < lo:
        _fail(where, f"{v!r} must be {'an integer' if integer else 'a number'} >= {lo}")
    return v


def mac_of(node, nic):
    """The deterministic MAC of NIC nic on node index node."""
    return f"52:54:00:00:{(node + 1) << 4:02x}:{nic:02x}"


def kernel_kind(path):
    """'tender' for an ELF (this kernel), 'linux' for a bzImage, else None."""
    try:
        with open(path, "rb") as f:
            head = f.read(0x210)
    except OSError:
        return None
    if head[:4] == b"\x7fELF":
        return "tender"
    if len(head) >= 0x206 and head[0x202:0x206] == b"HdrS":
        return "linux"
    return None


def _after(a, where, nodes, self_name=None):
    _keys(a, AFTER_KEYS, where)
    n = a.get("node")
    if n not in nodes:
        _fail(where, f"node {n!r} is not a node of this topology")
    if n == self_name:
        _fail(where, "a node cannot wait for itself")
    line = a.get("line")
    if not isinstance(line, str) or not line:
        _fail(where, "line must be a non-empty string (a substring of one serial line)")
    return {"node": n, "line": line, "count": _number(a.get("count", 1), where + ".count", 1, True)}


def _nic(n, where, nets, i):
    if isinstance(n, str):
        n = {"net": n}
    _keys(n, NIC_KEYS, where)
    if n.get("net") not in nets:
        _fail(where, f"net {n.get('net')!r} is not a network of this topology")
    out = {"index": i, "net": n["net"], "mbps": _number(n.get("mbps", 0), where + ".mbps", 0, True)}
    if "model" in n:
        if not isinstance(n["model"], str) or not n["model"]:
            _fail(where + ".model", "must be a QEMU NIC model name")
        out["model"] = n["model"]
    if "mac" in n:
        if not isinstance(n["mac"], str) or not re.match(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$", n["mac"]):
            _fail(where + ".mac", f"{n['mac']!r} is not a lower-case MAC aa:bb:cc:dd:ee:ff")
        out["mac"] = n["mac"]
    return out


def _node(n, where, nets, root):
    _keys(n, NODE_KEYS, where)
    out = {"name": _name(n, where)}
    k = n.get("kernel")
    if not isinstance(k, str) or not k:
        _fail(where, "kernel must be a path (this kernel's ELF or a Linux bzImage)")
    out["kernel"] = k if os.path.isabs(k) else os.path.join(root, k)
    ini = n.get("initrd")
    if ini is not None and (not isinstance(ini, str) or not ini):
        _fail(where, "initrd must be a path or null")
    out["initrd"] = None if ini is None else (ini if os.path.isabs(ini) else os.path.join(root, ini))
    out["append"] = n.get("append", "")
    if not isinstance(out["append"], str):
        _fail(where + ".append", "must be a string")
    model = n.get("model", "e1000")
    if not isinstance(model, str) or not model:
        _fail(where + ".model", "must be e1000, virtio or a QEMU NIC model")
    out["model"] = model
    mem = n.get("mem", "256M")
    if not isinstance(mem, str) or not MEM_RE.match(mem):
        _fail(where + ".mem", f"{mem!r} must look like 256M or 1G")
    out["mem"] = mem
    nics = n.get("nics", [])
    if not isinstance(nics, list):
        _fail(where + ".nics", "must be a list")
    if len(nics) > MAX_NICS:
        _fail(where + ".nics", f"{len(nics)} NICs, at most {MAX_NICS}")
    out["nics"] = [_nic(x, f"{where}.nics[{i}]", nets, i) for i, x in enumerate(nics)]
    extra = n.get("qemu_extra", [])
    if not isinstance(extra, list) or not all(isinstance(x, str) for x in extra):
        _fail(where + ".qemu_extra", "must be a list of strings (one QEMU argument each)")
    out["qemu_extra"] = extra
    kind = n.get("kind")
    if kind is not None and kind not in ("tender", "linux"):
        _fail(where + ".kind", f"{kind!r} must be tender or linux")
    out["kind"] = kind
    ok = n.get("ok_line")
    if ok is not None and (not isinstance(ok, str) or not ok):
        _fail(where + ".ok_line", "must be a non-empty string")
    out["ok_line"] = ok
    # A service node (a router between the others) runs until every other
    # node has ended, then is stopped: ok when its ok_line was seen.
    svc = n.get("service", False)
    if not isinstance(svc, bool):
        _fail(where + ".service", "must be true or false")
    if svc and ok is None:
        _fail(where + ".service", "a service node needs an ok_line (the line that says it serves)")
    out["service"] = svc
    out["start_after"] = n.get("start_after")
    return out


def _check_tokens(node, nodes_by_name, where):
    for m in TOKEN_RE.finditer(node["append"]):
        tok, args = m.group(1), m.group(2)
        if tok in ("NICS", "MBPS", "NODE", "NODES") and not args:
            continue
        if tok == "MAC":
            parts = args.split(":")[1:]
            if len(parts) != 2:
                _fail(where, f"{m.group(0)} must be @MAC:node:nic@")
            other = _node_ref(parts[0], nodes_by_name, where)
            if not parts[1].isdigit() or int(parts[1]) >= len(other["nics"]):
                _fail(where, f"{m.group(0)}: node {other['name']} has no NIC {parts[1]}")
            continue
        _fail(where, f"unknown substitution {m.group(0)} (known: @MAC:node:nic@ @NICS@ @MBPS@ @NODE@ @NODES@)")


def _node_ref(ref, nodes_by_name, where):
    if ref in nodes_by_name:
        return nodes_by_name[ref]
    if ref.isdigit():
        for n in nodes_by_name.values():
            if n["index"] == int(ref):
                return n
    _fail(where, f"no node {ref!r}")


def _check_cycles(nodes):
    for n in nodes:
        seen, cur = [n["name"]], n
        while cur["start_after"]:
            cur = next(x for x in nodes if x["name"] == cur["start_after"]["node"])
            if cur["name"] in seen:
                raise TopologyError(f"nodes: start_after forms a cycle: {' -> '.join(seen + [cur['name']])}")
            seen.append(cur["name"])


def parse(data, root=".", check_files=True):
    """A validated, normalised topology from a dict (data); relative paths
    are taken from root. Raises TopologyError with a message naming the
    faulty field."""
    _keys(data, TOP_KEYS, "topology")
    topo = {"name": _name(data, "topology")}
    topo["timeout"] = _number(data.get("timeout", 120), "topology.timeout", 1)
    nets = data.get("networks")
    if not isinstance(nets, list) or not nets:
        _fail("topology.networks", "must be a non-empty list")
    topo["networks"] = []
    for i, x in enumerate(nets):
        where = f"networks[{i}]"
        _keys(x, NET_KEYS, where)
        wire = x.get("wire", "bridge")
        if wire not in WIRES:
            _fail(where, f"wire {wire!r} must be one of {', '.join(WIRES)}")
        topo["networks"].append({"name": _name(x, where), "wire": wire, "index": i})
    net_names = [x["name"] for x in topo["networks"]]
    if len(set(net_names)) != len(net_names):
        _fail("topology.networks", "network names must be unique")
    nets_by_name = {x["name"]: x for x in topo["networks"]}

    nodes = data.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        _fail("topology.nodes", "must be a non-empty list")
    if len(nodes) > MAX_NODES:
        _fail("topology.nodes", f"{len(nodes)} nodes, at most {MAX_NODES}")
    topo["nodes"] = []
    for i, x in enumerate(nodes):
        where = f"nodes[{i}]"
        n = _node(x, where, nets_by_name, root)
        n["index"] = i
        topo["nodes"].append(n)
    names = [n["name"] for n in topo["nodes"]]
    if len(set(names)) != len(names):
        _fail("topology.nodes", "node names must be unique")
    by_name = {n["name"]: n for n in topo["nodes"]}
    for n in topo["nodes"]:
        where = f"nodes[{n['index']}] ({n['name']})"
        if n["start_after"] is not None:
            n["start_after"] = _after(n["start_after"], where + ".start_after", by_name, n["name"])
        _check_tokens(n, by_name, where + ".append")
        for c in n["nics"]:
            c.setdefault("mac", mac_of(n["index"], c["index"]))
        if check_files:
            _check_files(n, where)
    _check_cycles(topo["nodes"])
    if all(n["service"] for n in topo["nodes"]):
        _fail("topology.nodes", "every node is a service: nothing would end the run")
    macs = [c["mac"] for n in topo["nodes"] for c in n["nics"]]
    if len(set(macs)) != len(macs):
        _fail("topology.nodes", "two NICs have the same MAC")

    for net in topo["networks"]:
        ends = [(n["name"], c["index"]) for n in topo["nodes"] for c in n["nics"] if c["net"] == net["name"]]
        net["ends"] = ends
        if net["wire"] == "dgram" and len(ends) != 2:
            _fail(f"networks[{net['index']}] ({net['name']})",
                  f"a dgram wire joins exactly two NICs, it has {len(ends)}")
        if not ends:
            _fail(f"networks[{net['index']}] ({net['name']})", "no NIC is on this network")

    events = data.get("events", [])
    if not isinstance(events, list):
        _fail("topology.events", "must be a list")
    topo["events"] = [_event(e, f"events[{i}]", by_name) for i, e in enumerate(events)]
    return topo


def _event(e, where, by_name):
    _keys(e, EVENT_KEYS, where)
    out = {}
    if ("after" in e) == ("at" in e):
        _fail(where, "needs exactly one trigger: after {node, line[, count]} or at (seconds from the start)")
    if "after" in e:
        out["after"] = _after(e["after"], where + ".after", by_name)
    else:
        out["at"] = _number(e["at"], where + ".at", 0)
    out["delay"] = _number(e.get("delay", 0), where + ".delay", 0)
    if e.get("action") not in ACTIONS:
        _fail(where, f"action {e.get('action')!r} must be one of {', '.join(ACTIONS)}")
    out["action"] = e["action"]
    node = by_name.get(e.get("node"))
    if node is None:
        _fail(where, f"node {e.get('node')!r} is not a node of this topology")
    out["node"] = node["name"]
    nic = e.get("nic", 0)
    if not isinstance(nic, int) or isinstance(nic, bool) or not 0 <= nic < len(node["nics"]):
        _fail(where, f"node {node['name']} has no NIC {nic!r} (it has {len(node['nics'])})")
    out["nic"] = nic
    if e["action"] == "cut-pair":
        peer = by_name.get(e.get("peer"))
        if peer is None or peer["name"] == node["name"]:
            _fail(where, "cut-pair needs peer: another node of this topology")
        if not any(c["net"] == node["nics"][nic]["net"] for c in peer["nics"]):
            _fail(where, f"node {peer['name']} has no NIC on {node['nics'][nic]['net']}")
        out["peer"] = peer["name"]
    elif "peer" in e:
        _fail(where, "peer is only for cut-pair")
    return out


def _check_files(n, where):
    if not os.path.isfile(n["kernel"]):
        _fail(where, f"kernel {n['kernel']} does not exist (build it first)")
    found = kernel_kind(n["kernel"])
    if found is None:
        _fail(where, f"kernel {n['kernel']} is neither an ELF (this kernel) nor a Linux bzImage")
    if n["kind"] and n["kind"] != found:
        _fail(where, f"kind {n['kind']} but {n['kernel']} is a {found} kernel")
    n["kind"] = found
    if n["initrd"] and not os.path.isfile(n["initrd"]):
        _fail(where, f"initrd {n['initrd']} does not exist")
    if found == "tender" and n["initrd"]:
        _fail(where, "this kernel takes no initrd (its programs are inside the ELF)")


def load(path, root=".", check_files=True):
    """parse() of a JSON file; JSON syntax errors become TopologyError."""
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise TopologyError(f"{path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise TopologyError(f"{path}: not JSON: {e}") from None
    return parse(data, root, check_files)


def substitute(topo, node):
    """node's append with every @...@ replaced."""
    by_name = {n["name"]: n for n in topo["nodes"]}

    def repl(m):
        tok, args = m.group(1), m.group(2)
        if tok == "MAC":
            _, ref, nic = args.split(":")
            return _node_ref(ref, by_name, "append")["nics"][int(nic)]["mac"]
        if tok == "NICS":
            return str(len(node["nics"]))
        if tok == "MBPS":
            return ",".join(str(c["mbps"]) for c in node["nics"])
        if tok == "NODE":
            return str(node["index"])
        return str(len(topo["nodes"]))

    return TOKEN_RE.sub(repl, node["append"])


def far_end(topo, node, nic):
    """The (node name, nic index) at the other end of a dgram wire."""
    net = next(x for x in topo["networks"] if x["name"] == node["nics"][nic]["net"])
    a, b = net["ends"]
    return b if a == (node["name"], nic) else a
