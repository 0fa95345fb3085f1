#!/usr/bin/env python3
"""hostburst.py: pktbench's burst client, run on the host, so that one Linux
guest (the server) is the only VM: it binds QEMU's peer unix socket of a
`-netdev dgram` link and speaks pktbench's protocol (pktproto.h, wire.h):
readiness probes (rtt requests of 1 byte, seq >= PB_PROBE_SEQ) until one is
echoed, then per size WARMUP + BURSTS bursts of 128 packets (seq 0..127,
batch 128, WIRE_F_LAST on the last, payload wire_pattern), each answered by
one reply (WIRE_F_REPLY, seq = packets received intact), then the bye.

Usage: hostburst.py --local SOCK --remote SOCK --dst MAC [--sizes 64,1500]
                    [--bursts N] [--warmup N] [--wait S]
Prints per burst: RESULT burst variant=host bytes=S rep=R t0_us=T mbps=M
good=G (T: first send to the reply, on the host's clock); exit 1 when a
burst came back short or no reply came.
"""
import argparse
import os
import select
import socket
import struct
import sys
import time

ETHERTYPE, HLEN, MIN_FRAME = 0x88B5, 30, 60
CH_DATA, CH_CTRL, CTRL_BYE = 1, 0xFFFF, 1
F_LAST, F_REPLY = 0x1, 0x2
PROBE_SEQ, BURST_N = 0x80000000, 128
SRC = bytes.fromhex("52540048b002")


def pattern(seq, n):
    return bytes((((i * 131) ^ (seq * 7) ^ (i >> 8)) & 0xFF) for i in range(n))


def frame(dst, channel, flags, seq, batch, payload):
    f = dst + SRC + struct.pack(">HHHIHHI", ETHERTYPE, channel, flags, seq, batch, 0, len(payload)) + payload
    return f + bytes(max(0, MIN_FRAME - len(f)))


def header(b):
    """(channel, flags, seq) of a wire frame, or None."""
    if len(b) < HLEN or struct.unpack_from(">H", b, 12)[0] != ETHERTYPE:
        return None
    ch, fl, seq = struct.unpack_from(">HHI", b, 14)
    return ch, fl, seq


def wait_reply(sock, want, timeout):
    """The seq of the first reply `want(channel, flags, seq)` accepts, or None."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0 or not select.select([sock], [], [], left)[0]:
            return None
        h = header(sock.recv(65536))
        if h and h[1] & F_REPLY and want(*h):
            return h[2]


def probe(sock, dst, remote, wait_s):
    t0, n = time.monotonic(), 0
    while time.monotonic() - t0 < wait_s:
        try:
            sock.sendto(frame(dst, CH_DATA, 0, PROBE_SEQ + n, 1, pattern(PROBE_SEQ + n, 1)), remote)
        except (FileNotFoundError, ConnectionRefusedError):
            pass  # QEMU not listening yet
        n += 1
        if wait_reply(sock, lambda ch, fl, seq: ch == CH_DATA and seq >= PROBE_SEQ, 0.5) is not None:
            while wait_reply(sock, lambda ch, fl, seq: True, 0.2) is not None:
                pass  # the other probes' echoes
            return n
    sys.exit(f"hostburst: the guest answered no probe in {wait_s} s")


def burst(sock, dst, remote, size, frames):
    t0 = time.monotonic()
    for f in frames:
        sock.sendto(f, remote)
    good = wait_reply(sock, lambda ch, fl, seq: ch == CH_DATA and seq <= BURST_N, 10)
    return time.monotonic() - t0, good


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--local", required=True)
    ap.add_argument("--remote", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--sizes", default="64,1500,8192")
    ap.add_argument("--bursts", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--wait", type=float, default=120)
    a = ap.parse_args()
    dst = bytes.fromhex(a.dst.replace(":", ""))
    if os.path.exists(a.local):
        os.unlink(a.local)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(a.local)
    print(f"READY role=client variant=host probes={probe(sock, dst, a.remote, a.wait)}", flush=True)
    bad = 0
    for size in (int(s) for s in a.sizes.split(",")):
        frames = [frame(dst, CH_DATA, F_LAST if i == BURST_N - 1 else 0, i, BURST_N, pattern(i, size))
                  for i in range(BURST_N)]
        for rep in range(-a.warmup, a.bursts):
            t, good = burst(sock, dst, a.remote, size, frames)
            if good != BURST_N:
                print(f"ERROR burst bytes={size} rep={rep} good={good}", flush=True)
                bad += 1
                continue
            if rep >= 0:
                print(f"RESULT burst variant=host bytes={size} rep={rep} t0_us={t * 1e6:.1f} "
                      f"mbps={BURST_N * size * 8 / t / 1e6:.3f} good={good}", flush=True)
    sock.sendto(frame(dst, CH_CTRL, 0, CTRL_BYE, 1, b""), a.remote)
    ok = wait_reply(sock, lambda ch, fl, seq: ch == CH_CTRL, 10) is not None
    print(f"DONE {'ok' if ok and not bad else 'fail'}", flush=True)
    sys.exit(0 if ok and not bad else 1)


if __name__ == "__main__":
    main()
