#!/usr/bin/env python3
"""The receive half of the emulated link alone: frames injected from the host.

One VM of this kernel boots with ceiling=rx (kernel/net/ceiling.h), its NIC
on QEMU's dgram backend as in every pair (tools/net-pair.sh), and this
program takes the place of the sending VM: it binds the peer's unix socket
and speaks the ceiling's protocol itself (HELLO/REPLY, windows of numbered
S-byte frames kept within the receiver's credit, END/REPLY), so no sending
guest and no sending NIC model are involved. The receiver times the windows
as in a guest-to-guest run and prints the same CEILING rx lines.
Usage: inject.py KERNEL LOGDIR [--sizes 64,8192] [--reps 3] [--ms 100]
                 [--modes spin,halt] [--nic e1000|virtio|e1000e]
Prints the receiver's CEILING lines; exit status 0 when the receiver passed.

--stream: the receiver is a process instead, user/stream.c's server (run=
stream role=server), and this program is its client: count= packets of S
bytes in batches of 64 (wire sequence number = index, payload
wire_pattern(index % 64)), at most two batches unacknowledged, the
server's 8-byte acknowledgements read back; the server checks every byte
and prints RESULT stream (its Mbit/s, guest real time). --kargs adds
command-line words (e.g. nicirq=0 runcpu=1), QEMU_SMP its CPUs. Also
prints HOSTTHREAD lines: each QEMU thread's host CPU seconds between the
first acknowledgement and the last, and its seconds runnable without a
host CPU (schedstat: the host's other load).
Usage: inject.py KERNEL LOGDIR --stream --sizes 1500 --count 20000 [--kargs ".."]
"""
import argparse
import contextlib
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import hostcpu  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = {"e1000": "e1000", "virtio": "virtio-net-pci,disable-legacy=on", "e1000e": "e1000e"}
# kernel/net/ceiling.c and lib/include/wire.h
CHAN, ETHERTYPE, HLEN, MIN_FRAME, RX_BUF = 0xCE11, 0x88B5, 30, 60, 4096
F_END, F_REPLY, F_HELLO, F_CREDIT = 0x1, 0x2, 0x4, 0x100
WIRE_F_LAST = 0x1
TOKEN_HELLO, TOKEN_END, WINDOW = 0x48454C4F, 0x454E44, 384
MODES = {"spin": 0, "halt": 1}
DST = bytes.fromhex("525400001000")  # the receiver's NIC 0 (tools/net-pair.sh)
SRC = bytes.fromhex("525400002000")
WAIT_S = 30


def frame(size, flags=0, seq=0, batch=0, link=0):
    """A wire.h frame: Ethernet header, wire header, payload pattern of packet 0."""
    pay = bytes(((i * 131) ^ (i >> 8)) & 0xFF for i in range(size)) if not flags else b""
    f = bytearray(DST + SRC + struct.pack(">H", ETHERTYPE) +
                  struct.pack(">HHIHHI", CHAN, flags, seq, batch, link, size if not flags else 0) + pay)
    return f + bytes(max(0, MIN_FRAME - len(f)))


class Link:
    def __init__(self, sock, peer):
        self.sock, self.peer = sock, peer
        self.credit = self.sent = 0
        self.replies = {}  # token -> batch field of the REPLY

    def take(self, timeout):
        """Reads what the receiver sent (REPLYs and credits), waiting up to timeout."""
        r, _, _ = select.select([self.sock], [], [], timeout)
        while r:
            try:
                b = self.sock.recv(65536)
            except BlockingIOError:
                break
            if len(b) < HLEN or struct.unpack_from(">H", b, 12)[0] != ETHERTYPE:
                continue
            chan, flags, seq, batch = struct.unpack_from(">HHIH", b, 14)
            if chan != CHAN:
                continue
            if flags & F_REPLY:
                self.replies[seq] = batch
            if flags & F_CREDIT and (seq - self.credit) % 2**32 <= (self.sent - self.credit) % 2**32:
                self.credit = seq

    def send(self, f):
        """True when the frame went into the socket (False: its queue is full)."""
        try:
            self.sock.sendto(f, self.peer)
            return True
        except (BlockingIOError, ConnectionRefusedError, FileNotFoundError):
            return False

    def handshake(self, flags, token):
        t0 = time.monotonic()
        while token not in self.replies and time.monotonic() - t0 < WAIT_S:
            self.send(frame(0, flags, token))
            self.take(0.02)
        return self.replies.get(token)


