#!/usr/bin/python3
# Host-side checks of the topology parser and of the QEMU command lines the
# runner derives from it: every bad topology is refused with a message that
# names the faulty field. No VM is booted (selftest.py does that).
import copy
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import topology as T  # noqa: E402
import cluster  # noqa: E402


def base():
    return {
        "name": "t", "timeout": 30,
        "networks": [{"name": "net0"}, {"name": "w1", "wire": "dgram"}],
        "nodes": [
            {"name": "a", "kernel": "k.elf", "append": "peer=@MAC:b:0@ n=@NICS@ r=@MBPS@ i=@NODE@/@NODES@",
             "nics": [{"net": "net0", "mbps": 100}, {"net": "w1"}]},
            {"name": "b", "kernel": "k.elf", "append": "peer=@MAC:0:1@", "model": "virtio",
             "nics": [{"net": "net0"}, {"net": "w1", "mbps": 1000}],
             "start_after": {"node": "a", "line": "READY"}},
        ],
        "events": [{"after": {"node": "a", "line": "GO"}, "delay": 1, "action": "cut-silent",
                    "node": "a", "nic": 1}],
    }


def images(test):
    """A scratch directory for test, removed after it, holding a tiny ELF
    (k.elf), a bzImage with its header magic and an initrd."""
    test.dir = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, test.dir)
    with open(os.path.join(test.dir, "k.elf"), "wb") as f:
        f.write(b"\x7fELF" + bytes(60))
    bz = bytearray(0x300)
    bz[0x202:0x206] = b"HdrS"
    with open(os.path.join(test.dir, "bzImage"), "wb") as f:
        f.write(bz)
    with open(os.path.join(test.dir, "initrd.gz"), "wb") as f:
        f.write(b"x")


