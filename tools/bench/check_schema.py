#!/usr/bin/env python3
"""Checks a results directory against the benchmark format (docs/benchmarks.md).

Every JSON file must be one object {bench, env, rows} whose env carries the
common keys and whose rows carry the fields of their bench; the files that
make bench writes must all be there, the plots non-empty PNG images and
REPORT.md non-empty. This file is the format's one machine-readable
statement: docs/benchmarks.md describes the same fields.
Usage: check_schema.py RESULTS_DIR | check_schema.py --files FILE...   (those files alone)
Exit status 0 when everything conforms, 1 otherwise (each fault printed).
"""
import json
import math
import os
import re
import statistics
import sys

# env: every file's environment block.
ENV = {"accel": "str", "clock": "str", "qemu": "str", "nic": "str", "backend": "str",
       "cpu": "str", "runs": "int"}

# env.nic: the NIC model of every VM of the file (none: no NIC, the exchange).
NICS = ("e1000", "virtio", "e1000e", "none")

# Row fields per bench: name -> (type, rule). Rules:
#   all       every row carries it, not null
#   kernel    rows of this kernel (system "kernel" or "kernel-VARIANT") carry it,
#             not null; the other systems leave it out or null (they cannot count it)
#   counted   as kernel, and no other system may give a number: they have no counter
#             for it, and a modelled figure is not a measurement
#   pending   in the format but produced only by later work: may be absent; checked
#             when present
#   optional  measured for some rows only (say which in docs/benchmarks.md): may be
#             absent or null; checked when present
#   measured  every row carries it; null only beside a non-empty string NAME_null
#             saying why the measurement caught nothing (host CPU windows a guest's
#             exit outran, for example), never a silent gap
# The Linux guest's rows of rtt and burst (tools/linux-baseline/collect.py):
# the guest's kernel, the variant's settings, AF_XDP's mode, and the best
# Linux configuration at each size (see consistent: linux-afxdp rows must
# name their mode and kernel).
LINUX_PEER = {"guest_kernel": ("str", "optional"), "config": ("str", "optional"),
              "xdp_mode": ("str", "optional"), "best_linux": ("bool", "optional")}
XDP_MODES = ("generic", "native", "zerocopy")
# R1 as receive work (rxwork.py): on burst rows when the -icount pair loaded
# insnplugin.so, on every row of bench r1.
R1_RX = {"r1_rx_insns_per_pkt": "num", "r1_rx_check_insns_per_pkt": "num", "r1_rx_p99_insns_per_pkt": "num",
         "r1_rx_left_out_insns_per_pkt": "num", "r1_rx_empty_polls_per_pkt": "num", "n_r1_rx": "int",
         "r1_rx_per_pair": "list", "r1_rx_idle_window_insns": "num", "r1_rx_idle_window_ms": "int",
         "r1_rx_background_insns_per_pkt": "num"}

