#!/usr/bin/env python3
"""The Linux side of the relay benchmark's injector runs: the client replaced
by a host process (as tools/bench/inject.py does for this kernel).

    inject-relay.py --hops 0|1 --size S --bursts N [--window W] [--guest DIR]
                    [--logdir DIR] [--timeout S]

hops 1: two Linux guests of the relay line (run-relay.py's qemu_cmd, the
same overlay and wires), a router (node 1: ip_forward=1, static routes) and
the server (node 2, relaybench --role server); hops 0: the server alone
(node 1 of a line of two). Node 0, the client, is this program: it binds
node 0's end of segment 0's dgram wire, answers the guests' ARP requests
for 10.1.0.1 with node 0's MAC (and sends the next hop an ARP request, from
which it learns that MAC), sends a warm-up burst until it is answered (the
guests resolve the rest of the path), then N bursts of 128 UDP datagrams of
S payload bytes (relaybench's datagrams: its header and wire_pattern
payload, port 7020) to the server, at most W bursts unanswered (default 2:
256 datagrams, as many as the kernel's injector keeps unacknowledged); the
server answers each burst with the count it received intact.

Prints one line
  RESULT inject hops=H bytes=S bursts=N good=G mbps=M secs=T
(mbps: the datagrams of the bursts answered after the first over the host
time from the first answer to the last, as the kernel's injector times its
stream) and HOSTTHREAD lines (inject.py's: each QEMU thread's host CPU
seconds over that time, vmK: node K+1). Exit status 0 when every burst
came back complete.
"""
import argparse
import importlib.util
import os
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
import hostcpu  # noqa: E402
import inject  # noqa: E402

_spec = importlib.util.spec_from_file_location("run_relay", os.path.join(HERE, "run-relay.py"))
run_relay = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_relay)

RB_MAGIC, RB_PORT, RB_BURST, RB_HLEN = 0x524C5942, 7020, 128, 16
T_BURST, T_BURST_ACK = 2, 3
SPORT = 40020
ME_IP = bytes([10, 1, 0, 1])


def mac_bytes(m):
    return bytes(int(x, 16) for x in m.split(":"))


def pattern(seq, n):
    return bytes(((i * 131) ^ (seq * 7) ^ (i >> 8)) & 0xFF for i in range(n))


def ip_sum(h):
    s = sum(struct.unpack(f">{len(h) // 2}H", h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp_frame(dst_mac, src_mac, dst_ip, payload, ident):
    udp = struct.pack(">HHHH", SPORT, RB_PORT, 8 + len(payload), 0) + payload  # checksum 0: none (IPv4)
    h = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), ident & 0xFFFF, 0, 64, 17, 0, ME_IP,
                              dst_ip))
    struct.pack_into(">H", h, 10, ip_sum(bytes(h)))
    return dst_mac + src_mac + b"\x08\x00" + bytes(h) + udp


