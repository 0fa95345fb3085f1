#!/usr/bin/env python3
"""Host-side tests of the benchmark harness (no VM is booted).

A host CPU window that catches nothing (the client VM exited before the
watcher read its last MARK line) must be measured again, and a size still
without a window must give a null figure with its reason that check_schema
accepts, never a failed run. The interleaved pairs (abab.py) drop a
disturbed round for every system and bootstrap their ratios deterministically. The boot pairs are replaced by recorded results.
Usage: selftest.py   (unittest; exit 0 when every test passes)
"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "linux-baseline"))
import check_schema  # noqa: E402
import collect  # noqa: E402
import hostcpu  # noqa: E402
import kernelnet  # noqa: E402
import stats  # noqa: E402

HZ = 1000000000


def fake_pair(sizes, windows_for):
    """burst_pair's result for one boot: 3 timed bursts per size, and host CPU
    windows for the sizes in windows_for only."""
    res, srv, cli, r1 = [], {}, {}, []
    for s in sizes:
        for rep in range(3):
            res.append({"bytes": str(s), "rep": str(rep), "t0_tsc": str(1000000 + rep),
                        "t1_tsc": "400000", "t2_tsc": "600000", "tsc_hz": str(HZ), "doorbells": "1"})
            r1.append({"bytes": str(s), "i": str(rep + 1), "r1_tsc": "5000", "check_tsc": "900"})
        srv[s] = {"packets": "384", "batches": "3", "bytes_copied": "0", "irqs": "3"}
        cli[s] = {"rx_bytes_copied": "0"}
    windows = [(s, 10, 0.25, 0.2) for s in sizes if s in windows_for]
    return res, srv, cli, windows, [256], r1, []


class Harness:
    """Stands in for kernelnet.burst_pair; each call takes the next entry of
    plan (the sizes that get a window in that pair) and records the sizes asked."""

    def __init__(self, plan):
        self.plan, self.calls = list(plan), []

    def __call__(self, name, kernel, sizes, quick, kargs, icount):
        self.calls.append((list(sizes), icount))
        caught = sizes if icount else self.plan.pop(0)
        return fake_pair(sizes, caught)


def rows_faults(rows):
    faults = []
    for i, row in enumerate(rows):
        check_schema.check_row("burst", i, dict(row, ceiling_mbps=1000.0,
                                                ceiling_frac=row["mbps"] / 1000.0), faults)
    return faults


class HostCpuWindows(unittest.TestCase):
    def run_burst(self, plan):
        saved = kernelnet.burst_pair
        kernelnet.burst_pair = h = Harness(plan)
        try:
            rows = kernelnet.burst("kernel.elf", 1, [64, 8192], True, {"kernel": ""})["kernel"]
        finally:
            kernelnet.burst_pair = saved
        return rows, h.calls

    def test_lost_window_is_measured_again(self):
        rows, calls = self.run_burst([[64], [8192]])
        self.assertEqual(calls[1], ([8192], False), "the uncaught size alone is measured again")
        by = {r["bytes"]: r for r in rows}
        self.assertIsNotNone(by[8192]["host_cpu_s_per_gb"])
        self.assertIsNone(by[8192]["host_cpu_s_per_gb_null"])
        # The other figures keep the planned pair only.
        self.assertEqual(by[8192]["n"], 3)
        self.assertEqual(rows_faults(rows), [])

    def test_window_never_caught_is_null_with_reason(self):
        rows, calls = self.run_burst([[64], [], []])
        self.assertEqual(len([c for c in calls if not c[1]]), 1 + hostcpu.RETRIES)
        by = {r["bytes"]: r for r in rows}
        self.assertIsNone(by[8192]["host_cpu_s_per_gb"])
        self.assertIn("no host CPU window", by[8192]["host_cpu_s_per_gb_null"])
        self.assertIsNotNone(by[64]["host_cpu_s_per_gb"])
        self.assertEqual(rows_faults(rows), [], "check_schema accepts a null with its reason")

    def test_schema_rejects_a_silent_null(self):
        rows, _ = self.run_burst([[64, 8192]])
        row = dict(rows[1], host_cpu_s_per_gb=None)
        row.pop("host_cpu_s_per_gb_null")
        self.assertEqual(len(rows_faults([row])), 1)
        row["host_cpu_s_per_gb"] = "fast"
        self.assertEqual(len(rows_faults([row])), 1)

    def test_uncaught_command(self):
        with tempfile.NamedTemporaryFile("w", suffix=".cpu", delete=False) as f:
            f.write("HOSTCPU bytes=64 bursts=7 cpu_s=0.210 wall_s=0.200\n"
                    "HOSTCPU bytes=1500 bursts=0 cpu_s=0.010 wall_s=0.200\n")
        try:
            out = subprocess.run([sys.executable, os.path.join(HERE, "hostcpu.py"), "uncaught",
                                  f.name, "64,1500,8192"], capture_output=True, text=True, check=True)
        finally:
            os.unlink(f.name)
        self.assertEqual(out.stdout.strip(), "1500,8192")

    def test_linux_rows_null_with_reason(self):
        lines = []
        for s in (64, 8192):
            for rep in range(2):
                lines.append(f"RESULT burst variant=packet bytes={s} rep={rep} t0_us=100 t1_us=40 "
                             f"t2_us=60 mbps=50 irqs=2")
            lines.append(f"SRVSTAT burst variant=packet bytes={s} irqs=3 good=2 bad=0 missing=0 ooo=0")
        lines.append("HOSTCPU bytes=64 bursts=9 cpu_s=0.300 wall_s=0.200")
        boots = [[collect.parse_line(x) for x in lines]]
        rows = collect.burst_rows(boots, [])
        by = {r["bytes"]: r for r in rows}
        self.assertIsNotNone(by[64]["host_cpu_s_per_gb"])
        self.assertIsNone(by[8192]["host_cpu_s_per_gb"])
        self.assertIn("no host CPU window", by[8192]["host_cpu_s_per_gb_null"])

    def test_linux_peers_labelled(self):
        """The AF_XDP and tuned rows name their mode and settings, a skipped
        size has no row, and the best Linux row per size is marked."""
        lines = ["PORT variant=xdp xdp_mode=generic need_wakeup=1 busy_poll=1 max_frame=3840",
                 "PORT variant=tuned qdisc_bypass=1 busy_poll_us=50",
                 "SKIP burst variant=xdp bytes=8192 max_frame=3840"]
        for v, mbps in (("packet", 50), ("xdp", 70), ("tuned", 60)):
            for s in (64, 8192):
                if v == "xdp" and s == 8192:
                    continue
                lines.append(f"RESULT burst variant={v} bytes={s} rep=0 t0_us=100 t1_us=40 "
                             f"t2_us=60 mbps={mbps + s // 100} irqs=2")
                lines.append(f"SRVSTAT burst variant={v} bytes={s} irqs=3 good=1 bad=0 missing=0 ooo=0 r1_tsc=9")
        boots = [[p for p in map(collect.parse_line, lines) if p]]
        rows = collect.burst_rows(boots, boots)
        env = {"guest_kernel": "6.1.0-56-amd64"}
        collect.label(rows, boots, env, "mbps", max)
        by = {(r["system"], r["bytes"]): r for r in rows}
        self.assertNotIn(("linux-afxdp", 8192), by)
        self.assertEqual(collect.skipped(boots), ["linux-afxdp 8192 (max_frame=3840)"])
        self.assertEqual(by[("linux-afxdp", 64)]["xdp_mode"], "generic")
        self.assertTrue(by[("linux-afxdp", 64)]["best_linux"])
        self.assertTrue(by[("linux-packet-tuned", 8192)]["best_linux"])
        self.assertFalse(by[("linux-packet", 8192)]["best_linux"])
        self.assertIn("qdisc_bypass=1", by[("linux-packet-tuned", 64)]["config"])
        faults = []
        row = dict(by[("linux-afxdp", 64)], ceiling_mbps=1000.0, ceiling_frac=0.07)
        check_schema.consistent("burst", "x", row, faults)
        self.assertEqual(faults, [])
        check_schema.consistent("burst", "x", dict(row, xdp_mode="turbo"), faults)
        self.assertEqual(len(faults), 1, "an AF_XDP row must name a known mode")


class CpuWorkRows(unittest.TestCase):
    """The many-link CPU-work rows: Linux's busy_ns windows less the mark cost,
    per write-size piece; the kernel's per-run samples; the report's ratios."""

    def linux_rows(self):
        sys.path.insert(0, os.path.join(HERE, "..", "linux-baseline"))
        import importlib
        cm = importlib.import_module("collect-multilink")
        raw = ["PAIR kind=cpu-rr links=4 boot=1 warmup=1 mbps=25",
               # the warm-up connection (server only) then two measured ones
               "SRVSTAT stream proto=tcp bytes=8192 total=819200 received=819200 verified=819200 status=0 "
               "us=1 mbps=99 ofo=0 mptcp_ofo=0 busy_ns=9999999 win_ns=20000000 mark_ns=1000 nic_rx=1,1,1,1",
               "SRVSTAT stream proto=tcp bytes=8192 total=819200 received=819200 verified=819200 status=0 "
               "us=1 mbps=98 ofo=3 mptcp_ofo=0 busy_ns=2001000 win_ns=20000000 mark_ns=1000 nic_rx=1,1,1,1",
               "SRVSTAT stream proto=tcp bytes=8192 total=819200 received=819200 verified=819200 status=0 "
               "us=1 mbps=96 ofo=5 mptcp_ofo=0 busy_ns=4001000 win_ns=20000000 mark_ns=1000 nic_rx=1,1,1,1",
               "RESULT stream proto=tcp bytes=8192 rep=0 total=819200 verified=819200 us=1 mbps=98 "
               "busy_ns=1001000 win_ns=20000000 mark_ns=1000",
               "RESULT stream proto=tcp bytes=8192 rep=1 total=819200 verified=819200 us=1 mbps=96 "
               "busy_ns=1001000 win_ns=20000000 mark_ns=1000"]
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(raw) + "\n")
        try:
            return cm.cpu_rows([cm.parse(f.name)])
        finally:
            os.unlink(f.name)

    def test_linux_busy_per_piece(self):
        rows = self.linux_rows()
        r = rows[("rr", "cpu", 4, 8192)]
        # 100 pieces of 8192 bytes; the warm-up's 9999999 left out; medians 30000 rx, 10000 tx
        self.assertEqual((r["busy_insns_per_pkt_rx"], r["busy_insns_per_pkt_tx"]), (30000, 10000))
        self.assertEqual(r["busy_insns_per_pkt"], 40000)
        self.assertEqual(r["offered_mbps"], 100)
        self.assertEqual(r["system"], "linux-bond-rr-tcp")
        self.assertAlmostEqual(r["cpu_bound_mbps"], 8192 * 8 * 1000 / 30000, places=0)
        faults = []
        check_schema.check_row("multilink", 0, r, faults)
        self.assertEqual(faults, [])
        faults = []
        check_schema.check_row("multilink", 0, dict(r, busy_insns_per_pkt=None), faults)
        self.assertTrue(faults)

    def test_report_ratio_and_targets(self):
        import multilink
        import multilink_report
        k = [{"mode": m, "links": 4, "bytes": 8192, "offered_mbps": 100 if m == "cpu" else 0, "packets": 64,
              "stream_bytes": 524288, "mbps": 90.0, "rx_per_pkt": 6000, "tx_per_pkt": 2000, "rx_frac": 0.01,
              "tx_frac": 0.005, "reordered": 1, "shares": {"0": 250, "1": 250, "2": 250, "3": 250}}
             for m in ("cpu", "unpaced")]
        rows = multilink.cpu_rows(k) + list(self.linux_rows().values())
        lu = dict(rows[-1], mode="unpaced")
        rows.append(lu)
        text = "\n".join(multilink_report.cpu_section({"cpu_mbps_per_link": 25}, rows))
        self.assertIn("| 4 | 8192 | 100 | 6000 | 2000 | 8000 |", text)
        self.assertIn("0.20x (linux-bond-rr-tcp)", text)  # 8000 / 40000
        self.assertIn("Worst: 0.20x at 8192 bytes (against linux-bond-rr-tcp): met", text)
        self.assertIn("Worst: 5.00x at 8192 bytes (against linux-bond-rr-tcp): met", text)  # 30000 / 6000


class Interleaved(unittest.TestCase):
    """tools/bench/abab.py without a VM: the seeded bootstrap, the round
    dropped for every system when one pair was disturbed, the ratios of
    adjacent pairs, and Linux's window lines into stream rows."""

    def test_bootstrap_seeded(self):
        xs = [1.0, 1.1, 0.9, 1.2, 1.05, 0.95, 1.3, 1.0, 1.1, 1.02]
        ci = stats.bootstrap_ci(xs)
        self.assertEqual(ci, stats.bootstrap_ci(list(xs)), "the same values give the same interval")
        self.assertTrue(ci[0] <= stats.median(xs) <= ci[1])
        self.assertTrue(min(xs) <= ci[0] and ci[1] <= max(xs))
        self.assertEqual(stats.bootstrap_ci([2.0, 2.0, 2.0]), [2.0, 2.0])
        self.assertEqual(stats.bootstrap_ci([3.0]), [3.0, 3.0])
        self.assertIsNone(stats.bootstrap_ci([]))
        wide = stats.bootstrap_ci([0.5, 2.0, 0.6, 1.9, 1.0])
        self.assertTrue(wide[0] < 1 < wide[1], "scattered ratios cannot separate the systems")

    def pairs(self):
        import abab
        quiet = {"load1": 2.0, "steal_frac": 0.0, "other_cores": 0.05, "wall_s": 20.0}
        out = []
        for rnd, (k, p, busy) in enumerate([(200, 100, False), (210, 100, True), (190, 95, False)], 1):
            got = [dict(quiet, kind="pair", test="burst", round=rnd, system="kernel", peer="linux-packet",
                        bytes=64, mbps=float(k)),
                   dict(quiet, kind="pair", test="burst", round=rnd, system="linux-packet", peer="linux-packet",
                        bytes=64, mbps=float(p), other_cores=0.9 if busy else 0.05)]
            self.assertEqual(abab.judge(got), busy)
            out += got
        return abab, out

    def test_disturbed_round_dropped_for_both(self):
        abab, pairs = self.pairs()
        r2 = [g for g in pairs if g["round"] == 2]
        self.assertTrue(all(g["dropped"] for g in r2), "the kernel's pair goes with the peer's")
        self.assertEqual([g["disturbed"] for g in r2], [False, True])
        faults = []
        for i, g in enumerate(pairs):
            check_schema.check_row("abab", i, g, faults)
        self.assertEqual(faults, [])
        check_schema.check_row("abab", 0, dict(pairs[3], dropped=False), faults)
        self.assertEqual(len(faults), 1, "a disturbed pair in a kept round is a fault")

    def test_ratios_of_kept_rounds(self):
        abab, pairs = self.pairs()
        (r,) = abab.ratio_rows(pairs, ["packet"], [64], ["burst"])
        self.assertEqual((r["pairs"], r["rounds"], r["ratios"]), (2, [1, 3], [2.0, 2.0]))
        self.assertEqual((r["ratio"], r["ratio_ci95"]), (2.0, [2.0, 2.0]))
        faults = []
        check_schema.check_row("abab", 0, r, faults)
        self.assertEqual(faults, [])

    def test_ceiling_every_round(self):
        """The ceiling's pairs of a round: a disturbed one drops the round's
        tests for every system; the kept rounds give per-round fractions."""
        import abab
        quiet = {"load1": 1.0, "steal_frac": 0.0, "other_cores": 0.0, "wall_s": 10.0}
        pairs = []
        # round: (kernel loop, DPDK, kernel's two stream pairs, linux-dpdk's, ceiling disturbed)
        for rnd, (loop, dpdk, ks, p, busy) in enumerate([(1000, 800, (500, 700), 400, False),
                                                          (1000, 800, (900, 900), 900, True),
                                                          (500, 400, (100, 300), 100, False)], 1):
            cg = [dict(quiet, kind="pair", test="ceiling", round=rnd, system=abab.CEILINGS["loop"], bytes=1500,
                       mbps=float(loop)),
                  dict(quiet, kind="pair", test="ceiling", round=rnd, system=abab.CEILINGS["dpdk"], bytes=1500,
                       mbps=float(dpdk), other_cores=0.9 if busy else 0.0)]
            self.assertEqual(abab.judge(cg), busy)
            got = [dict(quiet, kind="pair", test="stream", round=rnd, system=sysname, peer=peer, bytes=1500,
                        mbps=float(m))
                   for sysname, peer, m in [("kernel", "linux-packet", ks[0]), ("linux-packet", "linux-packet", p),
                                            ("kernel", "linux-dpdk", ks[1]), ("linux-dpdk", "linux-dpdk", p)]]
            self.assertEqual(abab.judge(got, busy), busy, "a dropped ceiling drops the round's tests")
            pairs += cg + got
        fr = {r["system"]: r for r in abab.frac_rows(pairs, ["packet", "dpdk"], [1500], ["stream"])}
        k = fr["kernel"]
        self.assertEqual((k["rounds"], k["ceiling_fracs"]), ([1, 3], [0.6, 0.4]))  # 600/1000, 200/500
        self.assertEqual((k["ceiling_frac"], k["ceiling_mbps"], k["ceiling_dpdk_mbps"]), (0.5, 750.0, 600.0))
        self.assertEqual(fr["linux-dpdk"]["ceiling_fracs"], [0.4, 0.2])
        rows = abab.stream_rows(pairs, ["packet", "dpdk"], [1500], {}, [], list(fr.values()))
        faults = []
        for i, r in enumerate(list(fr.values()) + pairs):
            check_schema.check_row("abab", i, r, faults)
        for i, r in enumerate(rows):
            check_schema.check_row("stream", i, r, faults)
        self.assertEqual(faults, [])
        check_schema.check_row("stream", 0, dict(rows[0], ceiling_frac=0.9), faults)
        self.assertEqual(len(faults), 1, "a fraction that is not the median of the rounds' is a fault")
        again = [dict(g, dropped=False, disturbed=False) for g in pairs]
        abab.judge_all(again)
        self.assertEqual([g["dropped"] for g in again], [g["dropped"] for g in pairs], "--reanalyse judges alike")

    def test_skipped_size_keeps_its_round(self):
        """A size a peer cannot run (AF_XDP's 8192 B) gives a pair row with no
        figure and its reason; the round stands and the format accepts it."""
        import abab
        saved = abab.linux
        abab.linux = lambda *a: {"env": {"skipped": ["linux-afxdp 8192 (max_frame=3840)"]},
                                 "rows": [{"system": "linux-afxdp", "bytes": 1500, "mbps": 80.0}]}
        try:
            fig, h, failed = abab.run_pair("burst", "xdp", "kernel.elf", [1500, 8192], False)
        finally:
            abab.linux = saved
        self.assertEqual((fig, failed), ({1500: 80.0, 8192: "skipped (max_frame=3840)"}, None))
        got = abab.pair_rows("burst", 1, "linux-afxdp", "linux-afxdp", [1500, 8192], fig,
                             dict(h, other_cores=0.0, steal_frac=0.0), None)
        self.assertFalse(abab.judge(got))
        self.assertEqual((got[1]["mbps"], got[1]["skipped"]), (None, "skipped (max_frame=3840)"))
        faults = []
        for i, g in enumerate(got):
            check_schema.check_row("abab", i, g, faults)
        self.assertEqual(faults, [])

    def test_failed_pair_drops_its_round(self):
        import abab
        saved = abab.linux_pair
        abab.linux_pair = lambda *a: sys.exit("bench.sh window packet failed: no acknowledgement")
        try:
            fig, h, failed = abab.run_pair("stream", "packet", "kernel.elf", [64], False)
        finally:
            abab.linux_pair = saved
        self.assertEqual(fig, {})
        self.assertIn("no acknowledgement", failed)
        got = [dict(h, kind="pair", test="stream", round=1, system="linux-packet", peer="linux-packet",
                    bytes=64, mbps=None, failed=failed, other_cores=0.0, steal_frac=0.0),
               dict(h, kind="pair", test="stream", round=1, system="kernel", peer="linux-packet",
                    bytes=64, mbps=100.0, other_cores=0.0, steal_frac=0.0)]
        self.assertTrue(abab.judge(got), "a failed pair drops its round, the run goes on")
        faults = []
        for i, g in enumerate(got):
            check_schema.check_row("abab", i, g, faults)
        self.assertEqual(faults, [])

    def test_window_lines_to_stream_rows(self):
        lines = [f"SRVSTAT window variant=dpdk bytes=1500 packets=4096 timed=4032 us=1 mbps={m}"
                 for m in (100.0, 300.0, 320.0, 310.0)]
        lines += [f"RESULT window variant=dpdk bytes=1500 rep={i} packets=4096 batch=64 window=2 us=1 "
                  f"mbps={m} acks=64" for i, m in enumerate((290.0, 300.0, 310.0))]
        lines.append("SRVSTAT window total streams=4 packets=16384 bad=0")
        rows = collect.window_rows([[collect.parse_line(x) for x in lines]], warmup=1)
        self.assertEqual(rows, [{"system": "linux-dpdk", "bytes": 1500, "mode": "window", "mbps": 310.0, "n": 3,
                                 "boot_median_mbps": [310.0], "client_mbps": 300.0}],
                         "the receiver's figure, its warm-up stream left out")
        faults = []
        check_schema.check_row("stream", 0, dict(rows[0], ceiling_mbps=1000.0, ceiling_frac=0.5), faults)
        self.assertEqual(len(faults), 1, "ceiling_frac must be mbps / ceiling_mbps")