ROWS = {
    "exchange": {
        "bytes": ("int", "all"), "copy_cycles": ("num", "all"), "exchange_cycles": ("num", "all"),
        "copy_hot_cycles": ("num", "all"), "copy_insns": ("num", "all"),
        "exchange_insns": ("num", "all"), "speedup_cycles": ("num", "all"),
        "speedup_insns": ("num", "all"),
    },
    "rtt": {
        "system": ("str", "all"), "bytes": ("int", "all"), "median_us": ("num", "all"),
        "p99_us": ("num", "all"), "min_us": ("num", "all"), "n": ("int", "all"),
        "boot_median_us": ("list", "all"),
        **LINUX_PEER,
    },
    "burst": {
        "system": ("str", "all"), "bytes": ("int", "all"), "mbps": ("num", "all"),
        "t0_us": ("num", "all"), "t1_us": ("num", "all"), "t2_us": ("num", "all"),
        "t1_insns": ("int", "all"), "host_cpu_s_per_gb": ("num", "measured"),
        "irqs_per_batch": ("num", "all"), "n": ("int", "all"),
        "boot_median_mbps": ("list", "all"),
        "cpu_copy_bytes_per_pkt": ("num", "counted"), "doorbells_per_batch": ("num", "kernel"),
        "r1_insns_per_pkt": ("num", "all"), "ceiling_mbps": ("num", "all"),
        "ceiling_frac": ("num", "all"),
        **LINUX_PEER,
        **{k: (t, "optional") for k, t in R1_RX.items()},
    },
    # R1 as receive work, every system (make bench-r1, tools/bench/r1.py).
    "r1": {
        "system": ("str", "all"), "bytes": ("int", "all"),
        **{k: (t, "all") for k, t in R1_RX.items()},
        "r1_insns_per_pkt": ("num", "optional"),
        **LINUX_PEER,
    },
    # The emulated link's ceiling: one row per way of waiting (mode) and size.
    "ceiling": {
        "system": ("str", "all"), "mode": ("str", "all"), "bytes": ("int", "all"),
        "mbps": ("num", "all"), "n": ("int", "all"), "boot_median_mbps": ("list", "all"),
        "frames": ("int", "all"), "frames_lost": ("int", "all"),
        "ceiling_mbps": ("num", "all"), "ceiling_mode": ("str", "all"),
    },
    # Streams over 1-8 links (make bench-multilink): one row per system, link count, size.
    "multilink": {
        "system": ("str", "all"), "links": ("int", "all"), "bytes": ("int", "all"),
        "mbps": ("num", "all"), "per_link_mbps": ("list", "kernel"),
        "out_of_order": ("num", "optional"), "r1_insns_per_pkt": ("num", "optional"),
        "n": ("int", "all"),
        # CPU-work rows (mode cpu or unpaced, under -icount) carry these; the paced rows do not.
        "mode": ("str", "optional"), "offered_mbps": ("num", "optional"),
        "busy_insns_per_pkt": ("num", "optional"), "busy_insns_per_byte": ("num", "optional"),
        "busy_frac_rx": ("num", "optional"), "busy_frac_tx": ("num", "optional"),
        "cpu_bound_mbps": ("num", "optional"),
    },
    # A stream through a link cut and restore (make bench-failover): one row per system, link
    # count, kind of cut and run. Linux may not detect a cut at all (null detect_ms).
    "failover": {
        "system": ("str", "all"), "links": ("int", "all"), "cut": ("str", "all"), "run": ("int", "all"),
        "detect_ms": ("num", "kernel"), "recover_ms": ("num", "optional"),
        "mbps_before": ("num", "kernel"), "mbps_during": ("num", "kernel"), "mbps_after": ("num", "kernel"),
        "max_gap_ms": ("num", "kernel"), "lost": ("int", "kernel"), "corrupt": ("int", "kernel"),
        "series": ("list", "kernel"),  # null for a Linux run that made no connection
        # Both systems alike (issue 26): the NIC model, the wire, -icount; under -icount the
        # CPU work per window (cpu) from each end's samples (cpu_samples): see consistent().
        "nic": ("str", "all"), "backend": ("str", "all"), "icount": ("bool", "all"),
        "cpu": ("dict", "optional"), "cpu_samples": ("dict", "optional"),
        "cut_client_s": ("num", "optional"), "restore_client_s": ("num", "optional"),
        # Unpaced rows (failover-unpaced.json): what held the stream before the cut.
        "limit": ("str", "optional"),
    },
    # Through 0, 1 or 2 relays (make bench-relay): one row per system, mode, hop count,
    # link count and size; a direct row has no relay figures.
    "relay": {
        "system": ("str", "all"), "mode": ("str", "all"), "hops": ("int", "all"), "links": ("int", "all"),
        "bytes": ("int", "all"), "mbps": ("num", "all"), "rtt_us": ("num", "optional"),
        "relay_insns_per_pkt": ("num", "optional"), "relay_copy_bytes_per_pkt": ("num", "optional"),
        # CPU-work rows (mode cpu) carry these; the injector's rows (mode inject-*) the last.
        "offered_mbps": ("num", "optional"), "relay_insns_raw_per_pkt": ("num", "optional"),
        "relay_busy_frac": ("num", "optional"), "runs_relay_insns_per_pkt": ("list", "optional"),
        "server_vcpu_frac": ("num", "optional"),
    },
    # Where this kernel's relay node spends its instructions (tools/bench/relay_profile.py):
    # one row per size and function, per forwarded packet and per second of window.
    "relayprofile": {
        "bytes": ("int", "all"), "links": ("int", "all"), "function": ("str", "all"), "part": ("str", "all"),
        "insns_per_pkt": ("num", "all"), "insns_per_s": ("num", "all"),
    },
    # How the host's tap steers the wire format over a two-queue virtio-net NIC (make
    # bench-mqsteer, mqsteer.json): one row per scenario and run; a run whose server printed
    # no exit line carries "error" and none of the figures (hence optional).
    "mqsteer": {
        "system": ("str", "all"), "scenario": ("str", "all"), "run": ("int", "all"),
        "server_cpu": ("int", "all"), "hop_at": ("int", "all"), "bytes": ("int", "all"),
        "q0_frames": ("int", "optional"), "q1_frames": ("int", "optional"),
        "q0_irqs": ("int", "optional"), "q1_irqs": ("int", "optional"),
        "tx_moves": ("int", "optional"), "first_queue": ("int", "optional"),
        "packets": ("int", "optional"), "corrupt": ("int", "optional"), "missing": ("int", "optional"),
        "mac_suffix": ("int", "optional"), "server_status": ("int", "optional"),
        "client_status": ("int", "optional"), "error": ("str", "optional"),
    },
    # Three senders balanced over two NICs (make bench-lb): one row per system, policy and
    # run. A run that failed carries "error" and none of the figures (hence optional).
    "lb": {
        "system": ("str", "all"), "policy": ("str", "all"), "run": ("int", "all"),
        "state": ("str", "optional"), "c_mbit_10_20": ("num", "optional"),
        "total_mbit_10_20": ("num", "optional"), "c_runtime_s": ("num", "optional"),
        "cpu_pct": ("num", "optional"),
    },
    # The file service against Linux NFS (make bench-fs; linux-fs.json so far): one row per
    # system, mount configuration, operation and I/O length. Throughput rows have mbps; the
    # 4 KiB read round trip (op read_4k_rtt) has median_us instead.
    "fs": {
        "system": ("str", "all"), "op": ("str", "all"), "io_bytes": ("int", "all"), "links": ("int", "all"),
        "rtt_added_ms": ("num", "all"), "mbps": ("num", "optional"), "median_us": ("num", "optional"),
        "lost": ("int", "optional"), "corrupt": ("int", "optional"),
        # CPU work (fs_cpu.py, -icount): mode cpu (paced) or unpaced, op cpu_write, cpu_read,
        # cpu_read_cached (Linux's client cache); busy instructions per byte at each end.
        "mode": ("str", "optional"), "busy_insns_per_byte_client": ("num", "optional"),
        "busy_insns_per_byte_server": ("num", "optional"), "cpu_bound_mbps": ("num", "optional"),
    },
    # The seed papers' file-service figures (make bench-fs-paper, fs-paper.json): RI2N/DRV
    # Tables 2 (seq_write) and 4 (write_through_cut), SRFS Table 3 (tcp_stream); medians
    # over the runs, each system's pairs interleaved with the other's.
    "fspaper": {
        "system": ("str", "all"), "op": ("str", "all"), "io_bytes": ("int", "all"), "links": ("int", "all"),
        "rtt_added_ms": ("num", "all"), "mbps": ("num", "optional"), "mb_s": ("num", "optional"),
        "runs": ("int", "all"), "median_ms": ("num", "optional"),
        "clock": ("str", "all"), "link_mbps": ("int", "all"), "bytes": ("int", "all"), "verified": ("bool", "all"),
        "cpu_pct_client": ("num", "optional"), "busy_per_byte_client": ("num", "optional"),
        "busy_per_byte_server": ("num", "optional"), "before_mb_s": ("num", "optional"),
        "during_mb_s": ("num", "optional"), "after_mb_s": ("num", "optional"),
        "longest_stall_s": ("num", "optional"), "cut_s": ("num", "optional"), "restore_s": ("num", "optional"),
        "lost": ("int", "optional"), "corrupt": ("int", "optional"), "window_bytes": ("int", "optional"),
        "ping_avg_ms": ("num", "optional"),
    },
    # Interleaved boot pairs (make bench-abab, tools/bench/abab.py): one row per pair and
    # size (kind pair; test ceiling: the link's ceiling, measured every round), one per
    # test, peer and size (kind ratio: kernel / peer over the kept rounds) and one per
    # test, system and size (kind frac: the median per-round fraction of the ceiling);
    # pair rows carry the host's load and steal over the pair.
    "abab": {
        "kind": ("str", "all"), "test": ("str", "all"), "system": ("str", "all"), "peer": ("str", "optional"),
        "bytes": ("int", "all"), "round": ("int", "optional"), "mbps": ("num", "optional"),
        "load1": ("num", "optional"), "steal_frac": ("num", "optional"), "other_cores": ("num", "optional"),
        "disturbed": ("bool", "optional"), "dropped": ("bool", "optional"), "pairs": ("int", "optional"),
        "ratio": ("num", "optional"), "ratio_ci95": ("list", "optional"),
        "ceiling_mbps": ("num", "optional"), "ceiling_frac": ("num", "optional"),
        "ceiling_frac_ci95": ("list", "optional"),
    },
    # A windowed stream, no reply per batch (make bench-abab: stream.json; linux-stream.json of
    # bench.sh window has no ceiling, which the harness adds): one row per system and size.
    "stream": {
        "system": ("str", "all"), "bytes": ("int", "all"), "mbps": ("num", "all"),
        "ceiling_mbps": ("num", "optional"), "ceiling_frac": ("num", "optional"), "pairs": ("int", "optional"),
        "ratio_ci95": ("list", "optional"), "ceiling_frac_ci95": ("list", "optional"),
        "insns_per_pkt_tx": ("num", "pending"), "insns_per_pkt_rx": ("num", "pending"),
    },
    # Exchange (the kernel) or munmap/mremap (Linux) against a TLB shootdown on another CPU,
    # and a copy (make bench-smp; linux-smp.json so far): one row per system, operation
    # and size. insns and cycles are per packet (a batch row's window over its 128).
    "smp": {
        "system": ("str", "all"), "op": ("str", "all"), "bytes": ("int", "all"), "cpus": ("int", "all"),
        "insns": ("num", "all"), "cycles": ("num", "all"), "ipis": ("num", "all"),
    },
    # A striped stream over 4 links, both nodes at -smp cpus (make bench-smp-stripe): one
    # row per system, CPU count and size; instructions per delivered packet per CPU (lists
    # of cpus values) counted by the TCG plugin, and this kernel's -icount busy time and
    # lock waits (Linux brings no second CPU up under -icount; it has no kernel lock).
    # DPDK's rows (linux-dpdk-smpstripe.json) add the polling lcores' empty polls per
    # packet, what one costs on each CPU, and the counts less them (lists of cpus values).
    "smpstripe": {
        "system": ("str", "all"), "cpus": ("int", "all"), "links": ("int", "all"), "bytes": ("int", "all"),
        "packets": ("num", "all"), "rx_insns_per_pkt": ("list", "all"), "tx_insns_per_pkt": ("list", "all"),
        "busiest_insns_per_pkt": ("num", "all"), "busiest_over_1cpu": ("num", "all"), "pairs": ("int", "all"),
        "rx_busy_insns_per_pkt": ("list", "counted"), "tx_busy_insns_per_pkt": ("list", "counted"),
        "rx_spin_insns_per_pkt": ("list", "counted"), "tx_spin_insns_per_pkt": ("list", "counted"),
        "busiest_busy_insns_per_pkt": ("num", "counted"), "busiest_busy_over_1cpu": ("num", "counted"),
        "rx_user_insns_per_pkt": ("list", "optional"), "tx_user_insns_per_pkt": ("list", "optional"),
        "rx_user_total_insns_per_pkt": ("num", "optional"),
        "busiest_kernel_insns_per_pkt": ("num", "optional"), "busiest_kernel_over_1cpu": ("num", "optional"),
        "rx_unlocked_share": ("num", "optional"),
        "rx_empty_polls_per_pkt": ("list", "optional"), "tx_empty_polls_per_pkt": ("list", "optional"),
        "rx_empty_poll_insns": ("list", "optional"), "tx_empty_poll_insns": ("list", "optional"),
        "rx_work_insns_per_pkt": ("list", "optional"), "tx_work_insns_per_pkt": ("list", "optional"),
        "busiest_work_insns_per_pkt": ("num", "optional"), "busiest_work_over_1cpu": ("num", "optional"),
        "mbps": ("num", "optional"), "client_mbps": ("num", "optional"),
    },
    # One VM of this kernel fed by the host injector, 1 vCPU against 2 (make
    # bench-smp-inject): one row per size and layout (1cpu, 2cpu), real time.
    "smpinject": {
        "system": ("str", "all"), "bytes": ("int", "all"), "layout": ("str", "all"), "cpus": ("int", "all"),
        "mbps": ("num", "all"), "runs_mbps": ("list", "all"), "host_main_loop_cpu": ("num", "all"),
        "host_vcpu_cpu": ("list", "all"), "verified": ("bool", "all"), "pairs": ("int", "all"),
        "ratio_to_1cpu": ("num", "optional"), "ratio_ci95": ("list", "optional"),
        "host_injector_cpu": ("num", "optional"), "host_busy_cores": ("num", "optional"),
        "host_cores": ("int", "optional"), "guest_cpu_busy": ("list", "optional"),
    },
}

