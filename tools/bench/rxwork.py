"""R1 as receive work (issue 25): the receiving guest's instructions from the
moment it waits, idle, for a burst to the moment its program holds the
burst's last frame, counted by a TCG plugin (tools/linux-baseline/insnplugin.c,
receive windows) the same way for every system, with the payload check
counted apart and polls that found nothing left out.

The receiving program prints one line per closed window, in order:
this kernel's user/burst.c "RXWIN i=K bytes=S packets=P tsc=T", pktbench and
dpdkbench "SRVSTAT rxwin variant=V bytes=S packets=P tsc=T"; the plugin writes
"RXW n=N cpu=C work=W check=K idle=I polls=P other=J" for the same windows
in the same order (run-pair.sh --count-rx prints them as "SRVSTAT rxw ...").
bytes=0 is the idle window after the last burst (nothing came for
IDLE_MS), or the quit batch. Standard library only."""
import os
import re
import subprocess

import stats

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGIN_SRC = os.path.join(HERE, "..", "linux-baseline", "insnplugin.c")
REPS = int(os.environ.get("R1_RX_REPS", "30"))  # timed bursts per size in an -icount pair


def kv(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


def plugin(outdir):
    """outdir/insnplugin.so, compiled when older than its source."""
    so = os.path.join(outdir, "insnplugin.so")
    if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(PLUGIN_SRC):
        os.makedirs(outdir, exist_ok=True)
        subprocess.run(["gcc", "-std=c11", "-shared", "-fPIC", "-fvisibility=hidden", "-O2", "-Wall",
                        "-Wextra", "-Werror", "-o", so, PLUGIN_SRC], check=True)
    return so


def windows(program_lines, plugin_lines):
    """The program's windows joined with the plugin's, in order: dicts with
    bytes, packets, tsc (the program's), work, check, idle, polls (the
    plugin's). A count mismatch raises: the pairing would be wrong."""
    prog = [kv(x) for x in program_lines]
    plug = [kv(x) for x in plugin_lines]
    if len(prog) != len(plug):
        raise ValueError(f"{len(prog)} receive windows in the program's output, {len(plug)} from the plugin")
    out = []
    for i, (p, q) in enumerate(zip(prog, plug)):
        # A burst's window holds a payload check, the idle window none: a
        # pairing out of step shows there.
        if (int(p.get("idle_ms", 0)) > 0) != (int(q["check"]) == 0):
            raise ValueError(f"receive window {i}: the program's {p} does not match the plugin's {q}")
        out.append({"bytes": int(p["bytes"]), "packets": int(p["packets"]), "tsc": int(p["tsc"]),
                    "idle_ms": int(p.get("idle_ms", 0)), "work": int(q["work"]), "check": int(q["check"]),
                    "idle": int(q["idle"]), "polls": int(q["polls"])})
    return out


def timed(wins, size, warmup, packets=128):
    """The windows of the timed bursts of one size: whole bursts, the first
    `warmup` of the size left out (the client's warm-ups)."""
    return [w for w in wins if w["bytes"] == size and w["packets"] == packets][warmup:]


def idle_windows(wins):
    return [w for w in wins if w["bytes"] == 0 and w["idle_ms"]]


def fields(per_boot_timed, per_boot_idle):
    """Burst-row fields from the timed windows of one size (a list per boot
    pair) and the idle windows of the same boots: medians per packet."""
    ws = [w for b in per_boot_timed for w in b]
    if not ws:
        return {}
    idle = [w for b in per_boot_idle for w in b]
    per = lambda k: [w[k] / w["packets"] for w in ws]  # noqa: E731
    out = {
        "r1_rx_insns_per_pkt": stats.rnd(stats.median(per("work")), 1),
        "r1_rx_check_insns_per_pkt": stats.rnd(stats.median(per("check")), 1),
        "r1_rx_p99_insns_per_pkt": stats.rnd(stats.percentile(per("work"), 99), 1),
        "r1_rx_left_out_insns_per_pkt": stats.rnd(stats.median(per("idle")), 1),
        "r1_rx_empty_polls_per_pkt": stats.rnd(stats.median(per("polls")), 2),
        "n_r1_rx": len(ws),
        "r1_rx_per_pair": [stats.rnd(stats.median([w["work"] / w["packets"] for w in b]), 1)
                           for b in per_boot_timed if b],
    }
    if idle:
        # The background: what a window with no frame counts per TSC tick
        # (guest ns under -icount), times the bursts' own window length.
        rate = sum(w["work"] for w in idle) / max(1, sum(w["tsc"] for w in idle))
        out["r1_rx_idle_window_insns"] = stats.rnd(stats.median([w["work"] for w in idle]), 0)
        out["r1_rx_idle_window_ms"] = idle[0]["idle_ms"]
        out["r1_rx_background_insns_per_pkt"] = stats.rnd(
            rate * stats.median([w["tsc"] / w["packets"] for w in ws]), 1)
    return out