class FsPaper(unittest.TestCase):
    """tools/bench/fs_paper.py without a VM: the phases of a write through
    a cut from its progress marks, the rows and their check."""

    def args(self):
        import argparse
        return argparse.Namespace(what="wcut", links=2, mbps=100, icount=False, secs=24, delay=0.0, sockbuf=131072)

    def test_cut_phases(self):
        import fs_paper
        prog = [[1.0, 10_000_000], [2.0, 20_000_000], [5.0, 25_000_000], [6.0, 35_000_000]]
        x = {"progress": prog, "cut_s": 2.0, "restore_s": 5.0}
        p = fs_paper.phases(x, 24)
        self.assertAlmostEqual(p["before_mb_s"], 10.0)
        self.assertAlmostEqual(p["during_mb_s"], 5 / 3)
        self.assertAlmostEqual(p["after_mb_s"], 10.0)
        self.assertAlmostEqual(p["longest_stall_s"], 3.0)
        self.assertEqual(fs_paper.at(prog, 0.5), 5_000_000, "linear from (0, 0)")
        self.assertEqual(fs_paper.phases({"progress": prog, "cut_s": None, "restore_s": 5.0}, 24), {})

    def test_rows_checked(self):
        import fs_paper
        a = self.args()
        lines = [{"op": "write_through_cut", "system": "kernel", "io_bytes": "32768", "bytes": "35000000",
                  "us": "6000000", "mbps": "46.7", "lost": "0", "corrupt": "0", "verified": "1",
                  "link_deaths": "1", "link_recoveries": "1", "retransmits": "9"}]
        prog = [{"t_us": "2000000", "bytes": "20000000"}, {"t_us": "5000000", "bytes": "25000000"},
                {"t_us": "6000000", "bytes": "35000000"}]
        samples = fs_paper.samples_of(a, lines, prog, {"cut_s": 2.0, "restore_s": 5.0}, 0)
        a.what = "seq"
        samples += fs_paper.samples_of(a, [{"op": "seq_write", "system": "kernel", "io_bytes": "8192",
                                            "bytes": "1048576", "us": "1000000", "mbps": "8.4", "busy_c": "300",
                                            "elapsed": "1000", "busy_s": "500", "run": "1", "verified": "1"}],
                                       [], {}, 0)
        rows = fs_paper.rows_of(samples, a)
        cut = next(r for r in rows if r["op"] == "write_through_cut")
        self.assertTrue(cut["cut_inside"])
        self.assertEqual((cut["lost"], cut["corrupt"], cut["before_mb_s"]), (0, 0, 10.0))
        seq = next(r for r in rows if r["op"] == "seq_write")
        self.assertEqual(seq["cpu_pct_client"], 30.0)
        for i, r in enumerate(rows):
            faults = []
            check_schema.check_row("fspaper", i, r, faults)
            self.assertEqual(faults, [])
        faults = []
        check_schema.check_row("fspaper", 0, dict(seq, cpu_pct_client=None), faults)
        self.assertTrue(faults, "a seq_write row needs its CPU %")


