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

--relay (with --stream): the same stream through one relay of this kernel:
two VMs, a relay (node 1.0, run=relay: the relaying is in its kernel's
receive path) whose NIC 0 ends at the socket here and whose NIC 1 is wired
(dgram) to the stream server's (node 1.1, dst=0.0); this program is node
0.0, the client: its frames carry WIRE_F_ROUTE and the route trailer (dst
1.1, src 0.0), addressed to the relay's NIC 0, and the server's routed
acknowledgements come back through the relay. Prints the server's RESULT
line, the relay's RELAY line and both VMs' HOSTTHREAD lines.
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


WIRE_F_ROUTE, WIRE_HOPS_DEFAULT = 0x20, 8


def stream_frames(size, route=None):
    """The 64 frames of a batch (payload wire_pattern(i % 64)), seq and flags
    filled in per packet; route=(dst, src) coordinate triples: the route
    trailer after the payload (lib/include/wire.h)."""
    out = []
    trailer = bytes(route[0]) + bytes(route[1]) + bytes([WIRE_HOPS_DEFAULT, 0]) if route else b""
    for i in range(STREAM_BATCH):
        pay = bytes(((j * 131) ^ (i * 7) ^ (j >> 8)) & 0xFF for j in range(size))
        f = bytearray(DST + SRC + struct.pack(">H", ETHERTYPE) +
                      struct.pack(">HHIHHI", STREAM_CHAN, 0, 0, STREAM_BATCH, 0, size) + pay + trailer)
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


def stream_inject(sock, peer, size, count, runner_pid, route=None, more_pids=(), window=STREAM_WINDOW):
    """Feeds the server count packets within its window; returns (acked,
    seconds from the first ack to the last that found QEMU still there,
    per-thread host CPU seconds over them, packets acknowledged over them,
    {"injector_cpu_s": this process's CPU seconds over them, "host_busy_s":
    the whole host's, every core}).
    route: stream_frames's; more_pids: other VMs' runners whose QEMU threads
    are counted too ("vmK:" before each thread id, K 0 for runner_pid's);
    window: batches kept unacknowledged."""
    frames, sent, acked, first, last = stream_frames(size, route), 0, 0, None, None
    base = WIRE_F_ROUTE if route else 0
    qpids = []
    deadline = time.monotonic() + WAIT_S * 4
    while acked < count and time.monotonic() < deadline:
        while sent < count and sent - acked < window * STREAM_BATCH:
            f = frames[sent % STREAM_BATCH]
            last_of_batch = sent % STREAM_BATCH == STREAM_BATCH - 1
            struct.pack_into(">HI", f, 16, base | (WIRE_F_LAST if last_of_batch else 0), sent)
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
            if not qpids:
                qpids = [q for q in (qemu_pid(p) for p in (runner_pid, *more_pids)) if q]
            th = {}
            for k, q in enumerate(qpids):
                th.update({(f"vm{k}:" if more_pids else "") + str(t): v for t, v in hostcpu.thread_ticks(q).items()})
            if th:  # QEMU leaves soon after the last ack: the last snapshot that found it
                last = (time.monotonic(), th, acked, time.process_time(), hostcpu.host_busy_ticks())
                first = first or last
    per = {}  # name#tid: (host CPU seconds, seconds runnable but waiting for a host CPU)
    if first and last:
        for tid, (name, ticks, wait) in last[1].items():
            if tid in first[1]:
                per[f"{name}#{tid}"] = ((ticks - first[1][tid][1]) / hostcpu.HZ, (wait - first[1][tid][2]) / 1e9)
    host = {"injector_cpu_s": round(last[3] - first[3], 3) if first else 0.0,
            "host_busy_s": round((last[4] - first[4]) / hostcpu.HZ, 3) if first else 0.0}
    return acked, (last[0] - first[0]) if first else 0.0, per, (last[2] - first[2]) if first else 0, host


def stream_run(kernel, logdir, size, count, kargs, nic, timeout=300, window=STREAM_WINDOW):
    """Boots a stream server, feeds it (window: batches unacknowledged);
    returns (status, serial log, inject figures dict)."""
    words = (f"run=stream role=server nic=0 peer={':'.join(f'{b:02x}' for b in SRC)} count={count} "
             f"size={size} batch={STREAM_BATCH} window={window} timeout_ms=20000 {kargs}")
    with receiver(kernel, logdir, words, nic, timeout) as (qemu, sock, peer, log):
        acked, secs, threads, first, host = stream_inject(sock, peer, size, count, qemu.pid, window=window)
        status = qemu.wait(timeout=timeout)
    text = open(log, errors="replace").read()
    return (status if acked == count else 1), text, {"acked": acked, "inject_s": secs, "threads": threads,
                                                     "span_acked": first, "host": host}


RELAY_NIC1 = "52:54:00:00:10:01"  # the relay's NIC 1, towards the server
SERVER_MAC = "52:54:00:00:30:00"


def mac_str(b):
    return ":".join(f"{x:02x}" for x in b)