def window(link, size, mode, win, ms, slots):
    """One timed window of ms milliseconds: frames within the receiver's credit."""
    per = (size + HLEN + RX_BUF - 1) // RX_BUF
    limit = min(WINDOW, max(1, slots // per))
    f = frame(size, 0, 0, mode, win)
    end, seq = time.monotonic() + ms / 1000, 0
    while time.monotonic() < end:
        room = limit - (link.sent - link.credit) % 2**32
        n = 0
        while n < room:
            struct.pack_into(">I", f, 18, seq)
            if not link.send(f):
                break
            seq, n, link.sent = seq + 1, n + 1, link.sent + 1
        link.take(0 if n else 0.001)
    return seq


@contextlib.contextmanager
def receiver(kernel, logdir, words, nic, timeout):
    """Boots the receiving VM with its NIC's wire ending at a socket here,
    waits for its READY line; yields (QEMU runner, socket, the VM's address,
    serial log path); stops the VM if still up and removes the sockets."""
    os.makedirs(logdir, exist_ok=True)
    sockdir = tempfile.mkdtemp(prefix="inject.", dir="/tmp")
    here, peer = os.path.join(sockdir, "c0"), os.path.join(sockdir, "s0")
    log = os.path.join(logdir, "server.log")
    if os.path.exists(log):
        os.unlink(log)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(here)
    sock.setblocking(False)
    netdev = f"dgram,id=n0,local.type=unix,local.path={peer},remote.type=unix,remote.path={here}"
    qemu = subprocess.Popen([os.path.join(ROOT, "tools/qemu-run.sh"), kernel, words.strip(), str(timeout),
                             "-netdev", netdev, "-device", f"{MODELS[nic]},netdev=n0,mac=52:54:00:00:10:00",
                             "-name", "inject,debug-threads=on"],  # threads named: "CPU 0/TCG", ...
                            env=dict(os.environ, SERIAL=log), stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(logdir, "server.err"), "w"))
    try:
        t0 = time.monotonic()
        while qemu.poll() is None and time.monotonic() - t0 < 60:
            if os.path.exists(log) and b"READY" in open(log, "rb").read():
                break
            time.sleep(0.05)
        yield qemu, sock, peer, log
    finally:
        if qemu.poll() is None:
            qemu.terminate()
            qemu.wait()
        sock.close()
        for p in (here, peer):
            if os.path.exists(p):
                os.unlink(p)
        os.rmdir(sockdir)


def run(kernel, logdir, sizes, reps, ms, modes, nic, timeout=300):
    """Boots the receiver, injects, waits for it; returns (status, serial log)."""
    words = (f"run=hello ceiling=rx ceiling_sizes={','.join(map(str, sizes))} ceiling_reps={reps} "
             f"ceiling_ms={ms} ceiling_modes={','.join(modes)} {os.environ.get('BENCH_KARGS', '')}")
    with receiver(kernel, logdir, words, nic, timeout) as (qemu, sock, peer, log):
        link = Link(sock, peer)
        slots = link.handshake(F_HELLO, TOKEN_HELLO)
        ok = slots is not None
        for m in modes if ok else []:
            for s in sizes:
                for w in range(reps):
                    sent = window(link, s, MODES[m], w, ms, slots)
                    print(f"CEILING inject mode={m} bytes={s} win={w} sent={sent}", flush=True)
        ok = ok and link.handshake(F_END, TOKEN_END) is not None
        status = qemu.wait(timeout=timeout)
    return (status if ok else 1), open(log, errors="replace").read()


STREAM_CHAN, STREAM_BATCH, STREAM_WINDOW = 3, 64, 2  # user/stream.c's chan=, batch=, window=


def stream_frames(size):
    """The 64 frames of a batch (payload wire_pattern(i % 64)), seq and flags
    filled in per packet."""
    out = []
    for i in range(STREAM_BATCH):
        pay = bytes(((j * 131) ^ (i * 7) ^ (j >> 8)) & 0xFF for j in range(size))
        f = bytearray(DST + SRC + struct.pack(">H", ETHERTYPE) +
                      struct.pack(">HHIHHI", STREAM_CHAN, 0, 0, STREAM_BATCH, 0, size) + pay)
        out.append(f + bytes(max(0, MIN_FRAME - len(f))))
    return out


def stream_acks(sock):
    """The highest acknowledged count among the frames waiting (None: none)."""
    best = None
    while True:
        try:
            b = sock.recv(65536)
        except BlockingIOError:
            return best
        if len(b) >= HLEN + 8 and struct.unpack_from(">HH", b, 12) == (ETHERTYPE, STREAM_CHAN):
            n = struct.unpack_from("<Q", b, HLEN)[0]
            best = n if best is None else max(best, n)


def children(pid):
    """PIDs whose parent is pid (processes that vanish meanwhile left out)."""
    out = []
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1] == str(pid):
                out.append(int(d))
        except (OSError, IndexError):
            continue
    return out