class Parse(unittest.TestCase):
    def setUp(self):
        images(self)
        with open(os.path.join(self.dir, "junk"), "wb") as f:
            f.write(b"hello")

    def parse(self, t):
        return T.parse(t, self.dir)

    def bad(self, t, *words):
        with self.assertRaises(T.TopologyError) as cm:
            self.parse(t)
        for w in words:
            self.assertIn(w, str(cm.exception))
        return str(cm.exception)

    def test_good(self):
        t = self.parse(base())
        a, b = t["nodes"]
        self.assertEqual(a["kind"], "tender")
        self.assertEqual(a["kernel"], os.path.join(self.dir, "k.elf"))
        self.assertEqual([c["mac"] for c in a["nics"]], ["52:54:00:00:10:00", "52:54:00:00:10:01"])
        self.assertEqual(b["nics"][1]["mac"], "52:54:00:00:20:01")
        self.assertEqual(T.substitute(t, a), "peer=52:54:00:00:20:00 n=2 r=100,0 i=0/2")
        self.assertEqual(T.substitute(t, b), "peer=52:54:00:00:10:01")
        self.assertEqual(T.far_end(t, a, 1), ("b", 1))
        self.assertEqual(T.far_end(t, b, 1), ("a", 1))
        self.assertEqual(b["start_after"], {"node": "a", "line": "READY", "count": 1})
        self.assertEqual(t["events"][0]["delay"], 1)
        self.assertEqual(t["networks"][0]["wire"], "bridge")
        self.assertEqual(t["networks"][0]["ends"], [("a", 0), ("b", 0)])

    def test_kernel_kinds(self):
        self.assertEqual(T.kernel_kind(os.path.join(self.dir, "k.elf")), "tender")
        self.assertEqual(T.kernel_kind(os.path.join(self.dir, "bzImage")), "linux")
        self.assertIsNone(T.kernel_kind(os.path.join(self.dir, "junk")))
        self.assertIsNone(T.kernel_kind(os.path.join(self.dir, "missing")))
        t = base()
        t["nodes"][1].update(kernel="bzImage", initrd="initrd.gz")
        self.assertEqual(self.parse(t)["nodes"][1]["kind"], "linux")

    def test_top_level(self):
        t = base(); t["colour"] = 1
        self.bad(t, "topology", "unknown key", "colour")
        t = base(); t["name"] = "a b"
        self.bad(t, "topology", "name")
        t = base(); t["timeout"] = 0
        self.bad(t, "topology.timeout")
        t = base(); t["timeout"] = "10"
        self.bad(t, "topology.timeout")
        t = base(); t["nodes"] = []
        self.bad(t, "topology.nodes", "non-empty")
        t = base(); t["networks"] = {}
        self.bad(t, "topology.networks")
        self.bad([], "topology", "object")

    def test_networks(self):
        t = base(); t["networks"][1]["wire"] = "wifi"
        self.bad(t, "networks[1]", "wifi", "bridge, dgram")
        t = base(); t["networks"].append({"name": "net0"})
        self.bad(t, "unique")
        t = base(); t["networks"].append({"name": "spare"})
        self.bad(t, "networks[2] (spare)", "no NIC")
        t = base(); t["nodes"][1]["nics"][1]["net"] = "net0"
        self.bad(t, "networks[1] (w1)", "exactly two", "has 1")
        t = base(); t["nodes"].append({"name": "c", "kernel": "k.elf", "nics": [{"net": "w1"}]})
        self.bad(t, "networks[1] (w1)", "exactly two", "has 3")

    def test_nodes(self):
        t = base(); t["nodes"][1]["name"] = "a"
        self.bad(t, "node names must be unique")
        t = base(); t["nodes"][0]["nics"][0]["net"] = "nowhere"
        self.bad(t, "nodes[0].nics[0]", "nowhere")
        t = base(); t["nodes"][0]["mem"] = "lots"
        self.bad(t, "nodes[0].mem")
        t = base(); t["nodes"][0]["nics"][0]["mbps"] = -1
        self.bad(t, "nodes[0].nics[0].mbps")
        t = base(); t["nodes"][0]["nics"][0]["mbps"] = 1.5
        self.bad(t, "nodes[0].nics[0].mbps", "integer")
        t = base(); t["nodes"][0]["qemu_extra"] = "-icount shift=0"
        self.bad(t, "nodes[0].qemu_extra", "list")
        t = base(); del t["nodes"][0]["kernel"]
        self.bad(t, "nodes[0]", "kernel")
        t = base(); t["nodes"][0]["kernel"] = "nothere.elf"
        self.bad(t, "nodes[0]", "does not exist")
        t = base(); t["nodes"][0]["kernel"] = "junk"
        self.bad(t, "nodes[0]", "neither an ELF")
        t = base(); t["nodes"][0]["initrd"] = "initrd.gz"
        self.bad(t, "nodes[0]", "takes no initrd")
        t = base(); t["nodes"][0]["kind"] = "linux"
        self.bad(t, "nodes[0]", "kind linux", "tender kernel")
        t = base(); t["nodes"][1].update(kernel="bzImage", initrd="gone.gz")
        self.bad(t, "nodes[1]", "initrd", "does not exist")
        t = base(); t["nodes"][0]["nics"][0]["mac"] = "52:54:00:00:20:00"
        self.bad(t, "same MAC")
        t = base(); t["nodes"][0]["nics"][0]["mac"] = "52:54:00:00:20"
        self.bad(t, "nodes[0].nics[0].mac")
        t = base(); t["nodes"][0]["nics"] = [{"net": "net0"}] * (T.MAX_NICS + 1)
        self.bad(t, "nodes[0].nics", "at most")
        t = base()
        t["nodes"] += [{"name": f"n{i}", "kernel": "k.elf"} for i in range(T.MAX_NODES)]
        self.bad(t, "topology.nodes", "at most")
        t = base(); t["nodes"][1]["service"] = "yes"
        self.bad(t, "nodes[1].service", "true or false")
        t = base(); t["nodes"][1]["service"] = True
        self.bad(t, "nodes[1].service", "ok_line")
        t = base(); t["nodes"][0].update(service=True, ok_line="UP"); t["nodes"][1].update(service=True, ok_line="UP")
        self.bad(t, "topology.nodes", "every node is a service")
        t = base(); t["nodes"][1].update(service=True, ok_line="ROUTER ready")
        self.assertEqual([n["service"] for n in self.parse(t)["nodes"]], [False, True])
        t = base(); t["nodes"][0]["nics"] = ["net0", "w1"]  # a bare network name is a NIC too
        self.assertEqual(self.parse(t)["nodes"][0]["nics"][1]["net"], "w1")

    def test_substitutions(self):
        t = base(); t["nodes"][0]["append"] = "x=@IP:b:0@"
        self.bad(t, "nodes[0] (a).append", "unknown substitution @IP:b:0@")
        t = base(); t["nodes"][0]["append"] = "x=@MAC:b:2@"
        self.bad(t, "@MAC:b:2@", "no NIC 2")
        t = base(); t["nodes"][0]["append"] = "x=@MAC:z:0@"
        self.bad(t, "no node 'z'")
        t = base(); t["nodes"][0]["append"] = "x=@MAC:b@"
        self.bad(t, "@MAC:node:nic@")
        t = base(); t["nodes"][0]["append"] = "x=@NICS:1@"
        self.bad(t, "unknown substitution")

    def test_start_after(self):
        t = base(); t["nodes"][1]["start_after"] = {"node": "zz", "line": "READY"}
        self.bad(t, "nodes[1] (b).start_after", "zz")
        t = base(); t["nodes"][1]["start_after"] = {"node": "b", "line": "READY"}
        self.bad(t, "cannot wait for itself")
        t = base(); t["nodes"][1]["start_after"] = {"node": "a", "line": ""}
        self.bad(t, "line must be")
        t = base(); t["nodes"][1]["start_after"] = {"node": "a", "line": "R", "count": 0}
        self.bad(t, "start_after.count")
        t = base(); t["nodes"][0]["start_after"] = {"node": "b", "line": "READY"}
        self.bad(t, "cycle", "a -> b -> a")

    def test_events(self):
        t = base(); t["events"][0]["action"] = "cut"
        self.bad(t, "events[0]", "cut-visible, cut-silent, cut-pair, restore")
        t = base(); t["events"][0]["action"] = "cut-pair"
        self.bad(t, "events[0]", "cut-pair needs peer")
        t = base(); t["events"][0]["action"] = "cut-pair"; t["events"][0]["peer"] = t["events"][0]["node"]
        self.bad(t, "events[0]", "cut-pair needs peer")
        t = base(); t["events"][0]["peer"] = "b"
        self.bad(t, "events[0]", "peer is only for cut-pair")
        t = base(); t["events"][0]["nic"] = 2
        self.bad(t, "events[0]", "no NIC 2")
        t = base(); t["events"][0]["node"] = "q"
        self.bad(t, "events[0]", "'q'")
        t = base(); t["events"][0]["at"] = 3
        self.bad(t, "events[0]", "exactly one trigger")
        t = base(); del t["events"][0]["after"]
        self.bad(t, "events[0]", "exactly one trigger")
        t = base(); t["events"][0]["delay"] = -1
        self.bad(t, "events[0].delay")
        t = base(); del t["events"][0]["after"]; t["events"][0]["at"] = 2.5
        self.assertEqual(self.parse(t)["events"][0]["at"], 2.5)

    def test_load_errors(self):
        p = os.path.join(self.dir, "bad.json")
        with open(p, "w") as f:
            f.write('{"name": "x",}')
        with self.assertRaises(T.TopologyError) as cm:
            T.load(p)
        self.assertIn("not JSON", str(cm.exception))
        with self.assertRaises(T.TopologyError) as cm:
            T.load(os.path.join(self.dir, "none.json"))
        self.assertIn("No such file", str(cm.exception))