def wait_ready(procs_logs, t0, limit=60):
    """Waits until every (process, log) printed READY (or one ended)."""
    while time.monotonic() - t0 < limit:
        if any(p.poll() is not None for p, _ in procs_logs):
            return
        if all(os.path.exists(lg) and b"READY" in open(lg, "rb").read() for _, lg in procs_logs):
            return
        time.sleep(0.05)


@contextlib.contextmanager
def relay_pair(kernel, logdir, server_words, relay_words, nic, timeout):
    """Boots the stream server and the relay (--relay); yields (server runner,
    relay runner, socket, the relay's NIC 0 address, server log, relay log)."""
    os.makedirs(logdir, exist_ok=True)
    sockdir = tempfile.mkdtemp(prefix="inject.", dir="/tmp")
    here, peer = os.path.join(sockdir, "c0"), os.path.join(sockdir, "r0")
    r1, s0 = os.path.join(sockdir, "r1"), os.path.join(sockdir, "s0")
    logs = {n: os.path.join(logdir, f"{n}.log") for n in ("server", "relay")}
    for lg in logs.values():
        if os.path.exists(lg):
            os.unlink(lg)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(here)
    sock.setblocking(False)
    dev = MODELS[nic]

    def boot(name, words, nets):
        return subprocess.Popen([os.path.join(ROOT, "tools/qemu-run.sh"), kernel, words.strip(), str(timeout),
                                 *nets, "-name", f"{name},debug-threads=on"],
                                env=dict(os.environ, SERIAL=logs[name]), stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(logdir, f"{name}.err"), "w"))
    procs = []
    try:
        t0 = time.monotonic()
        procs.append(boot("server", server_words, [
            "-netdev", f"dgram,id=n0,local.type=unix,local.path={s0},remote.type=unix,remote.path={r1}",
            "-device", f"{dev},netdev=n0,mac={SERVER_MAC}"]))
        procs.append(boot("relay", relay_words, [
            "-netdev", f"dgram,id=n0,local.type=unix,local.path={peer},remote.type=unix,remote.path={here}",
            "-device", f"{dev},netdev=n0,mac={mac_str(DST)}",
            "-netdev", f"dgram,id=n1,local.type=unix,local.path={r1},remote.type=unix,remote.path={s0}",
            "-device", f"{dev},netdev=n1,mac={RELAY_NIC1}"]))
        wait_ready(list(zip(procs, (logs["server"], logs["relay"]))), t0)
        yield procs[0], procs[1], sock, peer, logs["server"], logs["relay"]
    finally:
        for q in procs:
            if q.poll() is None:
                q.terminate()
                q.wait()
        sock.close()
        for p in (here, peer, r1, s0):
            if os.path.exists(p):
                os.unlink(p)
        os.rmdir(sockdir)


def relay_stream_run(kernel, logdir, size, count, kargs, nic, timeout=300, window=STREAM_WINDOW):
    """The stream through one relay (--relay); returns (status, server log,
    relay log, inject figures dict)."""
    srv = (f"run=stream role=server nic=0 dst=0.0 node=1.1 nicdim=1 nb=1.0/{RELAY_NIC1} count={count} "
           f"size={size} batch={STREAM_BATCH} window={window} timeout_ms=20000 {kargs}")
    rel = (f"run=relay expect=100 idle_ms=1000 busy_ok=1 node=1.0 nicdim=0,1 "
           f"nb=0.0/{mac_str(SRC)},1.1/{SERVER_MAC} {kargs}")
    with relay_pair(kernel, logdir, srv, rel, nic, timeout) as (sq, rq, sock, peer, slog, rlog):
        acked, secs, threads, first, host = stream_inject(sock, peer, size, count, sq.pid,
                                                           route=((1, 1, 0), (0, 0, 0)),
                                                           more_pids=(rq.pid,), window=window)
        status = sq.wait(timeout=timeout)
        rstatus = rq.wait(timeout=timeout)
    text, rtext = open(slog, errors="replace").read(), open(rlog, errors="replace").read()
    ok = acked == count and status == 0 and rstatus == 0
    return (0 if ok else 1), text, rtext, {"acked": acked, "inject_s": secs, "threads": threads,
                                           "span_acked": first, "host": host}


def stream_main(a):
    if a.relay:
        status, log, rlog, fig = relay_stream_run(a.kernel, a.logdir, int(a.sizes.split(",")[0]), a.count,
                                                  a.kargs, a.nic)
        print("".join(x + "\n" for x in log.splitlines() if x.startswith(("RESULT", "CPUBUSY"))), end="")
        print("".join(x + "\n" for x in rlog.splitlines() if x.startswith("RELAY ")), end="")
        for name, (cpu_s, wait_s) in sorted(fig["threads"].items()):
            print(f"HOSTTHREAD name={name.replace(' ', '_')} cpu_s={cpu_s:.3f} runq_wait_s={wait_s:.3f} "
                  f"wall_s={fig['inject_s']:.3f}")
        print(f"inject: relay and receiver status {status}, {fig['acked']} of {a.count} acknowledged")
        sys.exit(status)
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
    ap.add_argument("--relay", action="store_true", help="--stream through one relay VM")
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
