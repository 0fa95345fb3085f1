#!/usr/bin/env python3
"""The two sub-sections of REPORT.md's Many CPUs part that make bench-smp adds
after tools/bench/smp.py's (between <!-- smp: end --> and what follows):

  smp-stripe  a striped stream over 4 links at 1, 2 and 4 CPUs per node:
              OUTDIR/kernel-smpstripe.json, linux-smpstripe.json and
              linux-dpdk-smpstripe.json merged into smpstripe.json,
              plotted in smpstripe.png;
  smp-inject  one VM fed by the host injector, 1 vCPU against 2:
              OUTDIR/kernel-smpinject.json.
Every figure is read from those files. A part whose JSON is missing is left
as it is. Usage: smp_report.py OUTDIR
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import sections  # noqa: E402

SMP_END = "<!-- smp: end -->"
STRIPE = ("<!-- smp-stripe: begin -->", "<!-- smp-stripe: end -->")
INJECT = ("<!-- smp-inject: begin -->", "<!-- smp-inject: end -->")
TARGET_STRIPE = 0.3  # issue 27: the busiest CPU at 4 CPUs, against 1 CPU
TARGET_INJECT = 1.6  # issue 27: 2 vCPUs against 1, 1500 bytes and above


def cells(vals, spins=None):
    if vals is None:
        return "-"
    if spins is None:
        return " / ".join(f"{v:.0f}" for v in vals)
    return " / ".join(f"{v:.0f} ({w:.0f})" for v, w in zip(vals, spins))


def verdict(ratio):
    return "met" if ratio <= TARGET_STRIPE else "missed"


def beside_lines(doc, other):
    """The 4-CPU rows of smp-explore/rxlock-fine.json (the same kernel with
    the receive path, input_io and a plain channel's output_io without the
    kernel lock, run beside the reference), against their own run's 1 CPU."""
    one = {r["bytes"]: r for r in other["rows"] if r["cpus"] == 1}
    lines = []
    for r in sorted((r for r in other["rows"] if r["cpus"] == 4), key=lambda r: r["bytes"]):
        base = one.get(r["bytes"])
        if not base:
            continue
        ratio = round(r["busiest_insns_per_pkt"] / base["busiest_insns_per_pkt"], 3)
        line = (f"- kernel with rxlock=fine (`smp-explore/rxlock-fine.json`, the same kernel run beside "
                f"this one), {r['bytes']} bytes: counted {ratio}x ({verdict(ratio)}), busiest "
                f"{r['busiest_insns_per_pkt']:.0f} a packet")
        if r.get("busiest_kernel_insns_per_pkt") is not None and base.get("busiest_kernel_insns_per_pkt"):
            k = round(r["busiest_kernel_insns_per_pkt"] / base["busiest_kernel_insns_per_pkt"], 3)
            line += f"; kernel mode only {k}x"
        if r.get("rx_busy_total_insns_per_pkt"):
            line += f"; busy over all the receiver's CPUs {r['rx_busy_total_insns_per_pkt']:.0f} a packet"
        if r.get("rx_unlocked_share"):
            line += f"; {r['rx_unlocked_share'] * 100:.0f} % of the packets received without the kernel lock"
        lines.append(line)
    return lines


