#!/usr/bin/python3
# Host-side checks of the host list (hosts.py): its parsing and the
# placement of nodes, and every command the runner sends to a host through
# each transport (local, ip netns exec, ssh), compared word for word. The
# ssh commands cannot reach a real host here: they are checked as built,
# and the remote shell's QEMU watcher is run on this machine. No VM.
import copy
import os
import shlex
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import topology as T  # noqa: E402
import hosts as H  # noqa: E402


def topo(nodes=("a", "b"), dgram=False):
    t = {"name": "t", "networks": [{"name": "net0"}, {"name": "net1"}],
         "nodes": [{"name": n, "kernel": "k.elf", "nics": ["net0", "net1"]} for n in nodes]}
    if dgram:
        t["networks"].append({"name": "w", "wire": "dgram"})
        t["nodes"][0]["nics"].append("w")
        t["nodes"][-1]["nics"].append("w")
    return T.parse(t, "/", check_files=False)


NETNS = {"hosts": [{"name": "h0", "transport": "netns", "address": "10.213.0.1"},
                   {"name": "h1", "transport": "netns", "address": "10.213.0.2"}]}
SSH = {"vni": 4200, "hosts": [
    {"name": "pc1", "ssh": "root@192.168.50.11", "address": "192.168.50.11", "dev": "eth1", "nodes": ["b"]},
    {"name": "pc2", "ssh": "root@192.168.50.12", "address": "192.168.50.12", "dev": "eth1",
     "ssh_options": ["-p", "2222"], "workdir": "/var/tmp"}]}
SSH_PREFIX = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5",
              "-o", "ServerAliveCountMax=3"]


class Parse(unittest.TestCase):
    def bad(self, data, words, t=None):
        with self.assertRaises(H.HostsError) as e:
            H.parse(data, t or topo(), 77)
        for w in words:
            self.assertIn(w, str(e.exception))

    def test_netns_pair(self):
        hs = H.parse(copy.deepcopy(NETNS), topo(("a", "b", "c")), 77)
        self.assertEqual([(h["name"], h["ns"], h["dev"], h["nodes"]) for h in hs["hosts"]],
                         [("h0", "tcl77h0", "ul0", ["a", "c"]), ("h1", "tcl77h1", "ul0", ["b"])])
        self.assertEqual((hs["vxlan_port"], hs["vni"]), (4789, 1_000_000 + 16 * 77))

    def test_placement(self):
        # b named on pc1; a goes to the host with fewest nodes (pc2), c to pc1 (tie: first)
        hs = H.parse(copy.deepcopy(SSH), topo(("a", "b", "c")), 5)
        self.assertEqual([h["nodes"] for h in hs["hosts"]], [["b", "c"], ["a"]])
        self.assertEqual(hs["vni"], 4200)

    def test_errors(self):
        def with_(i, **kw):
            d = copy.deepcopy(SSH)
            d["hosts"][i].update(kw)
            return {**d, "hosts": [{k: v for k, v in h.items() if v is not None} for h in d["hosts"]]}
        self.bad({"hosts": []}, ["hosts", "non-empty"])
        self.bad({**SSH, "extra": 1}, ["unknown key", "extra"])
        self.bad(with_(0, transport="telnet"), ["hosts[0].transport", "telnet"])
        self.bad(with_(0, address=None), ["hosts[0].address", "IPv4"])
        self.bad(with_(1, dev=None), ["hosts[1].dev", "9050"])
        self.bad(with_(1, ssh="-oProxyCommand=x"), ["hosts[1].ssh"])
        self.bad(with_(1, workdir="tmp"), ["workdir", "absolute"])
        self.bad(with_(1, ssh_command=[]), ["ssh_command"])
        self.bad(with_(1, name="pc1"), ["same name"])
        self.bad(with_(1, address="192.168.50.11"), ["same address"])
        self.bad(with_(1, nodes=["zz"]), ["hosts[1] (pc2).nodes", "'zz'"])
        self.bad(with_(1, nodes=["b"]), ["b is on pc1"])
        self.bad({**SSH, "vni": 1 << 24}, ["vni"])
        self.bad({**SSH, "vxlan_port": 0}, ["vxlan_port"])
        self.bad({"hosts": NETNS["hosts"] + [{"name": "h2", "transport": "netns", "address": "10.213.0.3"}]},
                 ["exactly two"], topo(("a", "b", "c")))
        self.bad({"hosts": [NETNS["hosts"][0], SSH["hosts"][1]]}, ["exactly two"])
        self.bad({"hosts": [{"name": "x", "transport": "local", "ssh": "y"}]}, ["only for an ssh host"])
        self.bad(copy.deepcopy(NETNS), ["runs no node"], topo(("a",)))
        # a dgram wire is a pair of unix sockets: one machine
        self.bad(copy.deepcopy(NETNS), ["network w", "stays on one host", "h0, h1"], topo(("a", "b"), dgram=True))
        H.parse({"hosts": [dict(NETNS["hosts"][0], nodes=["a", "c"]), dict(NETNS["hosts"][1], nodes=["b"])]},
                topo(("a", "b", "c"), dgram=True), 1)

    def test_one_host_needs_no_underlay(self):
        hs = H.parse({"hosts": [{"name": "pc", "ssh": "pc.lab"}]}, topo(), 3)
        self.assertEqual(hs["hosts"][0]["nodes"], ["a", "b"])
        self.assertNotIn("vxlan", H.host_script(hs, hs["hosts"][0], topo(), lambda n, c: f"t{n}n{c}"))