class Runner(unittest.TestCase):
    """The QEMU command lines and the CLI's answers to bad input."""

    def setUp(self):
        images(self)
        self.elf = os.path.join(self.dir, "k.elf")

    def test_qemu_args(self):
        t = base()
        t["nodes"][1].update(kernel="bzImage", initrd="initrd.gz", qemu_extra=["-icount", "shift=0"])
        topo = T.parse(t, self.dir)
        r = cluster.Run(topo, os.path.join(self.dir, "run"), 30)
        a = r.qemu_args(r.nodes[0])
        s = " ".join(a)
        self.assertIn("-accel tcg -cpu max", s)
        self.assertIn("isa-debug-exit,iobase=0xf4,iosize=0x04", s)
        self.assertIn("tap,id=net0,ifname=t0n0,script=no,downscript=no", s)
        self.assertIn("e1000,netdev=net0,id=nic0,mac=52:54:00:00:10:00", s)
        self.assertIn(f"dgram,id=net1,local.type=unix,local.path={r.sockdir}/w1.0.sock,"
                      f"remote.type=unix,remote.path={r.sockdir}/w1.1.sock", s)
        self.assertEqual(a[a.index("-append") + 1], "peer=52:54:00:00:20:00 n=2 r=100,0 i=0/2")
        self.assertIn(f"unix:{r.sockdir}/a.qmp,server=on,wait=off", s)
        b = r.qemu_args(r.nodes[1])
        s = " ".join(b)
        self.assertNotIn("isa-debug-exit", s)
        self.assertIn("-initrd " + os.path.join(self.dir, "initrd.gz"), s)
        self.assertIn("virtio-net-pci,disable-legacy=on,netdev=net1,id=nic1,mac=52:54:00:00:20:01,romfile=", s)
        self.assertTrue(b[b.index("-append") + 1].startswith("console=ttyS0 panic=-1 peer=52:54:00:00:10:01"))
        self.assertEqual(b[-2:], ["-icount", "shift=0"])
        self.assertEqual(r.nic_info(r.nodes[1])[1]["far"], ["a", 1])

    def test_service_stopped_when_the_others_end(self):
        # a stand-in process for the service node's QEMU; ok only with its ok_line
        for line, want in (("ROUTER ready bridges=1\n", 0), ("booting\n", 1)):
            t = base()
            t["nodes"][1].update(service=True, ok_line="ROUTER ready")
            run_dir = os.path.join(self.dir, "svc")
            os.makedirs(run_dir, exist_ok=True)
            r = cluster.Run(T.parse(t, self.dir), run_dir, 30)
            a, b = r.nodes
            with open(b.log, "w") as f:
                f.write(line)
            b.proc, b.start = subprocess.Popen(["sleep", "60"]), 0.0
            a.end = 1.0  # the only other node has ended: the loop ends at once
            with redirect_stdout(io.StringIO()):
                r.loop()
            self.assertIsNotNone(b.proc.poll())
            self.assertEqual((b.status, b.stopped), (want, True))

    def test_long_run_dir_puts_sockets_in_tmp(self):
        topo = T.parse(base(), self.dir)
        r = cluster.Run(topo, "/" + "d" * 100, 30)
        self.assertTrue(r.sockdir.startswith(tempfile.gettempdir()))

    def cli(self, t):
        p = os.path.join(self.dir, "t.json")
        with open(p, "w") as f:
            f.write(t if isinstance(t, str) else json.dumps(t))
        err = io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            rc = cluster.main(["--check", "--kernel", self.elf, p])
        return rc, err.getvalue()

    def test_cli_errors(self):
        t = base()
        t["nodes"][1]["model"] = 5
        rc, err = self.cli(t)
        self.assertEqual(rc, 2)
        self.assertIn("nodes[1].model", err)
        rc, err = self.cli("{")
        self.assertEqual((rc, "not JSON" in err), (2, True))
        with redirect_stderr(io.StringIO()):
            self.assertEqual(cluster.main(["--check", os.path.join(self.dir, "none.json")]), 2)

    def test_cli_kernel_override(self):
        t = copy.deepcopy(base())
        for n in t["nodes"]:
            n["kernel"] = "not/built/yet.elf"
        rc, err = self.cli(t)
        self.assertEqual((rc, err), (0, ""))


if __name__ == "__main__":
    unittest.main(verbosity=1)