def arp_reply(frame, my_mac):
    """The reply to an ARP request for 10.1.0.1, or None."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x06" or frame[20:22] != b"\x00\x01" or frame[38:42] != ME_IP:
        return None
    sha, spa = frame[22:28], frame[28:32]
    return (sha + my_mac + b"\x08\x06" + struct.pack(">HHBBH", 1, 0x0800, 6, 4, 2) + my_mac + ME_IP + sha + spa
            + bytes(18))


def burst_ack(frame):
    """(burst id, good) of a T_BURST_ACK datagram frame, or None."""
    if len(frame) < 14 + 20 + 8 + RB_HLEN or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return None
    ihl = (frame[14] & 0xF) * 4
    u = 14 + ihl
    sport, dport = struct.unpack_from(">HH", frame, u)
    d = u + 8
    if sport != RB_PORT or dport != SPORT or struct.unpack_from(">I", frame, d)[0] != RB_MAGIC:
        return None
    typ, aux, seq = struct.unpack_from(">HHI", frame, d + 4)
    return (seq, aux) if typ == T_BURST_ACK else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hops", type=int, choices=(0, 1), required=True)
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--bursts", type=int, default=64)
    ap.add_argument("--window", type=int, default=2)
    ap.add_argument("--guest", default=os.path.join(ROOT, "build", "linux-baseline"))
    ap.add_argument("--logdir", default="")
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    nodes = a.hops + 2
    # run-relay.py's options, for its qemu_cmd (node 0 is never booted: it is us).
    ra = argparse.Namespace(hops=a.hops, links=1, modes="raw", sizes=str(a.size), runs=1, bursts=1, rtts=0, warmup=0,
                            bytes=0, mbps="", pace="all", icount=False, timeout=a.timeout, guest=a.guest)
    logdir = a.logdir or tempfile.mkdtemp(prefix="lb-inject.")
    os.makedirs(logdir, exist_ok=True)
    sockdir = tempfile.mkdtemp(prefix="lb-inject.")
    here = os.path.join(sockdir, "s0l0.n0.sock")
    peer = os.path.join(sockdir, "s0l0.n1.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(here)
    sock.setblocking(False)
    my_mac = mac_bytes(run_relay.mac(0, 0, 0))
    nh_mac = mac_bytes(run_relay.mac(0, 0, 1))  # node 1's NIC on segment 0: the router, or the server
    dst_ip = bytes([10, 1, nodes - 2, nodes])  # the server's address on its left segment
    procs = {}
    ok = False
    try:
        for node in range(nodes - 1, 0, -1):
            cmd = run_relay.qemu_cmd(ra, node, nodes, sockdir, logdir)
            cmd[cmd.index("-no-reboot"):cmd.index("-no-reboot")] = ["-name", f"node{node},debug-threads=on"]
            with open(os.path.join(logdir, f"node{node}.qemu"), "w") as err:
                procs[node] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                               start_new_session=True)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 120:
            logs = [run_relay.lines_of(logdir, n) for n in range(1, nodes)]
            if all(any(ln.startswith("READY") for ln in lines) for lines in logs):
                break
            if any(p.poll() is not None for p in procs.values()):
                sys.exit("inject-relay.py: a guest ended before it was ready (logs: %s)" % logdir)
            time.sleep(0.1)
        else:
            sys.exit("inject-relay.py: the guests were not ready in 120 s (logs: %s)" % logdir)
        # the QEMU under each `timeout` (run-relay.py's command line)
        qpids = {n: (inject.children(procs[n].pid) or [procs[n].pid])[0] for n in procs}
        pats = [pattern(k, a.size) for k in range(256)]  # wire_pattern(seq, i) depends on seq % 256
        base = bytearray(udp_frame(nh_mac, my_mac, dst_ip, b"\0" * (RB_HLEN + a.size), 0))
        pay_off = 14 + 20 + 8

        def send_burst(bid):
            for i in range(RB_BURST):
                seq = bid * RB_BURST + i
                dg = struct.pack(">IHHII", RB_MAGIC, T_BURST, i, seq, a.size) + pats[seq % 256]
                base[pay_off:] = dg
                struct.pack_into(">H", base, 18, seq & 0xFFFF)  # IP id
                struct.pack_into(">H", base, 24, 0)
                struct.pack_into(">H", base, 24, ip_sum(bytes(base[14:34])))
                while True:
                    try:
                        sock.sendto(base, peer)
                        break
                    except (BlockingIOError, ConnectionRefusedError, FileNotFoundError):
                        select.select([], [], [], 0.0002)

        def take(timeout):
            """Answers ARP requests; returns the burst answers that came."""
            acks = []
            r, _, _ = select.select([sock], [], [], timeout)
            while r:
                try:
                    f = sock.recv(65536)
                except BlockingIOError:
                    break
                rep = arp_reply(f, my_mac)
                if rep:
                    sock.sendto(rep, peer)
                    continue
                ack = burst_ack(f)
                if ack:
                    acks.append(ack)
            return acks

        # Warm-up, not timed: an ARP request to the next hop (it learns our
        # address from it), then burst 0 until it is answered (the guests
        # resolve the rest of the path meanwhile).
        nh_ip = bytes([10, 1, 0, 2])
        sock.sendto(b"\xff" * 6 + my_mac + b"\x08\x06" + struct.pack(">HHBBH", 1, 0x0800, 6, 4, 1) + my_mac
                    + ME_IP + bytes(6) + nh_ip + bytes(18), peer)
        warm = False
        for _ in range(10):
            send_burst(0)
            t1 = time.monotonic() + 2
            while not warm and time.monotonic() < t1:
                warm = any(x[0] == 0 for x in take(0.05))
            if warm:
                break
        if not warm:
            sys.exit("inject-relay.py: the warm-up burst was never answered (logs: %s)" % logdir)
        sent_b = acked_b = 0
        good = 0
        first = last = None
        answered = {}
        deadline = time.monotonic() + 60
        while acked_b < a.bursts and time.monotonic() < deadline:
            while sent_b < a.bursts and sent_b - acked_b < a.window:
                send_burst(sent_b + 1)
                sent_b += 1
            for ack in take(0.05):
                bid = ack[0] - 1
                if 0 <= bid < a.bursts and bid not in answered:
                    answered[bid] = ack[1]
                    good += ack[1]
                    acked_b = len(answered)
                    deadline = time.monotonic() + 30
                    th = {}
                    for k, n in enumerate(sorted(qpids)):
                        th.update({f"vm{k}:{t}": v for t, v in hostcpu.thread_ticks(qpids[n]).items()})
                    last = (time.monotonic(), th, good)
                    first = first or last
        secs = last[0] - first[0] if first else 0.0
        counted = (last[2] - first[2]) if first else 0
        mbps = counted * a.size * 8 / secs / 1e6 if secs > 0 else 0.0
        ok = acked_b == a.bursts and good == a.bursts * RB_BURST
        print("RESULT inject hops=%d bytes=%d bursts=%d good=%d mbps=%.3f secs=%.3f"
              % (a.hops, a.size, acked_b, good, mbps, secs))
        if first:
            for tid, (name, ticks, wait) in sorted(last[1].items()):
                if tid in first[1]:
                    print("HOSTTHREAD name=%s#%s cpu_s=%.3f runq_wait_s=%.3f wall_s=%.3f"
                          % (name.replace(" ", "_"), tid, (ticks - first[1][tid][1]) / hostcpu.HZ,
                             (wait - first[1][tid][2]) / 1e9, secs))
    finally:
        for p in procs.values():
            run_relay.stop(p)
        sock.close()
        shutil.rmtree(sockdir, ignore_errors=True)
        if not a.logdir:
            shutil.rmtree(logdir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