class FailoverCpu(unittest.TestCase):
    """failover_report.cpu_windows(): each end's busy instructions between
    its samples inside a window (less the samples' own cost) over its bytes
    between them, each end on its own clock; check_schema's failover rules."""

    def row(self):
        # Receiver: 10 M instructions and 1 MB a second; sender: 4 M and
        # 1 MB a second, its clock 0.5 s ahead; a sample costs 1000.
        t = [i * 0.5 for i in range(21)]
        srv = {"every_ms": 500, "t_s": t, "busy": [int(x * 10e6) + 1000 * i for i, x in enumerate(t)],
               "bytes": [int(x * 1e6) for x in t], "mark": 1000}
        cli = {"every_ms": 500, "t_s": t, "busy": [int(x * 4e6) for x in t], "bytes": [int(x * 1e6) for x in t],
               "mark": 0}
        return {"system": "kernel", "links": 2, "cut": "silent", "run": 1, "nic": "virtio", "backend": "dgram",
                "icount": True, "series": [[round(i * 0.1, 1), 8.0] for i in range(100)], "cut_s": 4.0,
                "restore_s": 7.0, "cut_client_s": 4.5, "restore_client_s": 7.5, "end_client_s": 10.0,
                "cpu_samples": {"server": srv, "client": cli}}

    def test_windows(self):
        import failover_report
        c = failover_report.cpu_windows(self.row())
        b = c["before"]
        self.assertAlmostEqual(b["server_insns_per_byte"], 10.0, places=3)
        self.assertAlmostEqual(b["client_insns_per_byte"], 4.0, places=3)
        self.assertEqual(b["insns_per_pkt"], b["server_insns_per_pkt"] + b["client_insns_per_pkt"])
        self.assertEqual(b["server_insns_per_pkt"], 81920)
        self.assertEqual((b["server_span_s"], b["client_span_s"]), (2.0, 2.0))
        self.assertEqual(c["during"]["server_span_s"], 2.0)  # 5.0 .. 7.0 on the receiver's clock
        self.assertAlmostEqual(c["during"]["server_busy_frac"], 0.01, places=4)

    def test_schema(self):
        import failover_report
        r = self.row()
        r["cpu"] = failover_report.cpu_windows(r)
        faults = []
        check_schema.check_row("failover", 0, dict(r, detect_ms=1.0, recover_ms=1.0, mbps_before=8.0,
                                                  mbps_during=8.0, mbps_after=8.0, max_gap_ms=1.0, lost=0,
                                                  corrupt=0), faults)
        self.assertEqual(faults, [])
        bad = dict(r, cpu=dict(r["cpu"], before=dict(r["cpu"]["before"], insns_per_pkt=1)))
        faults = []
        check_schema.failover_consistent("x", bad, faults)
        self.assertEqual(faults, ["x: cpu.before.insns_per_pkt is not the two ends' sum"])
        faults = []
        check_schema.failover_consistent("x", dict(r, cpu_samples=None, cpu=None), faults)
        self.assertEqual(faults, ["x: an -icount run with a series but no cpu_samples"])

    def test_limit(self):
        """The unpaced rows' limit: the busier end at 0.9 of its window or
        more, else the emulator; check_schema takes only those words."""
        import failover_report
        r = self.row()
        r["cpu"] = failover_report.cpu_windows(r)  # busy 0.01 at both ends
        self.assertEqual(failover_report.limit(r), "emulator")
        r["cpu"]["before"].update(server_busy_frac=0.95, client_busy_frac=0.2)
        self.assertEqual(failover_report.limit(r), "receiver CPU")
        r["cpu"]["before"].update(server_busy_frac=0.95, client_busy_frac=0.97)
        self.assertEqual(failover_report.limit(r), "sender CPU")
        self.assertIsNone(failover_report.limit({"system": "linux-mptcp"}))
        faults = []
        check_schema.check_row("failover", 0, dict(r, limit="the moon", detect_ms=1.0, mbps_before=8.0,
                                                  mbps_during=8.0, mbps_after=8.0, max_gap_ms=1.0, lost=0,
                                                  corrupt=0), faults)
        self.assertEqual(faults, ["rows[0]: limit='the moon' is not one of receiver CPU, sender CPU, emulator"])

class SmpReport(unittest.TestCase):
    def test_stripe_systems_in_one_order(self):
        """The striped stream's sub-section is the same text whatever Python's
        string hashing: it listed the Linux systems in a set's order, so each
        run of make bench-smp-inject rewrote REPORT.md with the bond's and
        DPDK's tables swapped."""
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import smp_report; "
                "print(smp_report.stripe_text(json.load(open(sys.argv[2]))))")
        doc = os.path.join(HERE, "..", "..", "bench", "results", "smpstripe.json")
        outs = {subprocess.run([sys.executable, "-c", code, HERE, doc], env=dict(os.environ, PYTHONHASHSEED=str(seed)),
                               capture_output=True, text=True, check=True).stdout for seed in range(8)}
        self.assertEqual(len(outs), 1)
        self.assertIn("linux-dpdk", outs.pop())


if __name__ == "__main__":
    unittest.main(verbosity=2)