def stripe_text(doc, beside=None):
    rows = doc["rows"]
    systems = sorted({r["system"] for r in rows}, key=lambda s: (s != "kernel", s))
    e = doc["env"]
    by = {(r["system"], r["cpus"], r["bytes"]): r for r in rows}
    lines = [STRIPE[0], "## Many CPUs: a striped stream over 4 links, 1, 2 and 4 CPUs a node "
             "(`make bench-smp-stripe`)", "",
             f"Both nodes at -smp N, 4 NICs each ({e['nic']}, MSI: QEMU's i440fx gives four 82540s only two "
             "interrupt lines), NIC i's interrupt on CPU i mod N, the programs not pinned; "
             f"{doc['stream_bytes']} bytes a stream, unpaced; {e['runs']} rounds, medians. "
             "**Counted**: each CPU's own instructions per delivered packet, receiver (rx) and sender (tx), "
             "counted by a TCG plugin (tools/linux-baseline/insnplugin.so), spin-wait blocks (PAUSE) left out "
             "(this kernel's pairs under -icount, Linux's in real time: Debian's 6.1 guest brings no second "
             "CPU up under -icount). **Busy** (this kernel): under -icount shift=0, each CPU's elapsed minus "
             "halted time and, in brackets, its waits for the kernel lock; QEMU runs the vCPUs in turns "
             "and the -icount clock counts all of them, so a CPU's busy figure also holds what the others "
             "ran while it was not halted. Busiest: the most loaded CPU of either node, per boot pair, "
             "then the median. Each system's rows are a run of their own (kernel-smpstripe.json, "
             "linux-smpstripe.json, linux-dpdk-smpstripe.json), not interleaved with the others'; each "
             "ratio is over the same system's 1-CPU row of that run. This kernel runs its default, the "
             "kernel lock (rxlock=kernel)."]
    if any(r["system"] == "linux-dpdk" for r in rows):
        lines += ["", "**linux-dpdk**: dpdkbench's windowed stream (user/stream.c's protocol: 4096 packets, "
                  "64-packet batches, 2 unacknowledged, every byte checked by the lcore that received it) "
                  "striped packet k on NIC k mod 4, each NIC one queue polled by one lcore (NIC i by the lcore "
                  "on CPU i mod N), acknowledgements on NIC 0; one warm-up and one measured stream a size, "
                  "the receiver counted from its first batch acknowledged. The lcores poll and never sleep, "
                  "so a CPU's count holds its empty polls (no PAUSE in them, so the plugin counts them): "
                  "beside the count, the empty polls a packet, what one costs on that CPU (an idle window "
                  "with no traffic, same loops) and the count less the user-mode instructions of every "
                  "round of an lcore's loop that found nothing, which the plugin leaves out by markers "
                  "(*less polls*: the work, the guest kernel's timer ticks included). The Linux guests, "
                  "DPDK's and the bond's, boot with tsc=reliable: the TSC stays the clocksource at every "
                  "CPU count (hpet at 2 and 4 CPUs made each clock read a system call)."]
    lines.append("")
    for system in systems:
        kern = system == "kernel"
        if system == "linux-dpdk":
            lines += dpdk_table(rows)
            continue
        lines += [f"**{system}**", "",
                  "| bytes | CPUs | packets | counted rx per CPU | counted tx per CPU | busiest | / 1 CPU |"
                  + (" busy rx (lock wait) | busy tx (lock wait) | busiest busy | / 1 CPU |" if kern else ""),
                  "|---|---|---|---|---|---|---|" + ("---|---|---|---|" if kern else "")]
        for r in sorted((r for r in rows if r["system"] == system), key=lambda r: (r["bytes"], r["cpus"])):
            line = (f"| {r['bytes']} | {r['cpus']} | {r['packets']:.0f} | {cells(r['rx_insns_per_pkt'])} | "
                    f"{cells(r['tx_insns_per_pkt'])} | {r['busiest_insns_per_pkt']:.0f} | "
                    f"{r['busiest_over_1cpu']} |")
            if kern:
                line += (f" {cells(r['rx_busy_insns_per_pkt'], r['rx_spin_insns_per_pkt'])} | "
                         f"{cells(r['tx_busy_insns_per_pkt'], r['tx_spin_insns_per_pkt'])} | "
                         f"{r['busiest_busy_insns_per_pkt']:.0f} | {r['busiest_busy_over_1cpu']} |")
            lines.append(line)
        lines.append("")
    lines.append(f"Target (issue 27): at 4 CPUs the busiest CPU at most {TARGET_STRIPE}x the single CPU's "
                 "instructions per packet.")
    for system in systems:
        for size in sorted({r["bytes"] for r in rows}):
            r = by.get((system, 4, size))
            if not r:
                continue
            line = f"- {system}, {size} bytes: counted {r['busiest_over_1cpu']}x ({verdict(r['busiest_over_1cpu'])})"
            if r.get("busiest_busy_over_1cpu") is not None:
                spin = sum(r["rx_spin_insns_per_pkt"]) + sum(r["tx_spin_insns_per_pkt"])
                line += (f"; busy {r['busiest_busy_over_1cpu']}x ({verdict(r['busiest_busy_over_1cpu'])}), "
                         f"{spin:.0f} instructions a packet of lock waits over both nodes' CPUs")
            if (r.get("busiest_kernel_over_1cpu") is not None and r.get("rx_user_total_insns_per_pkt")
                    and system != "linux-dpdk"):  # DPDK's user mode is its polls too
                line += (f"; kernel mode only {r['busiest_kernel_over_1cpu']}x (beside it the receiving "
                         "program's own user-mode instructions, its byte check: "
                         f"{r['rx_user_total_insns_per_pkt']:.0f} a packet, all on the CPU it runs on)")
            if r.get("rx_unlocked_share"):  # rxlock=fine only
                line += (f"; {r['rx_unlocked_share'] * 100:.0f} % of the packets received without the "
                         "kernel lock")
            if kern and r.get("rx_busy_total_insns_per_pkt"):
                line += f"; busy over all the receiver's CPUs {r['rx_busy_total_insns_per_pkt']:.0f} a packet"
            if r.get("busiest_work_over_1cpu") is not None:
                line += (f"; less the empty polls {r['busiest_work_over_1cpu']}x "
                         f"({r['busiest_work_insns_per_pkt']:.0f} a packet, {verdict(r['busiest_work_over_1cpu'])})"
                         f"; {r['mbps']} Mbit/s")

            lines.append(line)
    if beside:
        lines += beside_lines(doc, beside)
    lines += ["", "![striped stream at 1, 2, 4 CPUs](smpstripe.png)", STRIPE[1], ""]
    return "\n".join(lines)