# What make bench writes: (file, bench, systems its rows must cover; a
# Linux system only when the run measured its variant, env.variants).
BASE = ["kernel", "linux-packet", "linux-mmap"]
# A Linux variant's system name (pkt.variant -> system), as the collector
# writes it: one map, imported.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "linux-baseline"))
from collect import SYSTEM as VARIANT_SYSTEM  # noqa: E402
FILES = [
    ("exchange.json", "exchange", None),
    ("kernel-rtt.json", "rtt", ["kernel"]),
    ("linux-rtt.json", "rtt", ["linux-packet", "linux-mmap"]),
    ("rtt.json", "rtt", BASE),
    ("kernel-burst.json", "burst", ["kernel"]),
    ("linux-burst.json", "burst", ["linux-packet", "linux-mmap"]),
    ("burst.json", "burst", BASE),
    ("ceiling.json", "ceiling", ["link"]),
]
PLOTS = ["exchange.png", "burst.png", "t1t2.png", "rtt.png"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def type_ok(v, t):
    if t == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "num":
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if t == "str":
        return isinstance(v, str) and v != ""
    if t == "list":
        return isinstance(v, list) and len(v) > 0
    if t == "bool":
        return isinstance(v, bool)
    if t == "dict":
        return isinstance(v, dict) and len(v) > 0
    raise ValueError(t)


def check_row(bench, i, row, faults):
    where = f"rows[{i}]" + (f" ({row.get('system')} {row.get('bytes')})" if "bytes" in row else "")
    is_kernel = str(row.get("system", "kernel")).startswith("kernel")
    for name, (t, rule) in ROWS[bench].items():
        v = row.get(name)
        if rule == "measured" and name in row and v is None:
            if not type_ok(row.get(name + "_null"), "str"):
                faults.append(f"{where}: {name} is null and {name}_null gives no reason")
        elif rule in ("all", "measured") or (rule in ("kernel", "counted") and is_kernel):
            if name not in row:
                faults.append(f"{where}: required field {name} missing")
            elif not type_ok(v, t):
                faults.append(f"{where}: {name}={v!r} is not a {t}")
        elif rule == "counted" and v is not None:
            faults.append(f"{where}: {name}={v!r}, but only this kernel counts it")
        elif v is not None and not type_ok(v, t):
            faults.append(f"{where}: {name}={v!r} is not a {t}")
    consistent(bench, where, row, faults)


def consistent(bench, where, row, faults):
    """Fields that are computed from others must agree with them."""
    num = lambda k: type_ok(row.get(k), "num")  # noqa: E731
    if bench == "multilink" and row.get("mode") in ("cpu", "unpaced"):
        for k in ("offered_mbps", "busy_insns_per_pkt", "busy_insns_per_byte", "busy_frac_rx", "busy_frac_tx",
                  "cpu_bound_mbps"):
            if not num(k):
                faults.append(f"{where}: a {row['mode']} row without {k}")
    if bench == "failover":
        failover_consistent(where, row, faults)
    if bench == "relay" and row.get("mode") == "cpu":
        for k in ("offered_mbps", "relay_insns_per_pkt", "relay_insns_raw_per_pkt", "relay_busy_frac"):
            if not num(k):
                faults.append(f"{where}: a cpu row without {k}")
    if str(row.get("system")).startswith("linux-afxdp") and bench in ("rtt", "burst") and (
            not type_ok(row.get("guest_kernel"), "str")
            or not all(m in XDP_MODES for m in str(row.get("xdp_mode") or "?").split("/"))):
        faults.append(f"{where}: an AF_XDP row names its xdp_mode ({'/'.join(XDP_MODES)}) and guest_kernel")
    if bench == "smpstripe":
        n = row.get("cpus")
        for k in ("rx_insns_per_pkt", "tx_insns_per_pkt", "rx_busy_insns_per_pkt", "tx_busy_insns_per_pkt",
                  "rx_spin_insns_per_pkt", "tx_spin_insns_per_pkt", "rx_empty_polls_per_pkt",
                  "tx_empty_polls_per_pkt", "rx_empty_poll_insns", "tx_empty_poll_insns", "rx_work_insns_per_pkt",
                  "tx_work_insns_per_pkt"):
            if isinstance(row.get(k), list) and len(row[k]) != n:
                faults.append(f"{where}: {k} has {len(row[k])} CPUs, cpus={n}")
        if n == 1 and num("busiest_over_1cpu") and row["busiest_over_1cpu"] != 1:
            faults.append(f"{where}: a 1-CPU row's busiest_over_1cpu is {row['busiest_over_1cpu']}, not 1")
        if row.get("system") == "linux-dpdk" and not all(
                isinstance(row.get(k), list) for k in ("rx_empty_polls_per_pkt", "rx_work_insns_per_pkt")):
            faults.append(f"{where}: a linux-dpdk row without its empty polls and work per CPU")
    if bench == "smpinject" and row.get("layout") == "2cpu" and not num("ratio_to_1cpu"):
        faults.append(f"{where}: a 2cpu row without ratio_to_1cpu")
    if bench == "lb" and "nic_in" in row and not (
            isinstance(row["nic_in"], dict) and sorted(row["nic_in"]) == ["A", "B", "C"]
            and all(re.fullmatch(r"-?\d+(,-?\d+)*", str(v)) for v in row["nic_in"].values())):
        faults.append(f"{where}: nic_in is not one NIC list per process A, B, C")
    if bench == "fs" and not (num("mbps") or num("median_us")):
        faults.append(f"{where}: neither mbps nor median_us")
    if bench == "fs" and row.get("mode") is not None:
        if row["mode"] not in ("cpu", "unpaced") or not str(row.get("op")).startswith("cpu_"):
            faults.append(f"{where}: a CPU-work row is mode cpu or unpaced with an op cpu_*")
        for k in ("busy_insns_per_byte_client", "busy_insns_per_byte_server", "cpu_bound_mbps"):
            if not num(k):
                faults.append(f"{where}: a CPU-work row without {k}")
    if bench in ("burst", "r1") and num("r1_rx_insns_per_pkt") and isinstance(row.get("n_r1_rx"), int) \
            and row["n_r1_rx"] < 1:
        faults.append(f"{where}: r1_rx_insns_per_pkt from no sample (n_r1_rx={row['n_r1_rx']})")
    if bench == "fspaper":
        need = {"seq_write": ("cpu_pct_client", "mbps", "mb_s"), "tcp_stream": ("window_bytes", "mbps", "mb_s"),
                "write_through_cut": ("lost", "corrupt", "cut_inside", "progress", "mbps", "mb_s"),
                "rtt": ("median_ms",)}.get(row.get("op"))
        if need is None:
            faults.append(f"{where}: op {row.get('op')!r} is none of seq_write, write_through_cut, tcp_stream, rtt")
        for k in need or ():
            if row.get(k) is None:
                faults.append(f"{where}: a {row['op']} row without {k}")
        if num("mbps") and num("mb_s") and abs(row["mb_s"] - row["mbps"] / 8) > 0.01:
            faults.append(f"{where}: mb_s={row['mb_s']} is not mbps / 8")
    if bench == "burst" and num("mbps") and num("ceiling_mbps") and num("ceiling_frac") \
            and row["ceiling_mbps"] > 0 and abs(row["ceiling_frac"] - row["mbps"] / row["ceiling_mbps"]) > 0.001:
        faults.append(f"{where}: ceiling_frac={row['ceiling_frac']} is not mbps / ceiling_mbps")
    if bench == "abab":
        need = {"pair": ("round", "mbps", "load1", "steal_frac", "other_cores", "disturbed", "dropped"),
                "ratio": ("peer", "pairs", "ratio", "ratio_ci95"),
                "frac": ("pairs", "mbps", "ceiling_mbps", "ceiling_frac", "ceiling_frac_ci95")}.get(row.get("kind"), ())
        if row.get("kind") == "pair" and row.get("test") != "ceiling":
            need += ("peer",)  # the comparison a test's pair belongs to; a ceiling's pair has none
        if row.get("kind") not in ("pair", "ratio", "frac"):
            faults.append(f"{where}: kind={row.get('kind')!r} is none of pair, ratio, frac")
        elif row.get("kind") == "pair" and (row.get("disturbed") or row.get("failed")) and not row.get("dropped"):
            faults.append(f"{where}: a disturbed or failed pair whose round was kept")
        elif row.get("kind") == "pair" and (row.get("failed") or row.get("skipped")):
            need = tuple(k for k in need if k != "mbps")  # no figure
        elif row.get("kind") in ("ratio", "frac") and row.get("pairs") == 0:
            need = ()  # no kept round: nothing to give
        for k in need:
            if row.get(k) is None:
                faults.append(f"{where}: a {row['kind']} row without {k}")
    if bench in ("abab", "stream") and row.get("ratio_ci95") is not None:
        ci, x = row["ratio_ci95"], row.get("ratio", row.get("kernel_ratio"))
        if not (isinstance(ci, list) and len(ci) == 2 and all(type_ok(v, "num") for v in ci) and ci[0] <= ci[1]):
            faults.append(f"{where}: ratio_ci95={ci!r} is not [low, high]")
    if bench in ("abab", "stream") and row.get("ceiling_fracs") is not None:
        # Repeated ceilings: the median of the per-round fractions, and its interval around it.
        fr, ci = row["ceiling_fracs"], row.get("ceiling_frac_ci95")
        if not (isinstance(fr, list) and all(type_ok(v, "num") for v in fr)):
            faults.append(f"{where}: ceiling_fracs={fr!r} is not a list of numbers")
        elif fr and not (num("ceiling_frac") and abs(row["ceiling_frac"] - statistics.median(fr)) <= 0.001):
            faults.append(f"{where}: ceiling_frac={row.get('ceiling_frac')} is not the median of ceiling_fracs")
        elif fr and not (isinstance(ci, list) and len(ci) == 2 and all(type_ok(v, "num") for v in ci)
                         and ci[0] <= row["ceiling_frac"] <= ci[1]):
            faults.append(f"{where}: ceiling_frac_ci95={ci!r} is not [low, high] around ceiling_frac")
    elif bench == "stream" and num("mbps") and num("ceiling_mbps") and num("ceiling_frac") \
            and abs(row["ceiling_frac"] - row["mbps"] / row["ceiling_mbps"]) > 0.001:
        faults.append(f"{where}: ceiling_frac={row['ceiling_frac']} is not mbps / ceiling_mbps")
    if bench == "ceiling" and row.get("system") == "link" and num("mbps") and num("ceiling_mbps") \
            and row["mbps"] > row["ceiling_mbps"]:
        faults.append(f"{where}: mbps={row['mbps']} above the ceiling {row['ceiling_mbps']}")


FAILOVER_WINDOWS = ("before", "during", "after")
FAILOVER_LIMITS = ("receiver CPU", "sender CPU", "emulator")
FAILOVER_CPU = ("server_insns_per_byte", "client_insns_per_byte", "server_insns_per_pkt", "client_insns_per_pkt",
                "server_busy_frac", "client_busy_frac", "server_span_s", "client_span_s", "insns_per_pkt",
                "insns_per_byte", "server_mbps", "client_mbps")


def failover_consistent(where, row, faults):
    """A failover row under -icount that made a connection has its CPU
    samples at both ends (the merged file: and the CPU work before the
    cut); each
    window's figures are numbers, and insns_per_pkt is the two ends' sum."""
    if row.get("icount") and row.get("series") and not row.get("cpu_samples"):
        faults.append(f"{where}: an -icount run with a series but no cpu_samples")
    cs = row.get("cpu_samples")
    if row.get("cpu") and not (isinstance(cs, dict) and {"server", "client"} <= set(cs)):
        faults.append(f"{where}: cpu windows without both ends' cpu_samples")
    if isinstance(cs, dict):
        for side, c in cs.items():
            n = len(c.get("t_s") or []) if isinstance(c, dict) else -1
            if n < 2 or any(len(c.get(k) or []) != n for k in ("busy", "bytes")):
                faults.append(f"{where}: cpu_samples.{side} has no t_s, busy, bytes of one length (2 or more)")
    if row.get("limit") is not None and row["limit"] not in FAILOVER_LIMITS:
        faults.append(f"{where}: limit={row['limit']!r} is not one of {', '.join(FAILOVER_LIMITS)}")
    cpu = row.get("cpu")
    if not isinstance(cpu, dict):
        return
    for w, cell in cpu.items():
        if w not in FAILOVER_WINDOWS or not isinstance(cell, dict):
            faults.append(f"{where}: cpu.{w} is not a window ({', '.join(FAILOVER_WINDOWS)})")
            continue
        for k, v in cell.items():
            if k not in FAILOVER_CPU or not (v is None or type_ok(v, "num")):
                faults.append(f"{where}: cpu.{w}.{k}={v!r}")
        if all(type_ok(cell.get(k), "num") for k in ("insns_per_pkt", "server_insns_per_pkt",
                                                        "client_insns_per_pkt")) \
                and cell["insns_per_pkt"] != cell["server_insns_per_pkt"] + cell["client_insns_per_pkt"]:
            faults.append(f"{where}: cpu.{w}.insns_per_pkt is not the two ends' sum")
    for w in ("before",):  # during: none when nothing was delivered (a stalled bond)
        if not type_ok((cpu.get(w) or {}).get("server_insns_per_pkt"), "num"):
            faults.append(f"{where}: no cpu.{w}.server_insns_per_pkt")


def check_doc(doc, bench, systems):
    """Faults of one parsed result file (an empty list when it conforms)."""
    faults = []
    if not isinstance(doc, dict):
        return ["not a JSON object"]
    for key in ("bench", "env", "rows"):
        if key not in doc:
            faults.append(f"no {key}")
    if faults:
        return faults
    if bench and doc["bench"] != bench:
        faults.append(f"bench is {doc['bench']!r}, expected {bench!r}")
    bench = doc["bench"]
    if bench not in ROWS:
        return faults + [f"unknown bench {bench!r}"]
    env = doc["env"]
    if not isinstance(env, dict):
        return faults + ["env is not an object"]
    for key, t in ENV.items():
        if key not in env:
            faults.append(f"env.{key} missing")
        elif not type_ok(env[key], t):
            faults.append(f"env.{key}={env[key]!r} is not a {t}")
    if not all(n in NICS for n in str(env.get("nic")).split(",")):
        faults.append(f"env.nic={env.get('nic')!r} is not one of {', '.join(NICS)}")
    elif bench not in ("exchange", "smp") and env["nic"] == "none":
        faults.append("env.nic is none in a network benchmark")
    rows = doc["rows"]
    if not isinstance(rows, list) or not rows:
        return faults + ["rows empty or not a list"]
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            faults.append(f"rows[{i}] is not an object")
            continue
        check_row(bench, i, row, faults)
    ran = env.get("variants")
    if not isinstance(ran, str) and isinstance(env.get("linux"), dict):
        ran = env["linux"].get("variants")  # a merged file: Linux's run
    if systems and isinstance(ran, str):
        names = {VARIANT_SYSTEM.get(v) for v in ran.split()}
        systems = [s for s in systems if s not in VARIANT_SYSTEM.values() or s in names]
    if systems:
        sizes = {}
        for r in rows:
            if isinstance(r, dict):
                sizes.setdefault(r.get("system"), set()).add(r.get("bytes"))
        for s in systems:
            if s not in sizes:
                faults.append(f"no rows for system {s}")
            elif sizes[s] != sizes[systems[0]]:
                faults.append(f"system {s} covers sizes {sorted(sizes[s])}, "
                              f"{systems[0]} {sorted(sizes.get(systems[0], []))}")
    return faults


def check_file(path, bench=None, systems=None):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        return [f"cannot read: {e.strerror}"]
    except ValueError as e:
        return [f"not valid JSON: {e}"]
    return check_doc(doc, bench, systems)


def check_dir(d):
    """{file name: [faults]} for every file make bench writes and every other JSON file."""
    out = {}
    for name, bench, systems in FILES:
        out[name] = check_file(os.path.join(d, name), bench, systems)
    others = sorted(n for n in os.listdir(d) if n.endswith(".json") and n not in out) \
        if os.path.isdir(d) else []
    for name in others:
        out[name] = check_file(os.path.join(d, name))
    for name in PLOTS:
        p = os.path.join(d, name)
        try:
            with open(p, "rb") as f:
                head = f.read(len(PNG_MAGIC))
            size = os.path.getsize(p)
            out[name] = [] if head == PNG_MAGIC and size > 1000 else [f"not a PNG image ({size} bytes)"]
        except OSError as e:
            out[name] = [f"cannot read: {e.strerror}"]
    p = os.path.join(d, "REPORT.md")
    out["REPORT.md"] = [] if os.path.isfile(p) and os.path.getsize(p) > 0 else ["missing or empty"]
    return out


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--files":
        res = {p: check_file(p) for p in sys.argv[2:]}
        d = None
    elif len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-2])
    else:
        d = sys.argv[1]
        res = check_dir(d)
    bad = 0
    for name, faults in res.items():
        if faults:
            bad += 1
            print(f"check_schema: FAIL {os.path.join(d, name) if d else name}")
            for f in faults[:20]:
                print(f"    {f}")
            if len(faults) > 20:
                print(f"    ... and {len(faults) - 20} more")
        else:
            print(f"check_schema: ok   {os.path.join(d, name) if d else name}")
    print(f"check_schema: {len(res) - bad} passed, {bad} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