def qemu_pid(runner_pid):
    """The QEMU under qemu-run.sh (its timeout's child), or None."""
    for t in children(runner_pid):
        for q in children(t):
            return q
    return None


def stream_inject(sock, peer, size, count, runner_pid):
    """Feeds the server count packets within its window; returns (acked,
    seconds from the first ack to the last that found QEMU still there,
    per-thread host CPU seconds over them)."""
    frames, sent, acked, qpid, first, last = stream_frames(size), 0, 0, None, None, None
    deadline = time.monotonic() + WAIT_S * 4
    while acked < count and time.monotonic() < deadline:
        while sent < count and sent - acked < STREAM_WINDOW * STREAM_BATCH:
            f = frames[sent % STREAM_BATCH]
            struct.pack_into(">HI", f, 16, WIRE_F_LAST if sent % STREAM_BATCH == STREAM_BATCH - 1 else 0, sent)
            while True:
                try:
                    sock.sendto(f, peer)
                    break
                except (BlockingIOError, ConnectionRefusedError, FileNotFoundError):
                    select.select([], [], [], 0.0002)  # the socket's queue is full: QEMU reads it later
            sent += 1
        select.select([sock], [], [], 0.05)
        n = stream_acks(sock)
        if n is not None and n > acked:
            acked, deadline = n, time.monotonic() + WAIT_S
            qpid = qpid or qemu_pid(runner_pid)
            th = hostcpu.thread_ticks(qpid) if qpid else {}
            if th:  # QEMU leaves soon after the last ack: the last snapshot that found it
                last = (time.monotonic(), th)
                first = first or last
    per = {}  # name#tid: (host CPU seconds, seconds runnable but waiting for a host CPU)
    if first and last:
        for tid, (name, ticks, wait) in last[1].items():
            if tid in first[1]:
                per[f"{name}#{tid}"] = ((ticks - first[1][tid][1]) / hostcpu.HZ, (wait - first[1][tid][2]) / 1e9)
    return acked, (last[0] - first[0]) if first else 0.0, per


def stream_run(kernel, logdir, size, count, kargs, nic, timeout=300):
    """Boots a stream server, feeds it; returns (status, serial log, inject
    figures dict)."""
    words = (f"run=stream role=server nic=0 peer={':'.join(f'{b:02x}' for b in SRC)} count={count} "
             f"size={size} batch={STREAM_BATCH} window={STREAM_WINDOW} timeout_ms=20000 {kargs}")
    with receiver(kernel, logdir, words, nic, timeout) as (qemu, sock, peer, log):
        acked, secs, threads = stream_inject(sock, peer, size, count, qemu.pid)
        status = qemu.wait(timeout=timeout)
    text = open(log, errors="replace").read()
    return (status if acked == count else 1), text, {"acked": acked, "inject_s": secs, "threads": threads}


def stream_main(a):
    status, log, fig = stream_run(a.kernel, a.logdir, int(a.sizes.split(",")[0]), a.count, a.kargs, a.nic)
    print("".join(x + "\n" for x in log.splitlines() if x.startswith(("RESULT", "CPUBUSY", "SUITE"))), end="")
    for name, (cpu_s, wait_s) in sorted(fig["threads"].items()):
        print(f"HOSTTHREAD name={name.replace(' ', '_')} cpu_s={cpu_s:.3f} runq_wait_s={wait_s:.3f} "
              f"wall_s={fig['inject_s']:.3f}")
    print(f"inject: receiver status {status}, {fig['acked']} of {a.count} acknowledged")
    sys.exit(0 if status == 0 else 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel")
    ap.add_argument("logdir")
    ap.add_argument("--sizes", default="64,1500,8192")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ms", type=int, default=100)
    ap.add_argument("--modes", default="spin,halt")
    ap.add_argument("--nic", choices=sorted(MODELS), default=os.environ.get("NIC", "e1000"))
    ap.add_argument("--stream", action="store_true", help="feed user/stream.c's server (a process)")
    ap.add_argument("--count", type=int, default=8192, help="--stream: packets, a multiple of 64")
    ap.add_argument("--kargs", default="", help="--stream: more kernel command-line words")
    a = ap.parse_args()
    if a.stream:
        return stream_main(a)
    status, log = run(a.kernel, a.logdir, [int(x) for x in a.sizes.split(",")], a.reps, a.ms,
                      a.modes.split(","), a.nic)
    print("".join(x + "\n" for x in log.splitlines() if x.startswith("CEILING")), end="")
    print(f"inject: receiver status {status}")
    sys.exit(0 if status == 0 else 1)


if __name__ == "__main__":
    main()