class Commands(unittest.TestCase):
    def setUp(self):
        self.t = topo(("a", "b", "c"))
        self.ssh = H.parse(copy.deepcopy(SSH), self.t, 42)
        self.pc1, self.pc2 = (H.Host(h) for h in self.ssh["hosts"])

    def test_transports(self):
        local = H.Host(H.single(self.t, 9)["hosts"][0])
        self.assertEqual(local.host_cmd(["ip", "link"]), ["ip", "link"])
        self.assertEqual(local.ns_cmd(["nft", "-f", "-"]), ["ip", "netns", "exec", "tcl9", "nft", "-f", "-"])
        ns = H.Host(H.parse(copy.deepcopy(NETNS), self.t, 9)["hosts"][1])
        self.assertEqual(ns.host_cmd(["ip", "link"]), ["ip", "netns", "exec", "tcl9h1", "ip", "link"])
        self.assertEqual(ns.ns_cmd(["nft"]), ["ip", "netns", "exec", "tcl9h1", "nft"])
        self.assertEqual(ns.qemu_cmd(["qemu-system-x86_64", "-m", "256M"]),
                         ["ip", "netns", "exec", "tcl9h1", "qemu-system-x86_64", "-m", "256M"])
        # ssh: the same argument list, quoted into one remote command
        self.assertEqual(self.pc2.host_cmd(["ip", "-n", "tcl42h1", "link", "set", "t0n1", "down"]),
                         SSH_PREFIX + ["-p", "2222", "root@192.168.50.12", "ip -n tcl42h1 link set t0n1 down"])
        self.assertEqual(self.pc1.ns_cmd(["nft", "-f", "-"]),
                         SSH_PREFIX + ["root@192.168.50.11", "ip netns exec tcl42h0 nft -f -"])
        self.assertEqual((self.pc1.workdir, self.pc2.workdir), ("/tmp/tcl42h0", "/var/tmp/tcl42h1"))
        odd = ["sh", "-c", "echo 'x y' $HOME; true"]
        self.assertEqual(shlex.split(self.pc1.host_cmd(odd)[-1]), odd)

    def test_ssh_qemu(self):
        argv = ["qemu-system-x86_64", "-append", "run=stream peer=a,b", "-serial", "stdio"]
        cmd = self.pc1.qemu_cmd(argv)
        self.assertEqual(cmd[:-1], SSH_PREFIX + ["root@192.168.50.11"])
        self.assertEqual(shlex.split(cmd[-1]), ["ip", "netns", "exec", "tcl42h0", "sh", "-c", H.WATCH, "qemu", *argv])

    def test_scripts(self):
        tap = lambda n, c: f"t{n}n{c}"  # noqa: E731
        s1 = H.host_script(self.ssh, self.ssh["hosts"][0], self.t, tap).splitlines()
        self.assertEqual(s1[0], "ip netns add tcl42h0")
        self.assertIn("cat /sys/class/net/eth1/mtu", s1[1])
        self.assertIn("-ge 9050", s1[1])
        # pc1 runs b (index 1) and c (index 2), pc2 runs a: both networks span them
        for k in (0, 1):
            self.assertIn(f"ip link add vx{k} netns tcl42h0 type vxlan id {4200 + k} local 192.168.50.11 "
                          f"dstport 4789 dev eth1", s1)
            self.assertIn(f"ip -n tcl42h0 link set vx{k} mtu 9000 master br{k} up", s1)
            self.assertIn(f"bridge -n tcl42h0 fdb append 00:00:00:00:00:00 dev vx{k} dst 192.168.50.12", s1)
            for n in (1, 2):
                self.assertIn(f"ip -n tcl42h0 link set t{n}n{k} mtu 9000 master br{k} up", s1)
        self.assertFalse([x for x in s1 if "t0n" in x])
        ns = H.parse(copy.deepcopy(NETNS), self.t, 42)
        s = H.host_script(ns, ns["hosts"][0], self.t, tap).splitlines()
        self.assertNotIn("ip netns add tcl42h0", s)  # the runner made it: it is the host
        self.assertEqual(H.testbed_commands(ns)[2], [
            "ip", "link", "add", "ul0", "netns", "tcl42h0", "mtu", "9050", "type", "veth",
            "peer", "name", "ul0", "netns", "tcl42h1", "mtu", "9050"])
        self.assertIn(["ip", "-n", "tcl42h1", "addr", "add", "10.213.0.2", "peer", "10.213.0.1", "dev", "ul0"],
                      H.testbed_commands(ns))
        down = H.teardown_script(self.ssh["hosts"][1])
        self.assertIn("ip netns del tcl42h1", down)
        self.assertIn("rm -rf /var/tmp/tcl42h1", down)

    def test_three_hosts_flood_to_the_two_others(self):
        d = copy.deepcopy(SSH)
        d["hosts"].append({"name": "pc3", "ssh": "pc3", "address": "192.168.50.13", "dev": "eth1"})
        hs = H.parse(d, self.t, 1)
        s = H.host_script(hs, hs["hosts"][2], self.t, lambda n, c: f"t{n}n{c}")
        self.assertEqual(s.count("fdb append"), 4)
        self.assertIn("dev vx1 dst 192.168.50.11", s)
        self.assertIn("dev vx1 dst 192.168.50.12", s)


class Watcher(unittest.TestCase):
    """The remote shell around an ssh host's QEMU, run here with sh."""

    def watch(self, *argv):
        return subprocess.Popen(["sh", "-c", H.WATCH, "qemu", *argv], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # sh's "Terminated"

    def test_status_passes_through(self):
        p = self.watch("sh", "-c", "echo serial; exit 5")
        out = p.stdout.read()  # stdin stays open, as ssh's channel does
        self.assertEqual((p.wait(10), out), (5, b"serial\n"))
        p.stdin.close()

    def test_killed_when_ssh_goes(self):
        p = self.watch("sleep", "60")
        time.sleep(0.3)
        t = time.monotonic()
        p.stdin.close()  # what ssh's channel does when the runner is gone
        p.wait(10)
        self.assertNotEqual(p.returncode, 0)
        self.assertLess(time.monotonic() - t, 5)


if __name__ == "__main__":
    unittest.main()
