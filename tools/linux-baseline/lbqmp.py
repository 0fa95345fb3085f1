#!/usr/bin/env python3
"""QMP set_link on one NIC of a running QEMU, for the link cuts of
run-failover.py (imported) and run-links.sh, run-nfs.sh (run):

    lbqmp.py SOCKET NIC on|off

SOCKET is the QEMU's -qmp unix socket, NIC a device id (nic0).  Exits 1
with "qmp COMMAND: ERROR" when QEMU refuses a command.
"""
import json
import socket
import sys
import time


def set_link(path, nic, up):
    """QMP set_link; (stamp before, stamp after) on the host's monotonic clock.
    Raises RuntimeError when QEMU answers with an error, OSError or
    ValueError when the socket fails or answers garbage."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(path)
        f = s.makefile("rw")

        def cmd(c, **a):
            f.write(json.dumps({"execute": c, "arguments": a} if a else {"execute": c}) + "\n")
            f.flush()
            while True:
                r = json.loads(f.readline())
                if "return" in r:
                    return
                if "error" in r:
                    raise RuntimeError("qmp %s: %s" % (c, r["error"]))

        json.loads(f.readline())  # greeting
        cmd("qmp_capabilities")
        t0 = time.monotonic()
        cmd("set_link", name=nic, up=up)
        return t0, time.monotonic()


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in ("on", "off"):
        sys.exit("usage: lbqmp.py SOCKET NIC on|off")
    try:
        set_link(sys.argv[1], sys.argv[2], sys.argv[3] == "on")
    except RuntimeError as e:
        sys.exit(str(e))