def dpdk_table(rows):
    """linux-dpdk's rows: the counts, the empty polls and the counts less them."""
    lines = ["**linux-dpdk**", "",
             "| bytes | CPUs | Mbit/s | counted rx per CPU | counted tx per CPU | busiest | / 1 CPU | "
             "empty polls a packet rx | empty polls a packet tx | instructions an empty poll rx | "
             "instructions an empty poll tx | less polls rx | less polls tx | busiest less polls | / 1 CPU |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted((r for r in rows if r["system"] == "linux-dpdk"), key=lambda r: (r["bytes"], r["cpus"])):
        lines.append(
            f"| {r['bytes']} | {r['cpus']} | {r['mbps']} | {cells(r['rx_insns_per_pkt'])} | "
            f"{cells(r['tx_insns_per_pkt'])} | {r['busiest_insns_per_pkt']:.0f} | {r['busiest_over_1cpu']} | "
            f"{cells(r['rx_empty_polls_per_pkt'])} | {cells(r['tx_empty_polls_per_pkt'])} | "
            f"{cells(r['rx_empty_poll_insns'])} | {cells(r['tx_empty_poll_insns'])} | "
            f"{cells(r['rx_work_insns_per_pkt'])} | {cells(r['tx_work_insns_per_pkt'])} | "
            f"{r['busiest_work_insns_per_pkt']:.0f} | {r['busiest_work_over_1cpu']} |")
    return lines + [""]


def inject_text(doc):
    rows = doc["rows"]
    e = doc["env"]
    by = {(r["bytes"], r["layout"]): r for r in rows}
    lines = [INJECT[0], "## Many CPUs: receiving from the host injector, 1 vCPU against 2 "
             "(`make bench-smp-inject`)", "",
             f"One VM of this kernel ({e['nic']}), its receiver user/stream.c's server (every byte "
             "checked), fed by tools/bench/inject.py --stream on the host (the stream client's "
             "frames, window and acknowledgements; no sending VM). 1cpu: " + doc["layouts"]["1cpu"]
             + "; 2cpu: " + doc["layouts"]["2cpu"] + f". Real time; {e['runs']} rounds alternating "
             "the layouts, medians; the ratio's 95 % interval by a bootstrap over the rounds. Host "
             "CPU: seconds of CPU a second of stream, per QEMU thread (/proc/PID/task/*/stat): the "
             "main loop (NIC model, dgram backend) and each vCPU's TCG thread; beside them the "
             "injector's own CPU (this Python process) and the whole host's busy cores (/proc/stat, "
             f"of {rows[0].get('host_cores') or '?'}), over the same span.", "",
             "| bytes | 1cpu Mbit/s | 2cpu Mbit/s | 2cpu / 1cpu | 95 % | main loop CPU 1cpu / 2cpu | "
             "vCPU threads' CPU 1cpu / 2cpu | vCPU threads' wait for a host CPU 1cpu / 2cpu | "
             "injector CPU 1cpu / 2cpu | host busy cores 1cpu / 2cpu | guest CPUs busy 1cpu / 2cpu | "
             "host load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for size in sorted({r["bytes"] for r in rows}):
        a, b = by.get((size, "1cpu")), by.get((size, "2cpu"))
        if not a or not b:
            continue
        ci = b.get("ratio_ci95") or ["-", "-"]
        lines.append(f"| {size} | {a['mbps']} | {b['mbps']} | {b['ratio_to_1cpu']} | {ci[0]}-{ci[1]} | "
                     f"{a['host_main_loop_cpu']} / {b['host_main_loop_cpu']} | "
                     f"{', '.join(map(str, a['host_vcpu_cpu']))} / {', '.join(map(str, b['host_vcpu_cpu']))} | "
                     f"{', '.join(map(str, a['host_vcpu_wait']))} / {', '.join(map(str, b['host_vcpu_wait']))} | "
                     f"{a.get('host_injector_cpu', '-')} / {b.get('host_injector_cpu', '-')} | "
                     f"{a.get('host_busy_cores', '-')} / {b.get('host_busy_cores', '-')} | "
                     f"{', '.join(map(str, a.get('guest_cpu_busy') or ['-']))} / "
                     f"{', '.join(map(str, b.get('guest_cpu_busy') or ['-']))} | "
                     f"{a['host_load_1min']} / {b['host_load_1min']} |")
    lines += ["", f"Target (issue 27): 2 vCPUs at least {TARGET_INJECT}x 1 vCPU at 1500 bytes and above, "
              "or the evidence that the NIC model's thread is the limit."]
    for size in sorted({r["bytes"] for r in rows if r["bytes"] >= 1500}):
        a, b = by.get((size, "1cpu")), by.get((size, "2cpu"))
        if not a or not b:
            continue
        met = b["ratio_to_1cpu"] >= TARGET_INJECT
        limit = max(a["host_main_loop_cpu"], b["host_main_loop_cpu"])
        wait = max(b["host_vcpu_wait"])
        busy, cores = b.get("host_busy_cores"), b.get("host_cores")
        host = (f"; the host's {cores} cores were {busy} busy in the 2cpu layout, the injector "
                f"{b.get('host_injector_cpu')} of it" if busy is not None and cores else "")
        if b.get("guest_cpu_busy"):
            host += (", the guest's CPUs busy " + " and ".join(map(str, b["guest_cpu_busy"]))
                     + " of the time (CPU 0's idle loop polls the NIC: busy, not halted)")
        why = ("" if met else ": the NIC model's thread is the limit" if limit >= 0.9 else
               f": not saturated, so not the limit; the 2cpu vCPU threads waited up to {wait} s a second "
               f"for a host CPU, the main loop {b.get('host_main_loop_wait', '-')}{host}")
        lines.append(f"- {size} bytes: {b['ratio_to_1cpu']}x ({'met' if met else 'missed'}); QEMU's main "
                     f"loop at {a['host_main_loop_cpu']} (1cpu) and {b['host_main_loop_cpu']} (2cpu) CPU "
                     f"seconds a second{why}")
    lines += [INJECT[1], ""]
    return "\n".join(lines)


def plot(doc, out):
    plt = sections.pyplot("smp_report")
    if not plt:
        return
    sizes = sorted({r["bytes"] for r in doc["rows"]})
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4))
    axes = axes if len(sizes) > 1 else [axes]
    for ax, size in zip(axes, sizes):
        for system, key, style, what in (("kernel", "busiest_insns_per_pkt", "o-", "counted"),
                                         ("kernel", "busiest_busy_insns_per_pkt", "o:", "busy (-icount)"),
                                         ("linux-bond-rr-tcp", "busiest_insns_per_pkt", "s--", "counted"),
                                         ("linux-dpdk", "busiest_insns_per_pkt", "^-.", "counted"),
                                         ("linux-dpdk", "busiest_work_insns_per_pkt", "^:", "less empty polls")):
            pts = sorted((r["cpus"], r[key]) for r in doc["rows"]
                         if r["system"] == system and r["bytes"] == size and r.get(key) is not None)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=f"{system} busiest CPU, {what}")
                one = dict(pts).get(1)
                if one and key == "busiest_insns_per_pkt":
                    ax.axhline(one * TARGET_STRIPE, color={"kernel": "grey", "linux-dpdk": "plum"}.get(system, "tan"),
                               ls=":",
                               label=f"{system} target (0.3x 1 CPU)")
        ax.set_xticks(sorted({r["cpus"] for r in doc["rows"]}))
        ax.set_xlabel("CPUs a node")
        ax.set_ylabel("instructions per packet, busiest CPU")
        ax.set_title(f"{size} bytes, 4 links")
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    out = sys.argv[1]
    doc = sections.merge(out, "smpstripe", more=("dpdk",))
    if doc:
        beside = sections.load(os.path.join(out, "smp-explore", "rxlock-fine.json"))
        sections.write_section(out, stripe_text(doc, beside), *STRIPE, after=SMP_END)
        plot(doc, os.path.join(out, "smpstripe.png"))
    inj = sections.load(os.path.join(out, "kernel-smpinject.json"))
    if inj:
        sections.write_section(out, inject_text(inj), *INJECT, after=STRIPE[1] if doc else SMP_END)


if __name__ == "__main__":
    main()
